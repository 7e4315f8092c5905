package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// triggerWriter is a log writer that calls fire once when its output
// first contains want.
type triggerWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	fire func()
	done bool
}

func (w *triggerWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.done && strings.Contains(w.buf.String(), w.want) {
		w.done = true
		go w.fire()
	}
	return len(p), nil
}

func (w *triggerWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestDeployLocalInterruptResume: Ctrl-C (SIGINT) in deploy-local after
// its first round exits 130, keeps the round done and every role's state,
// and prints the --resume command; resuming finishes the run with the
// model of a run never interrupted, bit for bit (test mode). Before, the
// run exited 1, kept nothing, and a rerun said "not empty".
func TestDeployLocalInterruptResume(t *testing.T) {
	dir := t.TempDir()
	base := []string{"deploy-local", "--clients", "4", "--rounds", "3", "--protocol", "ss-simple", "--dataset", "blobs",
		"--local-epochs", "1", "--seed", "3", "--progress", "log"}
	whole := filepath.Join(dir, "whole")
	if code, _, errs := runCLI(append(base, "--out", whole)...); code != 0 {
		t.Fatalf("uninterrupted run: exit %d: %s", code, errs)
	}
	out := filepath.Join(dir, "cut")
	w := &triggerWriter{want: "round 1: analyzer: released", fire: func() { syscall.Kill(os.Getpid(), syscall.SIGINT) }}
	var so bytes.Buffer
	code := realMain(append(base, "--out", out), &so, w)
	if code != 130 {
		t.Fatalf("interrupted run: exit %d, want 130: %s", code, w.String())
	}
	if !strings.Contains(w.String(), "shufflefl deploy-local --resume "+out) {
		t.Fatalf("no --resume command printed: %s", w.String())
	}
	if recs, err := os.ReadFile(filepath.Join(out, "metrics.jsonl")); err != nil || len(bytes.TrimSpace(recs)) == 0 {
		t.Fatalf("the rounds done were not kept: %v %q", err, recs)
	}
	code, _, errs := runCLI("deploy-local", "--resume", out, "--progress", "none")
	if code != 0 {
		t.Fatalf("resumed run: exit %d: %s", code, errs)
	}
	a, _ := os.ReadFile(filepath.Join(whole, "model.json"))
	b, _ := os.ReadFile(filepath.Join(out, "model.json"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatal("the resumed run's model differs from the uninterrupted run's")
	}
	m, _ := os.ReadFile(filepath.Join(out, "metrics.jsonl"))
	if n := bytes.Count(m, []byte("\n")); n != 3 {
		t.Fatalf("metrics.jsonl has %d records after resuming, want 3", n)
	}
}
