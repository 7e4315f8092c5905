package bound

import (
	"flag"
	"fmt"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
)

func init() {
	params["composition-flame"] = param{"composition", func(fs *flag.FlagSet, o *Params) {
		fs.StringVar(&o.Composition, "composition", "best", "how guarantees compose. Not given: the theorem's own route (each coordinate's shuffle by the privacy blanket, the dimension-level (epsilon, delta) composed over the d coordinates of SS-Simple or the k of SS-Double by the better of basic and advanced composition; over --rounds by best). pld: FMT's clone pair of each coordinate's shuffle (valid for every eps0-LDP randomizer) composed over d (SS-Simple) or k (SS-Double) x rounds coordinates by PLD, at total delta rounds x --delta (no --delta-prime). best: the tighter of pld and the best composition of the dimension-level figures (basic, advanced, rdp, pld). basic, advanced, rdp: that composition of the dimension-level figures, over the coordinates and over --rounds")
	}, params["composition"].check}
}

// cloneSpec names the clone pair that dominates one coordinate's shuffle in
// a FLAME protocol and how many coordinates one user's change moves per
// round: SS-Simple d coordinates of n reports at eps_l/d, the sound SS-Double
// k coordinates of n_p values at eps_l/k.
type cloneSpec struct {
	name, what string
	dims       int // coordinates composed per round
	reporters  int // values in one coordinate's shuffle
}

func simpleClones(o *Params) cloneSpec {
	return cloneSpec{name: "flame-ss-simple", what: "FLAME SS-Simple", dims: o.D, reporters: o.N}
}

func doubleClones(o *Params) cloneSpec {
	return cloneSpec{name: "ss-double-sound", what: "sound SS-Double (k per-dimension shuffles of n_p values, no subsampling credit)", dims: o.K, reporters: o.NP}
}

// flameClones answers `bound flame-simple|flame-double --composition pld`:
// each coordinate's shuffle of spec.reporters values, each randomized by an
// eps0-LDP randomizer with eps0 = eps_l/spec.dims (any such randomizer: the
// clone reduction of Feldman, McMillan and Talwar does not depend on it;
// SS-Double's dummies are blanket draws, see amplify.SSDouble), is dominated
// by FMT's clone pair, and the spec.dims coordinates of --rounds rounds are
// dims x rounds compositions of that pair. They are composed by the PLD
// accountant of the run (account.PLDEpsilon: pessimistic discretisation,
// FFT, every error term in delta), with no per-dimension or per-round
// (epsilon, delta) split, at the total delta rounds x --delta (--delta is
// per round, as for every --rounds composition). --target-epsilon asks for
// the largest eps_l whose composed epsilon is at most the target.
func flameClones(o *Params, out *Result, spec cloneSpec) error {
	if o.LegacyFLAMETypo {
		return checks.Invalidf("--legacy-flame-typo reproduces FLAME's flawed privacy-blanket figures and does not combine with --composition pld (the clone pair needs no blanket bound)")
	}
	if o.Given["delta-prime"] {
		return checks.Invalidf("--delta-prime does not apply to --composition pld: the clone pair is composed over all coordinates x rounds at once, at total delta rounds x --delta")
	}
	if o.Rounds > maxPLDFold/spec.dims {
		return checks.Invalidf("coordinates x rounds = %d x %d exceeds the %d compositions the pld accountant handles", spec.dims, o.Rounds, maxPLDFold)
	}
	k := spec.dims * o.Rounds
	delta := float64(o.Rounds) * o.Delta
	if delta >= 1 {
		return checks.Invalidf("rounds x delta = %v must be < 1", delta)
	}
	o.composeInside = true // the rounds are composed here
	epsAt := func(epsL float64, count int, delta float64) (float64, error) {
		eps0 := epsL / float64(spec.dims)
		c := account.Component{Kind: account.KindShuffle, Eps0: eps0, Reporters: spec.reporters, Count: count, Epsilon: eps0}
		e, err := account.PLDEpsilon([]account.Component{c}, delta)
		if err == nil && !isFinite(e) {
			err = checks.Invalidf("no finite epsilon at delta %v for eps0 = %v and n = %d", delta, eps0, spec.reporters)
		}
		return e, err
	}
	epsL := o.EpsL
	if o.Given["target-epsilon"] {
		amp := func(e float64, _ int, _ float64) (float64, error) { return epsAt(e, k, delta) }
		e, err := amplify.InverseEps0(amp, o.TargetEpsilon, spec.reporters, delta, capEpsL)
		if err != nil {
			return err
		}
		if e >= capEpsL {
			at, _ := epsAt(capEpsL, k, delta)
			return capError("eps_l", capEpsL, at, o.TargetEpsilon)
		}
		epsL = e
		out.Inverse = true
		out.Extra["max_eps_l"] = e
		out.Text = append(out.Text, fmt.Sprintf("largest eps_l = %s for target central epsilon %v", FormatSig(e, 6, false), o.TargetEpsilon))
	}
	eps, err := epsAt(epsL, k, delta)
	if err != nil {
		return fmt.Errorf("clone-pair PLD: %w", err)
	}
	how := fmt.Sprintf("pld composition of FMT's clone pair over %d coordinates", spec.dims)
	if o.Rounds > 1 {
		how += fmt.Sprintf(" x %d rounds", o.Rounds)
		per, err := epsAt(epsL, spec.dims, o.Delta)
		if err != nil {
			return fmt.Errorf("clone-pair PLD: %w", err)
		}
		out.Extra["per_round_epsilon"] = per
		out.Extra["per_round_delta"] = o.Delta
		out.Extra["rounds"] = o.Rounds
	}
	out.Bound = amplify.Bound{Name: spec.name, Epsilon: eps, Delta: delta,
		Note: fmt.Sprintf("%s; %s (%d compositions of %d-value shuffles; pessimistic discretisation, FFT; valid for every eps0-LDP randomizer, substitution relation)", spec.what, how, k, spec.reporters)}
	out.Extra["composition"] = "pld-clone-pair"
	out.Extra["compositions"] = k
	out.Extra["eps_local_per_dimension"] = epsL / float64(spec.dims)
	return nil
}

// flameBest answers `bound flame-simple|flame-double --composition best`:
// the smaller epsilon of the clone pair composed by PLD (flameClones) and
// the tightest composition of the dimension-level (epsilon, delta) figures
// (FLAME's own route, composed over --rounds by the best method); with
// --target-epsilon, the larger eps_l of the two. Each is a rigorous bound,
// and the clone pair's total delta (rounds x --delta) is never above the
// other's, so the better one is a valid statement. If the clone pair cannot
// be computed (too many outcomes), the other is reported.
func flameBest(o *Params, out *Result, spec cloneSpec, theorem func(o *Params, out *Result) error) error {
	oo := *o
	other := &Result{Inputs: out.Inputs, Extra: map[string]any{}}
	errOther := theorem(&oo, other)
	if errOther == nil && !oo.composeInside && oo.Rounds > 1 {
		errOther = composeOutput(&oo, other)
	}
	oc := *o
	oc.Given = map[string]bool{}
	for f, v := range o.Given {
		oc.Given[f] = v
	}
	delete(oc.Given, "delta-prime") // used by the other route only
	clones := &Result{Inputs: out.Inputs, Extra: map[string]any{}}
	errClones := flameClones(&oc, clones, spec)
	useClones := errClones == nil
	if errClones == nil && errOther == nil {
		if o.Given["target-epsilon"] {
			useClones = clones.Extra["max_eps_l"].(float64) >= other.Extra["max_eps_l"].(float64)
		} else {
			useClones = clones.Bound.Epsilon <= other.Bound.Epsilon
		}
	}
	switch {
	case useClones:
		*out = *clones
		out.Bound.Note += "; the tightest of this and the composition of the dimension-level figures"
		o.composeInside = true
	case errOther != nil:
		return errOther
	default:
		*out = *other
		o.composeInside = true
	}
	return nil
}
