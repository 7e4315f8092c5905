package bound

import (
	"flag"
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
)

// The `bound skellam` command and its parameters.
func init() {
	commands["skellam"] = Command{"Poisson-subsampled Skellam mechanism (split-mix's noisy sum: rate q, variance per coordinate, L2/L1 sensitivities, d coordinates) over T steps: epsilon at --delta or delta at --epsilon, by the pld (certified Gaussian domination of the Skellam noise), rdp (Agarwal-Kairouz-Liu) or best accountant",
		[]string{"sgm-q", "variance", "l2", "l1", "d", "steps", "skellam-tv", "sgm-delta", "sgm-epsilon", "accountant", "json"}, nil, runSkellam}
	Examples["skellam"] = []string{"--q 0.1 --variance 4.84e7 --l2 4184.6 --l1 370757 --d 7850 --steps 30 --tv 6.98e-13 --delta 1e-6"}
	params["variance"] = param{"variance", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.Variance, "variance", 0, "Skellam noise variance mu per coordinate, in [1e-3, 1e15] (required)")
	}, func(o *Params) error { return inRange("--variance", o.Variance, 1e-3, 1e15, false, false) }}
	params["l2"] = param{"l2", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.L2, "l2", 0, "L2 sensitivity of the integer sum (split-mix: gamma C + sqrt(d)) > 0 (required)")
	}, func(o *Params) error { return checks.Positive("--l2", o.L2) }}
	params["l1"] = param{"l1", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.L1, "l1", 0, "L1 sensitivity of the integer sum, for the rdp accountant (0: sqrt(d)·L2, always valid)")
	}, func(o *Params) error {
		if o.L1 == 0 {
			return nil
		}
		return checks.Positive("--l1", o.L1)
	}}
	params["skellam-tv"] = param{"tv", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.TV, "tv", 0, "total variation per step between the real release and the mechanism (split-mix: the split-and-mix and void terms), in [0, 1e-3]; charged (1 + e^eps) times per step, plus the pld route's own 2^-100")
	}, func(o *Params) error { return inRange("--tv", o.TV, 0, 1e-3, false, false) }}
}

// runSkellam implements `bound skellam`: the Poisson-subsampled Skellam
// mechanism composed over --steps steps, by the PLD route
// (account.SampledSkellamPLDEpsilon / SampledSkellamPLDDelta: the
// sampled-Gaussian pair that dominates the Skellam noise by
// pld.SkellamUnitGDP, with the TV terms), the RDP route
// (account.SampledSkellamRDP, converted with the TV term), or by default
// the tighter of the two, named.
func runSkellam(o *Params, out *Result) error {
	l1 := o.L1
	if l1 == 0 {
		l1 = math.Sqrt(float64(o.D)) * o.L2
	}
	tvPLD := o.TV + account.SkellamTailTV
	type fig struct{ eps, delta float64 }
	rdp := func() (fig, error) {
		orders := account.DefaultRDPOrders()
		c, err := account.SampledSkellamRDP(o.Q, o.Variance, l1, o.L2, orders)
		if err != nil {
			return fig{}, err
		}
		for i := range c {
			c[i] *= float64(o.Steps)
		}
		tv := float64(o.Steps) * o.TV
		if o.Given["delta"] {
			e, _, err := account.RDPToEpsilonTV(orders, c, o.Delta, tv)
			return fig{e, o.Delta}, err
		}
		d, _, err := account.RDPToDelta(orders, c, o.Epsilon)
		return fig{o.Epsilon, math.Min(1, d+(1+math.Exp(o.Epsilon))*tv)}, err
	}
	pldf := func() (fig, error) {
		if o.Given["delta"] {
			e, err := account.SampledSkellamPLDEpsilon(o.Q, o.Variance, o.L2, o.D, o.Steps, o.Delta, tvPLD)
			return fig{e, o.Delta}, err
		}
		d, err := account.SampledSkellamPLDDelta(o.Q, o.Variance, o.L2, o.D, o.Steps, o.Epsilon, tvPLD)
		return fig{o.Epsilon, d}, err
	}
	var f fig
	var err error
	used := o.Accountant
	switch o.Accountant {
	case "rdp":
		f, err = rdp()
	case "pld":
		f, err = pldf()
	default:
		fr, errR := rdp()
		fp, errP := pldf()
		switch {
		case errR != nil && errP != nil:
			return errP
		case errP != nil || !isFinite(fp.eps):
			used, f = "rdp", fr
		case errR != nil || !isFinite(fr.eps):
			used, f = "pld", fp
		default:
			out.Extra["rdp_epsilon"], out.Extra["pld_epsilon"] = fr.eps, fp.eps
			out.Extra["rdp_delta"], out.Extra["pld_delta"] = fr.delta, fp.delta
			used, f = "pld", fp
			if fr.eps < fp.eps || fr.eps == fp.eps && fr.delta < fp.delta {
				used, f = "rdp", fr
			}
		}
	}
	if err != nil {
		return err
	}
	g, err := account.SkellamGDPFor(o.Variance, o.D)
	if err != nil {
		return err
	}
	note := fmt.Sprintf("Poisson-subsampled Skellam, q = %v, variance %v per coordinate, L2 %v (L1 %v), d = %d, %d steps, TV %v per step, add/remove-one neighbours, %s accountant", o.Q, o.Variance, o.L2, l1, o.D, o.Steps, o.TV, used)
	if used == "pld" {
		note += fmt.Sprintf(" (the Skellam noise is certified (Mu |s|)-GDP for integer shifts s, Mu sqrt(variance) = %.9f, up to a TV of %.3g: the sampled Gaussian of noise multiplier %.6g dominates)", g.Mu*math.Sqrt(o.Variance), account.SkellamTailTV, 1/(g.Mu*o.L2))
	}
	if o.Accountant == "best" {
		note += " (the tighter rigorous figure of rdp and pld)"
	}
	out.Bound = amplify.Bound{Name: "skellam-" + used, Epsilon: f.eps, Delta: f.delta, Note: note}
	out.Extra["accountant"] = used
	out.Extra["gdp_mu_sqrt_variance"] = g.Mu * math.Sqrt(o.Variance)
	out.Extra["pld_noise_multiplier"] = 1 / (g.Mu * o.L2)
	out.Extra["noise_multiplier"] = math.Sqrt(o.Variance) / o.L2
	return nil
}
