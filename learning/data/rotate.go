package data

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// RotationGroups assigns each of clients clients to one of groups groups,
// uniformly at random among the balanced assignments: group sizes differ by
// at most one (client c gets c mod groups, then the assignment is shuffled).
// This is the clustered-FL setting of IFCA (Ghosh et al. 2020) and of Galli
// et al., Section 5, where each group's data is transformed differently
// (RotateImages by 90°·g, or RotateFeatures by 2πg/groups); the paper's
// Bernoulli(0.5) rotation of FEMNIST differs only in that its group sizes
// are random. It panics if groups < 1 or clients < 0 (validate user input
// with package checks first).
func RotationGroups(r *rand.Rand, clients, groups int) []int {
	if groups < 1 || clients < 0 {
		panic(fmt.Sprintf("data.RotationGroups: need groups >= 1 and clients >= 0, got %d and %d", groups, clients))
	}
	g := make([]int, clients)
	for c := range g {
		g[c] = c % groups
	}
	r.Shuffle(len(g), func(i, j int) { g[i], g[j] = g[j], g[i] })
	return g
}

// RotateImages returns a copy of ds whose images, rows×cols each, are
// rotated counter-clockwise by quarterTurns × 90° (any integer; taken mod 4;
// as numpy.rot90). An odd number of turns swaps the shape: the result has
// Rows = cols and Cols = rows. Labels, targets and groups are copied
// unchanged. It panics if rows*cols != ds.Features (a programming error).
func RotateImages(ds *Dataset, rows, cols, quarterTurns int) *Dataset {
	if rows < 1 || cols < 1 || rows*cols != ds.Features {
		panic(fmt.Sprintf("data.RotateImages: %dx%d images do not match %d features", rows, cols, ds.Features))
	}
	q := ((quarterTurns % 4) + 4) % 4
	out := ds.Subset(nil)
	out.X = make([]float32, len(ds.X))
	out.Y = clone(ds.Y)
	out.Target = clone(ds.Target)
	out.Group = clone(ds.Group)
	out.Rows, out.Cols = rows, cols
	if q%2 == 1 {
		out.Rows, out.Cols = cols, rows
	}
	f := ds.Features
	// src[k] is the source pixel of destination pixel k.
	src := make([]int, f)
	nr, nc := out.Rows, out.Cols
	for i := range nr {
		for j := range nc {
			var si, sj int
			switch q {
			case 0:
				si, sj = i, j
			case 1: // counter-clockwise: out[i][j] = in[j][cols-1-i]
				si, sj = j, cols-1-i
			case 2:
				si, sj = rows-1-i, cols-1-j
			case 3: // clockwise: out[i][j] = in[rows-1-j][i]
				si, sj = rows-1-j, i
			}
			src[i*nc+j] = si*cols + sj
		}
	}
	for n := range ds.Len() {
		in, dst := ds.X[n*f:(n+1)*f], out.X[n*f:(n+1)*f]
		for k, s := range src {
			dst[k] = in[s]
		}
	}
	return out
}

// RotateFeatures returns a copy of ds whose features are rotated by angle
// radians in each coordinate plane (x₀, x₁), (x₂, x₃), ...; with an odd
// feature count the last coordinate is left alone. For two features (as in
// synthetic-clusters) this is the rotation of the plane by angle. It is the
// non-image counterpart of RotateImages: give group g of k the angle
// 2πg/k. The map is orthogonal, so norms and distances are preserved.
func RotateFeatures(ds *Dataset, angle float64) *Dataset {
	out := ds.Subset(nil)
	out.X = make([]float32, len(ds.X))
	out.Y = clone(ds.Y)
	out.Target = clone(ds.Target)
	out.Group = clone(ds.Group)
	sin, cos := math.Sincos(angle)
	f := ds.Features
	for n := range ds.Len() {
		in, dst := ds.X[n*f:(n+1)*f], out.X[n*f:(n+1)*f]
		j := 0
		for ; j+1 < f; j += 2 {
			a, b := float64(in[j]), float64(in[j+1])
			dst[j] = float32(cos*a - sin*b)
			dst[j+1] = float32(sin*a + cos*b)
		}
		if j < f {
			dst[j] = in[j]
		}
	}
	return out
}

func clone[T any](v []T) []T {
	if v == nil {
		return nil
	}
	return append([]T(nil), v...)
}
