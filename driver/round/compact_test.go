package round

import (
	"math"
	"slices"
	"testing"

	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

// TestResolveBudgetsUniform checks that the uniform budget held once gives
// every client what the list of the same epsilons gives, bit for bit, and
// that differing budgets stay one per client.
func TestResolveBudgetsUniform(t *testing.T) {
	base := Config{Clients: 1000, Epsilon: 0.7, Delta: 1e-5, Rounds: 3, Seed: 4}
	scaledCfg := base
	scaledCfg.EpsScale = 1.3
	dist := base
	dist.EpsDist = "uniform2"
	for _, tc := range []struct {
		name    string
		cfg     Config
		uniform bool
	}{
		{"epsilon", base, true},
		{"epsilon and eps-scale", scaledCfg, true},
		{"eps-dist", dist, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveBudgets(tc.cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := got.Uniform(); ok != tc.uniform {
				t.Fatalf("Uniform() ok = %v, want %v", ok, tc.uniform)
			}
			list, err := Budgets(tc.cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.uniform {
				// The same epsilons given as a list (an --eps-file).
				explicit := make([]float64, tc.cfg.Clients)
				for i := range explicit {
					explicit[i] = tc.cfg.Epsilon
				}
				if list, err = Budgets(tc.cfg, explicit); err != nil {
					t.Fatal(err)
				}
			}
			if got.Len() != len(list) {
				t.Fatalf("Len %d, list %d", got.Len(), len(list))
			}
			for i, b := range list {
				if !sameBits(got.At(i), b) {
					t.Fatalf("client %d: %+v, list %+v", i, got.At(i), b)
				}
			}
			for _, s := range []float64{0.37, 3} {
				sc := got.Scaled(s)
				for i, b := range scaled(list, s) {
					if !sameBits(sc.At(i), b) {
						t.Fatalf("scale %g, client %d: %+v, want %+v", s, i, sc.At(i), b)
					}
				}
			}
			hi, lo := math.Inf(-1), math.Inf(1)
			for _, b := range list {
				hi, lo = math.Max(hi, b.Epsilon), math.Min(lo, b.Epsilon)
			}
			if got.MaxEpsilon() != hi || got.MinEpsilon() != lo {
				t.Fatalf("max, min %g, %g; want %g, %g", got.MaxEpsilon(), got.MinEpsilon(), hi, lo)
			}
		})
	}
}

// TestListBudgets checks when a list is held as one budget: only when every
// budget is the same bit for bit.
func TestListBudgets(t *testing.T) {
	d := account.RoundDelta(1e-5, 2)
	b := protocol.Budget{Epsilon: 1, Delta: d}
	for _, tc := range []struct {
		name    string
		bs      []protocol.Budget
		uniform bool
	}{
		{"empty", nil, false},
		{"one", []protocol.Budget{b}, true},
		{"equal", []protocol.Budget{b, b, b}, true},
		{"another epsilon", []protocol.Budget{b, b, {Epsilon: 2, Delta: d}}, false},
		{"another delta", []protocol.Budget{b, {Epsilon: 1, Delta: 0}}, false},
		{"negative zero", []protocol.Budget{{Epsilon: 1}, {Epsilon: 1, Delta: math.Copysign(0, -1)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ListBudgets(tc.bs)
			if _, ok := got.Uniform(); ok != tc.uniform {
				t.Fatalf("Uniform() ok = %v, want %v", ok, tc.uniform)
			}
			if !slices.Equal(got.Slice(), tc.bs) && len(tc.bs) > 0 {
				t.Fatalf("Slice() = %v, want %v", got.Slice(), tc.bs)
			}
			parts := ParticipantList([]int{len(tc.bs) - 1})
			if len(tc.bs) > 0 && got.Of(parts)[0] != tc.bs[len(tc.bs)-1] {
				t.Fatalf("Of(last) = %v", got.Of(parts))
			}
		})
	}
}

// TestParticipantsMatchSample checks that a round's participants, held as
// a range when every client takes part, are Sample's.
func TestParticipantsMatchSample(t *testing.T) {
	for _, tc := range []struct {
		name      string
		clients   int
		perRound  int
		poisson   bool
		wantRange bool
	}{
		{"everyone", 50, 50, false, true},
		{"fixed-size sample", 50, 7, false, false},
		{"poisson", 50, 7, true, false},
		{"poisson at rate 1", 50, 50, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := &Prepared{Config: Config{Clients: tc.clients, Seed: 9}, PerRound: tc.perRound, Poisson: tc.poisson}
			for r := 1; r <= 3; r++ {
				p, want := pr.Participants(r), pr.Sample(r)
				if (p.ids == nil) != tc.wantRange {
					t.Fatalf("round %d held as a range: %v, want %v", r, p.ids == nil, tc.wantRange)
				}
				if p.Len() != len(want) || !slices.Equal(p.Slice(), want) {
					t.Fatalf("round %d: %v, want %v", r, p.Slice(), want)
				}
				for i, c := range want {
					if p.At(i) != c {
						t.Fatalf("round %d: At(%d) = %d, want %d", r, i, p.At(i), c)
					}
				}
				if lo, hi := 1, min(4, len(want)); lo < hi && !slices.Equal(p.Block(lo, hi), want[lo:hi]) {
					t.Fatalf("round %d: Block(%d, %d) = %v", r, lo, hi, p.Block(lo, hi))
				}
			}
		})
	}
}
