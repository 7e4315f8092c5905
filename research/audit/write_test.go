package audit

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "shufflefl audit mia"},
		{[]string{"--out", "a b"}, "shufflefl audit mia --out 'a b'"},
		{[]string{"--x", "it's"}, `shufflefl audit mia --x 'it'\''s'`},
	} {
		if got := CommandLine("mia", c.args); got != c.want {
			t.Errorf("CommandLine(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// TestWriteReport: the report's files are written; overwrite replaces the
// audit's files and keeps any other.
func TestWriteReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	img := map[string]func(io.Writer) error{"inversion-nu.png": func(w io.Writer) error { _, err := w.Write([]byte("png")); return err }}
	if err := WriteReport(dir, false, "# md\n", []byte("{}\n"), img); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"audit.md", "audit.json", "inversion-nu.png"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Error(err)
		}
	}
	keep := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteReport(dir, true, "# md2\n", []byte("{}\n"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "inversion-nu.png")); !os.IsNotExist(err) {
		t.Errorf("old image kept: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "audit.md")); string(b) != "# md2\n" {
		t.Errorf("audit.md = %q", b)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("other file removed: %v", err)
	}
}
