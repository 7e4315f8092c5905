package main

import (
	"io"
	"testing"
)

// TestBadFlags: bad flags exit with status 2 before any data is loaded.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-every", "0"}, {"-nu", "-1"}, {"-nu", "NaN"}, {"-no-such-flag"}, {"-rounds", "x"}} {
		if code := run(args, io.Discard, io.Discard); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
