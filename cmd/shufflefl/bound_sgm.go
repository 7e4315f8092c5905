package main

import (
	"fmt"

	"shufflefl/account"
	"shufflefl/amplify"
	"shufflefl/checks"
)

// runSGM implements `bound sgm`: the Poisson-subsampled Gaussian mechanism
// with sampling rate --q and noise multiplier --sigma composed over --steps
// steps, as (epsilon at --delta) or (delta at --epsilon), by the RDP
// accountant (account.SampledGaussianRDP at account.DefaultRDPOrders,
// converted by account.RDPToEpsilon / account.RDPToDelta) or the PLD one.
func runSGM(o *boundOpts, out *boundOutput) error {
	var eps, delta float64
	var err error
	switch o.accountant {
	case "rdp":
		eps, delta, err = sgmRDP(o)
	case "pld":
		eps, delta, err = sgmPLD(o)
	default:
		err = checks.Invalidf("--accountant must be rdp or pld, got %q", o.accountant)
	}
	if err != nil {
		return err
	}
	out.result = amplify.Bound{Name: "sgm-" + o.accountant, Epsilon: eps, Delta: delta,
		Note: fmt.Sprintf("Poisson-subsampled Gaussian, q = %v, sigma = %v, %d steps, add/remove-one neighbours, %s accountant", o.q, o.sigma, o.steps, o.accountant)}
	out.extra["accountant"] = o.accountant
	out.extra["q"] = o.q
	out.extra["sigma"] = o.sigma
	out.extra["steps"] = o.steps
	return nil
}

// sgmRDP returns (epsilon, delta) of the composed sampled Gaussian mechanism
// by Rényi DP: the per-step curve times the number of steps, converted at
// --delta (epsilon) or at --epsilon (delta).
func sgmRDP(o *boundOpts) (float64, float64, error) {
	orders := account.DefaultRDPOrders()
	rdp, err := account.SampledGaussianRDP(o.q, o.sigma, orders)
	if err != nil {
		return 0, 0, err
	}
	for i := range rdp {
		rdp[i] *= float64(o.steps)
	}
	if o.set["delta"] {
		e, _, err := account.RDPToEpsilon(orders, rdp, o.delta)
		if err != nil {
			return 0, 0, err
		}
		if !isFinite(e) {
			return 0, 0, checks.Invalidf("no finite epsilon at any Rényi order for q = %v, sigma = %v, steps = %d (noise far too small)", o.q, o.sigma, o.steps)
		}
		return e, o.delta, nil
	}
	d, _, err := account.RDPToDelta(orders, rdp, o.epsilon)
	if err != nil {
		return 0, 0, err
	}
	return o.epsilon, d, nil
}
