package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
)

// TestCheckPrepare: a used directory is refused without overwrite; with
// it, Prepare removes the shufflefl outputs and keeps every other file.
func TestCheckPrepare(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := Check(out, false); err != nil {
		t.Fatalf("absent directory: %v", err)
	}
	if err := Prepare(out, false); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{MetricsFile, "summary.json", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(out, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Check(out, false); !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), "--overwrite") {
		t.Errorf("used directory: %v", err)
	}
	if err := Check(out, true); err != nil {
		t.Errorf("overwrite: %v", err)
	}
	if err := Prepare(out, true); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(out)
	if len(left) != 1 || left[0].Name() != "notes.txt" {
		t.Errorf("after Prepare with overwrite: %v, want notes.txt only", left)
	}
}

// TestConfigRoundTrip: config.yaml written by WriteConfig reads back into
// the same settings, every key given.
func TestConfigRoundTrip(t *testing.T) {
	cfg := round.RunDefaults()
	cfg.Out = t.TempDir()
	cfg.Options = map[string]float64{"k": 3}
	tr := Trainer{Command: `/usr/bin/python3 "my trainer.py" --flag`, Timeout: 90 * time.Second}
	if err := WriteConfig(cfg, "shufflefl test", tr); err != nil {
		t.Fatal(err)
	}
	got := round.DefaultConfig()
	s, keys, err := ReadConfig(filepath.Join(cfg.Out, "config.yaml"), &got)
	if err != nil {
		t.Fatal(err)
	}
	if !keys["rounds"] || !keys["option"] || len(s.Options) != 1 || s.Options[0] != "k=3" {
		t.Errorf("keys %v, settings %+v", keys, s)
	}
	if s.Trainer != tr {
		t.Errorf("trainer read back %+v, want %+v", s.Trainer, tr)
	}
	got.Out, got.Options, cfg.Options = cfg.Out, nil, nil
	if !reflect.DeepEqual(got, cfg) {
		t.Errorf("read back %+v, want %+v", got, cfg)
	}
}

// TestReadRecordsBadFile: a truncated metrics.jsonl is named with the
// line that is wrong.
func TestReadRecordsBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), MetricsFile)
	if err := os.WriteFile(path, []byte("{\"round\": 1}\n{\"round\": 2, \"test_acc"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadRecords(path)
	if !errors.Is(err, checks.ErrInvalid) || !strings.HasPrefix(err.Error(), path+": line 2 is not a whole JSON record") {
		t.Errorf("err %v", err)
	}
}
