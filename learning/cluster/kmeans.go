// Package cluster holds the server-side clustering of the group-privacy
// paper (Galli et al., "Group privacy for personalized federated learning",
// Algorithm 1 line 9): Lloyd's k-means over the clients' sanitized
// parameter vectors, started from given centers (the current hypotheses).
//
// Results are deterministic whatever the number of goroutines: every
// floating-point sum is taken in a fixed order (distances coordinate by
// coordinate in a fixed blocking, center sums over points in index order),
// and ties go to the lowest cluster index. The package is pure: no I/O.
package cluster

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
)

// Result is the outcome of Step or KMeans.
type Result struct {
	// Assign[i] is the cluster of point i: the index of its nearest center
	// among those it was assigned against (ties to the lowest index).
	Assign []int
	// Centers are the k new centers, each the mean of its cluster's points;
	// a cluster that received no point keeps its previous center.
	Centers [][]float64
	// Sizes[j] is the number of points in cluster j.
	Sizes []int
	// Inertia is Σ_i ||x_i − c_{Assign[i]}||² for the centers the points
	// were assigned against (Step's input centers; for KMeans the centers of
	// its last iteration, which equal the returned Centers when Converged).
	Inertia float64
	// Iterations is the number of assignment passes run (1 for Step).
	Iterations int
	// Converged reports that the last pass changed no assignment (KMeans;
	// always false for Step).
	Converged bool
}

// Options tune KMeans.
type Options struct {
	// MaxIter bounds the number of Lloyd iterations (assignment + update);
	// 0 means 100.
	MaxIter int
	// Workers is the number of goroutines; 0 means GOMAXPROCS. The result
	// does not depend on it.
	Workers int
}

// block is the number of coordinates processed at a time in the assignment
// pass: k blocks of the centers (k·32 KiB) stay in cache while every point
// of a worker streams through.
const block = 4096

// Step runs one Lloyd iteration: it assigns each of the n points (rows of
// points, dimension d) to its nearest center under the Euclidean distance
// (ties to the lowest index) and returns the means of the clusters as the
// new centers (an empty cluster keeps its center). centers is not modified.
//
// Parallelism: the assignment is parallel over points (each point's
// distances are summed over coordinates in a fixed order), the center update
// parallel over coordinates (each coordinate sums its points in index
// order), so the result is bitwise the same for any Workers.
//
// Memory: the points are read, never copied. Step allocates the k new
// centers (k·d float64), n assignments and n·k partial distances: 8·k·d +
// 16·n·k bytes beyond the input, plus O(Workers) for the goroutines.
//
// Bad input (an error wrapping checks.ErrInvalid): no points or no centers,
// a point or center of the wrong dimension or with a NaN or infinite entry,
// or a squared distance that overflows float64 (entries near 1e154).
func Step(points, centers [][]float64, workers int) (Result, error) {
	if err := check(points, centers); err != nil {
		return Result{}, err
	}
	res, err := step(points, centers, workerCount(workers, len(points)))
	if err != nil {
		return Result{}, err
	}
	res.Iterations = 1
	return res, nil
}

// KMeans runs Lloyd's algorithm from the given initial centers until an
// iteration changes no assignment or opt.MaxIter iterations have run. It
// returns the last iteration's Result: when Converged, Centers are the
// means of the final clusters and are also the centers the points were
// assigned against. init is not modified. Memory, determinism and bad input
// are as for Step.
func KMeans(points, init [][]float64, opt Options) (Result, error) {
	if err := check(points, init); err != nil {
		return Result{}, err
	}
	if opt.MaxIter < 0 {
		return Result{}, checks.Invalidf("k-means: MaxIter must be >= 0, got %d", opt.MaxIter)
	}
	maxIter := opt.MaxIter
	if maxIter == 0 {
		maxIter = 100
	}
	w := workerCount(opt.Workers, len(points))
	centers := init
	var prev []int
	var res Result
	for it := 1; it <= maxIter; it++ {
		var err error
		if res, err = step(points, centers, w); err != nil {
			return Result{}, err
		}
		res.Iterations = it
		if prev != nil && equalInts(prev, res.Assign) {
			res.Converged = true
			break
		}
		prev = res.Assign
		centers = res.Centers
	}
	return res, nil
}

func equalInts(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func workerCount(w, n int) int {
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	return max(1, min(w, n))
}

func check(points, centers [][]float64) error {
	if len(points) == 0 {
		return checks.Invalidf("k-means: no points")
	}
	if len(centers) == 0 {
		return checks.Invalidf("k-means: no centers (k must be >= 1)")
	}
	d := len(centers[0])
	if d == 0 {
		return checks.Invalidf("k-means: centers have dimension 0")
	}
	for j, c := range centers {
		if err := checks.Vector(fmt.Sprintf("k-means center %d", j), c, d); err != nil {
			return err
		}
	}
	for i, p := range points {
		if len(p) != d {
			return checks.Invalidf("k-means point %d has dimension %d, want %d", i, len(p), d)
		}
	}
	// The points' entries are checked by the distance pass itself (a NaN
	// or infinite entry makes its distances non-finite; see step), which
	// spares a separate pass over n·d values.
	return nil
}

// step is one checked Lloyd iteration.
func step(points, centers [][]float64, workers int) (Result, error) {
	n, k, d := len(points), len(centers), len(centers[0])
	dist := make([]float64, n*k)
	// Assignment: parallel over points; each worker walks the coordinate
	// blocks in order and, inside a block, its points, so the k center
	// blocks stay in cache. dist[i*k+j] accumulates block partial sums in
	// block order: the same for any split of the points.
	parallel(workers, n, func(lo, hi int) {
		for b0 := 0; b0 < d; b0 += block {
			b1 := min(b0+block, d)
			for i := lo; i < hi; i++ {
				x := points[i][b0:b1]
				for j := range k {
					dist[i*k+j] += sqDist(x, centers[j][b0:b1])
				}
			}
		}
	})
	for i := range n {
		for j := range k {
			if d := dist[i*k+j]; math.IsNaN(d) || math.IsInf(d, 0) {
				if err := checks.Vector(fmt.Sprintf("k-means point %d", i), points[i], -1); err != nil {
					return Result{}, err
				}
				return Result{}, checks.Invalidf("k-means: the squared distance of point %d to center %d overflows float64", i, j)
			}
		}
	}
	res := Result{Assign: make([]int, n), Sizes: make([]int, k)}
	for i := range n {
		best, bd := 0, dist[i*k]
		for j := 1; j < k; j++ {
			if dist[i*k+j] < bd { // strict: ties keep the lowest index
				best, bd = j, dist[i*k+j]
			}
		}
		res.Assign[i] = best
		res.Sizes[best]++
		res.Inertia += bd
	}
	// Update: parallel over coordinates; each coordinate sums its cluster's
	// points in index order.
	res.Centers = make([][]float64, k)
	members := make([][]int, k)
	for i, a := range res.Assign {
		members[a] = append(members[a], i)
	}
	for j := range k {
		res.Centers[j] = make([]float64, d)
		if len(members[j]) == 0 {
			copy(res.Centers[j], centers[j])
		}
	}
	parallel(workers, d, func(lo, hi int) {
		for j := range k {
			m := members[j]
			if len(m) == 0 {
				continue
			}
			c := res.Centers[j][lo:hi]
			for _, i := range m {
				x := points[i][lo:hi]
				for t := range c {
					c[t] += x[t]
				}
			}
			inv := 1 / float64(len(m))
			for t := range c {
				c[t] *= inv
			}
		}
	})
	return res, nil
}

// sqDist returns ||a − b||² summed with four accumulators in a fixed order.
func sqDist(a, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+3 < len(a); i += 4 {
		d0 := a[i] - b[i]
		d1 := a[i+1] - b[i+1]
		d2 := a[i+2] - b[i+2]
		d3 := a[i+3] - b[i+3]
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(a); i++ {
		d := a[i] - b[i]
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}

// parallel splits [0, n) into at most workers contiguous ranges and runs f
// on each concurrently. The split never affects results: callers only write
// disjoint data per index.
func parallel(workers, n int, f func(lo, hi int)) {
	workers = max(1, min(workers, n))
	if workers == 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*n/workers, (w+1)*n/workers
		wg.Go(func() { f(lo, hi) })
	}
	wg.Wait()
}
