package audit

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/research/bound"
)

// OneRunConfig configures the one-run canary audit.
type OneRunConfig struct {
	Train round.Config
	Split data.Split
	// Canaries is m, the number of canary clients (the first m clients of
	// the population); each is included with probability 1/2.
	Canaries int
	// Guesses is the number of canaries guessed on each side: the top
	// Guesses scores are guessed included, the bottom Guesses excluded
	// (fixed before the run, as Steinke et al. require). 0: m/4.
	Guesses int
	// Scale is the canary's size relative to the largest update clipping
	// lets through (1: every coordinate at ±C for per-coordinate clipping,
	// L2 norm C for dp-central).
	Scale      float64
	Confidence float64 // 0.95 if zero
}

// OneRunResult is the outcome of the one-run audit.
type OneRunResult struct {
	Protocol   string   `json:"protocol"`
	EpsClaimed *float64 `json:"eps_claimed"` // the run's cumulative central epsilon (nil: none)
	Delta      float64  `json:"delta"`
	Canaries   int      `json:"canaries"`
	Included   int      `json:"included"`
	Guesses    int      `json:"guesses"` // r = 2·Guesses
	Correct    int      `json:"correct"`
	EpsLower   float64  `json:"eps_lower"`
	Confidence float64  `json:"confidence"`
	Violation  bool     `json:"violation"`
	// MeanIn, MeanOut, SDIn, SDOut: the cosine scores of included and
	// excluded canaries.
	MeanIn  float64 `json:"cos_mean_included"`
	MeanOut float64 `json:"cos_mean_excluded"`
	SDIn    float64 `json:"cos_sd_included"`
	SDOut   float64 `json:"cos_sd_excluded"`
	// EpsGaussian is Andrew et al.'s estimate: the epsilon at Delta of the
	// Gaussian mechanism whose mean shift over standard deviation matches
	// the two cosine distributions (an estimate, not a bound; nil when the
	// fit is degenerate: perfectly separated canaries, infinite estimate).
	EpsGaussian *float64 `json:"eps_gaussian_estimate"`
	// Warning, if set, says that clipping or sparsification erases most
	// of the canary.
	Warning  string  `json:"warning,omitempty"`
	TestAcc  float64 `json:"test_accuracy"`
	Seconds  float64 `json:"seconds"`
	Rounds   int     `json:"rounds"`
	ClientsN int     `json:"clients"`
}

// CanaryWarning says how much of a canary of the given scale survives the
// protocol's clipping and sparsification, or "" if all of it does. Sparse
// protocols keep k (FLAME) or b (S-APES) of the d coordinates; a scale
// above 1 is clipped back to 1.
func CanaryWarning(p protocol.Protocol, s protocol.Shape, scale float64) string {
	var msgs []string
	if scale > 1 {
		msgs = append(msgs, fmt.Sprintf("a canary of %s times the clip bound is clipped to the bound (%.0f%% of its norm is erased)", bound.Figure(scale, 3), 100*(1-1/scale)))
	}
	kept := s.Dim
	switch q := p.(type) {
	case protocol.SSTopk:
		if k, _, _, _, err := q.Plan(s); err == nil {
			kept = k
		}
	case protocol.SSDouble:
		if k, _, err := q.Plan(s); err == nil {
			kept = k
		}
	case protocol.SAPES:
		kept = q.B(s.Dim)
	}
	if kept < s.Dim {
		msgs = append(msgs, fmt.Sprintf("protocol %s reports only %d of the %d coordinates of an update, so %.1f%% of the canary is erased before any noise",
			p.Name(), kept, s.Dim, 100*(1-float64(kept)/float64(s.Dim))))
	}
	if len(msgs) == 0 {
		return ""
	}
	return strings.Join(msgs, "; ")
}

// OneRun is the one-run audit of Steinke, Nasr and Jagielski (2023) with
// canary clients as in Andrew et al. ("One-shot empirical privacy
// estimation for federated learning", 2024). The first m clients are
// canaries, each with a secret random sign direction c_i and included
// with probability 1/2: an included canary's update is replaced (Hooks.
// Update) by Scale times the largest update clipping lets through in
// direction c_i in every round it takes part in; an excluded canary sends a
// zero update. Zero against the canary is a neighbouring pair under both
// relations the protocols use: replace-one (local DP) and add/remove
// (dp-central, whose fixed denominator makes a zero update the same as
// absence); replacing a real update by the canary would be a group of two
// under add/remove. After the run each canary is scored by the cosine
// between c_i and the final model delta; the Guesses highest are guessed
// included and the Guesses lowest excluded, and the number of correct
// guesses gives eps_lower by Steinke et al.'s Theorem (OneRunEpsLower),
// compared with the run's cumulative central epsilon. Andrew et al.'s
// Gaussian-fit estimate is reported beside it.
func OneRun(cfg OneRunConfig) (OneRunResult, error) {
	tc := cfg.Train
	m := cfg.Canaries
	if err := cfg.check(); err != nil {
		return OneRunResult{}, err
	}
	e, err := sim.New(tc, cfg.Split, nil)
	if err != nil {
		return OneRunResult{}, err
	}
	d := e.Model().Dim()
	n := tc.ClientsPerRound
	if n == 0 {
		n = tc.Clients
	}
	res := OneRunResult{Protocol: tc.Protocol, Delta: tc.Delta, Canaries: m, Guesses: 2 * cfg.Guesses, Confidence: cfg.Confidence,
		Rounds: tc.Rounds, ClientsN: tc.Clients}
	res.Warning = CanaryWarning(e.Protocol(), protocol.Shape{Round: 1, Dim: d, Population: tc.Clients, Participants: n}, cfg.Scale)
	// Canary directions (random signs) and inclusion bits.
	r := rng.Stream(tc.Seed, 0xca4a)
	in := make([]bool, m)
	dirs := make([][]float64, m)
	amp := tc.Clip * cfg.Scale
	if AddRemove(tc.Protocol) {
		amp = tc.Clip * cfg.Scale / math.Sqrt(float64(d))
	}
	for i := range dirs {
		in[i] = r.IntN(2) == 1
		if in[i] {
			res.Included++
		}
		dirs[i] = make([]float64, d)
		for j := range dirs[i] {
			dirs[i][j] = float64(2*r.IntN(2) - 1)
		}
	}
	w0 := slices.Clone(e.Weights())
	e.SetHooks(sim.Hooks{Update: func(round, client int, u []float64) {
		if client >= m {
			return
		}
		for j := range u {
			if in[client] {
				u[j] = amp * dirs[client][j]
			} else {
				u[j] = 0
			}
		}
	}})
	sum, err := e.Run(nil)
	if err != nil {
		return OneRunResult{}, err
	}
	res.TestAcc, res.Seconds = sum.FinalAccuracy, sum.Seconds
	if c := sum.Privacy.CumulativeEpsilon; !math.IsInf(c, 0) && !math.IsNaN(c) {
		res.EpsClaimed = &c
	}
	delta := make([]float64, d)
	for j, v := range e.Weights() {
		delta[j] = v - w0[j]
	}
	res.score(dirs, in, delta, cfg.Guesses)
	res.EpsLower = OneRunEpsLower(m, res.Guesses, res.Correct, tc.Delta, cfg.Confidence)
	res.Violation = res.EpsClaimed != nil && res.EpsLower > *res.EpsClaimed
	if g := gaussianFitEps(res.MeanIn, res.MeanOut, res.SDOut, tc.Delta); !math.IsInf(g, 0) {
		res.EpsGaussian = &g
	}
	return res, nil
}

// check validates cfg and fills in its defaults (Guesses m/4, Scale 1,
// Confidence 0.95).
func (cfg *OneRunConfig) check() error {
	m := cfg.Canaries
	if err := checks.IntAtLeast("canaries", m, 2); err != nil {
		return err
	}
	if m > cfg.Train.Clients {
		return checks.Invalidf("%d canaries exceed the %d clients", m, cfg.Train.Clients)
	}
	if cfg.Guesses == 0 {
		cfg.Guesses = m / 4
	}
	if cfg.Guesses < 1 || 2*cfg.Guesses > m {
		return checks.Invalidf("guesses per side must be in [1, m/2 = %d], got %d", m/2, cfg.Guesses)
	}
	if cfg.Scale == 0 {
		cfg.Scale = 1
	}
	if !(cfg.Scale > 0) || math.IsInf(cfg.Scale, 0) {
		return checks.Invalidf("canary scale must be a positive number, got %v", cfg.Scale)
	}
	if cfg.Confidence == 0 {
		cfg.Confidence = 0.95
	}
	return checkConf(cfg.Confidence)
}

// score scores each canary by the cosine between its direction and the
// model delta, records the included and excluded canaries' mean and sd,
// and counts the correct guesses: the guesses highest guessed included,
// the guesses lowest excluded.
func (res *OneRunResult) score(dirs [][]float64, in []bool, delta []float64, guesses int) {
	m, d := len(dirs), len(delta)
	var dn float64
	for _, v := range delta {
		dn += v * v
	}
	dn = math.Sqrt(dn)
	type scored struct {
		s  float64
		in bool
	}
	sc := make([]scored, m)
	var sumIn, sumOut, sqIn, sqOut float64
	for i := range sc {
		var dot float64
		for j, v := range dirs[i] {
			dot += v * delta[j]
		}
		cos := 0.0
		if dn > 0 {
			cos = dot / (dn * math.Sqrt(float64(d)))
		}
		sc[i] = scored{cos, in[i]}
		if in[i] {
			sumIn += cos
			sqIn += cos * cos
		} else {
			sumOut += cos
			sqOut += cos * cos
		}
	}
	ni, no := float64(res.Included), float64(m-res.Included)
	res.MeanIn, res.MeanOut = sumIn/ni, sumOut/no
	res.SDIn = math.Sqrt(math.Max(0, sqIn/ni-res.MeanIn*res.MeanIn))
	res.SDOut = math.Sqrt(math.Max(0, sqOut/no-res.MeanOut*res.MeanOut))
	sort.Slice(sc, func(a, b int) bool { return sc[a].s > sc[b].s })
	for i := 0; i < guesses; i++ {
		if sc[i].in {
			res.Correct++
		}
		if !sc[m-1-i].in {
			res.Correct++
		}
	}
}

// gaussianFitEps is the epsilon at delta of the Gaussian mechanism with
// sensitivity |meanIn - meanOut| and noise sd (Andrew et al.'s estimate
// from the cosines of included and excluded canaries): the smallest eps
// with mechanism.GaussianDelta(eps, sd, shift) <= delta, by bisection.
func gaussianFitEps(meanIn, meanOut, sd, delta float64) float64 {
	shift := math.Abs(meanIn - meanOut)
	if !(sd > 0) || !(shift > 0) || !(delta > 0) {
		if shift > 0 && sd == 0 {
			return math.Inf(1)
		}
		return 0
	}
	if mechanism.GaussianDelta(0, sd, shift) <= delta {
		return 0
	}
	lo, hi := 0.0, 1.0
	for mechanism.GaussianDelta(hi, sd, shift) > delta {
		lo = hi
		hi *= 2
		if hi > 1e6 {
			return math.Inf(1)
		}
	}
	for hi-lo > 1e-6*hi {
		mid := (lo + hi) / 2
		if mechanism.GaussianDelta(mid, sd, shift) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
