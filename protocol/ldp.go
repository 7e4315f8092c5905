package protocol

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
)

func init() {
	Register("ldp-laplace", "LDP-FL: per-coordinate clipping to [-C, C] and Laplace noise, eps_i/d per coordinate, no shuffle credit", newLDPLaplace)
	Register("ldp-gaussian", "LDP-FL: per-coordinate clipping to [-C, C] and analytic Gaussian noise with (eps_i, delta_i), no shuffle credit", newLDPGaussian)
	RegisterInfo("ldp-laplace", Info{
		Summary: "local DP: per-coordinate clipping and Laplace noise, no shuffler",
		Paper:   "LDP-FL baseline (FLAME's evaluation; PLDP of APES when budgets differ)",
		Budgets: budgetsPersonalizedCoord,
	})
	RegisterInfo("ldp-gaussian", Info{
		Summary: "local DP: per-coordinate clipping and analytic Gaussian noise, no shuffler",
		Paper:   "LDP-FL baseline with the analytic Gaussian mechanism (Balle and Wang 2018)",
		Budgets: budgetsPersonalizedDelta,
	})
}

// LDPLaplace is the local-DP baseline (LDP-FL in FLAME's evaluation, PLDP in
// APES when budgets differ): every client clips each coordinate of its update
// to [-C, C] and adds Laplace noise so that the whole update satisfies
// eps_i-LDP: by basic composition over the d coordinates each coordinate gets
// eps_i/d, and under the replace-one relation a coordinate's L1 sensitivity is
// 2C, so the noise scale is 2C·d/eps_i. The analyzer averages; the estimate is
// unbiased for the mean of the clipped updates. No shuffler is involved, so
// the central guarantee equals the local one.
type LDPLaplace struct {
	clip   float64
	secure bool
}

func newLDPLaplace(p Params) (Protocol, error) {
	if err := extraKeys(p); err != nil {
		return nil, err
	}
	if err := checks.Positive("clip", p.Clip); err != nil {
		return nil, err
	}
	return LDPLaplace{clip: p.Clip, secure: p.Secure}, nil
}

// Name implements Protocol.
func (LDPLaplace) Name() string { return "ldp-laplace" }

// Check implements Protocol.
func (LDPLaplace) Check(s Shape, budgets []Budget) error {
	if err := s.Validate(); err != nil {
		return err
	}
	return checkBudgets(budgets, false)
}

// Mode implements Protocol: reports go straight to the analyzer.
func (LDPLaplace) Mode() ShuffleMode { return NoShuffle }

// Encode implements Protocol.
func (m LDPLaplace) Encode(r *rand.Rand, s Shape, update []float64, b Budget, out *Report) error {
	if err := checkUpdate(s, update); err != nil {
		return err
	}
	newLap := mechanism.NewLaplace
	if m.secure {
		newLap = mechanism.NewSecureLaplace
	}
	lap, err := newLap(b.Epsilon/float64(s.Dim), 2*m.clip)
	if err != nil {
		return fmt.Errorf("ldp-laplace: %w", err)
	}
	clipCoordinates(update, m.clip)
	out.Reset()
	out.Coords = nil
	out.Values = append(out.Values, update...)
	lap.Perturb(r, out.Values)
	return nil
}

// Pad implements Protocol: no padding.
func (LDPLaplace) Pad(*rand.Rand, Shape, []int64, func(int, float64)) error { return nil }

// Estimate implements Protocol: the per-coordinate mean (unbiased).
func (LDPLaplace) Estimate(_ *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	return meanEstimate(s, agg, dst)
}

// Account implements Protocol: central = local = eps_i per round (the analyzer
// sees every report).
func (LDPLaplace) Account(s Shape, budgets []Budget) (Privacy, error) {
	return localOnlyPrivacy(s, budgets, false, "ldp (no shuffle credit): central = local")
}

// localOnlyPrivacy is the accounting of protocols without amplification;
// withDelta says whether the mechanism spends the budgets' deltas. For a
// mechanism that spends a delta (the Gaussian, which protects the whole
// vector at once), eps_i/d is NOT a guarantee for one coordinate — at
// (2, 1e-3) and d = 4 one coordinate's true epsilon at that delta is 0.87,
// not 0.5 — so the per-coordinate figures repeat the whole-update ones,
// which cover any single coordinate.
func localOnlyPrivacy(s Shape, budgets []Budget, withDelta bool, bound string) (Privacy, error) {
	if len(budgets) == 0 {
		return Privacy{}, checks.Invalidf("no participant budgets to account")
	}
	eps := budgetEpsilons(budgets)
	coord := make([]float64, len(eps))
	maxDelta := 0.0
	for i, e := range eps {
		coord[i] = e / float64(s.Dim)
		if withDelta {
			coord[i] = e
			maxDelta = math.Max(maxDelta, budgets[i].Delta)
		}
	}
	st := Summarize(eps)
	cs := Summarize(coord)
	return Privacy{
		Private:             true,
		LocalEpsilon:        st,
		LocalCoordEpsilon:   cs,
		LocalDelta:          maxDelta,
		CentralEpsilon:      st.Max,
		CentralDelta:        maxDelta,
		CentralCoordEpsilon: cs.Max,
		CentralCoordDelta:   maxDelta,
		Bound:               bound,
	}, nil
}

// LDPGaussian is the Gaussian local-DP baseline: every client clips each
// coordinate to [-C, C] (so the L2 sensitivity of the whole update under
// replace-one is 2C·sqrt(d)) and adds Gaussian noise calibrated by the
// analytic Gaussian mechanism (Balle and Wang 2018) to (eps_i, delta_i), valid
// for every epsilon. No shuffle credit.
type LDPGaussian struct {
	clip   float64
	secure bool
	// gauss caches the calibrated mechanism per (eps_i, delta_i, d): the
	// analytic Gaussian's calibration is a root search, far costlier than
	// one client's noise at small d.
	gauss *sync.Map
}

func newLDPGaussian(p Params) (Protocol, error) {
	if err := extraKeys(p); err != nil {
		return nil, err
	}
	if err := checks.Positive("clip", p.Clip); err != nil {
		return nil, err
	}
	return LDPGaussian{clip: p.Clip, secure: p.Secure, gauss: new(sync.Map)}, nil
}

// Name implements Protocol.
func (LDPGaussian) Name() string { return "ldp-gaussian" }

// Check implements Protocol: every budget needs delta in (0, 1).
func (LDPGaussian) Check(s Shape, budgets []Budget) error {
	if err := s.Validate(); err != nil {
		return err
	}
	return checkBudgets(budgets, true)
}

// Mode implements Protocol.
func (LDPGaussian) Mode() ShuffleMode { return NoShuffle }

// Encode implements Protocol.
func (m LDPGaussian) Encode(r *rand.Rand, s Shape, update []float64, b Budget, out *Report) error {
	if err := checkUpdate(s, update); err != nil {
		return err
	}
	key := [3]float64{b.Epsilon, b.Delta, float64(s.Dim)}
	var g mechanism.Gaussian
	if v, ok := m.gauss.Load(key); ok {
		g = v.(mechanism.Gaussian)
	} else {
		newGauss := mechanism.NewGaussian
		if m.secure {
			newGauss = mechanism.NewSecureGaussian
		}
		var err error
		if g, err = newGauss(b.Epsilon, b.Delta, 2*m.clip*math.Sqrt(float64(s.Dim))); err != nil {
			return fmt.Errorf("ldp-gaussian: %w", err)
		}
		m.gauss.Store(key, g)
	}
	clipCoordinates(update, m.clip)
	out.Reset()
	out.Coords = nil
	out.Values = append(out.Values, update...)
	g.Perturb(r, out.Values)
	return nil
}

// Pad implements Protocol.
func (LDPGaussian) Pad(*rand.Rand, Shape, []int64, func(int, float64)) error { return nil }

// Estimate implements Protocol.
func (LDPGaussian) Estimate(_ *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	return meanEstimate(s, agg, dst)
}

// Account implements Protocol. The per-coordinate figure is the whole
// update's (eps_i, delta_i): the Gaussian mechanism protects the whole vector
// at once, and eps_i/d would not be a guarantee for one coordinate.
func (LDPGaussian) Account(s Shape, budgets []Budget) (Privacy, error) {
	return localOnlyPrivacy(s, budgets, true, "ldp (no shuffle credit): central = local")
}
