package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/driver/rundir"
)

// stripTimings removes the wall-clock fields of metrics.jsonl.
func stripTimings(b []byte) string {
	s := regexp.MustCompile(`"seconds":[^,]*,`).ReplaceAllString(string(b), "")
	return regexp.MustCompile(`"timing":\{[^}]*\}`).ReplaceAllString(s, "")
}

// TestResumeMatchesUninterrupted: a run stopped after 2 of its 4 rounds and
// resumed, and a non-private 2-round run resumed to 4 rounds, write the
// same metrics.jsonl (timings aside) and the same model.json as an
// uninterrupted 4-round run.
func TestResumeMatchesUninterrupted(t *testing.T) {
	base := []string{"run", "--dataset", "fashion-mnist-sample", "--clients", "30", "--local-epochs", "1", "--progress", "none"}
	for _, tc := range []struct {
		name  string
		proto []string
		first []string
		then  []string
	}{
		{"apes stopped after 2 of 4", []string{"--protocol", "apes", "--client-cap", "3"}, []string{"--rounds", "4", "--stop-after", "2"}, nil},
		{"nonprivate 2 then 4", []string{"--protocol", "nonprivate"}, []string{"--rounds", "2"}, []string{"--rounds", "4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			whole, part := filepath.Join(dir, "whole"), filepath.Join(dir, "part")
			args := append(append(append([]string{}, base...), tc.proto...), "--rounds", "4", "--out", whole)
			if code, _, errs := runCLI(args...); code != 0 {
				t.Fatalf("uninterrupted run: %d %s", code, errs)
			}
			args = append(append(append(append([]string{}, base...), tc.proto...), tc.first...), "--out", part)
			if code, _, errs := runCLI(args...); code != 0 {
				t.Fatalf("first part: %d %s", code, errs)
			}
			code, out, errs := runCLI(append([]string{"run", "--resume", part, "--progress", "none"}, tc.then...)...)
			if code != 0 || !strings.Contains(out, "after 4 rounds") {
				t.Fatalf("resume: %d %s %s", code, out, errs)
			}
			for _, f := range []string{"metrics.jsonl", "model.json"} {
				a, _ := os.ReadFile(filepath.Join(whole, f))
				b, _ := os.ReadFile(filepath.Join(part, f))
				if len(a) == 0 || stripTimings(a) != stripTimings(b) {
					t.Fatalf("%s differs between the uninterrupted and the resumed run", f)
				}
			}
		})
	}
}

// TestResumeRejects: resuming needs a checkpoint and keeps the run's own
// settings.
func TestResumeRejects(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r")
	if code, _, errs := runCLI("run", "--dataset", "fashion-mnist-sample", "--clients", "20", "--rounds", "2", "--stop-after", "1", "--progress", "none", "--out", out); code != 0 {
		t.Fatalf("%d %s", code, errs)
	}
	empty := filepath.Join(dir, "empty")
	os.MkdirAll(empty, 0o755)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--resume", out, "--lr", "0.5"}, "only --rounds"},
		{[]string{"run", "--resume", empty}, "config"},
		{[]string{"run", "--resume", out, "--rounds", "0"}, "rounds"},
	} {
		code, _, errs := runCLI(tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q (want 2 and %q on one line)", tc.args, code, errs, tc.want)
		}
	}
	// A damaged checkpoint.json or metrics.jsonl is named, with what is
	// wrong, and not reported as an invalid parameter.
	for _, tc := range []struct {
		file, content, want string
	}{
		{rundir.CheckpointFile, `{"round": 1, "weigh`, "checkpoint.json: not valid JSON"},
		{rundir.CheckpointFile, `{"round": 1}`, "checkpoint.json: does not fit this run: checkpoint format 0"},
		{"metrics.jsonl", `{"round": 1, "acc`, "metrics.jsonl: line 1 is not a whole JSON record"},
		{"metrics.jsonl", "", "metrics.jsonl: has 0 rounds but checkpoint.json is after round 1: the file is truncated"},
	} {
		damaged := filepath.Join(dir, "damaged")
		os.RemoveAll(damaged)
		if err := os.CopyFS(damaged, os.DirFS(out)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(damaged, tc.file), []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errs := runCLI("run", "--resume", damaged)
		if code != 2 || !strings.Contains(errs, filepath.Join(damaged, tc.want)) || strings.Contains(errs, "invalid parameter") {
			t.Errorf("%s %q: exit %d, stderr %q (want 2 and %q)", tc.file, tc.content, code, errs, tc.want)
		}
	}
}

// TestResumeAfterEarlyStopKeepsStatement: resuming a run that had stopped
// early runs no round and must state exactly the privacy, accuracy and
// validation of its last round (it once stated epsilon 0, delta 0).
func TestResumeAfterEarlyStopKeepsStatement(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errs := runCLI("run", "--protocol", "ss-simple", "--dataset", "fashion-mnist-sample", "--clients", "50", "--clients-per-round", "20",
		"--local-epochs", "1", "--rounds", "40", "--holdout-clients", "10", "--validate-every", "1", "--patience", "2",
		"--target-epsilon", "8", "--delta", "1e-6", "--progress", "none", "--out", dir)
	if code != 0 || !strings.Contains(errs, "early stop after round") {
		t.Fatalf("first run: %d %s %s", code, out, errs)
	}
	before, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	code, out2, errs := runCLI("run", "--resume", dir, "--progress", "none")
	if code != 0 {
		t.Fatalf("resume: %d %s", code, errs)
	}
	after, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	strip := func(b []byte) string {
		return regexp.MustCompile(`"seconds": [^,]*,`).ReplaceAllString(string(b), "")
	}
	if strip(before) != strip(after) {
		t.Fatalf("summary changed on a resume that ran no round:\n%s\n%s", before, after)
	}
	last := func(s string) string {
		return s[strings.LastIndex(s, "cumulative central epsilon"):strings.LastIndex(s, "; outputs")]
	}
	if last(out) != last(out2) || strings.Contains(out2, "epsilon 0 ") {
		t.Fatalf("statement changed:\n%s\n%s", out, out2)
	}
}
