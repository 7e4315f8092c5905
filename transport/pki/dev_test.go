package pki

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/transport/seal"
)

// TestWriteDev: the files are written with their modes, O_EXCL refuses a
// second write, and overwrite replaces the PKI's files (old client keys
// included) and keeps any other file.
func TestWriteDev(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	o := DevOptions{Clients: 3, Hosts: DefaultHosts, Suite: seal.DefaultSuite, Validity: time.Hour}
	files, err := DevFiles(o, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 11+3 {
		t.Fatalf("%d files, want 14", len(files))
	}
	if err := WriteDev(dir, files, false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		mode os.FileMode
	}{{"ca.key", 0o600}, {"ca.crt", 0o644}, {"clients/client-000003.key", 0o600}, {"clients.json", 0o644}} {
		st, err := os.Stat(filepath.Join(dir, c.name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != c.mode {
			t.Errorf("%s: mode %v, want %v", c.name, st.Mode().Perm(), c.mode)
		}
	}
	if err := WriteDev(dir, files, false); err == nil {
		t.Error("a second write without overwrite succeeded")
	}
	keep := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Clients = 1
	if files, err = DevFiles(o, now); err != nil {
		t.Fatal(err)
	}
	if err := WriteDev(dir, files, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "clients", "client-000003.key")); !os.IsNotExist(err) {
		t.Errorf("old client key kept: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("other file removed: %v", err)
	}
}
