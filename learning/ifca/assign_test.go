package ifca_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/learning/ifca"
)

// repeat returns the label v n times.
func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func cat(parts ...[]int) []int { return slices.Concat(parts...) }

func TestAssignmentAccuracy(t *testing.T) {
	tests := []struct {
		name          string
		chosen, truth []int
		k, groups     int
		matched       int
		relabel       []int
	}{
		{"identity", []int{0, 0, 1, 1}, []int{0, 0, 1, 1}, 2, 2, 4, []int{0, 1}},
		// The labels of hypotheses are arbitrary: swapped is perfect.
		{"swapped labels", []int{1, 1, 0, 0, 0}, []int{0, 0, 1, 1, 1}, 2, 2, 5, []int{1, 0}},
		{"one error", []int{1, 1, 0, 0, 1}, []int{0, 0, 1, 1, 1}, 2, 2, 4, []int{1, 0}},
		// Everyone chose one model: only one group can have it.
		{"collapsed", repeat(0, 10), cat(repeat(0, 4), repeat(1, 6)), 2, 2, 6, []int{1, 0}},
		// k = 1: the largest group's share.
		{"one hypothesis", repeat(0, 5), []int{0, 1, 1, 1, 0}, 1, 2, 3, []int{-1, 0}},
		// Greedy per group (group 0 takes its majority hypothesis 0, 5
		// clients) scores 5 of 13; the best matching gives group 0
		// hypothesis 1 and group 1 hypothesis 0: 4 + 4 = 8.
		{"greedy is not optimal",
			cat(repeat(0, 5), repeat(1, 4), repeat(0, 4)),
			cat(repeat(0, 9), repeat(1, 4)), 2, 2, 8, []int{1, 0}},
		// k = 4 on 2 groups: group 1 split over hypotheses 2 and 3 gets
		// credit for the larger part only.
		{"more hypotheses than groups",
			cat(repeat(1, 3), repeat(2, 2), repeat(3, 1)),
			cat(repeat(0, 3), repeat(1, 3)), 4, 2, 5, []int{1, 2}},
		// 4 rotation groups, 4 hypotheses, a permutation with one stray.
		{"four groups permuted",
			[]int{2, 2, 0, 0, 3, 3, 1, 1, 0},
			[]int{0, 0, 1, 1, 2, 2, 3, 3, 3}, 4, 4, 8, []int{2, 0, 3, 1}},
		{"no clients", nil, nil, 2, 2, 0, []int{0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ifca.AssignmentAccuracy(tc.chosen, tc.truth, tc.k, tc.groups)
			if err != nil {
				t.Fatal(err)
			}
			if a.Matched != tc.matched || a.Clients != len(tc.chosen) {
				t.Errorf("matched %d of %d, want %d of %d", a.Matched, a.Clients, tc.matched, len(tc.chosen))
			}
			want := 0.0
			if len(tc.chosen) > 0 {
				want = float64(tc.matched) / float64(len(tc.chosen))
			}
			if a.Accuracy != want {
				t.Errorf("accuracy %v, want %v", a.Accuracy, want)
			}
			if !slices.Equal(a.Relabel, tc.relabel) {
				t.Errorf("relabel %v, want %v", a.Relabel, tc.relabel)
			}
		})
	}
}

// bruteForce is the best one-to-one relabelling found by trying every
// injection of groups into hypotheses (padding hypotheses mean "none").
func bruteForce(chosen, truth []int, k, groups int) int {
	n := max(k, groups)
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	best := 0
	var rec func(i int)
	rec = func(i int) {
		if i == n {
			m := 0
			for c, h := range chosen {
				if perm[truth[c]] == h {
					m++
				}
			}
			best = max(best, m)
			return
		}
		for j := i; j < n; j++ {
			perm[i], perm[j] = perm[j], perm[i]
			rec(i + 1)
			perm[i], perm[j] = perm[j], perm[i]
		}
	}
	rec(0)
	return best
}

// TestAssignmentAccuracyMatchesBruteForce checks the Hungarian matching
// against every relabelling on random confusion patterns, and that the
// reported relabelling really achieves the reported count.
func TestAssignmentAccuracyMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 6))
	for trial := range 400 {
		k, groups := 1+r.IntN(5), 1+r.IntN(5)
		n := r.IntN(40)
		chosen, truth := make([]int, n), make([]int, n)
		for i := range chosen {
			chosen[i], truth[i] = r.IntN(k), r.IntN(groups)
		}
		a, err := ifca.AssignmentAccuracy(chosen, truth, k, groups)
		if err != nil {
			t.Fatal(err)
		}
		if want := bruteForce(chosen, truth, k, groups); a.Matched != want {
			t.Fatalf("trial %d (k=%d, groups=%d): matched %d, brute force %d", trial, k, groups, a.Matched, want)
		}
		seen := map[int]bool{}
		got := 0
		for c, h := range chosen {
			if a.Relabel[truth[c]] == h {
				got++
			}
		}
		for _, h := range a.Relabel {
			if h >= 0 && seen[h] {
				t.Fatalf("trial %d: relabel %v uses hypothesis %d twice", trial, a.Relabel, h)
			}
			seen[h] = h >= 0
		}
		if got != a.Matched {
			t.Fatalf("trial %d: relabel %v agrees with %d clients, reported %d", trial, a.Relabel, got, a.Matched)
		}
	}
}

func TestAssignmentAccuracyBadInput(t *testing.T) {
	tests := []struct {
		name          string
		chosen, truth []int
		k, groups     int
	}{
		{"k 0", []int{0}, []int{0}, 0, 1},
		{"groups 0", []int{0}, []int{0}, 1, 0},
		{"length mismatch", []int{0, 1}, []int{0}, 2, 2},
		{"hypothesis out of range", []int{2}, []int{0}, 2, 2},
		{"negative hypothesis", []int{-1}, []int{0}, 2, 2},
		{"group out of range", []int{0}, []int{3}, 2, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ifca.AssignmentAccuracy(tc.chosen, tc.truth, tc.k, tc.groups); !errors.Is(err, checks.ErrInvalid) {
				t.Errorf("err = %v, want checks.ErrInvalid", err)
			}
		})
	}
}
