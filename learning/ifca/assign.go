package ifca

import (
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// Assignment is IFCA's cluster-assignment accuracy (Ghosh et al. 2020,
// Section 5): how well the hypotheses the clients chose recover the groups
// their data came from, up to the best relabelling of the hypotheses.
type Assignment struct {
	// Accuracy is Matched/Clients: the fraction of clients whose chosen
	// hypothesis is the one Relabel matches to their true group (0 when
	// there are no clients).
	Accuracy float64
	// Matched is the number of such clients; Clients the number scored.
	Matched, Clients int
	// Relabel[g] is the hypothesis matched to true group g, or -1 when g is
	// matched to none (more groups than hypotheses). The matching is one to
	// one: no hypothesis serves two groups.
	Relabel []int
}

// AssignmentAccuracy scores the hypotheses chosen by a set of clients
// (chosen[i] in [0, k)) against their true groups (truth[i] in [0,
// groups)): it finds the one-to-one matching of groups to hypotheses that
// agrees with the most clients (a maximum-weight bipartite matching on the
// groups × hypotheses confusion counts, solved exactly by the Hungarian
// algorithm) and returns the fraction of clients it agrees with.
//
// Labels are arbitrary, so a run whose hypothesis 1 serves rotation 0 and
// hypothesis 0 rotation 1 scores 1. With fewer hypotheses than groups some
// groups have no hypothesis and their clients count as wrong (k = 1 scores
// the largest group's share); with more, a group split over two hypotheses
// gets credit for one of them only. The score of a random choice is not 0:
// with the best matching it is at least the largest group's share divided
// by k, and for k = groups = 2 at least 1/2.
//
// Bad input (an error wrapping checks.ErrInvalid): k or groups below 1,
// slices of different lengths, or a label out of range.
func AssignmentAccuracy(chosen, truth []int, k, groups int) (Assignment, error) {
	if k < 1 || groups < 1 {
		return Assignment{}, checks.Invalidf("assignment accuracy: k = %d hypotheses and %d groups; both must be at least 1", k, groups)
	}
	if len(chosen) != len(truth) {
		return Assignment{}, checks.Invalidf("assignment accuracy: %d choices for %d true groups", len(chosen), len(truth))
	}
	n := max(k, groups)
	counts := make([][]int, n) // counts[g][h]: clients of group g that chose h
	for g := range counts {
		counts[g] = make([]int, n)
	}
	for i, h := range chosen {
		g := truth[i]
		if h < 0 || h >= k {
			return Assignment{}, checks.Invalidf("assignment accuracy: client %d chose hypothesis %d, outside [0, %d)", i, h, k)
		}
		if g < 0 || g >= groups {
			return Assignment{}, checks.Invalidf("assignment accuracy: client %d is in group %d, outside [0, %d)", i, g, groups)
		}
		counts[g][h]++
	}
	match := maxMatching(counts)
	a := Assignment{Clients: len(chosen), Relabel: make([]int, groups)}
	for g := range a.Relabel {
		h := match[g]
		if h >= k {
			h = -1 // a padding hypothesis: the group has none
		} else {
			a.Matched += counts[g][h]
		}
		a.Relabel[g] = h
	}
	if a.Clients > 0 {
		a.Accuracy = float64(a.Matched) / float64(a.Clients)
	}
	return a, nil
}

// maxMatching returns the perfect matching row → column of the square
// matrix w with the largest total weight: the Hungarian algorithm in its
// O(n³) shortest-augmenting-path form with potentials, minimising −w.
func maxMatching(w [][]int) []int {
	n := len(w)
	inf := math.Inf(1)
	// Rows and columns are 1-based; p[j] is the row matched to column j
	// (0: none), u and v the row and column potentials.
	u, v := make([]float64, n+1), make([]float64, n+1)
	p, way := make([]int, n+1), make([]int, n+1)
	minv, used := make([]float64, n+1), make([]bool, n+1)
	for i := 1; i <= n; i++ {
		p[0] = i
		j0 := 0
		for j := range minv {
			minv[j], used[j] = inf, false
		}
		for p[j0] != 0 {
			used[j0] = true
			i0, delta, j1 := p[j0], inf, 0
			for j := 1; j <= n; j++ {
				if used[j] {
					continue
				}
				if cur := float64(-w[i0-1][j-1]) - u[i0] - v[j]; cur < minv[j] {
					minv[j], way[j] = cur, j0
				}
				if minv[j] < delta {
					delta, j1 = minv[j], j
				}
			}
			for j := 0; j <= n; j++ {
				if used[j] {
					u[p[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
		}
		for j0 != 0 {
			j1 := way[j0]
			p[j0] = p[j1]
			j0 = j1
		}
	}
	match := make([]int, n)
	for j := 1; j <= n; j++ {
		match[p[j]-1] = j - 1
	}
	return match
}
