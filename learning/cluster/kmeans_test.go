package cluster

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
)

// naiveStep is an independent, obviously correct Lloyd iteration.
func naiveStep(points, centers [][]float64) (assign []int, out [][]float64, inertia float64) {
	k, d := len(centers), len(centers[0])
	assign = make([]int, len(points))
	for i, p := range points {
		best := math.Inf(1)
		for j, c := range centers {
			var s float64
			for t := range p {
				s += (p[t] - c[t]) * (p[t] - c[t])
			}
			if s < best {
				best, assign[i] = s, j
			}
		}
		inertia += best
	}
	out = make([][]float64, k)
	for j := range k {
		out[j] = make([]float64, d)
		cnt := 0
		for i, a := range assign {
			if a == j {
				cnt++
				for t := range d {
					out[j][t] += points[i][t]
				}
			}
		}
		if cnt == 0 {
			copy(out[j], centers[j])
			continue
		}
		for t := range d {
			out[j][t] /= float64(cnt)
		}
	}
	return assign, out, inertia
}

func blobs(r *rand.Rand, n, d int, means [][]float64, sd float64) [][]float64 {
	pts := make([][]float64, n)
	for i := range pts {
		m := means[i%len(means)]
		pts[i] = make([]float64, d)
		for t := range d {
			pts[i][t] = m[t] + sd*r.NormFloat64()
		}
	}
	return pts
}

func TestStepMatchesNaive(t *testing.T) {
	r := rng.NewSeeded(1)
	for _, tc := range []struct{ n, d, k int }{{7, 2, 2}, {50, 9000, 3}, {13, 5, 5}, {4, 3, 1}} {
		pts := blobs(r, tc.n, tc.d, [][]float64{make([]float64, tc.d)}, 1)
		init := blobs(r, tc.k, tc.d, [][]float64{make([]float64, tc.d)}, 1)
		res, err := Step(pts, init, 3)
		if err != nil {
			t.Fatal(err)
		}
		a, c, in := naiveStep(pts, init)
		if !slices.Equal(a, res.Assign) {
			t.Errorf("%+v: assignments %v, naive %v", tc, res.Assign, a)
		}
		if math.Abs(in-res.Inertia) > 1e-9*in {
			t.Errorf("%+v: inertia %v, naive %v", tc, res.Inertia, in)
		}
		for j := range c {
			for t2 := range c[j] {
				if math.Abs(c[j][t2]-res.Centers[j][t2]) > 1e-12 {
					t.Fatalf("%+v: center %d[%d] = %v, naive %v", tc, j, t2, res.Centers[j][t2], c[j][t2])
				}
			}
		}
		sum := 0
		for _, s := range res.Sizes {
			sum += s
		}
		if sum != tc.n || res.Iterations != 1 || res.Converged {
			t.Errorf("%+v: sizes %v iterations %d converged %v", tc, res.Sizes, res.Iterations, res.Converged)
		}
	}
}

func TestKMeansDeterministicAcrossWorkers(t *testing.T) {
	r := rng.NewSeeded(2)
	const d = 10_000
	means := [][]float64{make([]float64, d), make([]float64, d), make([]float64, d)}
	for t2 := range d {
		means[1][t2] = 0.5
		means[2][t2] = -0.5
	}
	pts := blobs(r, 61, d, means, 1)
	init := [][]float64{pts[0], pts[1], pts[2]}
	var ref Result
	for i, w := range []int{1, 2, 3, 8, 100} {
		res, err := KMeans(pts, init, Options{Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			ref = res
			continue
		}
		if !slices.Equal(res.Assign, ref.Assign) || res.Inertia != ref.Inertia || res.Iterations != ref.Iterations {
			t.Fatalf("workers=%d: result differs from workers=1", w)
		}
		for j := range res.Centers {
			if !slices.Equal(res.Centers[j], ref.Centers[j]) {
				t.Fatalf("workers=%d: center %d differs bitwise", w, j)
			}
		}
	}
	if !ref.Converged {
		t.Errorf("did not converge in %d iterations", ref.Iterations)
	}
	// Separated blobs are recovered: points i, i+3, ... share a cluster.
	for i := range pts {
		if ref.Assign[i] != ref.Assign[i%3] {
			t.Fatalf("point %d in cluster %d, point %d in %d", i, ref.Assign[i], i%3, ref.Assign[i%3])
		}
	}
}

func TestKMeansConvergedCentersAreMeans(t *testing.T) {
	pts := [][]float64{{0, 0}, {0, 1}, {10, 10}, {10, 11}, {11, 10}}
	res, err := KMeans(pts, [][]float64{{0, 0}, {1, 1}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Converged || !slices.Equal(res.Assign, []int{0, 0, 1, 1, 1}) {
		t.Fatalf("result %+v", res)
	}
	want := [][]float64{{0, 0.5}, {31.0 / 3, 31.0 / 3}}
	for j := range want {
		for t2 := range want[j] {
			if math.Abs(res.Centers[j][t2]-want[j][t2]) > 1e-12 {
				t.Errorf("center %d = %v, want %v", j, res.Centers[j], want[j])
			}
		}
	}
	// Inertia w.r.t. the returned centers: 2·0.25 + (1/9+1/9+4/9)... computed directly.
	var in float64
	for i, p := range pts {
		c := res.Centers[res.Assign[i]]
		in += (p[0]-c[0])*(p[0]-c[0]) + (p[1]-c[1])*(p[1]-c[1])
	}
	if math.Abs(in-res.Inertia) > 1e-12 {
		t.Errorf("inertia %v, want %v", res.Inertia, in)
	}
}

func TestTiesAndEmptyClusters(t *testing.T) {
	// Point (0) is equidistant from centers -1 and 1: the lowest index wins.
	res, err := Step([][]float64{{0}}, [][]float64{{-1}, {1}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Assign[0] != 0 {
		t.Errorf("tie went to %d, want 0", res.Assign[0])
	}
	// Identical centers: everything goes to the first; the second is empty
	// and keeps its center.
	res, err = Step([][]float64{{1, 1}, {3, 3}}, [][]float64{{0, 0}, {0, 0}, {100, 100}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Sizes, []int{2, 0, 0}) {
		t.Errorf("sizes %v", res.Sizes)
	}
	if !slices.Equal(res.Centers[1], []float64{0, 0}) || !slices.Equal(res.Centers[2], []float64{100, 100}) {
		t.Errorf("empty clusters moved: %v", res.Centers)
	}
	if !slices.Equal(res.Centers[0], []float64{2, 2}) {
		t.Errorf("center 0 = %v", res.Centers[0])
	}
}

func TestInputNotModified(t *testing.T) {
	pts := [][]float64{{0, 0}, {5, 5}}
	init := [][]float64{{1, 1}, {4, 4}}
	_, _ = KMeans(pts, init, Options{})
	if !slices.Equal(init[0], []float64{1, 1}) || !slices.Equal(pts[1], []float64{5, 5}) {
		t.Errorf("input modified")
	}
}

func TestBadInput(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name    string
		pts     [][]float64
		centers [][]float64
		opt     Options
	}{
		{"no points", nil, [][]float64{{1}}, Options{}},
		{"no centers", [][]float64{{1}}, nil, Options{}},
		{"zero dim", [][]float64{{}}, [][]float64{{}}, Options{}},
		{"point dim", [][]float64{{1, 2}}, [][]float64{{1}}, Options{}},
		{"center dims differ", [][]float64{{1}}, [][]float64{{1}, {1, 2}}, Options{}},
		{"NaN point", [][]float64{{nan}}, [][]float64{{1}}, Options{}},
		{"Inf center", [][]float64{{1}}, [][]float64{{math.Inf(1)}}, Options{}},
		{"MaxIter<0", [][]float64{{1}}, [][]float64{{1}}, Options{MaxIter: -1}},
		{"Inf point", [][]float64{{1, 2}, {3, math.Inf(-1)}}, [][]float64{{1, 1}}, Options{}},
		{"NaN late in a long point", [][]float64{append(make([]float64, 9000), nan)}, [][]float64{make([]float64, 9001)}, Options{}},
		{"overflow", [][]float64{{1e300}}, [][]float64{{-1e300}}, Options{}},
	} {
		if _, err := KMeans(tc.pts, tc.centers, tc.opt); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: KMeans err = %v", tc.name, err)
		}
		if tc.opt.MaxIter == 0 {
			if _, err := Step(tc.pts, tc.centers, 0); !errors.Is(err, checks.ErrInvalid) {
				t.Errorf("%s: Step err = %v", tc.name, err)
			}
		}
	}
}

func ExampleKMeans() {
	// Sanitized releases of 6 clients; the current hypotheses start k-means.
	points := [][]float64{{5.1, 6.2}, {4.8, 5.7}, {5.3, 6.1}, {4.1, -4.4}, {3.8, -4.7}, {4.2, -4.3}}
	hypotheses := [][]float64{{4, 4}, {3, -3}}
	res, err := KMeans(points, hypotheses, Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Assign, res.Sizes)
	fmt.Printf("%.2f %.2f\n", res.Centers[0], res.Centers[1])
	// Output:
	// [0 0 0 1 1 1] [3 3]
	// [5.07 6.00] [4.03 -4.47]
}

var benchSink float64

// BenchmarkStep is one k-means step over 100 vectors of 1.2 million
// coordinates (960 MB of float64), the size of the paper's CNN.
func BenchmarkStep(b *testing.B) {
	const n, d = 100, 1_200_000
	r := rand.New(rand.NewPCG(1, 2))
	pts := make([][]float64, n)
	for i := range pts {
		pts[i] = make([]float64, d)
		for t := range pts[i] {
			pts[i][t] = r.NormFloat64()
		}
	}
	// The floor: one streaming read of the same 960 MB (a sum), to compare
	// ratios on a loaded machine. Step reads the points twice (distances,
	// then means).
	b.Run(fmt.Sprintf("n=%d/d=%d/read-once", n, d), func(b *testing.B) {
		b.SetBytes(int64(n * d * 8))
		start := processCPU()
		for b.Loop() {
			var s0, s1 float64
			for _, p := range pts {
				for t := 0; t+1 < len(p); t += 2 {
					s0 += p[t]
					s1 += p[t+1]
				}
			}
			benchSink = s0 + s1
		}
		b.ReportMetric(float64(processCPU()-start)/float64(b.N)/1e6, "cpu-ms/op")
	})
	for _, k := range []int{2, 4} {
		b.Run(fmt.Sprintf("n=%d/d=%d/k=%d", n, d, k), func(b *testing.B) {
			b.SetBytes(int64(n * d * 8))
			start := processCPU()
			for b.Loop() {
				if _, err := Step(pts, pts[:k], 0); err != nil {
					b.Fatal(err)
				}
			}
			// Process CPU time over all workers: without contention the
			// wall time is about this divided by the cores used.
			b.ReportMetric(float64(processCPU()-start)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}
