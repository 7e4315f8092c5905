package bound

import (
	"fmt"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
)

// runSGM implements `bound sgm`: the Poisson-subsampled Gaussian mechanism
// with sampling rate --q and noise multiplier --sigma composed over --steps
// steps, as (epsilon at --delta) or (delta at --epsilon), by the RDP
// accountant (account.SampledGaussianRDP at account.DefaultRDPOrders,
// converted by account.RDPToEpsilon / account.RDPToDelta), the PLD one
// (sgmPLD), or by default the tighter of the two (both are rigorous upper
// bounds, so the smaller epsilon, or delta, is one too), named.
func runSGM(o *Params, out *Result) error {
	var eps, delta float64
	var err error
	used := o.Accountant
	switch o.Accountant {
	case "rdp":
		eps, delta, err = sgmRDP(o)
	case "pld":
		eps, delta, err = sgmPLD(o)
	case "best":
		used, eps, delta, err = sgmBest(o, out)
	default:
		err = checks.Invalidf("--accountant must be best, rdp or pld, got %q", o.Accountant)
	}
	if err != nil {
		return err
	}
	note := fmt.Sprintf("Poisson-subsampled Gaussian, q = %v, sigma = %v, %d steps, add/remove-one neighbours, %s accountant", o.Q, o.Sigma, o.Steps, used)
	if o.Accountant == "best" {
		note += " (the tighter rigorous figure of rdp and pld)"
	}
	out.Bound = amplify.Bound{Name: "sgm-" + used, Epsilon: eps, Delta: delta, Note: note}
	out.Extra["accountant"] = used
	out.Extra["q"] = o.Q
	out.Extra["sigma"] = o.Sigma
	out.Extra["steps"] = o.Steps
	return nil
}

// sgmBest runs both accountants and returns the tighter figure (the smaller
// epsilon at --delta, or the smaller delta at --epsilon) and the name of
// its accountant; each figure is also recorded in the output. If one
// accountant fails (a PLD beyond its grid limits), the other is used.
func sgmBest(o *Params, out *Result) (string, float64, float64, error) {
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
	if o.Given["delta"] {
		out.Extra["rdp_epsilon"], out.Extra["pld_epsilon"] = er, ep
		if ep <= er {
			return "pld", ep, dp, nil
		}
		return "rdp", er, dr, nil
	}
	out.Extra["rdp_delta"], out.Extra["pld_delta"] = dr, dp
	if dp <= dr {
		return "pld", ep, dp, nil
	}
	return "rdp", er, dr, nil
}

// sgmRDP returns (epsilon, delta) of the composed sampled Gaussian mechanism
// by Rényi DP: the per-step curve times the number of steps, converted at
// --delta (epsilon) or at --epsilon (delta).
func sgmRDP(o *Params) (float64, float64, error) {
	orders := account.DefaultRDPOrders()
	rdp, err := account.SampledGaussianRDP(o.Q, o.Sigma, orders)
	if err != nil {
		return 0, 0, err
	}
	for i := range rdp {
		rdp[i] *= float64(o.Steps)
	}
	if o.Given["delta"] {
		e, _, err := account.RDPToEpsilon(orders, rdp, o.Delta)
		if err != nil {
			return 0, 0, err
		}
		if !isFinite(e) {
			return 0, 0, checks.Invalidf("no finite epsilon at any Rényi order for q = %v, sigma = %v, steps = %d (noise far too small)", o.Q, o.Sigma, o.Steps)
		}
		return e, o.Delta, nil
	}
	d, _, err := account.RDPToDelta(orders, rdp, o.Epsilon)
	if err != nil {
		return 0, 0, err
	}
	return o.Epsilon, d, nil
}
