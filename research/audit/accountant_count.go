package audit

import (
	"maps"

	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/amplify"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/research/bound"
)

// rrCountBound is the count of ones over every shuffled release of binary
// randomized response with epsilon eps0: the differing user's mine values
// at input 0 or 1, others values of other users at input 0 (each reports 1
// with probability q = 1/(1+e^eps0)).
func rrCountBound(eps0 float64, mine, others int, delta float64) (AccountantCheck, error) {
	q := 1 / (1 + math.Exp(eps0))
	lb, err := amplify.CountLowerBound(others, mine, q, q, 1-q, delta)
	return AccountantCheck{Bound: fmt.Sprintf("count of ones, randomized response eps_c = %s: %d values of the user among %d others", bound.Figure(eps0, 4), mine, others), Lower: lb}, err
}

// flameCountBound is the count statistic of a FLAME run with its own
// randomizer (amplify.FLAMESparseCountLowerBound: the dummies in their own
// class), over every value released in rounds.
func flameCountBound(f RunFacts, rounds []RunRound, delta float64) (AccountantCheck, error) {
	c := AccountantCheck{Bound: fmt.Sprintf("count above a threshold, %s randomizer", f.Randomizer.Mech)}
	mine, users, dummies, eps0, err := flameMineOthers(f, rounds)
	if err != nil {
		return c, err
	}
	others := users + dummies
	lb, t, err := amplify.FLAMESparseCountLowerBound(*f.Randomizer, eps0, mine, users, dummies, delta)
	if err != nil {
		return c, err
	}
	c.Bound = fmt.Sprintf("count above t = %s, %s randomizer eps0 = %s: %d values of the user among %d others and dummies",
		bound.Figure(t, 4), f.Randomizer.Mech, bound.Figure(eps0, 4), mine, others)
	c.Lower = lb
	return c, nil
}

// ownMechanismBound is the run's own mechanism's lower bound
// (protocol.LowerBounder) over rounds: the protocol rebuilt from the run's
// Params with each round's local epsilon (the public eps_l of FLAME; the
// APES family's budgets come from the records), for the user with the
// largest budget (LocalEps, at the run's RoundDelta).
func ownMechanismBound(f RunFacts, rounds []RunRound, delta float64) (AccountantCheck, error) {
	c := AccountantCheck{Bound: "count statistic of the run's own mechanism"}
	eps := rounds[0].LocalEps
	lbr := make([]protocol.LowerBoundRound, len(rounds))
	for i, r := range rounds {
		if f.CentralTarget {
			// No local budget: the bound does not use the worst user's.
			r.LocalEps, r.LocalEpsMin = 1, 1
		} else if r.LocalEps != eps {
			return c, checks.Invalidf("round %d: the largest local epsilon changes between rounds (%v, then %v)", r.Round, eps, r.LocalEps)
		}
		lbr[i] = protocol.LowerBoundRound{
			Shape:   protocol.Shape{Round: r.Round, Dim: f.Dim, Population: f.Clients, Participants: max(1, min(r.Participants, f.Clients))},
			Worst:   protocol.Budget{Epsilon: r.LocalEps, Delta: f.RoundDelta},
			Uniform: r.LocalEpsMin == r.LocalEps,
		}
	}
	params := *f.Params
	if !f.CentralTarget {
		params.Epsilon = eps
	}
	params.Extra = maps.Clone(params.Extra)
	if f.Protocol == "ldp-min" {
		// Every client perturbs at min-epsilon: the records' local epsilon
		// (after any calibration).
		if params.Extra == nil {
			params.Extra = map[string]float64{}
		}
		params.Extra["min-epsilon"] = eps
	}
	p, err := protocol.New(f.Protocol, params)
	if err != nil {
		return c, err
	}
	lb, err := protocol.LowerBoundOf(p, lbr, delta)
	if err != nil {
		return c, err
	}
	if lb.Method == protocol.MethodNone {
		return c, checks.Invalidf("no sound lower bound for %s in this setting", f.Protocol)
	}
	c.Bound, c.Lower = lb.Method, lb.Epsilon
	return c, nil
}
