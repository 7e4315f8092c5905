package data

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
)

// checkPartition verifies that parts are disjoint indices in [0, n) and
// returns how many indices they cover.
func checkPartition(t *testing.T, parts [][]int, n int) int {
	t.Helper()
	seen := make([]bool, n)
	covered := 0
	for c, part := range parts {
		for _, i := range part {
			if i < 0 || i >= n {
				t.Fatalf("client %d: index %d out of [0, %d)", c, i, n)
			}
			if seen[i] {
				t.Fatalf("client %d: index %d assigned twice", c, i)
			}
			seen[i] = true
			covered++
		}
	}
	return covered
}

func TestPartitionIID(t *testing.T) {
	tests := []struct {
		name                  string
		n, clients, perClient int
		sizes                 []int // expected size of each client (nil: all perClient)
	}{
		{"FLAME shards", 1000, 100, 6, nil},
		{"exact fit", 60, 10, 6, nil},
		{"split all equally", 10, 3, 0, []int{4, 3, 3}},
		{"split all exact", 12, 4, 0, []int{3, 3, 3, 3}},
		{"one client", 5, 1, 0, []int{5}},
		{"one per client", 7, 7, 0, []int{1, 1, 1, 1, 1, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parts, err := PartitionIID(rng.Stream(1, rng.LabelPartition), tc.n, tc.clients, tc.perClient)
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) != tc.clients {
				t.Fatalf("%d parts, want %d", len(parts), tc.clients)
			}
			total := 0
			for c, p := range parts {
				want := tc.perClient
				if tc.sizes != nil {
					want = tc.sizes[c]
				}
				if len(p) != want {
					t.Errorf("client %d has %d samples, want %d", c, len(p), want)
				}
				total += want
			}
			if got := checkPartition(t, parts, tc.n); got != total {
				t.Errorf("covered %d, want %d", got, total)
			}
		})
	}
}

func TestPartitionIIDDeterministic(t *testing.T) {
	a, _ := PartitionIID(rng.Stream(7, rng.LabelPartition), 500, 20, 10)
	b, _ := PartitionIID(rng.Stream(7, rng.LabelPartition), 500, 20, 10)
	c, _ := PartitionIID(rng.Stream(8, rng.LabelPartition), 500, 20, 10)
	if !slices.EqualFunc(a, b, slices.Equal) {
		t.Error("same seed gave different partitions")
	}
	if slices.EqualFunc(a, c, slices.Equal) {
		t.Error("different seeds gave the same partition")
	}
	// Shards are random: the first client is not simply 0..9.
	if slices.Equal(a[0], []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Error("first shard is not shuffled")
	}
}

func TestPartitionErrors(t *testing.T) {
	labels := make([]uint8, 100)
	for i := range labels {
		labels[i] = uint8(i % 10)
	}
	r := rng.Stream(1, rng.LabelPartition)
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"iid too many", func() error { _, err := PartitionIID(r, 100, 11, 10); return err }, "more clients than samples"},
		{"iid more clients than n", func() error { _, err := PartitionIID(r, 5, 6, 0); return err }, "more clients than samples"},
		{"iid zero clients", func() error { _, err := PartitionIID(r, 5, 0, 1); return err }, "clients must be >= 1"},
		{"iid negative per client", func() error { _, err := PartitionIID(r, 5, 1, -1); return err }, "samples per client"},
		{"iid overflow", func() error { _, err := PartitionIID(r, 5, 1<<40, 1<<40); return err }, "more clients than samples"},
		{"contiguous too many", func() error { _, err := PartitionContiguous(10, 3, 4); return err }, "more clients than samples"},
		{"dirichlet alpha 0", func() error { _, err := PartitionDirichlet(r, labels, 10, 5, 0, 1); return err }, "alpha must be > 0"},
		{"dirichlet alpha negative", func() error { _, err := PartitionDirichlet(r, labels, 10, 5, -1, 1); return err }, "alpha must be > 0"},
		{"dirichlet alpha NaN", func() error { _, err := PartitionDirichlet(r, labels, 10, 5, math.NaN(), 1); return err }, "alpha must be a finite"},
		{"dirichlet alpha Inf", func() error { _, err := PartitionDirichlet(r, labels, 10, 5, math.Inf(1), 1); return err }, "alpha must be a finite"},
		{"dirichlet min size 0", func() error { _, err := PartitionDirichlet(r, labels, 10, 5, 1, 0); return err }, "minimum client size"},
		{"dirichlet zero clients", func() error { _, err := PartitionDirichlet(r, labels, 10, 0, 1, 1); return err }, "clients must be >= 1"},
		{"dirichlet too many", func() error { _, err := PartitionDirichlet(r, labels, 10, 101, 1, 1); return err }, "more clients than samples"},
		{"dirichlet label range", func() error { _, err := PartitionDirichlet(r, labels, 9, 5, 1, 1); return err }, "label 9 of example 9"},
		{"dirichlet min size", func() error { _, err := PartitionDirichlet(r, labels, 10, 34, 1e-3, 3); return err }, "more clients than samples: 34 clients × at least 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, checks.ErrInvalid) {
				t.Errorf("error %q does not wrap checks.ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestPartitionContiguous(t *testing.T) {
	parts, err := PartitionContiguous(10, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}}
	if !slices.EqualFunc(parts, want, slices.Equal) {
		t.Fatalf("got %v, want %v", parts, want)
	}
}

// labelsOf returns n balanced labels of the given class count.
func labelsOf(n, classes int) []uint8 {
	y := make([]uint8, n)
	for i := range y {
		y[i] = uint8(i % classes)
	}
	return y
}

func TestPartitionDirichlet(t *testing.T) {
	labels := labelsOf(5000, 10)
	tests := []struct {
		alpha            float64
		clients, minSize int
	}{
		{0.05, 20, 1},
		{0.1, 100, 5},
		{1e-4, 1000, 5},
		{0.5, 20, 10},
		{1, 50, 1},
		{100, 10, 1},
	}
	for _, tc := range tests {
		parts, err := PartitionDirichlet(rng.Stream(3, rng.LabelPartition), labels, 10, tc.clients, tc.alpha, tc.minSize)
		if err != nil {
			t.Fatalf("alpha=%g: %v", tc.alpha, err)
		}
		if len(parts) != tc.clients {
			t.Fatalf("alpha=%g: %d parts", tc.alpha, len(parts))
		}
		if got := checkPartition(t, parts, len(labels)); got != len(labels) {
			t.Errorf("alpha=%g: covered %d of %d samples", tc.alpha, got, len(labels))
		}
		for c, p := range parts {
			if len(p) < tc.minSize {
				t.Errorf("alpha=%g: client %d has %d < %d samples", tc.alpha, c, len(p), tc.minSize)
			}
		}
	}
}

func TestPartitionDirichletDeterministic(t *testing.T) {
	labels := labelsOf(1000, 10)
	a, err := PartitionDirichlet(rng.Stream(5, rng.LabelPartition), labels, 10, 10, 0.3, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := PartitionDirichlet(rng.Stream(5, rng.LabelPartition), labels, 10, 10, 0.3, 1)
	c, _ := PartitionDirichlet(rng.Stream(6, rng.LabelPartition), labels, 10, 10, 0.3, 1)
	if !slices.EqualFunc(a, b, slices.Equal) {
		t.Error("same seed gave different partitions")
	}
	if slices.EqualFunc(a, c, slices.Equal) {
		t.Error("different seeds gave the same partition")
	}
}

// TestDirichletSkewDecreases measures LabelSkew (mean total-variation
// distance of the clients' label distributions from the global one),
// averaged over 5 seeds of 20 clients × 300 examples, and checks it falls as
// alpha grows. Measured: 0.68, 0.50, 0.33, 0.18, 0.07 at alpha 0.05, 0.3, 1,
// 5, 1000; neighbouring values differ by far more than their seed-to-seed
// spread. At alpha 1000 what remains is the sampling noise of 300 draws, the
// level of an IID split.
func TestDirichletSkewDecreases(t *testing.T) {
	labels := labelsOf(6000, 10)
	alphas := []float64{0.05, 0.3, 1, 5, 1000}
	skew := make([]float64, len(alphas))
	for i, a := range alphas {
		for s := range uint64(5) {
			parts, err := PartitionDirichlet(rng.Stream(s, rng.LabelPartition), labels, 10, 20, a, 1)
			if err != nil {
				t.Fatal(err)
			}
			skew[i] += LabelSkew(labels, 10, parts) / 5
		}
	}
	t.Logf("alpha %v: skew %.3f", alphas, skew)
	for i := 1; i < len(skew); i++ {
		if !(skew[i] < skew[i-1]) {
			t.Errorf("skew at alpha=%g (%.3f) not below alpha=%g (%.3f)", alphas[i], skew[i], alphas[i-1], skew[i-1])
		}
	}
	if skew[0] < 0.5 || skew[len(skew)-1] > 0.1 {
		t.Errorf("skew range %.3f..%.3f, want > 0.5 at alpha 0.05 and < 0.1 at alpha 1000", skew[0], skew[len(skew)-1])
	}
	iid, _ := PartitionIID(rng.Stream(1, rng.LabelPartition), len(labels), 20, 0)
	if s := LabelSkew(labels, 10, iid); s > 0.1 {
		t.Errorf("IID partition has skew %.3f", s)
	}
}

// TestDirichletMean checks the gamma-based Dirichlet sampler: each
// coordinate of Dir(alpha·1_k) has mean 1/k and variance
// (k−1)/(k²(kα+1)).
func TestDirichletMean(t *testing.T) {
	const k, draws = 4, 20000
	for _, alpha := range []float64{0.1, 1, 3} {
		r := rng.Stream(11, rng.LabelPartition)
		p := make([]float64, k)
		var sum, sumSq float64
		for range draws {
			dirichlet(r, alpha, p)
			total := 0.0
			for _, v := range p {
				if v < 0 || math.IsNaN(v) {
					t.Fatalf("alpha=%g: bad proportion %v", alpha, v)
				}
				total += v
			}
			if math.Abs(total-1) > 1e-9 {
				t.Fatalf("alpha=%g: proportions sum to %v", alpha, total)
			}
			sum += p[0]
			sumSq += p[0] * p[0]
		}
		mean := sum / draws
		variance := sumSq/draws - mean*mean
		wantVar := float64(k-1) / (k * k * (k*alpha + 1))
		// Standard error of the mean is sqrt(wantVar/draws) <= 0.0024; allow 5 of them.
		if math.Abs(mean-0.25) > 5*math.Sqrt(wantVar/draws) {
			t.Errorf("alpha=%g: mean %.4f, want 0.25", alpha, mean)
		}
		if math.Abs(variance-wantVar) > 0.1*wantVar {
			t.Errorf("alpha=%g: variance %.5f, want %.5f", alpha, variance, wantVar)
		}
	}
}

func BenchmarkPartitionDirichlet(b *testing.B) {
	labels := labelsOf(60000, 10)
	for b.Loop() {
		if _, err := PartitionDirichlet(rng.Stream(1, rng.LabelPartition), labels, 10, 1000, 0.5, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSampleShard checks that a sampled shard is perClient distinct
// indices of [0, n), a deterministic function of the stream, and uniform:
// every index is drawn with probability perClient/n and every unordered
// pair with the probability of a uniform subset, by chi-square over all
// pairs of a small set (both the scan path and the map path). A sampler
// that favours low indices (the classic bug of drawing t in [0, j) instead
// of [0, j]) is rejected by the same test.
func TestSampleShard(t *testing.T) {
	for _, tc := range []struct{ n, m int }{{6, 2}, {5, 3}, {200, 100}} {
		counts := map[[2]int]int{}
		single := make([]int, tc.n)
		r := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.m)))
		const trials = 60000
		for range trials {
			s, err := SampleShard(r, tc.n, tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if len(s) != tc.m {
				t.Fatalf("n=%d m=%d: %d indices", tc.n, tc.m, len(s))
			}
			seen := map[int]bool{}
			for _, i := range s {
				if i < 0 || i >= tc.n || seen[i] {
					t.Fatalf("n=%d m=%d: bad or repeated index %d in %v", tc.n, tc.m, i, s)
				}
				seen[i] = true
				single[i]++
			}
			if tc.n <= 6 {
				for a := range tc.n {
					for b := a + 1; b < tc.n; b++ {
						if seen[a] && seen[b] {
							counts[[2]int{a, b}]++
						}
					}
				}
			}
		}
		// Each index: Binomial(trials, m/n); 6 standard deviations.
		p := float64(tc.m) / float64(tc.n)
		sd := math.Sqrt(trials * p * (1 - p))
		for i, c := range single {
			if math.Abs(float64(c)-trials*p) > 6*sd {
				t.Errorf("n=%d m=%d: index %d drawn %d times, want %.0f ± %.0f", tc.n, tc.m, i, c, trials*p, sd)
			}
		}
		if tc.n > 6 {
			continue
		}
		// Pairs: P[a and b in S] = m(m-1)/(n(n-1)).
		pp := float64(tc.m*(tc.m-1)) / float64(tc.n*(tc.n-1))
		chi := 0.0
		for a := range tc.n {
			for b := a + 1; b < tc.n; b++ {
				e := trials * pp
				d := float64(counts[[2]int{a, b}]) - e
				chi += d * d / e
			}
		}
		// 15 or 10 pair cells (not independent: the statistic is only a
		// screen); 60 is far beyond any plausible value for a uniform subset.
		if chi > 60 {
			t.Errorf("n=%d m=%d: pair chi-square %.1f", tc.n, tc.m, chi)
		}
	}
	a, _ := SampleShard(rand.New(rand.NewPCG(1, 2)), 1000, 20)
	b, _ := SampleShard(rand.New(rand.NewPCG(1, 2)), 1000, 20)
	if !slices.Equal(a, b) {
		t.Error("not a deterministic function of the stream")
	}
	for _, bad := range []struct{ n, m int }{{10, 0}, {10, 11}, {0, 1}} {
		if _, err := SampleShard(rand.New(rand.NewPCG(1, 2)), bad.n, bad.m); err == nil {
			t.Errorf("n=%d m=%d accepted", bad.n, bad.m)
		}
	}
}

// TestSampleShardInto checks that drawing into a buffer gives SampleShard's
// shard, whatever the buffer held, and uses the buffer when it has room.
func TestSampleShardInto(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n, per    int
		buf       []int
		usesBuf   bool
		wantError bool
	}{
		{"no buffer", 100, 20, nil, false, false},
		{"small buffer", 100, 20, make([]int, 3, 5), false, false},
		{"large buffer holding values", 100, 20, append(make([]int, 0, 64), 5, 9, 11), true, false},
		{"large shard (map)", 1000, 200, make([]int, 0, 256), true, false},
		{"too many", 10, 11, make([]int, 0, 16), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, werr := SampleShard(rng.Stream(3, 1), tc.n, tc.per)
			got, err := SampleShardInto(rng.Stream(3, 1), tc.n, tc.per, tc.buf)
			if (err != nil) != tc.wantError || (werr != nil) != tc.wantError {
				t.Fatalf("errors %v, %v; want error %v", err, werr, tc.wantError)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			if uses := tc.buf != nil && len(got) > 0 && &got[0] == &tc.buf[:1][0]; uses != tc.usesBuf {
				t.Fatalf("uses the buffer: %v, want %v", uses, tc.usesBuf)
			}
		})
	}
}
