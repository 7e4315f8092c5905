package bound

import (
	"flag"
	"fmt"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
)

func init() {
	params["composition-flame-double"] = param{"composition", func(fs *flag.FlagSet, o *Params) {
		fs.StringVar(&o.Composition, "composition", "best", "how guarantees compose. best (default): the tightest of the routes below, named. alloc: the random allocation of the k reported coordinates (pld.SparseShuffleAllocation: each coordinate a 1-of-n_p blanket allocation, k blocks of 1-of-d/k; Laplace and rgb), add/remove PLD composed over --rounds and chained to substitution, or the clone pairs if smaller, at total delta rounds x --delta. pld: FMT's clone pair of each of the k coordinates' shuffle composed over k x rounds by PLD, at total delta rounds x --delta. basic, advanced, rdp: the theorem route (each coordinate's shuffle by the privacy blanket, composed over k by the better of basic and advanced composition), over --rounds by that composition")
	}, func(o *Params) error {
		return oneOf("--composition", o.Composition, append(append([]string(nil), compositionNames...), "alloc")...)
	}}
}

// allocLevels returns the blanket randomizer of --mech for the allocation
// route: 0 for laplace, b = --domain for rgb.
func allocLevels(o *Params) (int, error) {
	switch o.Mech {
	case "laplace":
		return 0, nil
	case "rgb":
		if o.Domain < 2 {
			return 0, checks.Invalidf("--mech rgb needs --domain b >= 2")
		}
		return o.Domain, nil
	}
	return 0, checks.Invalidf("the random-allocation route needs a blanket randomizer whose dummies are blanket draws: --mech laplace or rgb, got %s", o.Mech)
}

// flameAlloc answers `bound flame-double --composition alloc`: one user's
// k coordinates are a uniform k-subset, so a round is dominated by
// pld.SparseShuffleAllocation (account.KindAlloc, planned by
// amplify.SSDoubleAlloc with a failure budget of 1e-4 of --delta, its
// failure probability charged in every round), composed over --rounds by
// PLD for add/remove against "the user's slots hold dummies" and chained
// to substitution (pld.PLD.ChainEpsilon), at total delta rounds x --delta;
// account.PLDEpsilon also composes the clone pairs without the allocation
// credit and takes the smaller epsilon. --target-epsilon asks for the
// largest eps_l whose figure is at most the target.
func flameAlloc(o *Params, out *Result) error {
	if o.LegacyFLAMETypo || o.FLAMETheorem || o.NoSubsampling {
		return checks.Invalidf("--composition alloc is the sound random-allocation statement; --legacy-flame-typo, --flame-theorem and --no-subsampling are FLAME's theorem routes")
	}
	if o.Given["delta-prime"] {
		return checks.Invalidf("--delta-prime does not apply to --composition alloc: the rounds are composed by PLD at total delta rounds x --delta")
	}
	levels, err := allocLevels(o)
	if err != nil {
		return err
	}
	if o.K > o.D {
		return checks.Invalidf("--k = %d exceeds --d = %d", o.K, o.D)
	}
	if o.Rounds > maxPLDFold {
		return checks.Invalidf("%d rounds exceed the %d compositions the pld accountant handles", o.Rounds, maxPLDFold)
	}
	delta := float64(o.Rounds) * o.Delta
	if delta >= 1 {
		return checks.Invalidf("rounds x delta = %v must be < 1", delta)
	}
	o.composeInside = true
	plan := func(epsL float64) (amplify.SSDoubleAllocPlan, account.Component, error) {
		p, err := amplify.SSDoubleAlloc(epsL, o.D, o.K, o.N, o.NP, levels, 1e-4*o.Delta)
		if err != nil {
			return p, account.Component{}, err
		}
		if p.Fail >= o.Delta/2 {
			return p, account.Component{}, checks.Invalidf("n_p = %d is too small: some coordinate overflows or holds too few blanket values with probability up to %.3g, not below half of --delta = %v", o.NP, p.Fail, o.Delta)
		}
		eps0 := epsL / float64(o.K)
		return p, account.Component{Kind: account.KindAlloc, Epsilon: epsL, Count: o.Rounds,
			Eps0: eps0, Reporters: o.NP, Dim: o.D, K: o.K, Slots: p.Slots, Levels: levels, Fail: p.Fail}, nil
	}
	epsAt := func(epsL float64, rounds int, delta float64) (float64, error) {
		_, c, err := plan(epsL)
		if err != nil {
			return 0, err
		}
		c.Count = rounds
		e, err := account.PLDEpsilon([]account.Component{c}, delta)
		if err == nil && !isFinite(e) {
			err = checks.Invalidf("no finite epsilon at delta %v for eps_l = %v", delta, epsL)
		}
		return e, err
	}
	epsL := o.EpsL
	if o.Given["target-epsilon"] {
		amp := func(e float64, _ int, _ float64) (float64, error) { return epsAt(e, o.Rounds, delta) }
		e, err := amplify.InverseEps0(amp, o.TargetEpsilon, o.NP, delta, capEpsL)
		if err != nil {
			return err
		}
		if e >= capEpsL {
			at, _ := epsAt(capEpsL, o.Rounds, delta)
			return capError("eps_l", capEpsL, at, o.TargetEpsilon)
		}
		epsL = e
		out.Inverse = true
		out.Extra["max_eps_l"] = e
		out.Text = append(out.Text, fmt.Sprintf("largest eps_l = %s for target central epsilon %v", FormatSig(e, 6, false), o.TargetEpsilon))
	}
	p, _, err := plan(epsL)
	if err != nil {
		return err
	}
	eps, err := epsAt(epsL, o.Rounds, delta)
	if err != nil {
		return fmt.Errorf("random-allocation PLD: %w", err)
	}
	if o.Rounds > 1 {
		per, err := epsAt(epsL, 1, o.Delta)
		if err != nil {
			return fmt.Errorf("random-allocation PLD: %w", err)
		}
		out.Extra["per_round_epsilon"] = per
		out.Extra["per_round_delta"] = o.Delta
		out.Extra["rounds"] = o.Rounds
	}
	out.Bound = amplify.Bound{Name: "ss-double-allocation", Epsilon: eps, Delta: delta,
		Note: fmt.Sprintf("sound SS-Double by random allocation: each coordinate a 1-of-m blanket allocation (m = n_p - L = %d - %d, failure %.3g per round), k = %d blocks of 1-of-%d coordinates (k-of-d as a random partition), add/remove PLD composed over %d round(s), chained to substitution (delta_sub(e1+e2) <= delta_rem(e1) + e^e1 delta_add(e2)); or the clone pairs if smaller", o.NP, p.LO, p.Fail, o.K, o.D/o.K, o.Rounds)}
	out.Extra["composition"] = "pld-random-allocation"
	out.Extra["slots"] = p.Slots
	out.Extra["failure"] = p.Fail
	out.Extra["eps_local_per_dimension"] = epsL / float64(o.K)
	return nil
}

// flameDoubleBest answers `bound flame-double` by default (--composition
// best): the smallest epsilon (with --target-epsilon, the largest eps_l)
// of the random-allocation route (flameAlloc), the clone pairs composed by
// PLD (flameClones) and the theorem route composed over --rounds by the
// best method. Each is a rigorous bound at a total delta of at most
// rounds x --delta (+ delta' for the theorem route's composition), so the
// best is a valid statement. Routes that cannot be computed (another
// randomizer, too many outcomes) are skipped; if none works the theorem
// route's error is returned.
func flameDoubleBest(o *Params, out *Result) error {
	oo := *o
	theorem := &Result{Inputs: out.Inputs, Extra: map[string]any{}}
	errT := flameDoubleTheorem(&oo, theorem)
	if errT == nil && !oo.composeInside && oo.Rounds > 1 {
		errT = composeOutput(&oo, theorem)
	}
	type route struct {
		r   *Result
		err error
	}
	routes := []route{{theorem, errT}}
	oc := *o
	oc.Given = map[string]bool{}
	for f, v := range o.Given {
		oc.Given[f] = v
	}
	delete(oc.Given, "delta-prime") // the theorem route's only
	for _, f := range []func(*Params, *Result) error{
		func(p *Params, r *Result) error { return flameClones(p, r, doubleClones(p)) },
		flameAlloc,
	} {
		r := &Result{Inputs: out.Inputs, Extra: map[string]any{}}
		pc := oc
		routes = append(routes, route{r, f(&pc, r)})
	}
	best := -1
	better := func(a, b *Result) bool {
		if o.Given["target-epsilon"] {
			return a.Extra["max_eps_l"].(float64) > b.Extra["max_eps_l"].(float64)
		}
		return a.Bound.Epsilon < b.Bound.Epsilon
	}
	for i, rt := range routes {
		if rt.err == nil && (best < 0 || better(rt.r, routes[best].r)) {
			best = i
		}
	}
	if best < 0 {
		return errT
	}
	*out = *routes[best].r
	if best > 0 {
		out.Bound.Note += "; the tightest of the random-allocation, clone-pair and theorem routes"
	}
	o.composeInside = true
	return nil
}
