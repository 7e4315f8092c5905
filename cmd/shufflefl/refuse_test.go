package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRefusedBeforeWork: bad flags and files, and work that cannot fit,
// are refused at once with exit status 2 and one line naming the flag,
// before any data is loaded or anything is computed (each case of the
// hostile-input review: a bound that grew to 24 GB, a run that died out of
// memory in calibration, a client that loaded data for 4.5 s before its
// missing credentials failed it, SQLite's raw error for a file that is no
// database, a negative deadline taken as a minute, a minimum no round can
// meet).
func TestRefusedBeforeWork(t *testing.T) {
	certs := filepath.Join(t.TempDir(), "certs")
	if code, _, errs := runCertsCmd("--out", certs, "--clients", "2"); code != 0 {
		t.Fatalf("certs: %s", errs)
	}
	out := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"bound with n = 2^63-1", []string{"bound", "clones", "--eps0", "4", "--n", "9223372036854775807", "--delta", "1e-6"}, "n = 9223372036854775807"},
		{"three billion clients", []string{"run", "--clients", "3000000000", "--partition", "sampled", "--samples-per-client", "2",
			"--dataset", "fashion-mnist-sample", "--rounds", "1", "--out", filepath.Join(out, "big")}, "--clients 3000000000"},
		{"negative round timeout", []string{"deploy-local", "--clients", "5", "--rounds", "1", "--dataset", "fashion-mnist-sample",
			"--round-timeout", "-5s", "--out", filepath.Join(out, "t")}, "--round-timeout -5s"},
		{"minimum above the clients", []string{"deploy-local", "--clients", "5", "--rounds", "1", "--dataset", "fashion-mnist-sample",
			"--min-reports", "10", "--out", filepath.Join(out, "m")}, "--min-reports 10"},
		{"missing credentials", []string{"client", "--certs", "/nonexistent", "--shuffler", "127.0.0.1:7999", "--id", "client-000001",
			"--db", filepath.Join(out, "c.db")}, "--certs /nonexistent"},
		{"a database that is not one", []string{"client", "--certs", certs, "--shuffler", "127.0.0.1:7999", "--id", "client-000001",
			"--db", "/etc/passwd"}, "--db"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			code, _, errs := runCLI(c.args...)
			if code != 2 || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
				t.Fatalf("exit %d, stderr %q: want 2 and one line naming %q", code, errs, c.want)
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Fatalf("refused after %v: the check must come before any work", el)
			}
		})
	}
}
