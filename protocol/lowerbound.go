package protocol

import (
	"errors"
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/amplify"
)

// LowerBoundRound is what a lower bound needs of one round that released:
// its shape (with the participants who reported) and the budget of the user
// the bound is for, Worst: a participant with the largest local epsilon
// (the user easiest to tell apart). Uniform says every participant had the
// same budget.
type LowerBoundRound struct {
	Shape   Shape
	Worst   Budget
	Uniform bool
}

// LowerBound is a lower bound on the true epsilon, at Delta, of a run's
// releases (all its rounds composed), and how it was found.
type LowerBound struct {
	Epsilon float64
	Delta   float64
	Method  string
}

// MethodNone is the Method of a run for which no sound lower bound is
// computed.
const MethodNone = "none"

// LowerBounder is implemented by protocols that can lower-bound the true
// epsilon of a run of theirs. LowerBound returns a number that is PROVEN to
// be at most the epsilon at delta of the releases of the given rounds for
// some pair of neighbouring datasets: every implementation names a concrete
// pair (the worst user at the two ends of the input range, every other
// participant at the middle, in every round) and a post-processing of the
// analyzer's view (a count above a threshold, ThresholdCount) whose two
// distributions are computed exactly, so that no accountant may state less.
// It assumes the worst user reports in every round (the caller checks that
// every client reported in every round: no sampling, no sit-outs). A
// protocol that cannot make the pair exact for some setting returns Method
// MethodNone and a NaN Epsilon, never a guess.
type LowerBounder interface {
	LowerBound(rounds []LowerBoundRound, delta float64) (LowerBound, error)
}

// LowerBoundOf returns p's lower bound for the rounds, or Method MethodNone
// (NaN Epsilon) when p has none.
func LowerBoundOf(p Protocol, rounds []LowerBoundRound, delta float64) (LowerBound, error) {
	lb, ok := p.(LowerBounder)
	if !ok {
		return noLowerBound(delta), nil
	}
	return lb.LowerBound(rounds, delta)
}

// noLowerBound is the result without a sound lower bound.
func noLowerBound(delta float64) LowerBound {
	return LowerBound{Epsilon: math.NaN(), Delta: delta, Method: MethodNone}
}

// lowerBoundPatience is the number of consecutive thresholds that do not
// improve the bound after which the search stops: every threshold gives a
// valid bound, so stopping early only costs tightness (for FLAME's Laplace
// randomizer the best threshold is the first one at the default sizes).
const lowerBoundPatience = 2

// checkLowerBoundRounds validates the rounds.
func checkLowerBoundRounds(rounds []LowerBoundRound, delta float64) error {
	if len(rounds) == 0 {
		return checks.Invalidf("lower bound: no rounds")
	}
	if err := checks.Delta("delta", delta); err != nil {
		return fmt.Errorf("lower bound: %w", err)
	}
	for _, r := range rounds {
		if err := r.Shape.Validate(); err != nil {
			return fmt.Errorf("lower bound, round %d: %w", r.Shape.Round, err)
		}
		if err := checks.Epsilon("the worst user's epsilon", r.Worst.Epsilon); err != nil {
			return fmt.Errorf("lower bound, round %d: %w", r.Shape.Round, err)
		}
	}
	return nil
}

// sameWorst returns the worst user's epsilon if it is the same in every
// round, and whether every round had uniform budgets.
func sameWorst(rounds []LowerBoundRound) (eps float64, uniform, ok bool) {
	eps, uniform = rounds[0].Worst.Epsilon, true
	for _, r := range rounds {
		if r.Worst.Epsilon != eps {
			return 0, false, false
		}
		uniform = uniform && r.Uniform
	}
	return eps, uniform, true
}

// countBound evaluates the statistics built by mk for each attack and
// returns the best bound, naming it: the threshold is chosen on one
// round's sizes (amplify.BestThresholdCountProbe; any threshold gives a
// valid bound) and evaluated for all the rounds.
func countBound(attacks []amplify.CountAttack, mk func(amplify.CountAttack) amplify.ThresholdCount, delta float64, rounds int, name, subset string) (LowerBound, error) {
	tcs := make([]amplify.ThresholdCount, len(attacks))
	for i, a := range attacks {
		tcs[i] = mk(a)
	}
	tcs = thinStatistics(tcs, delta, rounds)
	e, at, err := amplify.BestThresholdCountProbe(tcs, delta, lowerBoundPatience, rounds)
	if err != nil {
		return LowerBound{}, err
	}
	others := 0
	for _, c := range at.Classes {
		others += c.N
	}
	return LowerBound{Epsilon: e, Delta: delta,
		Method: fmt.Sprintf("%s: count above t = %.4g of %d values of the worst user among %d others%s", name, at.Threshold, at.Mine, others, subset)}, nil
}

// thinStatistics keeps the first statistic and evenly spaced others so
// that the probe's search (each statistic at 1/rounds of the full size)
// fits the work budget: fewer thresholds tried, every one still a valid
// bound.
func thinStatistics(tcs []amplify.ThresholdCount, delta float64, rounds int) []amplify.ThresholdCount {
	if len(tcs) <= 2 {
		return tcs
	}
	each := amplify.ThresholdCountCost(tcs[0], delta) / float64(max(rounds, 1))
	n := int(lowerBoundWork / 2 / math.Max(each, 1))
	if n >= len(tcs) {
		return tcs
	}
	n = max(n, 2)
	out := []amplify.ThresholdCount{tcs[0]}
	for i := 1; i < n; i++ {
		out = append(out, tcs[i*(len(tcs)-1)/(n-1)])
	}
	return out
}

// flameLowerBound is the count statistic of the FLAME protocols over every
// value released in the rounds. Pair: the worst user (every user has the
// public eps_l) holds -C in every coordinate (0 on FLAME's [0, 1]) or +C
// (1); every other user holds 0 (1/2). Per round the user releases mine
// values at eps0 = eps_l/mine (its reported coordinates; SS-Topk's blanket
// draws of the user do not depend on its input and count as dummies), the
// other users users values, and the shuffler (and SS-Topk's blankets)
// dummies values; the count of values at or above the threshold ignores
// coordinates, so it is exactly the sum of the binomials of
// amplify.ThresholdCount:
//   - Laplace: the others' values and the dummies are all Laplace(1/2,
//     1/eps0) (the dummy is the report of 1/2), one class;
//   - R_{gamma,b}: the other users' values (input 0: counted only through
//     the blanket) and the dummies (Unif{0..b}) are two classes.
//
// SS-Double's padding fails (a dimension gets more than n_p real reports)
// with a probability pfail that does not depend on any input; the analyzer
// may map that outcome to one symbol, which leaves the rest of the count's
// distribution as computed up to a factor (1 - pfail), so the bound is
// computed at delta + pfail (flamePadFailBound, zero when n_p >= n). The
// floating-point-safe Laplace (Params.Secure) snaps outputs to a grid, so
// its tails are not the ones computed here: no bound.
func (f flameBase) flameLowerBound(rounds []LowerBoundRound, delta float64, perCoord bool, plan func(s Shape, coords int) (mine, users, dummies int, pfail float64, err error)) (LowerBound, error) {
	if err := checkLowerBoundRounds(rounds, delta); err != nil {
		return LowerBound{}, fmt.Errorf("%s: %w", f.name, err)
	}
	if f.laplace && f.secure {
		return noLowerBound(delta), nil
	}
	d := rounds[0].Shape.Dim
	// totals sums the rounds' sizes, counting coords of the d coordinates
	// (SS-Simple; a subset of the coordinates, every value of which the
	// analyzer knows the coordinate of, is a post-processing); eps0 is
	// eps_l over the user's values per round.
	var mine, users, dummies int
	var pfail float64
	eps0 := math.NaN()
	totals := func(rs []LowerBoundRound, coords int) error {
		mine, users, dummies, pfail = 0, 0, 0, 0
		for _, r := range rs {
			if r.Shape.Dim != d {
				return errNoBound
			}
			m, u, du, pf, err := plan(r.Shape, coords)
			if err != nil {
				return fmt.Errorf("%s: lower bound, round %d: %w", f.name, r.Shape.Round, err)
			}
			per := m
			if perCoord {
				per = d
			}
			e := f.eps / float64(per)
			if !math.IsNaN(eps0) && e != eps0 {
				return errNoBound // one count needs one eps0
			}
			eps0 = e
			mine, users, dummies, pfail = mine+m, users+u, dummies+du, pfail+pf
		}
		return nil
	}
	if err := totals(rounds, d); err != nil {
		if err == errNoBound {
			return noLowerBound(delta), nil
		}
		return LowerBound{}, err
	}
	// Within the work budget: fewer coordinates (SS-Simple) or the first
	// rounds (SS-Double, SS-Topk), the cost being about proportional.
	attacks, dummy, err := f.flameAttacks(eps0, users+dummies)
	if err != nil {
		return LowerBound{}, fmt.Errorf("%s: lower bound: %w", f.name, err)
	}
	a := attacks[0]
	cost := amplify.ThresholdCountCost(amplify.ThresholdCount{Classes: []amplify.CountClass{{N: users, P: a.POther}, {N: dummies, P: a.POther}}, Mine: mine, P0: a.P0, P1: a.P1}, delta)
	cost = probedCost(cost, len(rounds))
	subset := ""
	if cost > lowerBoundWork {
		keep := lowerBoundWork / cost
		if perCoord {
			c := max(1, int(float64(d)*keep))
			err = totals(rounds, c)
			subset = fmt.Sprintf(" (%d of the %d coordinates counted, to bound the work)", c, d)
		} else {
			t := max(1, int(float64(len(rounds))*keep))
			err = totals(rounds[:t], d)
			subset = fmt.Sprintf(" (the first %d of %d rounds counted, to bound the work)", t, len(rounds))
		}
		if err != nil {
			return LowerBound{}, err
		}
	}
	dl := delta + pfail
	if !(dl < 1) {
		return noLowerBound(delta), nil
	}
	tcs := make([]amplify.ThresholdCount, len(attacks))
	for i, a := range attacks {
		pd := a.POther // Laplace: a dummy is the report of 1/2
		if !f.laplace {
			pd = dummy[i]
		}
		tcs[i] = amplify.ThresholdCount{Threshold: a.Threshold, Classes: []amplify.CountClass{{N: users, P: a.POther}, {N: dummies, P: pd}}, Mine: mine, P0: a.P0, P1: a.P1}
	}
	e, at, err := amplify.BestThresholdCountProbe(thinStatistics(tcs, dl, len(rounds)), dl, lowerBoundPatience, len(rounds))
	if err != nil {
		return LowerBound{}, fmt.Errorf("%s: lower bound: %w", f.name, err)
	}
	return LowerBound{Epsilon: e, Delta: delta,
		Method: fmt.Sprintf("%s, %s randomizer: count of values above %.4g, %d values of the worst user among %d of other users and %d dummies%s",
			f.name, f.randomizerName(), at.Threshold, mine, users, dummies, subset)}, nil
}

// errNoBound marks a setting without a sound bound (LowerBound returns
// method none for it).
var errNoBound = errors.New("no sound lower bound")

// lowerBoundWork is the work budget of one lower bound, in multiply-adds
// (amplify.ThresholdCountCost): under a second. A larger statistic counts
// fewer values, which keeps it a valid (weaker) bound. A variable so that
// tests can lower it.
var lowerBoundWork = 3e9

// probedCost is the work of countBound's search for a statistic of the
// given full-size cost over t rounds: at most two full-size evaluations
// (the midpoint and the probe's choice) and the probe's, each about 1/t
// of the full size (the windows' product scales with the sizes).
func probedCost(full float64, t int) float64 {
	return full * (2 + float64(lowerBoundPatience+1)/float64(max(t, 1)))
}

// flameAttacks returns the thresholds of the run's randomizer, and for
// R_{gamma,b} the dummies' counting probabilities (nil for Laplace).
func (f flameBase) flameAttacks(eps0 float64, others int) ([]amplify.CountAttack, []float64, error) {
	if f.laplace {
		a, err := amplify.LaplaceCountAttacks(eps0, others, false)
		return a, nil, err
	}
	return amplify.RGammaBCountAttacks(f.levels, eps0)
}

// LowerBound implements LowerBounder (flameBase.flameLowerBound): per round
// the user's d values among the (n-1) d of the others, no dummies.
func (p SSSimple) LowerBound(rounds []LowerBoundRound, delta float64) (LowerBound, error) {
	return p.flameLowerBound(rounds, delta, true, func(s Shape, coords int) (int, int, int, float64, error) {
		return coords, (s.Participants - 1) * coords, 0, 0, nil
	})
}

// LowerBound implements LowerBounder (flameBase.flameLowerBound): per round
// the user's k values, the other users' (n-1) k and the shuffler's
// d n_p - n k dummies (Plan's k and n_p).
func (p SSDouble) LowerBound(rounds []LowerBoundRound, delta float64) (LowerBound, error) {
	return p.flameLowerBound(rounds, delta, false, func(s Shape, _ int) (int, int, int, float64, error) {
		k, np, err := p.Plan(s)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		n, d := s.Participants, s.Dim
		pf := 0.0
		if np < n {
			pf = flamePadFailBound(n, k, d, np)
		}
		return k, (n - 1) * k, d*np - n*k, pf, nil
	})
}

// LowerBound implements LowerBounder (flameBase.flameLowerBound): per round
// the user's k top values, the other users' (n-1) k, and d n_p - n k values
// that are blanket draws (the users' (l-1) k each, the shuffler's
// padding). n_p >= n, and a user reports a dimension at most once, so the
// padding never fails.
func (p SSTopk) LowerBound(rounds []LowerBoundRound, delta float64) (LowerBound, error) {
	return p.flameLowerBound(rounds, delta, false, func(s Shape, _ int) (int, int, int, float64, error) {
		k, np, _, _, err := p.Plan(s)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		n, d := s.Participants, s.Dim
		return k, (n - 1) * k, d*np - n*k, 0, nil
	})
}

// perCoordLowerBound is the count statistic of the protocols that perturb
// every coordinate with the client's eps_i/d: the Laplace mechanism
// Lap(2C/eps_c) (ldp-laplace, pldp, ldp-min, unis) or APES's Clip-Laplace
// CLap(., 2C/eps_c, C) (apes). Pair: the worst user holds -C or +C in every
// coordinate, every other participant 0, in every round. Shuffled
// protocols: the analyzer counts, over all d values of every participant
// in every round, the values above the threshold; both mechanisms are
// symmetric about 0, so at the threshold 0 each other value is counted
// with probability exactly 1/2 whatever the other's epsilon (personalized
// budgets are exact), and with uniform budgets thresholds above 0 are
// tried too. Unshuffled protocols: the analyzer sees the user's own report,
// and counts its d t values only. clap selects Clip-Laplace; secure (the
// snapped floating-point-safe samplers) has no bound.
//
// At delta 0 (pure DP, the unshuffled Laplace baselines' statement) the
// bound is exact: the event "every one of the user's m = d t values is
// above the top of the input range" has probability ratio e^(m eps_c)
// between the two inputs (the Laplace densities' ratio is e^(eps_c) at
// every point above both inputs), so no eps below m eps_c holds at delta 0.
func perCoordLowerBound(name string, rounds []LowerBoundRound, delta float64, clap, shuffled, secure bool, coordEps func(worst float64, d int) float64) (LowerBound, error) {
	if delta == 0 && len(rounds) > 0 && !shuffled && !clap && !secure {
		worst, _, ok := sameWorst(rounds)
		d := rounds[0].Shape.Dim
		if err := checkLowerBoundRounds(rounds, 0.5); err != nil || !ok || d < 1 {
			return noLowerBound(delta), err
		}
		m := d * len(rounds)
		eps0 := coordEps(worst, d)
		// Rounded down by a relative 1e-12 (the scale's rounding).
		return LowerBound{Epsilon: float64(m) * eps0 * (1 - 1e-12), Delta: 0,
			Method: fmt.Sprintf("%s, laplace eps_c = %.4g: all %d values of the worst user above the input range (pure DP, exact)", name, eps0, m)}, nil
	}
	if err := checkLowerBoundRounds(rounds, delta); err != nil {
		return LowerBound{}, fmt.Errorf("%s: %w", name, err)
	}
	worst, uniform, ok := sameWorst(rounds)
	if secure || !ok {
		return noLowerBound(delta), nil
	}
	d := rounds[0].Shape.Dim
	mine, others := 0, 0
	for _, r := range rounds {
		if r.Shape.Dim != d {
			return noLowerBound(delta), nil
		}
		mine += d
		if shuffled {
			others += (r.Shape.Participants - 1) * d
		}
	}
	eps0 := coordEps(worst, d)
	// Without others the thresholds need no common scale.
	midpoint := shuffled && !uniform
	var attacks []amplify.CountAttack
	var err error
	mech := "laplace"
	if clap {
		mech = "clip-laplace"
		attacks, err = amplify.ClipLaplaceCountAttacks(eps0, others, midpoint)
	} else {
		attacks, err = amplify.LaplaceCountAttacks(eps0, others, midpoint)
	}
	if err != nil {
		return LowerBound{}, fmt.Errorf("%s: lower bound: %w", name, err)
	}
	// Within the work budget: count a subset of the coordinates (the
	// analyzer knows every value's coordinate; a post-processing).
	subset := ""
	a := attacks[0]
	cost := probedCost(amplify.ThresholdCountCost(amplify.ThresholdCount{Classes: []amplify.CountClass{{N: others, P: a.POther}}, Mine: mine, P0: a.P0, P1: a.P1}, delta), len(rounds))
	if cost > lowerBoundWork {
		c := max(1, int(float64(d)*lowerBoundWork/cost))
		mine, others = mine/d*c, others/d*c
		subset = fmt.Sprintf(" (%d of the %d coordinates counted, to bound the work)", c, d)
	}
	return countBound(attacks, func(a amplify.CountAttack) amplify.ThresholdCount {
		return amplify.ThresholdCount{Threshold: a.Threshold, Classes: []amplify.CountClass{{N: others, P: a.POther}}, Mine: mine, P0: a.P0, P1: a.P1}
	}, delta, len(rounds), fmt.Sprintf("%s, %s eps_c = %.4g", name, mech, eps0), subset)
}

// perCoord is the per-coordinate epsilon of the worst user's own budget.
func perCoord(worst float64, d int) float64 { return worst / float64(d) }

// LowerBound implements LowerBounder (perCoordLowerBound, Clip-Laplace,
// shuffled).
func (m APES) LowerBound(rounds []LowerBoundRound, delta float64) (LowerBound, error) {
	return perCoordLowerBound("apes", rounds, delta, true, true, m.secure, perCoord)
}

// LowerBound implements LowerBounder (perCoordLowerBound, Laplace,
// shuffled).
func (m UniS) LowerBound(rounds []LowerBoundRound, delta float64) (LowerBound, error) {
	return perCoordLowerBound("unis", rounds, delta, false, true, m.secure, perCoord)
}

// LowerBound implements LowerBounder (perCoordLowerBound, Laplace, not
// shuffled).
func (m PLDP) LowerBound(rounds []LowerBoundRound, delta float64) (LowerBound, error) {
	return perCoordLowerBound("pldp", rounds, delta, false, false, m.secure, perCoord)
}

// LowerBound implements LowerBounder (perCoordLowerBound, Laplace, not
// shuffled; every client perturbs at min-epsilon/d).
func (m LDPMin) LowerBound(rounds []LowerBoundRound, delta float64) (LowerBound, error) {
	return perCoordLowerBound("ldp-min", rounds, delta, false, false, m.secure, func(_ float64, d int) float64 { return m.epsMin / float64(d) })
}

// LowerBound implements LowerBounder (perCoordLowerBound, Laplace, not
// shuffled).
func (m LDPLaplace) LowerBound(rounds []LowerBoundRound, delta float64) (LowerBound, error) {
	return perCoordLowerBound("ldp-laplace", rounds, delta, false, false, m.secure, perCoord)
}

// LowerBound implements LowerBounder for E-APES. Pair: the worst user
// (largest epsilon, so smallest sigma_i for the common round delta; any
// user gives a valid bound) holds -C e_1 or +C e_1 (L2 norm C) in every
// round, every other participant 0. The analyzer projects each shuffled
// report on e_1 and counts the projections above the threshold: the user's
// is +-C + N(0, sigma_i^2), another's N(0, sigma_j^2), so at threshold 0
// each other report is counted with probability exactly 1/2 whatever its
// sigma (personalized budgets are exact) and with uniform budgets
// thresholds above 0 are tried too (amplify.GaussianCountAttacks). One
// value per user per round. The floating-point-safe Gaussian (secure)
// snaps its outputs: no bound.
func (m EAPES) LowerBound(rounds []LowerBoundRound, delta float64) (LowerBound, error) {
	if err := checkLowerBoundRounds(rounds, delta); err != nil {
		return LowerBound{}, fmt.Errorf("e-apes: %w", err)
	}
	if m.secure {
		return noLowerBound(delta), nil
	}
	w := rounds[0].Worst
	uniform := true
	mine, others := 0, 0
	for _, r := range rounds {
		if r.Worst != w {
			return noLowerBound(delta), nil
		}
		uniform = uniform && r.Uniform
		mine++
		others += r.Shape.Participants - 1
	}
	sig, err := m.Sigma(w)
	if err != nil {
		return LowerBound{}, fmt.Errorf("e-apes: lower bound: %w", err)
	}
	attacks, err := amplify.GaussianCountAttacks(m.clip/sig, others, !uniform)
	if err != nil {
		return LowerBound{}, fmt.Errorf("e-apes: lower bound: %w", err)
	}
	return countBound(attacks, func(a amplify.CountAttack) amplify.ThresholdCount {
		return amplify.ThresholdCount{Threshold: a.Threshold, Classes: []amplify.CountClass{{N: others, P: a.POther}}, Mine: mine, P0: a.P0, P1: a.P1}
	}, delta, len(rounds), fmt.Sprintf("e-apes, gaussian C/sigma = %.4g, projection on one coordinate (thresholds in sigmas)", m.clip/sig), "")
}
