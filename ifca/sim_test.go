package ifca_test

import (
	"math"
	"testing"

	"shufflefl/ifca"
	"shufflefl/ifca/regress"
	"shufflefl/rng"
)

var thetaStar = [][]float64{{5, 6}, {4, -4.5}}

func synthetic(t testing.TB, seed uint64) (train, val []ifca.Client, groups []int, init [][]float64) {
	t.Helper()
	tr, err := regress.SyntheticLinear(rng.Stream(seed, rng.LabelPartition), thetaStar, 100, 10)
	if err != nil {
		t.Fatal(err)
	}
	va, err := regress.SyntheticLinear(rng.Stream(seed, rng.LabelPartition, 1), thetaStar, 100, 10)
	if err != nil {
		t.Fatal(err)
	}
	conv := func(d regress.Dataset) []ifca.Client {
		cs, err := d.Clients(regress.Linear{In: 2}, 0.1, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			c.RMSE = false
		}
		out := make([]ifca.Client, len(cs))
		for i, c := range cs {
			out[i] = c
		}
		return out
	}
	r := rng.Stream(seed, rng.LabelInit)
	init = [][]float64{{r.NormFloat64(), r.NormFloat64()}, {r.NormFloat64(), r.NormFloat64()}}
	return conv(tr), conv(va), tr.Group, init
}

func synthConfig(k int, nu float64, seed uint64) ifca.Config {
	return ifca.Config{K: k, PerRound: 7, MaxRounds: 500, ValidateEvery: 1, Patience: 6, Seed: seed,
		Client: ifca.ClientConfig{Epochs: 1, Nu: nu}}
}

func TestSyntheticScratch(t *testing.T) {
	for _, tc := range []struct {
		k  int
		nu float64
	}{{2, 5}, {2, 50}} {
		for seed := uint64(1); seed <= 5; seed++ {
			train, val, groups, init := synthetic(t, seed)
			cfg := synthConfig(tc.k, 5, seed)
			cfg.Patience = int(tc.nu)
			sum, err := ifca.Simulate(cfg, init[:tc.k], train, val, groups, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("k=%d nu=%v seed=%d rounds=%d best=%d loss=%.3f hyps=%.2f max=%.2f median=%.2f", tc.k, tc.nu, seed, sum.Rounds, sum.BestRound, sum.BestLoss, sum.Best, sum.MaxLeakage, sum.MedianLeakage)
		}
	}
	_ = math.Inf
}
