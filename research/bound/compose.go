package bound

import (
	"fmt"
	"math"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
)

// composed is a k-fold composition and the method that produced it.
type composed struct {
	eps, delta float64
	method     string // basic, advanced, rdp or pld
	chosen     bool   // picked by "best"
}

// describe names the method for a note: "rdp composition", or "rdp
// composition, the tightest of basic, advanced, rdp, pld" when best chose it.
func (c composed) describe() string {
	if c.chosen {
		return c.method + " composition, the tightest of basic, advanced, rdp, pld"
	}
	return c.method + " composition"
}

// composeK composes k rounds of an (eps, delta)-DP guarantee by method:
//
//   - basic: (k eps, k delta) (account.ComposeBasic);
//   - advanced: Dwork–Rothblum–Vadhan with slack deltaPrime
//     (account.ComposeAdvanced): delta' = k delta + deltaPrime;
//   - rdp: the pure part is composed by Rényi DP and converted at
//     deltaPrime, total delta k delta + deltaPrime; see composeApprox;
//   - pld: the privacy loss distribution of the dominating (eps, delta)
//     pair composed k times, at total delta k delta + deltaPrime; see
//     composePLD;
//   - best: the smallest epsilon of all of the above that apply; the result
//     names the winner (method) and has chosen set.
//
// Every method is a rigorous upper bound on the composed guarantee.
func composeK(method string, eps, delta float64, k int, deltaPrime float64) (composed, error) {
	switch method {
	case "basic":
		e, d, err := account.ComposeBasic(eps, delta, k)
		return composed{eps: e, delta: d, method: "basic"}, err
	case "advanced":
		e, d, err := account.ComposeAdvanced(eps, delta, k, deltaPrime)
		return composed{eps: e, delta: d, method: "advanced"}, err
	case "rdp":
		return composeApprox("rdp", rdpComposePure, eps, delta, k, deltaPrime)
	case "pld":
		return composePLD(eps, delta, k, deltaPrime)
	case "best", "":
		var best composed
		var firstErr error
		found, overflow := false, false
		for _, m := range []string{"basic", "advanced", "rdp", "pld"} {
			c, err := composeK(m, eps, delta, k, deltaPrime)
			if err == nil && !isFinite(c.eps) {
				overflow = true
				continue
			}
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			// The smaller epsilon wins; within a relative 1e-4 of each
			// other the smaller delta does (basic composition of a pure
			// guarantee, (15, 0), is a better statement than a PLD's
			// (14.99999998, 1e-8)).
			if !found || c.eps < best.eps*(1-1e-4) || (c.eps <= best.eps*(1+1e-4) && c.delta < best.delta) {
				best, found = c, true
			}
		}
		if !found {
			if overflow || firstErr == nil {
				return composed{}, checks.Invalidf("result is not finite: the composed epsilon overflows with every composition method")
			}
			return composed{}, firstErr
		}
		best.chosen = true
		return best, nil
	}
	return composed{}, checks.Invalidf("--composition must be one of %s, got %q", strings.Join(compositionNames, ", "), method)
}

// composeApprox composes k rounds of an (eps, delta)-DP guarantee with an
// exact accountant for its pure part. An (eps, delta)-DP mechanism is a
// post-processing of one that, except on an event of probability delta,
// behaves as an eps-DP mechanism (Kairouz, Oh and Viswanath 2015, Theorem 3.3;
// Murtagh and Vadhan 2016, Lemma 3.2); over k adaptive rounds the
// exceptional events have total probability at most k delta, and the eps-DP
// parts compose to (pure(eps, k, deltaPrime), deltaPrime). The total is
// (pure(eps, k, deltaPrime), k delta + deltaPrime).
func composeApprox(name string, pure func(eps float64, k int, deltaPrime float64) (float64, error), eps, delta float64, k int, deltaPrime float64) (composed, error) {
	d, err := totalDelta(name, eps, delta, k, deltaPrime)
	if err != nil {
		return composed{}, err
	}
	e, err := pure(eps, k, deltaPrime)
	if err != nil {
		return composed{}, fmt.Errorf("%s composition: %w", name, err)
	}
	if !isFinite(e) {
		return composed{}, fmt.Errorf("%s composition: %w", name, checks.Invalidf("the composed epsilon is not finite"))
	}
	return composed{eps: e, delta: d, method: name}, nil
}

// totalDelta validates the inputs of a k-fold composition with slack
// deltaPrime and returns its total delta, k delta + deltaPrime (< 1).
func totalDelta(name string, eps, delta float64, k int, deltaPrime float64) (float64, error) {
	if err := checks.EpsilonOrZero("epsilon", eps); err != nil {
		return 0, fmt.Errorf("%s composition: %w", name, err)
	}
	if err := checks.DeltaOrZero("delta", delta); err != nil {
		return 0, fmt.Errorf("%s composition: %w", name, err)
	}
	if err := checks.IntAtLeast("k", k, 1); err != nil {
		return 0, fmt.Errorf("%s composition: %w", name, err)
	}
	if err := checks.Delta("delta'", deltaPrime); err != nil {
		return 0, fmt.Errorf("%s composition: %w", name, err)
	}
	d := float64(k)*delta + deltaPrime
	if d >= 1 {
		return 0, fmt.Errorf("%s composition: %w", name, checks.Invalidf("k*delta + delta' = %v must be < 1", d))
	}
	return d, nil
}

// pureDPRDP returns the Rényi divergence of order alpha > 1 between the two
// output distributions of binary randomized response with parameter eps,
// Bern(e^eps/(1+e^eps)) and Bern(1/(1+e^eps)):
//
//	eps + (log1p(e^{-(2 alpha - 1) eps}) - log1p(e^{-eps})) / (alpha - 1).
//
// Every eps-DP pair of distributions is a post-processing of that pair
// (Kairouz, Oh and Viswanath 2015), so by data processing this is the RDP
// curve of any eps-DP mechanism. The value is also capped by eps and by the
// zCDP bound alpha eps^2 / 2 (Bun and Steinke 2016, Proposition 3.3), which
// is used alone for eps < 1e-3, where the exact expression loses precision.
func pureDPRDP(eps, alpha float64) float64 {
	z := alpha * eps * eps / 2
	if eps < 1e-3 {
		return z
	}
	r := eps + (math.Log1p(math.Exp(-(2*alpha-1)*eps))-math.Log1p(math.Exp(-eps)))/(alpha-1)
	// Guard the last bits against rounding towards the optimistic side.
	r *= 1 + 1e-12
	return math.Min(r, math.Min(z, eps))
}

// rdpComposePure composes k rounds of eps-DP by Rényi DP (pureDPRDP at the
// orders of account.DefaultRDPOrders, summed) and converts at delta
// (account.RDPToEpsilon). The result never exceeds k eps.
func rdpComposePure(eps float64, k int, delta float64) (float64, error) {
	if eps == 0 {
		return 0, nil
	}
	orders := account.DefaultRDPOrders()
	rdp := make([]float64, len(orders))
	for i, a := range orders {
		rdp[i] = float64(k) * pureDPRDP(eps, a)
	}
	e, _, err := account.RDPToEpsilon(orders, rdp, delta)
	if err != nil {
		return 0, err
	}
	return math.Min(e, float64(k)*eps), nil
}

// composeRounds composes a per-round guarantee over o.Rounds rounds by
// o.Composition. Approximations are not composed (E-APES composes by GDP
// itself); the flawed legacy variant is composed but stays labelled as not
// rigorous. It returns the composed bound and the method used.
func composeRounds(o *Params, b amplify.Bound) (amplify.Bound, string, error) {
	if o.Rounds <= 1 {
		return b, "", nil
	}
	if b.Approximation && !IsLegacy(b) {
		return b, "", checks.Invalidf("bound %s is an approximation and is not composed here", b.Name)
	}
	c, err := composeK(o.Composition, b.Epsilon, b.Delta, o.Rounds, o.DeltaPrime)
	if err != nil {
		return b, "", err
	}
	b.Note = fmt.Sprintf("%s; composed over %d rounds (%s)", b.Note, o.Rounds, c.describe())
	b.Epsilon, b.Delta = c.eps, c.delta
	return b, c.method, nil
}

// composeOutput applies --rounds to the result and to every comparison row.
func composeOutput(o *Params, out *Result) error {
	out.Extra["per_round_epsilon"] = out.Bound.Epsilon
	out.Extra["per_round_delta"] = out.Bound.Delta
	out.Extra["rounds"] = o.Rounds
	if (!out.Bound.Approximation || IsLegacy(out.Bound)) && out.Bound.Name != "" {
		r, how, err := composeRounds(o, out.Bound)
		if err != nil {
			return err
		}
		out.Bound = r
		out.Extra["composition"] = how
	}
	for i, r := range out.Compare {
		if r.Err != "" || (r.Approximation && !IsLegacy(r.Bound)) {
			continue
		}
		b, _, err := composeRounds(o, r.Bound)
		if err != nil {
			out.Compare[i].Err = err.Error()
			continue
		}
		out.Compare[i].Bound = b
	}
	return nil
}

// compositionCount turns FLAME's number of compositions t = 2 beta d (a float)
// into an integer: t itself when it is one (up to rounding), otherwise its
// ceiling, which composes at least as many guarantees and so stays an upper
// bound.
func compositionCount(t float64) int {
	if r := math.Round(t); math.Abs(t-r) <= 1e-9*math.Max(1, t) {
		return int(r)
	}
	return int(math.Ceil(t))
}
