// Package shard splits a round's shuffle over several shufflers without
// changing what the analyzer sees, so that the round's privacy statement
// (which names the round's n) stays true. Two schemes, one per shuffle
// mode (the proofs are in docs/DEPLOYMENT.md, "Sharding"):
//
//   - Coord, for per-coordinate protocols: S shards, shard s owning the
//     coordinates [Lo, Hi) of its Range, each padding and permuting its own
//     columns. Every column is permuted on its own by one shuffler already,
//     so the batch has the distribution of one shuffler's.
//   - TwoStage, for whole-report protocols, which need one uniform
//     permutation of all the round's reports: each input shard sends each
//     of its reports to a stage-2 shard chosen uniformly and independently
//     (Scatter), each stage-2 shard permutes what it received (Permute),
//     and the output is the stage-2 shards' lists in order. The composed
//     permutation is uniform whatever the input order and split.
//
// Like package role, it performs no I/O: a driver moves the messages.
package shard

import (
	"fmt"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
)

// Range is a shard's half-open coordinate range [Lo, Hi).
type Range struct{ Lo, Hi int }

// Ranges splits the coordinates [0, dim) into shards contiguous ranges
// whose sizes differ by at most one, in coordinate order.
func Ranges(dim, shards int) ([]Range, error) {
	if err := checks.IntAtLeast("dimension", dim, 1); err != nil {
		return nil, err
	}
	if err := checks.IntAtLeast("shards", shards, 1); err != nil {
		return nil, err
	}
	if shards > dim {
		return nil, checks.Invalidf("%d shards for %d coordinates: a shard must own at least one", shards, dim)
	}
	out := make([]Range, shards)
	lo := 0
	for s := range out {
		hi := lo + dim/shards
		if s < dim%shards {
			hi++
		}
		out[s] = Range{Lo: lo, Hi: hi}
		lo = hi
	}
	return out, nil
}

// checkRanges checks that rs cover [0, dim) contiguously, in order.
func checkRanges(rs []Range, dim int) error {
	if len(rs) == 0 {
		return checks.Invalidf("no shard ranges")
	}
	next := 0
	for s, r := range rs {
		if r.Lo != next || r.Hi <= r.Lo {
			return checks.Invalidf("shard %d range [%d, %d): ranges must cover [0, %d) contiguously, each non-empty", s, r.Lo, r.Hi, dim)
		}
		next = r.Hi
	}
	if next != dim {
		return checks.Invalidf("shard ranges end at %d, not at the dimension %d", next, dim)
	}
	return nil
}

// Owner returns the index of the range of rs (Ranges' output, or any
// contiguous cover of [0, dim) in order) that holds coordinate j; a
// metadata label (negative) belongs to shard 0.
func Owner(rs []Range, j int) int {
	if j < 0 {
		return 0
	}
	return owner(rs, j)
}

// owner returns the index of the range holding coordinate j (rs checked).
func owner(rs []Range, j int) int {
	lo, hi := 0, len(rs)
	for hi-lo > 1 {
		m := (lo + hi) / 2
		if rs[m].Lo <= j {
			lo = m
		} else {
			hi = m
		}
	}
	return lo
}

// Scatter is stage 1 of the two-stage shuffle: it appends each of items to
// one of buckets chosen uniformly and independently with r (r.IntN), and
// returns the buckets. Which bucket an item goes to depends on nothing but
// r: not on the item, its position, or the input shard it came from.
func Scatter[P any](r *rand.Rand, items []P, buckets [][]P) [][]P {
	for _, it := range items {
		b := r.IntN(len(buckets))
		buckets[b] = append(buckets[b], it)
	}
	return buckets
}

// Permute is stage 2 of the two-stage shuffle: a uniform permutation of
// one stage-2 shard's items with r (Fisher-Yates).
func Permute[P any](r *rand.Rand, items []P) {
	r.Shuffle(len(items), func(a, b int) { items[a], items[b] = items[b], items[a] })
}

// TwoStage runs the two-stage shuffle of the reports held by the input
// shards in, over len(permute) stage-2 shards: input shard i scatters its
// reports with scatter[i], stage-2 shard b permutes what it received with
// permute[b], and the result is the stage-2 shards' lists concatenated in
// shard order. It is a uniformly random permutation of all the reports,
// for any input order and any split over input shards, when the
// generators are independent and uniform (docs/DEPLOYMENT.md, "Sharding").
func TwoStage[P any](in [][]P, scatter, permute []*rand.Rand) ([]P, error) {
	if len(scatter) != len(in) {
		return nil, checks.Invalidf("%d scatter generators for %d input shards", len(scatter), len(in))
	}
	if len(permute) == 0 {
		return nil, checks.Invalidf("no stage-2 shards")
	}
	buckets := make([][]P, len(permute))
	n := 0
	for i, items := range in {
		if scatter[i] == nil {
			return nil, fmt.Errorf("input shard %d: %w", i, checks.Invalidf("no generator"))
		}
		buckets = Scatter(scatter[i], items, buckets)
		n += len(items)
	}
	out := make([]P, 0, n)
	for b, items := range buckets {
		if permute[b] == nil {
			return nil, fmt.Errorf("stage-2 shard %d: %w", b, checks.Invalidf("no generator"))
		}
		Permute(permute[b], items)
		out = append(out, items...)
	}
	return out, nil
}
