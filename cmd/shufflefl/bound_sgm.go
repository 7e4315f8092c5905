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
// converted by account.RDPToEpsilon / account.RDPToDelta), the PLD one
// (sgmPLD), or by default the tighter of the two (both are rigorous upper
// bounds, so the smaller epsilon, or delta, is one too), named.
func runSGM(o *boundOpts, out *boundOutput) error {
	var eps, delta float64
	var err error
	used := o.accountant
	switch o.accountant {
	case "rdp":
		eps, delta, err = sgmRDP(o)
	case "pld":
		eps, delta, err = sgmPLD(o)
	case "best":
		used, eps, delta, err = sgmBest(o, out)
	default:
		err = checks.Invalidf("--accountant must be best, rdp or pld, got %q", o.accountant)
	}
	if err != nil {
		return err
	}
	note := fmt.Sprintf("Poisson-subsampled Gaussian, q = %v, sigma = %v, %d steps, add/remove-one neighbours, %s accountant", o.q, o.sigma, o.steps, used)
	if o.accountant == "best" {
		note += " (the tighter rigorous figure of rdp and pld)"
	}
	out.result = amplify.Bound{Name: "sgm-" + used, Epsilon: eps, Delta: delta, Note: note}
	out.extra["accountant"] = used
	out.extra["q"] = o.q
	out.extra["sigma"] = o.sigma
	out.extra["steps"] = o.steps
	return nil
}

// sgmBest runs both accountants and returns the tighter figure (the smaller
// epsilon at --delta, or the smaller delta at --epsilon) and the name of
// its accountant; each figure is also recorded in the output. If one
// accountant fails (a PLD beyond its grid limits), the other is used.
func sgmBest(o *boundOpts, out *boundOutput) (string, float64, float64, error) {
	er, dr, errR := sgmRDP(o)
	ep, dp, errP := sgmPLD(o)
	switch {
	case errR != nil && errP != nil:
		return "", 0, 0, errR
	case errP != nil:
		return "rdp", er, dr, nil
	case errR != nil:
		return "pld", ep, dp, nil
	}
	if o.set["delta"] {
		out.extra["rdp_epsilon"], out.extra["pld_epsilon"] = er, ep
		if ep <= er {
			return "pld", ep, dp, nil
		}
		return "rdp", er, dr, nil
	}
	out.extra["rdp_delta"], out.extra["pld_delta"] = dr, dp
	if dp <= dr {
		return "pld", ep, dp, nil
	}
	return "rdp", er, dr, nil
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
