package seal

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden-*.hex")

// golden messages: sealed once by this package (format version 1) and
// committed, so that a change to the format or the associated data that
// would strand stored messages fails this test.
var golden = []struct {
	file  string
	suite Suite
	label Label
	spec  Spec
	vals  []float64
}{
	{"golden-x25519-coord.hex", X25519, Coord(17), perCoord(20), []float64{0.5}},
	{"golden-x25519-meta.hex", X25519, Meta, perCoord(20), []float64{4}},
	{"golden-x25519-report.hex", X25519, Report, whole(3), []float64{-1, 0, 1e300}},
	{"golden-xwing-coord.hex", XWing, Coord(3), perCoord(20), []float64{-2.25}},
}

func TestGolden(t *testing.T) {
	for _, g := range golden {
		path := filepath.Join("testdata", g.file)
		k := testKey(t, g.suite)
		if *update {
			m := mustSeal(t, testSealer(t, k, "run-1"), 2, g.label, g.vals...)
			if err := os.WriteFile(path, []byte(hex.EncodeToString(m)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := hex.DecodeString(strings.TrimSpace(string(raw)))
		if err != nil {
			t.Fatal(err)
		}
		l, v, err := testOpener(t, k, 2, g.spec).Open(msg)
		if err != nil {
			t.Fatalf("%s: %v", g.file, err)
		}
		if l != g.label || len(v) != len(g.vals) {
			t.Fatalf("%s: %v %v", g.file, l, v)
		}
		for i := range v {
			if v[i] != g.vals[i] {
				t.Errorf("%s: value %d = %v, want %v", g.file, i, v[i], g.vals[i])
			}
		}
		if !bytes.Equal(msg[:2], []byte("SF")) {
			t.Errorf("%s: magic", g.file)
		}
	}
}
