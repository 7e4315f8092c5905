package shard

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/shufflefl/shufflefl/internal/rng"
)

// The two-stage shuffle's output must be a uniform permutation of the
// round's reports whatever their order and split over input shards. The
// test runs twoStageTrials shuffles of n labelled reports for each setting
// and tests the n! output orders against the uniform distribution with
// Pearson's chi-square at twoStageAlpha (n! - 1 degrees of freedom); the
// negative controls, which are not uniform, must be rejected by the same
// test. With 1e5 trials a cell of 5! = 120 expects 833 counts: a bias of a
// few percent in one cell is already detected.
const (
	twoStageTrials = 100_000
	twoStageAlpha  = 1e-7
)

// rank returns the index of perm (a permutation of 0..n-1) among the n!
// permutations (its Lehmer code).
func rank(perm []int) int {
	r := 0
	for i := range perm {
		smaller := 0
		for _, q := range perm[i+1:] {
			if q < perm[i] {
				smaller++
			}
		}
		r = r*(len(perm)-i) + smaller
	}
	return r
}

func factorial(n int) int {
	f := 1
	for i := 2; i <= n; i++ {
		f *= i
	}
	return f
}

// chiSquare returns Pearson's statistic of counts against the uniform
// distribution and its critical value at twoStageAlpha.
func chiSquare(counts []int) (stat, crit float64) {
	n := 0
	for _, c := range counts {
		n += c
	}
	e := float64(n) / float64(len(counts))
	for _, c := range counts {
		stat += (float64(c) - e) * (float64(c) - e) / e
	}
	return stat, distuv.ChiSquared{K: float64(len(counts) - 1)}.Quantile(1 - twoStageAlpha)
}

// shuffler is a sharded shuffle under test: it permutes the reports held
// by the input shards over out stage-2 shards with generators drawn from r.
type shuffler func(r *rand.Rand, in [][]int, out int) []int

func gens(r *rand.Rand, k int) []*rand.Rand {
	g := make([]*rand.Rand, k)
	for i := range g {
		g[i] = rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
	}
	return g
}

func twoStage(r *rand.Rand, in [][]int, out int) []int {
	res, err := TwoStage(in, gens(r, len(in)), gens(r, out))
	if err != nil {
		panic(err)
	}
	return res
}

// noPermute is a negative control: stage 2 keeps the arrival order.
func noPermute(r *rand.Rand, in [][]int, out int) []int {
	buckets := make([][]int, out)
	for i, g := range gens(r, len(in)) {
		buckets = Scatter(g, in[i], buckets)
	}
	var res []int
	for _, b := range buckets {
		res = append(res, b...)
	}
	return res
}

// roundRobin is a negative control: stage 1 sends report k of the input to
// stage-2 shard k mod out (a deterministic split).
func roundRobin(r *rand.Rand, in [][]int, out int) []int {
	buckets := make([][]int, out)
	k := 0
	for _, items := range in {
		for _, it := range items {
			buckets[k%out] = append(buckets[k%out], it)
			k++
		}
	}
	var res []int
	for b, g := range gens(r, out) {
		Permute(g, buckets[b])
		res = append(res, buckets[b]...)
	}
	return res
}

// independent is a negative control: each input shard permutes its own
// reports and the outputs are concatenated (no stage 2 exchange).
func independent(r *rand.Rand, in [][]int, _ int) []int {
	var res []int
	for i, g := range gens(r, len(in)) {
		items := append([]int(nil), in[i]...)
		Permute(g, items)
		res = append(res, items...)
	}
	return res
}

// permCounts runs trials shuffles of n reports split as sizes over out
// stage-2 shards and counts each output permutation.
func permCounts(f shuffler, seed uint64, sizes []int, out, trials int) []int {
	n := 0
	for _, s := range sizes {
		n += s
	}
	counts := make([]int, factorial(n))
	r := rng.Stream(seed, 0x5a4d)
	in := make([][]int, len(sizes))
	for trial := 0; trial < trials; trial++ {
		k := 0
		for i, s := range sizes {
			in[i] = in[i][:0]
			for range s {
				in[i] = append(in[i], k)
				k++
			}
		}
		counts[rank(f(r, in, out))]++
	}
	return counts
}

func TestTwoStageUniform(t *testing.T) {
	cases := []struct {
		sizes []int // reports per input shard, in input order
		out   int   // stage-2 shards
	}{
		{[]int{2, 2}, 2}, {[]int{3, 1}, 3}, {[]int{1, 1, 2}, 2}, {[]int{4}, 3},
		{[]int{2, 3}, 2}, {[]int{1, 2, 2}, 3}, {[]int{5, 0}, 2}, {[]int{0, 4, 1}, 3},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(c.sizes, "->", c.out), func(t *testing.T) {
			stat, crit := chiSquare(permCounts(twoStage, uint64(100+i), c.sizes, c.out, twoStageTrials))
			t.Logf("chi-square %.1f, critical value %.1f", stat, crit)
			if stat > crit {
				t.Errorf("chi-square %.1f > %.1f: the output permutation is not uniform", stat, crit)
			}
		})
	}
}

// TestTwoStageControlsRejected shows the test can fail: a stage 2 without
// the permutation, a deterministic stage-1 split, and independent
// per-shard shuffles are all rejected by TestTwoStageUniform's statistic.
func TestTwoStageControlsRejected(t *testing.T) {
	controls := []struct {
		name string
		f    shuffler
	}{{"no stage-2 permutation", noPermute}, {"round-robin stage 1", roundRobin}, {"independent shards", independent}}
	for _, c := range controls {
		for i, sizes := range [][]int{{2, 2}, {2, 3}} {
			stat, crit := chiSquare(permCounts(c.f, uint64(200+i), sizes, 2, twoStageTrials))
			t.Logf("%s, %v: chi-square %.0f, critical value %.1f", c.name, sizes, stat, crit)
			if stat <= crit {
				t.Errorf("%s, %v: chi-square %.1f <= %.1f: the control was not rejected", c.name, sizes, stat, crit)
			}
		}
	}
}

func TestTwoStageErrors(t *testing.T) {
	r := rng.Stream(1, 2)
	in := [][]int{{1, 2}, {3}}
	for name, f := range map[string]func() error{
		"scatter generators": func() error { _, err := TwoStage(in, gens(r, 1), gens(r, 2)); return err },
		"no stage 2":         func() error { _, err := TwoStage(in, gens(r, 2), nil); return err },
		"nil generator":      func() error { _, err := TwoStage(in, []*rand.Rand{nil, r}, gens(r, 2)); return err },
	} {
		if f() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestRanges(t *testing.T) {
	for _, c := range []struct {
		dim, shards int
		want        []Range
	}{
		{7, 1, []Range{{0, 7}}},
		{7, 3, []Range{{0, 3}, {3, 5}, {5, 7}}},
		{6, 3, []Range{{0, 2}, {2, 4}, {4, 6}}},
		{3, 3, []Range{{0, 1}, {1, 2}, {2, 3}}},
	} {
		got, err := Ranges(c.dim, c.shards)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("Ranges(%d, %d) = %v, %v; want %v", c.dim, c.shards, got, err, c.want)
		}
		for j := range c.dim {
			if s := owner(got, j); j < got[s].Lo || j >= got[s].Hi {
				t.Errorf("Ranges(%d, %d): owner(%d) = %d", c.dim, c.shards, j, s)
			}
		}
	}
	for _, c := range [][2]int{{0, 1}, {3, 0}, {3, 4}} {
		if _, err := Ranges(c[0], c[1]); err == nil {
			t.Errorf("Ranges(%d, %d): no error", c[0], c[1])
		}
	}
}
