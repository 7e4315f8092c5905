package sim

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/longtest"
)

// runResumed runs cfg for its rounds but stops after `after` rounds,
// snapshots the engine through JSON, restores the snapshot into a new
// engine built from resumeCfg, and runs that one to completion. It returns
// every round's results and the final weights.
func runResumed(t *testing.T, cfg, resumeCfg round.Config, after int) ([]round.RoundResult, []float64) {
	t.Helper()
	split := loadSample(t)
	e, err := New(cfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.SetStop(func() bool { return e.Round() >= after })
	var out []round.RoundResult
	if _, err := e.Run(func(r round.RoundResult) { out = append(out, r) }); err != nil {
		t.Fatal(err)
	}
	if e.Round() != after {
		t.Fatalf("stopped after %d rounds, want %d", e.Round(), after)
	}
	snap, err := e.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	f, err := New(resumeCfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(back); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Run(func(r round.RoundResult) { out = append(out, r) }); err != nil {
		t.Fatal(err)
	}
	return out, f.Weights()
}

// TestResumeIsExact: a run stopped after round 2 and resumed from its
// snapshot gives bit-for-bit the same rounds (metrics, privacy statements,
// ledger figures) and final model as an uninterrupted run — for a
// non-private run extended from 2 to 4 rounds, and for private runs
// (the accountant and the ledgers, with a cap that refuses clients, are
// restored) interrupted in the middle of their 4 planned rounds.
func TestResumeIsExact(t *testing.T) {
	for _, tc := range []struct {
		name   string
		proto  string
		extend bool
		cap    float64
	}{
		{"nonprivate extended 2 to 4", "nonprivate", true, 0},
		{"apes interrupted", "apes", false, 0},
		{"ldp-laplace with a cap", "ldp-laplace", false, 3},
		{"ss-simple", "ss-simple", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Protocol = tc.proto
			cfg.Rounds = 4
			cfg.LocalEpochs = 1
			cfg.ClientCap = tc.cap
			split := loadSample(t)
			whole, err := New(cfg, split, nil)
			if err != nil {
				t.Fatal(err)
			}
			var want []round.RoundResult
			if _, err := whole.Run(func(r round.RoundResult) { want = append(want, r) }); err != nil {
				t.Fatal(err)
			}
			first := cfg
			if tc.extend {
				first.Rounds = 2
			}
			got, w := runResumed(t, first, cfg, 2)
			sameTrajectory(t, want, got)
			for j, v := range whole.Weights() {
				if math.Float64bits(v) != math.Float64bits(w[j]) {
					t.Fatalf("weight %d: %v resumed, %v uninterrupted", j, w[j], v)
				}
			}
		})
	}
}

// TestRestoreRejects: a snapshot from another run, a corrupted one, or one
// restored into an engine that already ran is refused.
func TestRestoreRejects(t *testing.T) {
	split := loadSample(t)
	cfg := smallConfig()
	cfg.Protocol = "ldp-laplace"
	cfg.Rounds = 2
	e, err := New(cfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Step(); err != nil {
		t.Fatal(err)
	}
	snap, err := e.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(c round.Config) *Engine {
		f, err := New(c, split, nil)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	other := cfg
	other.Seed = 99
	bad := snap
	bad.Weights = append([]float64(nil), snap.Weights...)
	bad.Weights[3] = math.NaN()
	noAcct := snap
	noAcct.Accountant = nil
	for name, tc := range map[string]struct {
		e *Engine
		s Snapshot
	}{
		"already ran":   {e, snap},
		"other seed":    {fresh(other), snap},
		"NaN weight":    {fresh(cfg), bad},
		"no accountant": {fresh(cfg), noAcct},
	} {
		if err := tc.e.Restore(tc.s); err == nil || !IsUsageError(err) {
			t.Errorf("%s: restore gave %v, want a usage error", name, err)
		}
	}
}

// TestExtendedResumeWithinPlan: a run of 2 rounds resumed with --rounds 4
// plans the composition of the 2 rounds it really ran (made under the
// first plan's per-round delta) with the 2 that remain, so its final
// cumulative figures are at most the plan it states — epsilon and delta.
// Before, the resumed run restated a fresh 4-round plan: ss-double ended
// above it in epsilon, ldp-gaussian in delta.
func TestExtendedResumeWithinPlan(t *testing.T) {
	split := loadSample(t)
	for _, tc := range []struct {
		proto   string
		epsilon float64
		options map[string]float64
	}{
		{"ss-double", 200, nil},
		{"ldp-gaussian", 200, nil},
		{"ss-simple", 2000, nil},
		{"apes", 2000, nil},
	} {
		t.Run(tc.proto, func(t *testing.T) {
			if !longtest.Enabled() && tc.proto != "ldp-gaussian" && tc.proto != "ss-simple" {
				t.Skip("without the long tests: one pure and one approximate local randomizer")
			}
			cfg := smallConfig()
			cfg.Protocol, cfg.Epsilon, cfg.Options = tc.proto, tc.epsilon, tc.options
			cfg.LocalEpochs, cfg.Rounds = 1, 2
			snap := runSnapshot(t, cfg, split)
			ext := cfg
			ext.Rounds = 4
			f, err := New(ext, split, nil)
			if err != nil {
				t.Fatal(err)
			}
			fresh := f.PrivacyPlan()
			if err := f.Restore(snap); err != nil {
				t.Fatal(err)
			}
			plan := f.PrivacyPlan()
			sum, err := f.Run(nil)
			if err != nil {
				t.Fatal(err)
			}
			p := sum.Privacy
			if plan.Done != 2 || plan.Rounds != 4 {
				t.Fatalf("plan %+v: want 2 rounds done of 4", plan)
			}
			if p.CumulativeEpsilon > plan.Epsilon*(1+1e-12) || p.CumulativeDelta > plan.Delta*(1+1e-12) {
				t.Fatalf("the extended run ends at (%v, %v), above its plan (%v, %v) (a fresh 4-round plan says (%v, %v))",
					p.CumulativeEpsilon, p.CumulativeDelta, plan.Epsilon, plan.Delta, fresh.Epsilon, fresh.Delta)
			}
			// Every planned round ran and reported: the plan is what was spent.
			if math.Abs(p.CumulativeEpsilon-plan.Epsilon) > 1e-9*plan.Epsilon {
				t.Errorf("the extended run ends at epsilon %v, its plan says %v", p.CumulativeEpsilon, plan.Epsilon)
			}
		})
	}
}
