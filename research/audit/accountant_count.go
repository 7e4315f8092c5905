package audit

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/privacy/amplify"
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
// randomizer (amplify.FLAMECountLowerBound), over every value released in
// rounds.
func flameCountBound(f RunFacts, rounds []RunRound, delta float64) (AccountantCheck, error) {
	c := AccountantCheck{Bound: fmt.Sprintf("count above a threshold, %s randomizer", f.Randomizer.Mech)}
	mine, others, eps0, err := flameMineOthers(f, rounds)
	if err != nil {
		return c, err
	}
	lb, t, err := amplify.FLAMECountLowerBound(*f.Randomizer, eps0, mine, others, delta)
	if err != nil {
		return c, err
	}
	c.Bound = fmt.Sprintf("count above t = %s, %s randomizer eps0 = %s: %d values of the user among %d others and dummies",
		bound.Figure(t, 4), f.Randomizer.Mech, bound.Figure(eps0, 4), mine, others)
	c.Lower = lb
	return c, nil
}
