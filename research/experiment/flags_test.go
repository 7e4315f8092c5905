package experiment

import (
	"flag"
	"io"
	"testing"
)

// TestDPrivacyFlags: each group-privacy experiment's flags default to its
// own settings, the grid only where it has one and the rotated settings
// only for dprivacy-rotated.
func TestDPrivacyFlags(t *testing.T) {
	for _, e := range dprivacy {
		fs := flag.NewFlagSet(e.Name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o := DPrivacyOptions{Rotated: DefaultRotated}
		nus, ks := o.RegisterFlags(fs, e)
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
		if o.Seeds != e.Seeds || *nus != e.Nus || *ks != e.Ks {
			t.Errorf("%s: seeds %d, nus %q, ks %q; want %d, %q, %q", e.Name, o.Seeds, *nus, *ks, e.Seeds, e.Nus, e.Ks)
		}
		if got, want := fs.Lookup("groups") != nil, e.Name == "dprivacy-rotated"; got != want {
			t.Errorf("%s: --groups defined %v, want %v", e.Name, got, want)
		}
		if e.Name == "dprivacy-rotated" && o.Rotated != DefaultRotated {
			t.Errorf("%s: rotated %+v, want %+v", e.Name, o.Rotated, DefaultRotated)
		}
	}
}
