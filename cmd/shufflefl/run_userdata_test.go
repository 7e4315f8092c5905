package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// clientsCSV writes a CSV of k clients of 30 rows each: two features,
// a label (a, b or c) that is a linear function of them, and the client.
func clientsCSV(t *testing.T, dir string, k int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("client,f1,f2,label\n")
	for c := range k {
		for i := range 30 {
			x1 := float64((c*7+i*13)%29)/29 - 0.5
			x2 := float64((c*11+i*5)%31)/31 - 0.5
			label := "a"
			switch {
			case x1+x2 > 0.2:
				label = "c"
			case x1 > x2:
				label = "b"
			}
			fmt.Fprintf(&b, "user-%02d,%.4f,%.4f,%s\n", c, x1, x2, label)
		}
	}
	return writeFile(t, filepath.Join(dir, "clients.csv"), b.String())
}

// TestRunCSVNaturalPartition runs shufflefl on a CSV file whose client
// column is the partition: --clients comes from the data, config.yaml
// records the data settings and reruns the same run.
func TestRunCSVNaturalPartition(t *testing.T) {
	dir := t.TempDir()
	f := clientsCSV(t, dir, 12)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI("run", "--dataset", "csv", "--data-file", f, "--client-column", "client",
		"--rounds", "2", "--protocol", "nonprivate", "--out", out, "--progress", "none")
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "nonprivate on csv (288 train / 72 test), model logreg (d=9), 12 clients") {
		t.Errorf("start line:\n%s", stderr)
	}
	if !strings.Contains(stdout, "final test accuracy") {
		t.Fatalf("no final line:\n%s", stdout)
	}
	cfg, err := os.ReadFile(filepath.Join(out, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"partition: natural", "clients: 12", "client-column: client", "test-fraction: 0.2", "data-file: " + f} {
		if !strings.Contains(string(cfg), want+"\n") {
			t.Errorf("config.yaml lacks %q:\n%s", want, cfg)
		}
	}
	again := filepath.Join(dir, "again")
	code, stdout2, stderr2 := runCLI("run", "--config", filepath.Join(out, "config.yaml"), "--out", again, "--progress", "none")
	if code != 0 {
		t.Fatalf("rerun: exit %d:\n%s", code, stderr2)
	}
	final := func(s string) string {
		return strings.SplitN(s[strings.Index(s, "final test accuracy"):], " in ", 2)[0]
	}
	if final(stdout2) != final(stdout) {
		t.Errorf("the rerun from config.yaml differs:\n%s\n%s", final(stdout), final(stdout2))
	}
}

// TestRunUserDataErrors checks that bad data files and settings give one
// line and exit status 2.
func TestRunUserDataErrors(t *testing.T) {
	dir := t.TempDir()
	good := clientsCSV(t, dir, 3)
	file := func(name, content string) string { return writeFile(t, filepath.Join(dir, name), content) }
	nonNumeric := file("nonnum.csv", "f1,label\n1,a\nx,b\n")
	ragged := file("ragged.csv", "f1,f2,label\n1,2,a\n1,b\n")
	noLabel := file("nolabel.csv", "f1,y\n1,a\n2,b\n")
	oneClass := file("oneclass.csv", "f1,label\n1,a\n2,a\n")
	base := []string{"run", "--rounds", "1", "--protocol", "nonprivate", "--progress", "none"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"non-numeric", []string{"--dataset", "csv", "--data-file", nonNumeric}, nonNumeric + `: line 3, column "f1": "x" is not a number`},
		{"ragged", []string{"--dataset", "csv", "--data-file", ragged}, ragged + ": line 3 has 2 fields, the header has 3"},
		{"no label column", []string{"--dataset", "csv", "--data-file", noLabel}, noLabel + `: line 1: no label column "label"`},
		{"one class", []string{"--dataset", "csv", "--data-file", oneClass}, `column "label": one class only`},
		{"missing file", []string{"--dataset", "csv", "--data-file", filepath.Join(dir, "absent.csv")}, "absent.csv"},
		{"clients disagree", []string{"--dataset", "csv", "--data-file", good, "--client-column", "client", "--clients", "5"}, "3 natural clients but --clients 5"},
		{"no data file", []string{"--dataset", "csv"}, "dataset csv needs --data-file"},
		{"flag for another dataset", []string{"--dataset", "blobs", "--fedprox-alpha", "0.5"}, "fedprox-alpha applies only to dataset synthetic-fedprox"},
		{"natural on blobs", []string{"--dataset", "blobs", "--partition", "natural"}, "partition natural needs a dataset with its own clients"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append(slices.Clone(base), "--out", filepath.Join(dir, "out-"+strings.ReplaceAll(tc.name, " ", "-"))), tc.args...)
			code, _, stderr := runCLI(args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2:\n%s", code, stderr)
			}
			checkOneLine(t, stderr, tc.want)
		})
	}
}
