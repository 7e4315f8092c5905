package audit

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// gameTrials keeps the package's tests to seconds: 4·10^5 draws per input
// (10^5 with -short).
func gameTrials() int64 {
	if testing.Short() {
		return 100_000
	}
	return 400_000
}

// TestMechanismGame runs every randomizer's game twice. Correct mechanism:
// eps_lower must stay at or below the claim; this fails with probability at
// most 5% per mechanism if the mechanism were exactly at its claim, and far
// less in practice because a single threshold test does not reach the
// claim (the figures below are deterministic with the fixed seed).
// Mis-calibrated by 2 (noise half as large): eps_lower must exceed the
// claim. The Gaussian ones are claimed at delta = 1e-3, which gives a
// threshold test enough power at 10^5 trials (at 1e-5 the informative
// tail events are too rare).
func TestMechanismGame(t *testing.T) {
	for _, name := range MechanismNames() {
		t.Run(name, func(t *testing.T) {
			eps := 1.0
			for _, f := range []float64{1, 2} {
				m, err := MechanismFor(name, eps, 1e-3, f)
				if err != nil {
					t.Fatal(err)
				}
				res, err := MechanismGame(context.Background(), m, f, GameConfig{Trials: gameTrials(), Seed: 7})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("F=%v: eps_lower %.3f (claim %v) %s at %.4g, TP %d FP %d of %d", f, res.EpsLower, eps, res.Test, res.Threshold, res.TP, res.FP, res.Eval)
				if f == 1 && res.Violation {
					t.Errorf("correct %s: eps_lower %.3f exceeds the claim %v", name, res.EpsLower, eps)
				}
				if f == 2 && !res.Violation {
					t.Errorf("%s with noise 2x too small: eps_lower %.3f not above the claim %v", name, res.EpsLower, eps)
				}
			}
		})
	}
}

func TestMechanismGameBadInput(t *testing.T) {
	m, err := MechanismFor("laplace", 8, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = MechanismGame(context.Background(), m, 1, GameConfig{Trials: 1000})
	if !errors.Is(err, checks.ErrInvalid) {
		t.Fatalf("1000 trials at eps 8: err = %v, want too few trials", err)
	}
	for _, c := range []struct {
		name       string
		eps, delta float64
		f          float64
	}{
		{"nope", 1, 0, 1}, {"laplace", 0, 0, 1}, {"laplace", math.NaN(), 0, 1},
		{"gaussian", 1, 0, 1}, {"laplace", 1, 0, 0.5},
	} {
		if _, err := MechanismFor(c.name, c.eps, c.delta, c.f); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("MechanismFor(%q, %v, %v, %v): err = %v, want ErrInvalid", c.name, c.eps, c.delta, c.f, err)
		}
	}
}

func TestTrialsNeeded(t *testing.T) {
	for _, eps := range []float64{0.5, 1, 4, 8} {
		n := TrialsNeeded(eps, 0, 0.95)
		if MaxEpsLower(n, 0, 0.95) <= eps || MaxEpsLower(n-1, 0, 0.95) > eps {
			t.Fatalf("TrialsNeeded(%v) = %d is not the threshold", eps, n)
		}
	}
}
