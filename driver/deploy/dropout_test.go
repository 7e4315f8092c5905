package deploy

import (
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/transport/store"
)

// TestDropouts: at the deadline a round closes with the reports it has.
// With at least the minimum it is released, and the accountant's statement
// counts the reporters actually shuffled (2 of 4) at the true sampling
// rate; below the minimum it is void and nothing is released or spent.
func TestDropouts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		min      int
		released bool
	}{
		{"above the minimum", 2, true},
		{"below the minimum", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("ss-double", 4, 1)
			h := newHarnessTimeout(t, cfg, tc.min, 1500*time.Millisecond)
			h.waitRound(t, 1)
			before := h.an.Model()
			for i := 0; i < 2; i++ {
				if _, err := h.submit(t, i, 1, sealedReport(t, h, 1, 2)); err != nil { // the top level: a non-zero estimate
					t.Fatal(err)
				}
			}
			h.waitFinished(t, 1)
			e, err := h.an.cfg.DB.Round(1)
			if err != nil {
				t.Fatal(err)
			}
			log := h.an.Accountant().Log()
			if len(log) != 1 {
				t.Fatalf("accountant has %d statements, want 1", len(log))
			}
			st := log[0]
			changed := false
			for j, v := range h.an.Model() {
				changed = changed || v != before[j]
			}
			if tc.released {
				if e.Status != store.RoundReleased || !st.Released || st.Reporters != 2 || st.Sampled != 4 || st.SampleRate != 1 {
					t.Fatalf("round %s, statement %+v: want released with 2 reporters of 4 sampled at rate 1", e.Status, st)
				}
				if !changed {
					t.Fatal("a released round left the model unchanged")
				}
			} else {
				if e.Status != store.RoundVoid || st.Released || changed || h.an.Accountant().Spent().Epsilon != 0 {
					t.Fatalf("round %s, statement %+v, model changed %v: want void, nothing released or spent", e.Status, st, changed)
				}
				r, err := h.sdb.InboxRound(1)
				if err != nil || r.Status != store.InboxVoid {
					t.Fatalf("shuffler's round: %+v, %v; want void", r, err)
				}
			}
		})
	}
}
