package deploytest

import (
	"flag"
	"path/filepath"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "write the outputs the scripts get into role/roletest/testdata/*.txt (from the in-process transport)")

// scripts is where the role scripts are: role/roletest's testdata.
const scripts = "../../../role/roletest/testdata/*.txt"

// TestScripts runs every script of role/roletest's testdata against the
// deployment's services on both transports: the same script must print the
// same output on each.
func TestScripts(t *testing.T) {
	paths, err := filepath.Glob(scripts)
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
