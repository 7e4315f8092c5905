package ifcaref_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/ifca/ifcaref"
	"github.com/shufflefl/shufflefl/learning/ifca/regress"
)

var thetaStar = [][]float64{{5, 6}, {4, -4.5}}

// synthetic builds the paper's Section 5.1 task for one seed.
func synthetic(t testing.TB, seed uint64) (train, val []ifcaref.Client, groups []int, init [][]float64) {
	t.Helper()
	conv := func(label uint64) ([]ifcaref.Client, []int) {
		d, err := regress.SyntheticLinear(rng.Stream(seed, rng.LabelPartition, label), thetaStar, 100, 10)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := d.Clients(regress.Linear{In: 2}, 0.1, 10)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]ifcaref.Client, len(cs))
		for i, c := range cs {
			out[i] = c
		}
		return out, d.Group
	}
	train, groups = conv(0)
	val, _ = conv(1)
	r := rng.Stream(seed, rng.LabelInit)
	init = [][]float64{{r.NormFloat64(), r.NormFloat64()}, {r.NormFloat64(), r.NormFloat64()}}
	return train, val, groups, init
}

func synthConfig(k int, nu float64, seed uint64) ifcaref.Config {
	return ifcaref.Config{K: k, PerRound: 7, MaxRounds: 500, ValidateEvery: 1, Patience: 6, Seed: seed,
		Client: ifcaref.ClientConfig{Epochs: 1, Nu: nu}}
}

func hypErr(hyps [][]float64) float64 {
	var worst float64
	for _, s := range thetaStar {
		best := math.Inf(1)
		for _, h := range hyps {
			best = min(best, math.Hypot(h[0]-s[0], h[1]-s[1]))
		}
		worst = max(worst, best)
	}
	return worst
}

// TestSimulateUnsanitizedRecoversGroups is the paper's ablation of Figure
// 1d-f: without sanitization two hypotheses converge to θ*₁ and θ*₂ (the
// intercept u ~ U[0,1) is not modelled, so they stop within about 0.1);
// one hypothesis (Figure 1a-c) ends between them.
func TestSimulateUnsanitizedRecoversGroups(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		train, val, groups, init := synthetic(t, seed)
		sum, err := ifcaref.Simulate(synthConfig(2, 0, seed), init, train, val, groups, nil)
		if err != nil {
			t.Fatal(err)
		}
		if e := hypErr(sum.Best); e > 0.3 {
			t.Errorf("seed %d: two hypotheses %v are %.2f from θ*", seed, sum.Best, e)
		}
		if !math.IsInf(sum.MaxLeakage, 1) {
			t.Errorf("seed %d: unsanitized max leakage %v, want +Inf", seed, sum.MaxLeakage)
		}
		one, err := ifcaref.Simulate(synthConfig(1, 0, seed), init[:1], train, val, groups, nil)
		if err != nil {
			t.Fatal(err)
		}
		if e := hypErr(one.Best); e < 3 {
			t.Errorf("seed %d: one hypothesis %v is within %.2f of both θ*", seed, one.Best, e)
		}
		if one.BestLoss < 3*sum.BestLoss {
			t.Errorf("seed %d: one-hypothesis loss %v not clearly above two-hypothesis loss %v", seed, one.BestLoss, sum.BestLoss)
		}
	}
}

// TestSimulateLeakage checks the ledger of a sanitized run: every
// participation costs n/ν = 2/5 = 0.4 (Section 5.1), so a client's total is
// 0.4 times its participations, the maximum is 0.4 times the most
// participations, and the per-group maxima never exceed it.
func TestSimulateLeakage(t *testing.T) {
	train, val, groups, init := synthetic(t, 3)
	cfg := synthConfig(2, 5, 3)
	cfg.Patience = 0
	cfg.MaxRounds = 60
	var last ifcaref.Round
	sum, err := ifcaref.Simulate(cfg, init, train, val, groups, func(r ifcaref.Round) { last = r })
	if err != nil {
		t.Fatal(err)
	}
	if sum.Rounds != 60 || sum.Stopped {
		t.Fatalf("rounds %d stopped %v, want 60 without early stop", sum.Rounds, sum.Stopped)
	}
	maxPart, total := 0, 0
	for c := range sum.Ledger.Clients() {
		p := sum.Ledger.Participations(c)
		total += p
		maxPart = max(maxPart, p)
		if got, want := sum.Ledger.Spent(c), 0.4*float64(p); math.Abs(got-want) > 1e-12 {
			t.Fatalf("client %d: spent %v after %d participations, want %v", c, got, p, want)
		}
	}
	if total != 60*7 {
		t.Errorf("%d participations charged, want 60·7 (no declines without a cap)", total)
	}
	if math.Abs(sum.MaxLeakage-0.4*float64(maxPart)) > 1e-12 {
		t.Errorf("max leakage %v, want 0.4·%d", sum.MaxLeakage, maxPart)
	}
	if slices.Max(last.GroupMaxLeakage) != sum.MaxLeakage {
		t.Errorf("group maxima %v, overall %v", last.GroupMaxLeakage, sum.MaxLeakage)
	}
	for g := range last.GroupMedianLeakage {
		var members []int
		for c, gc := range groups {
			if gc == g {
				members = append(members, c)
			}
		}
		if _, med := sum.Ledger.LeakageStats(members); med != last.GroupMedianLeakage[g] {
			t.Errorf("group %d median %v, ledger says %v", g, last.GroupMedianLeakage[g], med)
		}
	}
}

func TestSimulateCap(t *testing.T) {
	train, val, groups, init := synthetic(t, 4)
	cfg := synthConfig(2, 5, 4)
	cfg.Patience, cfg.MaxRounds = 0, 80
	cfg.Client.Cap = 0.8 // two participations
	declined := 0
	sum, err := ifcaref.Simulate(cfg, init, train, val, groups, func(r ifcaref.Round) { declined += r.Declined[ifcaref.DeclineCap] })
	if err != nil {
		t.Fatal(err)
	}
	if sum.MaxLeakage > 0.8+1e-12 {
		t.Errorf("max leakage %v above the cap 0.8", sum.MaxLeakage)
	}
	if declined == 0 {
		t.Errorf("no client declined in 80 rounds with a cap of 2 participations")
	}
}

func TestSimulateDeterministicAcrossWorkers(t *testing.T) {
	train, val, groups, init := synthetic(t, 5)
	run := func(workers int) ifcaref.Summary {
		cfg := synthConfig(2, 5, 5)
		cfg.Workers = workers
		sum, err := ifcaref.Simulate(cfg, init, train, val, groups, nil)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	a, b := run(1), run(4)
	if a.Rounds != b.Rounds || a.BestLoss != b.BestLoss {
		t.Fatalf("1 worker: %d rounds, loss %v; 4 workers: %d rounds, loss %v", a.Rounds, a.BestLoss, b.Rounds, b.BestLoss)
	}
	for j := range a.Final {
		if !slices.Equal(a.Final[j], b.Final[j]) {
			t.Fatalf("hypothesis %d differs between 1 and 4 workers", j)
		}
	}
}

func TestSimulateBadInput(t *testing.T) {
	train, val, groups, init := synthetic(t, 1)
	elevenDim, err := regress.NewClient(regress.ReLUNet{In: 3, Hidden: 2}, [][]float64{{1, 2, 3}}, []float64{1}, 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mod    func(c *ifcaref.Config)
		init   [][]float64
		train  []ifcaref.Client
		groups []int
	}{
		{"nu<0", func(c *ifcaref.Config) { c.Client.Nu = -1 }, nil, nil, nil},
		{"nu NaN", func(c *ifcaref.Config) { c.Client.Nu = math.NaN() }, nil, nil, nil},
		{"k<1", func(c *ifcaref.Config) { c.K = 0 }, [][]float64{}, nil, nil},
		{"k>U", func(c *ifcaref.Config) { c.K, c.PerRound = 3, 2 }, [][]float64{{0, 0}, {1, 1}, {2, 2}}, nil, nil},
		{"U>clients", func(c *ifcaref.Config) { c.PerRound = 1000 }, nil, nil, nil},
		{"init count", func(c *ifcaref.Config) {}, [][]float64{{0, 0}}, nil, nil},
		{"init dims", func(c *ifcaref.Config) {}, [][]float64{{0, 0}, {0}}, nil, nil},
		{"init NaN", func(c *ifcaref.Config) {}, [][]float64{{0, math.NaN()}, {0, 0}}, nil, nil},
		{"model dimension", func(c *ifcaref.Config) {}, nil, append(slices.Clone(train[:10]), elevenDim), nil},
		{"epochs", func(c *ifcaref.Config) { c.Client.Epochs = 0 }, nil, nil, nil},
		{"cap without noise", func(c *ifcaref.Config) { c.Client.Nu, c.Client.Cap = 0, 1 }, nil, nil, nil},
		{"groups length", func(c *ifcaref.Config) {}, nil, nil, []int{0, 1}},
		{"rounds", func(c *ifcaref.Config) { c.MaxRounds = 0 }, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := synthConfig(2, 5, 1)
			tc.mod(&cfg)
			in, tr, g := init, train, groups
			if tc.init != nil {
				in = tc.init
			}
			if tc.train != nil {
				tr, g = tc.train, nil
			}
			if tc.groups != nil {
				g = tc.groups
			}
			if _, err := ifcaref.Simulate(cfg, in, tr, val, g, nil); !errors.Is(err, checks.ErrInvalid) {
				t.Errorf("err = %v, want checks.ErrInvalid", err)
			}
		})
	}
}
