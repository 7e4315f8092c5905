package round

import (
	"math/rand/v2"
	"slices"
)

// SamplePoisson draws a Poisson sample of [0, n) in increasing order from
// r: index i is kept when the i-th draw of r.Float64() is below q. The
// engine's Poisson sampling (Prepared.Sample) and a deployment's shuffler
// draw their samples with it, so the same stream gives the same sample.
func SamplePoisson(r *rand.Rand, n int, q float64) []int {
	var out []int
	for i := 0; i < n; i++ {
		if r.Float64() < q {
			out = append(out, i)
		}
	}
	return out
}

// SampleFixed draws a uniform m-subset of [0, n) without replacement, in
// increasing order, from r: a partial Fisher-Yates shuffle over a lazily
// materialised permutation. When m >= n every index is returned and r is
// not used. The engine's fixed-size client sampling (Sample) and a
// deployment's shuffler draw their samples with it, so the same stream
// gives the same sample.
func SampleFixed(r *rand.Rand, n, m int) []int {
	if m >= n {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	swapped := map[int]int{}
	get := func(i int) int {
		if v, ok := swapped[i]; ok {
			return v
		}
		return i
	}
	out := make([]int, m)
	for i := 0; i < m; i++ {
		j := i + r.IntN(n-i)
		vi, vj := get(i), get(j)
		swapped[j] = vi
		out[i] = vj
	}
	slices.Sort(out)
	return out
}
