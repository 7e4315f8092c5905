package roletest

import (
	"flag"
	"path/filepath"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "write the outputs the scripts get into testdata/*.txt (from the in-process transport)")

// TestScripts runs every script in testdata on both transports: the same
// script must print the same output on each.
func TestScripts(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts (%v)", err)
	}
	for _, drv := range []Driver{InProcess{}, GRPC{}} {
		t.Run(drv.Name(), func(t *testing.T) {
			if !*rewrite {
				t.Parallel() // the transports side by side; rewriting runs in process first
			}
			for _, p := range paths {
				t.Run(filepath.Base(p), func(t *testing.T) {
					t.Parallel()
					Run(t, drv, p, *rewrite && drv.Name() == "inprocess")
				})
			}
		})
	}
}
