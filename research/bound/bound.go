package bound

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
)

// Command is one named bound: what it states and the parameters it reads.
type Command struct {
	// Summary is one line on what the command computes.
	Summary string
	// Params are the ids of the parameters the command reads, in the
	// order of its flags (see Register).
	Params []string
	// check validates combinations of parameters; it runs after every
	// parameter's own check and before run.
	check func(o *Params) error
	run   func(o *Params, out *Result) error
}

// Commands returns the names of every command, sorted.
func Commands() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the command called name.
func Lookup(name string) (Command, bool) {
	c, ok := commands[name]
	return c, ok
}

// personalParams are the parameters of the personalized bounds.
var personalParams = []string{"eps-file", "eps-dist", "n", "seed", "delta", "rounds", "composition", "delta-prime", "target-epsilon", "compare", "json"}

// commands are the bounds by name (the subcommands of `shufflefl bound`).
var commands = map[string]Command{
	"erlingsson": {"Erlingsson et al. 2019: eps = 12 eps0 sqrt(log(1/delta)/n) (eps0 <= 1/2, n >= 1000, delta <= 0.01)",
		[]string{"eps0", "n", "delta", "rounds", "composition", "delta-prime", "target-epsilon", "compare", "json"}, nil, runErlingsson},
	"blanket": {"Balle et al. 2019 privacy blanket: numerical Bennett (default) or Hoeffding bound, or the closed form of FLAME Lemma 1",
		[]string{"eps0", "n", "delta", "domain", "k-domain", "mech", "variant", "form", "legacy-flame-typo", "rounds", "composition", "delta-prime", "target-epsilon", "compare", "json"}, checkBlanket, runBlanket},
	"clones": {"Feldman, McMillan and Talwar 2022: numerical bound (every clone count exact, guaranteed upper bound) or closed form",
		[]string{"eps0", "n", "delta", "form", "rounds", "composition", "delta-prime", "target-epsilon", "compare", "json"}, checkForm("numerical", "closed", "theorem"), runClones},
	"best": {"the tightest valid rigorous bound, named (uniform; personalized with --eps-file or --eps-dist); never an approximation",
		[]string{"eps0", "n", "delta", "domain", "k-domain", "mech-best", "eps-file", "eps-dist", "seed", "rounds", "composition", "delta-prime", "compare", "json"}, checkBest, runBest},
	"unis": {"UniS baseline: the clones bound at max eps_i for all users (default numerical, APES Table 3's 0.069; --form closed is APES Eq. (2))",
		append([]string{"form"}, personalParams...), checkForm("numerical", "closed"), runUniS},
	"eon": {"APES Echo of Neighbors: numerical (default; exact Poisson-binomial clone counts) or closed form (Theorem 4)",
		append([]string{"form"}, personalParams...), checkForm("numerical", "closed"), runEoN},
	"eapes": {"E-APES mu-GDP, mu = 2/sqrt(sum p_i): an APPROXIMATION (central limit), not an upper bound; rounds compose as mu sqrt(rounds)",
		[]string{"delta-local", "tv", "eps-file", "eps-dist", "n", "seed", "delta", "rounds", "target-epsilon", "compare", "json"}, checkEAPES, runEAPES},
	"flame-simple": {"FLAME Theorem 1 (SS-Simple): per-dimension shuffle at eps_l/d, composed over d; --composition pld (or best) composes FMT's clone pair itself over d x rounds coordinates, the tight figure",
		[]string{"eps-l", "d", "n", "delta", "domain", "k-domain", "mech", "variant", "legacy-flame-typo", "rounds", "composition-flame", "delta-prime", "target-epsilon", "json"}, nil, runFlameSimple},
	"flame-double": {"SS-Double (FLAME Algorithm 3), sound: the k dimensions a user reports in, each a shuffle of n_p values, composed without subsampling credit (--flame-theorem: FLAME Theorems 3-4, NOT an upper bound); prints the count-statistic lower bound",
		[]string{"eps-l", "d", "k", "n", "np", "delta", "domain", "mech", "variant", "legacy-flame-typo", "no-subsampling", "flame-theorem", "rounds", "composition-flame-double", "delta-prime", "target-epsilon", "json"}, nil, runFlameDouble},
	"flame-topk": {"FLAME Theorem 5 / Proposition 2: nu-index privacy of SS-Topk; with --eps-l or --delta also its central guarantee (min(2k, d) clone pairs by PLD, or FLAME Theorem 4, the smaller) and the count lower bound",
		[]string{"n", "np", "d", "k", "beta", "nu", "eps-l", "delta", "mech", "domain", "variant", "json"}, checkFlameTopk, runFlameTopk},
	"sapes": {"S-APES Proposition 1: user-level guarantee after b-of-d post-sparsification (2b compositions of the dimension-level guarantee)",
		[]string{"eps-c", "delta-c", "b", "composition-protocol", "delta-prime-sapes", "eps-file", "eps-dist", "n", "seed", "delta", "json"}, checkSAPES, runSAPES},
	"subsample": {"amplification by subsampling (Balle, Barthe, Gaboardi 2018; FLAME Lemma 4): wor or poisson",
		[]string{"eps0-or-zero", "delta0", "q", "method", "json"}, nil, runSubsample},
	"compose": {"composition of --rounds rounds of an (eps0, delta0)-DP mechanism: basic, advanced (FLAME Lemma 3 / APES Lemma 2), rdp, pld or best",
		[]string{"eps0-or-zero", "delta0", "rounds", "delta-prime", "composition", "compose-method", "json"}, nil, runCompose},
	"sgm": {"Poisson-subsampled Gaussian mechanism (rate q, noise multiplier sigma) composed over T steps: epsilon at --delta or delta at --epsilon, by the rdp (default) or pld accountant",
		[]string{"sgm-q", "sigma", "steps", "sgm-delta", "sgm-epsilon", "accountant", "json"}, nil, runSGM},
}

// init adds the parameters that share the check of another (a literal
// entry cannot refer to the table).
func init() {
	params["delta-prime-sapes"] = param{"delta-prime", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.DeltaPrime, "delta-prime", 1e-8, "the slack delta' of S-APES Proposition 1 (and of --composition advanced, rdp or pld over the 2b compositions), in (0, 1); it is added to the total delta")
	}, params["delta-prime"].check}
	params["composition-protocol"] = param{"composition", func(fs *flag.FlagSet, o *Params) {
		fs.StringVar(&o.Composition, "composition", "best", "how guarantees compose: basic, advanced, rdp, pld or best (the tightest, named). Over --rounds the default is best; inside the protocol (FLAME: over the dimensions, S-APES: over 2b) the default is the paper's theorem and a given --composition replaces it")
	}, params["composition"].check}
}

// Compute validates p for the command called name and computes its bound.
// Every parameter is checked before any computation; an invalid one is
// reported as a checks.ErrInvalid error. A result with Rounds > 1 is
// composed over them unless the command composes by itself; the result is
// never a non-finite (epsilon, delta). Compute resolves a deprecated alias
// in p (compose's Method) into the field it stands for.
func Compute(name string, p *Params) (*Result, error) {
	cmd, ok := commands[name]
	if !ok {
		return nil, checks.Invalidf("unknown bound %q", name)
	}
	o := p
	o.composeInside = false
	if o.Given == nil {
		o.Given = map[string]bool{}
	}
	if !slices.Contains(cmd.Params, "rounds") {
		o.Rounds = 1
	}
	if err := validate(name, cmd, o); err != nil {
		return nil, err
	}
	out := &Result{Inputs: map[string]any{}, Extra: map[string]any{}}
	switch name {
	case "compose", "subsample", "flame-topk", "sapes", "sgm":
		o.composeInside = true
	}
	err := cmd.run(o, out)
	if err == nil {
		markLegacy(out)
		if !o.composeInside && o.Rounds > 1 {
			err = composeOutput(o, out)
		}
	}
	if err == nil && !out.NoEpsDelta && (!isFinite(out.Bound.Epsilon) || !isFinite(out.Bound.Delta)) {
		err = checks.Invalidf("result is not finite (epsilon = %v, delta = %v): the parameters are beyond what this bound can express", out.Bound.Epsilon, out.Bound.Delta)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// validate runs the checks of every parameter of cmd, then those of their
// combinations.
func validate(name string, cmd Command, o *Params) error {
	if err := normalizeAliases(o, cmd); err != nil {
		return err
	}
	for _, f := range cmd.Params {
		if c := params[f].check; c != nil {
			if err := c(o); err != nil {
				return err
			}
		}
	}
	if err := checkRoundsFlags(name, o); err != nil {
		return err
	}
	if cmd.check != nil {
		return cmd.check(o)
	}
	return nil
}

// normalizeAliases resolves deprecated flag names (compose's --method, now
// --composition) and rejects --k where it would mean the randomizer's
// domain size: --k has one meaning in every subcommand, the dimensions
// sampled per user (flame-double, flame-topk); the domain size of krr and
// rgb is --domain. (--k used to be accepted as an alias of --domain in
// blanket, best and flame-simple.)
func normalizeAliases(o *Params, cmd Command) error {
	if slices.Contains(cmd.Params, "k-domain") && o.Given["k"] {
		return checks.Invalidf("--k is not a flag of this subcommand: the randomizer's domain size (krr, rgb) is --domain; --k is the number of dimensions sampled per user, in flame-double and flame-topk")
	}
	if slices.Contains(cmd.Params, "compose-method") && o.Given["method"] {
		// The deprecated flag's value is checked under its own name, so the
		// error names the flag the user gave.
		if err := oneOf("--method (deprecated; use --composition)", o.Method, compositionNames...); err != nil {
			return err
		}
		if o.Given["composition"] && o.Method != o.Composition {
			return checks.Invalidf("--method (deprecated) and --composition disagree (%q and %q); give --composition only", o.Method, o.Composition)
		}
		o.Composition = o.Method
		o.Given["composition"] = true
	}
	return nil
}

// checkRoundsFlags rejects --composition and --delta-prime where they would
// be ignored: in the subcommands that compose only over --rounds, when there
// is a single round (FLAME also composes over dimensions; S-APES, compose and
// sgm always use them).
func checkRoundsFlags(name string, o *Params) error {
	if o.Rounds > 1 {
		return nil
	}
	switch name {
	case "compose", "sapes", "sgm", "subsample", "flame-topk":
		return nil
	case "flame-simple", "flame-double":
		if o.Given["delta-prime"] {
			return checks.Invalidf("--delta-prime applies only with --rounds > 1 (FLAME's composition over dimensions uses delta_cd as its slack)")
		}
		return nil
	}
	for _, f := range []string{"composition", "delta-prime"} {
		if o.Given[f] {
			return checks.Invalidf("--%s applies only with --rounds > 1", f)
		}
	}
	return nil
}

// checkForm returns a check accepting the given --form values.
func checkForm(allowed ...string) func(o *Params) error {
	return func(o *Params) error { return oneOf("--form", o.Form, allowed...) }
}

func checkBlanket(o *Params) error {
	if err := checkForm("numerical", "closed")(o); err != nil {
		return err
	}
	if o.Form == "closed" {
		if o.Mech != "rgb" {
			return checks.Invalidf("--form closed (FLAME Lemma 1) applies to --mech rgb only")
		}
		if o.LegacyFLAMETypo || o.Given["variant"] {
			return checks.Invalidf("--variant and --legacy-flame-typo apply to --form numerical only")
		}
	}
	return nil
}

func checkBest(o *Params) error {
	if o.EpsFile != "" || o.EpsDist != "" {
		for _, f := range []string{"eps0", "mech", "domain"} {
			if o.Given[f] {
				return checks.Invalidf("--%s applies to uniform budgets; it cannot be combined with --eps-file or --eps-dist", f)
			}
		}
	}
	return nil
}

func checkEAPES(o *Params) error {
	if o.Given["target-epsilon"] {
		return checks.Invalidf("--target-epsilon is not offered for E-APES: it is an approximation, not an upper bound; use eon")
	}
	if o.TV > 0 && o.Rounds > 1 {
		return checks.Invalidf("--tv (the Berry–Esseen correction) is per round; it cannot be combined with --rounds")
	}
	return nil
}

func checkFlameTopk(o *Params) error {
	if o.Given["beta"] && (o.Given["k"] || o.Given["d"]) {
		return checks.Invalidf("give --beta or --k and --d, not both")
	}
	if o.Given["beta"] && o.Beta == 0 {
		return checks.Invalidf("--beta must be in (0, 1], got 0")
	}
	if o.Nu != 0 && (o.Given["n"] || o.Given["np"]) {
		return checks.Invalidf("--n and --np are not used with --nu (Proposition 2 depends on nu and beta only)")
	}
	return nil
}

func checkSAPES(o *Params) error {
	if err := checks.IntInRange("--b", o.B, 1, math.MaxInt32); err != nil {
		return err
	}
	if o.Given["eps-c"] {
		for _, f := range []string{"delta", "eps-file", "eps-dist", "n", "seed"} {
			if o.Given[f] {
				return checks.Invalidf("--%s cannot be combined with --eps-c: it configures the EoN computation of eps^c; give the dimension-level delta with --delta-c", f)
			}
		}
		return nil
	}
	if o.Given["delta-c"] {
		return checks.Invalidf("--delta-c needs --eps-c (without --eps-c both are computed by EoN from the budgets and --delta)")
	}
	return nil
}

// setCompare fills out with a comparison and its best rigorous row (rows are
// sorted by epsilon): the first that is neither an approximation nor legacy
// and needs no extra assumption (amplify.Bound.Assumption); only if there is
// none, the first rigorous one under an assumption, which is then printed.
func setCompare(out *Result, rows []amplify.Candidate) error {
	out.Compare = rows
	for _, standard := range []bool{true, false} {
		for _, r := range rows {
			if r.Err == "" && !r.Approximation && !IsLegacy(r.Bound) && (!standard || r.Assumption == "") {
				out.Bound = r.Bound
				return nil
			}
		}
	}
	return checks.Invalidf("no bound applies to these parameters")
}

func randomizer(o *Params) (amplify.Randomizer, error) {
	m, err := amplify.ParseMechanism(o.Mech)
	if err != nil {
		return amplify.Randomizer{}, err
	}
	return amplify.Randomizer{Mech: m, K: o.Domain}, nil
}

func blanketVariant(o *Params) (amplify.BlanketVariant, error) {
	if o.LegacyFLAMETypo {
		return amplify.BennettLegacyFLAME, nil
	}
	switch o.Variant {
	case "bennett":
		return amplify.Bennett, nil
	case "hoeffding":
		return amplify.Hoeffding, nil
	}
	return 0, checks.Invalidf("--variant must be bennett or hoeffding, got %q", o.Variant)
}

// capError reports that an inverse search stopped at its cap: every value up
// to the cap meets the target, so there is no finite answer to report.
func capError(what string, limit, epsAtCap, target float64) error {
	return checks.Invalidf("the search for the largest %s reached its cap %s = %v (central epsilon there is %s <= target %v): the target does not constrain %s below the cap; lower --target-epsilon",
		what, what, limit, EpsUp(epsAtCap), target, what)
}

// Caps of the inverse searches.
const (
	capEps0  = 30  // uniform local epsilon
	capEpsL  = 1e5 // FLAME's eps_l
	capScale = 1e3 // scale factor on a personalized budget vector
)

// inverseUniform answers --target-epsilon for a uniform amplifier: the largest
// eps0 whose guarantee, composed over --rounds by --composition, is at most
// the target. The search and the reported result use the same function, so
// the printed epsilon, delta and composition are the ones achieved at the
// returned eps0.
func inverseUniform(o *Params, out *Result, name, note string, amp1 amplify.Amplifier) error {
	o.composeInside = true
	total := func(e0 float64) (amplify.Bound, string, error) {
		e, err := amp1(e0, o.N, o.Delta)
		if err != nil {
			return amplify.Bound{}, "", err
		}
		return composeRounds(o, amplify.Bound{Name: name, Epsilon: e, Delta: o.Delta, Note: "inverse calibration; " + note})
	}
	amp := func(e0 float64, _ int, _ float64) (float64, error) {
		b, _, err := total(e0)
		return b.Epsilon, err
	}
	e0, err := amplify.InverseEps0(amp, o.TargetEpsilon, o.N, o.Delta, capEps0)
	if err != nil {
		return err
	}
	b, how, err := total(e0)
	if err != nil {
		return err
	}
	if e0 >= capEps0 {
		return capError("eps0", capEps0, b.Epsilon, o.TargetEpsilon)
	}
	if o.Rounds > 1 {
		out.Extra["rounds"] = o.Rounds
		out.Extra["composition"] = how
	}
	out.Inverse = true
	out.Bound = b
	out.Extra["max_eps0"] = e0
	out.Text = append(out.Text, fmt.Sprintf("largest local eps0 = %s for target central epsilon %v (n = %d, delta = %v per round)", FormatSig(e0, 6, false), o.TargetEpsilon, o.N, o.Delta))
	return nil
}

func runErlingsson(o *Params, out *Result) error {
	if o.Compare {
		rows, err := amplify.CompareUniform(o.Eps0, o.N, o.Delta, amplify.Randomizer{Mech: amplify.Generic}, false)
		if err != nil {
			return err
		}
		return setCompare(out, rows)
	}
	const note = "Erlingsson et al. 2019"
	if o.Given["target-epsilon"] {
		return inverseUniform(o, out, "erlingsson", note, amplify.Erlingsson)
	}
	e, err := amplify.Erlingsson(o.Eps0, o.N, o.Delta)
	if err != nil {
		return err
	}
	out.Bound = amplify.Bound{Name: "erlingsson", Epsilon: e, Delta: o.Delta, Note: note}
	return nil
}

func runBlanket(o *Params, out *Result) error {
	r, err := randomizer(o)
	if err != nil {
		return err
	}
	if o.Compare {
		rows, err := amplify.CompareUniform(o.Eps0, o.N, o.Delta, r, o.LegacyFLAMETypo)
		if err != nil {
			return err
		}
		return setCompare(out, rows)
	}
	if o.Form == "closed" {
		amp := func(e0 float64, n int, d float64) (float64, error) { return amplify.BlanketClosedForm(e0, r.K, n, d) }
		const note = "Balle et al. 2019 / FLAME Lemma 1"
		if o.Given["target-epsilon"] {
			return inverseUniform(o, out, "blanket-closed", note, amp)
		}
		e, err := amp(o.Eps0, o.N, o.Delta)
		if err != nil {
			return err
		}
		out.Bound = amplify.Bound{Name: "blanket-closed", Epsilon: e, Delta: o.Delta, Note: note}
		return nil
	}
	v, err := blanketVariant(o)
	if err != nil {
		return err
	}
	name := "blanket-" + v.String() + "-" + r.Mech.String()
	note := "Balle et al. 2019, numerical"
	if v == amplify.BennettLegacyFLAME {
		note = "FLAWED legacy pre-July-2020 Bennett code: understates delta; for reproducing FLAME's figures only"
	}
	if o.Given["target-epsilon"] {
		return inverseUniform(o, out, name, note, amplify.BlanketAmplifier(r, v))
	}
	e, ok, err := amplify.BlanketEpsilon(r, v, o.Eps0, o.N, o.Delta)
	if err != nil {
		return err
	}
	if !ok {
		note += "; no amplification at these parameters (eps0 returned)"
	}
	out.Bound = amplify.Bound{Name: name, Epsilon: e, Delta: o.Delta, Note: note}
	return nil
}

func runClones(o *Params, out *Result) error {
	if o.Compare {
		rows, err := amplify.CompareUniform(o.Eps0, o.N, o.Delta, amplify.Randomizer{Mech: amplify.Generic}, false)
		if err != nil {
			return err
		}
		return setCompare(out, rows)
	}
	var amp amplify.Amplifier
	var name, note string
	switch o.Form {
	case "numerical":
		amp, name, note = amplify.ClonesNumerical, "clones-numerical", "FMT 2022 numerical, every clone count exact (guaranteed upper bound)"
	case "closed":
		amp, name, note = amplify.ClonesClosedForm, "clones-closed", "FMT 2022 closed form (authors' code form)"
	case "theorem":
		amp, name, note = amplify.ClonesTheorem, "clones-theorem", "FMT 2022 Theorem 3.1 as printed (APES Eq. 2)"
	default:
		return checks.Invalidf("--form must be numerical, closed or theorem, got %q", o.Form)
	}
	if o.Given["target-epsilon"] {
		return inverseUniform(o, out, name, note, amp)
	}
	e, err := amp(o.Eps0, o.N, o.Delta)
	if err != nil {
		return err
	}
	out.Bound = amplify.Bound{Name: name, Epsilon: e, Delta: o.Delta, Note: note}
	return nil
}

// budgets loads personalized epsilons from --eps-file or --eps-dist (the
// flags were validated by runBound: one source, n <= account.MaxBudgets).
func budgets(o *Params, out *Result) ([]float64, error) {
	var eps []float64
	switch {
	case o.EpsFile != "":
		var r io.Reader = os.Stdin
		if o.EpsFile != "-" {
			f, err := os.Open(o.EpsFile)
			if err != nil {
				return nil, checks.Invalidf("--eps-file: %v", err)
			}
			defer f.Close()
			r = f
		}
		e, err := account.ReadBudgets(r)
		if err != nil {
			return nil, fmt.Errorf("--eps-file %s: %w", o.EpsFile, err)
		}
		eps = e
	case o.EpsDist != "":
		e, err := account.Budgets(o.EpsDist, o.N, rng.Stream(uint64(o.Seed)))
		if err != nil {
			return nil, fmt.Errorf("--eps-dist %s: %w", o.EpsDist, err)
		}
		eps = e
	default:
		return nil, checks.Invalidf("personalized bounds need --eps-file FILE or --eps-dist NAME (with --n and --seed)")
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, e := range eps {
		lo, hi = math.Min(lo, e), math.Max(hi, e)
	}
	out.Inputs["budgets"] = map[string]any{"count": len(eps), "min": lo, "max": hi}
	return eps, nil
}

// personalCmd runs a personalized bound with --compare and --target-epsilon.
func personalCmd(o *Params, out *Result, bound amplify.PersonalBound) error {
	eps, err := budgets(o, out)
	if err != nil {
		return err
	}
	if o.Compare {
		rows, err := comparePersonal(o, out, eps)
		if err != nil {
			return err
		}
		return setCompare(out, rows)
	}
	if o.Given["target-epsilon"] {
		o.composeInside = true
		var how string
		composed := func(e []float64, d float64) (amplify.Bound, error) {
			b, err := bound(e, d)
			if err != nil {
				return b, err
			}
			b, how, err = composeRounds(o, b)
			return b, err
		}
		s, err := amplify.InverseScale(composed, eps, o.Delta, o.TargetEpsilon, capScale)
		if err != nil {
			return err
		}
		scaled := make([]float64, len(eps))
		for i, e := range eps {
			scaled[i] = s * e
		}
		b, err := composed(scaled, o.Delta)
		if err != nil {
			return err
		}
		if s >= capScale {
			return capError("scale factor", capScale, b.Epsilon, o.TargetEpsilon)
		}
		if o.Rounds > 1 {
			out.Extra["rounds"] = o.Rounds
			out.Extra["composition"] = how
		}
		out.Inverse = true
		out.Bound = b
		out.Extra["scale"] = s
		out.Text = append(out.Text, fmt.Sprintf("largest scale factor on the budget vector = %s for target central epsilon %v", FormatSig(s, 6, false), o.TargetEpsilon))
		return nil
	}
	b, err := bound(eps, o.Delta)
	if err != nil {
		return err
	}
	out.Bound = b
	return nil
}

func runUniS(o *Params, out *Result) error {
	if o.Form == "closed" {
		return personalCmd(o, out, amplify.UniS)
	}
	return personalPairRounds(o, out, amplify.UniSNumerical, func(eps []float64, b amplify.Bound) (account.Component, error) {
		return account.Component{Epsilon: b.Epsilon, Delta: b.Delta, Kind: account.KindShuffle, Eps0: slices.Max(eps), Reporters: len(eps)}, nil
	})
}

func runEoN(o *Params, out *Result) error {
	if o.Form == "closed" {
		return personalCmd(o, out, amplify.EoNClosedForm)
	}
	return personalPairRounds(o, out, amplify.EoNNumerical, func(eps []float64, b amplify.Bound) (account.Component, error) {
		others, es, err := amplify.EoNClonePair(eps, true)
		if err != nil {
			return account.Component{}, err
		}
		h, err := account.HeteroClones(others)
		if err != nil {
			return account.Component{}, err
		}
		return account.Component{Epsilon: b.Epsilon, Delta: b.Delta, Kind: account.KindShuffleHetero, Eps0: es, Reporters: len(eps), Clones: h}, nil
	})
}

// personalPairRounds is personalCmd for a numerical clone bound whose
// analysis is a dominating pair (FMT's clone pair for UniS at max eps_i;
// EoN's Poisson-binomial clone pair, account.KindShuffleHetero, whose
// documentation proves it dominates): with --rounds R > 1 and --composition
// best (the default) or pld, the R releases are also composed as the pair
// itself by PLD (clonePairRounds). The pair rests on the same premise as
// the per-round bound (EoN's on APES's hidden-budget assumption, which the
// result keeps stating). --compare and --target-epsilon keep the
// (eps, delta) route.
func personalPairRounds(o *Params, out *Result, bound amplify.PersonalBound, pair func(eps []float64, b amplify.Bound) (account.Component, error)) error {
	if err := personalCmd(o, out, bound); err != nil {
		return err
	}
	if !usePairRounds(o) {
		return nil
	}
	eps, err := budgets(o, out)
	if err != nil {
		return err
	}
	per := out.Bound
	c, err := pair(eps, per)
	if err != nil {
		out.Extra["pld_clone_pair"] = "unavailable: " + err.Error()
		return nil
	}
	return clonePairRounds(o, out, []pairCand{{per, c}})
}

// usePairRounds says whether a result is composed over --rounds by its
// clone pair as well (see clonePairRounds).
func usePairRounds(o *Params) bool {
	return o.Rounds > 1 && !o.Compare && !o.Given["target-epsilon"] && (o.Composition == "best" || o.Composition == "" || o.Composition == "pld")
}

// pairCand is a per-round bound and its dominating pair (one application).
type pairCand struct {
	per  amplify.Bound
	pair account.Component
}

// clonePairRounds composes out's bound over o.Rounds by the (eps, delta)
// route (composeOutput) and then every candidate's pair, applied o.Rounds
// times, by PLD (account.PLDEpsilon, pessimistic discretisation, every
// error term in delta) at the same total delta; with --composition best the
// smallest figure is kept and named (composition = pld-clone-pair, the bound
// named after the candidate), with pld the best pair's figure is reported.
// Each pair dominates its per-round mechanism, and the R-fold product of
// dominating pairs dominates the R-fold (adaptive) composition.
func clonePairRounds(o *Params, out *Result, cands []pairCand) error {
	o.composeInside = true
	if err := composeOutput(o, out); err != nil {
		return err
	}
	best, bestE := -1, math.Inf(1)
	for i, c := range cands {
		c.pair.Count = o.Rounds
		e, err := account.PLDEpsilon([]account.Component{c.pair}, out.Bound.Delta)
		if err != nil {
			out.Extra["pld_clone_pair_"+c.per.Name] = "unavailable: " + err.Error()
			continue
		}
		out.Extra["pld_clone_pair_epsilon_"+c.per.Name] = e
		if e < bestE {
			best, bestE = i, e
		}
	}
	if best < 0 || o.Composition != "pld" && !(bestE < out.Bound.Epsilon) {
		return nil
	}
	per, delta := cands[best].per, out.Bound.Delta
	out.Bound = per
	out.Bound.Epsilon, out.Bound.Delta = bestE, delta
	out.Bound.Note = fmt.Sprintf("%s; composed over %d rounds by the PLD of its clone pair (pessimistic FFT)", per.Note, o.Rounds)
	if o.Composition != "pld" {
		out.Bound.Note += ", the tightest of basic, advanced, rdp, pld and the clone pairs' PLD"
	}
	out.Extra["composition"] = "pld-clone-pair"
	return nil
}

func runEAPES(o *Params, out *Result) error {
	if !o.Compare {
		// The single E-APES result composes by GDP inside eapesRounds.
		o.composeInside = true
	}
	err := personalCmd(o, out, func(eps []float64, delta float64) (amplify.Bound, error) {
		var ds []float64
		if o.DeltaLocal > 0 {
			ds = make([]float64, len(eps))
			for i := range ds {
				ds[i] = o.DeltaLocal
			}
		}
		return eapesRounds(o, out, eps, ds, delta)
	})
	if err != nil || o.Compare {
		return err
	}
	return eapesRigorous(o, out)
}

// eapesRigorous adds E-APES's rigorous statement to out (Extra
// "rigorous_epsilon", "rigorous_delta" and a line below
// the result): the Gaussian premise of every user, composed over --rounds
// exactly by PLD, with no shuffle credit. A user whose report is the
// Gaussian mechanism calibrated to (eps_i, delta_i)-DP has noise
// multiplier at least 1/mu_i, mu_i = account.GDPMu(eps_i, delta_i) (the
// largest mu whose Gaussian is (eps_i, delta_i)-DP, Balle and Wang 2018,
// Theorem 8; inflated by 1e-9 relative for its bisection), and the
// shuffled reports are a post-processing of the differing user's report,
// so each round is dominated by the Gaussian pair of the largest mu_i
// (account.KindGaussian), and R rounds by its R-fold composition. It needs
// every user's delta_i (--delta-local > 0); without it there is no
// Gaussian premise to compose and nothing is added.
func eapesRigorous(o *Params, out *Result) error {
	if !(o.DeltaLocal > 0) {
		return nil
	}
	b, ok := out.Inputs["budgets"].(map[string]any)
	if !ok {
		return nil
	}
	emax, _ := b["max"].(float64)
	mu, err := account.GDPMu(emax, o.DeltaLocal)
	if err != nil {
		return fmt.Errorf("E-APES rigorous statement: %w", err)
	}
	mu *= 1 + 1e-9
	rounds := max(o.Rounds, 1)
	c := account.Component{Epsilon: emax, Delta: o.DeltaLocal, Count: rounds, Kind: account.KindGaussian, Sigma: 1 / mu}
	e, err := account.PLDEpsilon([]account.Component{c}, o.Delta)
	if err != nil {
		return fmt.Errorf("E-APES rigorous statement: %w", err)
	}
	note := fmt.Sprintf("rigorous: each user's Gaussian premise (largest mu_i = %s at eps_i = %s, delta_i = %s), no shuffle credit, %d round(s) composed exactly by PLD", Figure(mu, 6), Figure(emax, 6), Figure(o.DeltaLocal, 4), rounds)
	out.Extra["rigorous_epsilon"] = e
	out.Extra["rigorous_delta"] = o.Delta
	out.After = append(out.After, fmt.Sprintf("rigorous statement: epsilon = %s, delta = %s (%s)", EpsUp(e), DeltaUp(o.Delta), note))
	return nil
}

// eapesRounds returns E-APES for eps composed over o.Rounds rounds: GDP
// composes exactly, mu_total = mu sqrt(rounds). The result stays labelled as
// an approximation.
func eapesRounds(o *Params, out *Result, eps, ds []float64, delta float64) (amplify.Bound, error) {
	mu, err := amplify.EAPESMu(eps, ds)
	if err != nil {
		return amplify.Bound{}, err
	}
	out.Extra["mu"] = mu
	note := fmt.Sprintf("E-APES mu-GDP, mu = %s; central-limit approximation, not an upper bound", Figure(mu, 6))
	if o.Rounds > 1 {
		mu = account.GDPCompose(mu, o.Rounds)
		out.Extra["mu_total"] = mu
		note += fmt.Sprintf("; %d rounds composed as mu sqrt(rounds) = %s", o.Rounds, Figure(mu, 6))
	}
	e, err := amplify.GDPEpsilon(mu, delta)
	if err != nil {
		return amplify.Bound{}, err
	}
	if o.TV > 0 {
		// --tv, --delta-local and --delta were validated: an error here
		// means the correction is vacuous at this delta, a result.
		ec, err := amplify.EAPESCorrectedEpsilon(mu, o.TV, o.DeltaLocal, delta)
		if err != nil {
			out.Extra["eps_berry_esseen_corrected"] = "none: " + err.Error()
		} else {
			out.Extra["eps_berry_esseen_corrected"] = ec
		}
	}
	return amplify.Bound{Name: "eapes-gdp", Epsilon: e, Delta: delta, Approximation: true, Note: note}, nil
}

// comparePersonal runs amplify.ComparePersonal and, with --rounds, composes
// the E-APES row by GDP (the rigorous rows are composed by composeOutput).
func comparePersonal(o *Params, out *Result, eps []float64) ([]amplify.Candidate, error) {
	rows, err := amplify.ComparePersonal(eps, o.Delta)
	if err != nil || o.Rounds <= 1 {
		return rows, err
	}
	for i, r := range rows {
		if r.Name == "eapes-gdp" && r.Err == "" {
			b, err := eapesRounds(o, out, eps, nil, o.Delta)
			if err != nil {
				rows[i].Err = err.Error()
				continue
			}
			rows[i].Bound = b
		}
	}
	return rows, nil
}

func runBest(o *Params, out *Result) error {
	var rows []amplify.Candidate
	if o.EpsFile != "" || o.EpsDist != "" {
		eps, err := budgets(o, out)
		if err != nil {
			return err
		}
		if rows, err = comparePersonal(o, out, eps); err != nil {
			return err
		}
	} else {
		r, err := randomizer(o)
		if err != nil {
			return err
		}
		if rows, err = amplify.CompareUniform(o.Eps0, o.N, o.Delta, r, false); err != nil {
			return err
		}
	}
	if err := setCompare(out, rows); err != nil {
		return err
	}
	if !o.Compare {
		out.Compare = nil
	}
	if usePairRounds(o) {
		cands, err := bestPairs(o, out, rows)
		if err != nil {
			return err
		}
		return clonePairRounds(o, out, cands)
	}
	return nil
}

// bestPairs returns the clone pairs of best's rigorous standard rows that
// have one: FMT's clone pair for uniform budgets (clones-numerical, valid
// for every eps0-LDP randomizer) and for UniS at max eps_i, and the
// Poisson-binomial pair of EoN with Clip-Laplace's exact echo
// probabilities (eon-exact-echo; amplify.EoNClonePair).
func bestPairs(o *Params, out *Result, rows []amplify.Candidate) ([]pairCand, error) {
	var eps []float64
	if o.EpsFile != "" || o.EpsDist != "" {
		e, err := budgets(o, out)
		if err != nil {
			return nil, err
		}
		eps = e
	}
	var cs []pairCand
	for _, r := range rows {
		if r.Err != "" || r.Approximation || r.Assumption != "" {
			continue
		}
		switch {
		case eps == nil && r.Name == "clones-numerical":
			cs = append(cs, pairCand{r.Bound, account.Component{Epsilon: r.Epsilon, Delta: r.Delta, Kind: account.KindShuffle, Eps0: o.Eps0, Reporters: o.N}})
		case eps != nil && r.Name == "unis-numerical":
			cs = append(cs, pairCand{r.Bound, account.Component{Epsilon: r.Epsilon, Delta: r.Delta, Kind: account.KindShuffle, Eps0: slices.Max(eps), Reporters: len(eps)}})
		case eps != nil && r.Name == "eon-exact-echo":
			others, es, err := amplify.EoNClonePair(eps, false)
			if err != nil {
				continue
			}
			h, err := account.HeteroClones(others)
			if err != nil {
				continue
			}
			cs = append(cs, pairCand{r.Bound, account.Component{Epsilon: r.Epsilon, Delta: r.Delta, Kind: account.KindShuffleHetero, Eps0: es, Reporters: len(eps), Clones: h}})
		}
	}
	return cs, nil
}

func flameAmp(o *Params) (amplify.Amplifier, error) {
	r, err := randomizer(o)
	if err != nil {
		return nil, err
	}
	v, err := blanketVariant(o)
	if err != nil {
		return nil, err
	}
	return amplify.BlanketAmplifier(r, v), nil
}

// flameCompose applies an explicit --composition to the composition over
// dimensions of a FLAME protocol: the dimension-level (eps_cd, delta_cd) is
// composed Compositions times with slack delta' = delta_cd, as in Theorems 1
// and 4 (whose own rule, min of basic and advanced, is the default).
func flameCompose(o *Params, p amplify.ProtocolResult) (amplify.ProtocolResult, error) {
	if !o.Given["composition"] {
		return p, nil
	}
	c, err := composeK(o.Composition, p.EpsDim, p.DeltaDim, compositionCount(p.Compositions), p.DeltaDim)
	if err != nil {
		return p, fmt.Errorf("composition over dimensions: %w", err)
	}
	p.Epsilon, p.Delta = c.eps, c.delta
	p.Note += fmt.Sprintf("; dimensions composed by %s", c.describe())
	return p, nil
}

func protocolExtra(out *Result, p amplify.ProtocolResult) {
	out.Bound = p.Bound
	out.Extra["eps_local_per_dimension"] = p.EpsLocal
	out.Extra["eps_shuffle"] = p.EpsShuffle
	out.Extra["delta_shuffle"] = p.DeltaShuffle
	out.Extra["eps_dimension"] = p.EpsDim
	out.Extra["delta_dimension"] = p.DeltaDim
	out.Extra["compositions"] = p.Compositions
}

// protocolCmd runs a FLAME protocol at --eps-l, or answers --target-epsilon
// with the largest eps_l.
func protocolCmd(o *Params, out *Result, f func(epsL float64) (amplify.ProtocolResult, error)) error {
	g := func(epsL float64) (amplify.ProtocolResult, error) {
		p, err := f(epsL)
		if err != nil {
			return p, err
		}
		if o.LegacyFLAMETypo {
			// Labelled before any composition, which keeps the label.
			p.Name += "-legacy-flame-typo"
			p.Approximation = true
			p.Note += "; FLAWED legacy pre-July-2020 Bennett code: understates delta, NOT RIGOROUS, for reproducing FLAME's published figures only"
		}
		return flameCompose(o, p)
	}
	if !o.Given["target-epsilon"] {
		p, err := g(o.EpsL)
		if err != nil {
			return err
		}
		protocolExtra(out, p)
		return nil
	}
	o.composeInside = true
	total := func(e float64) (amplify.ProtocolResult, amplify.Bound, string, error) {
		p, err := g(e)
		if err != nil {
			return p, amplify.Bound{}, "", err
		}
		b, how, err := composeRounds(o, p.Bound)
		return p, b, how, err
	}
	amp := func(e float64, _ int, _ float64) (float64, error) {
		_, b, _, err := total(e)
		return b.Epsilon, err
	}
	e, err := amplify.InverseEps0(amp, o.TargetEpsilon, o.N, o.Delta, capEpsL)
	if err != nil {
		return err
	}
	p, b, how, err := total(e)
	if err != nil {
		return err
	}
	if e >= capEpsL {
		return capError("eps_l", capEpsL, b.Epsilon, o.TargetEpsilon)
	}
	protocolExtra(out, p)
	out.Bound.Epsilon, out.Bound.Delta, out.Bound.Note = b.Epsilon, b.Delta, b.Note
	if o.Rounds > 1 {
		out.Extra["rounds"] = o.Rounds
		out.Extra["composition"] = how
	}
	out.Inverse = true
	out.Extra["max_eps_l"] = e
	out.Text = append(out.Text, fmt.Sprintf("largest eps_l = %s for target central epsilon %v", FormatSig(e, 6, false), o.TargetEpsilon))
	return nil
}

// runFlameSimple implements `bound flame-simple`: FLAME's Theorem 1 by
// default (or with an explicit --composition basic, advanced or rdp over
// the dimensions); --composition pld composes FMT's clone pair itself over
// d x rounds coordinates (flameClones), and best takes the tighter
// of the two routes (flameBest).
func runFlameSimple(o *Params, out *Result) error {
	if o.Given["composition"] {
		switch {
		case o.Composition == "pld":
			return flameClones(o, out, simpleClones(o))
		case (o.Composition == "best" || o.Composition == "") && !o.LegacyFLAMETypo:
			return flameBest(o, out, simpleClones(o), flameSimpleTheorem)
		}
	}
	return flameSimpleTheorem(o, out)
}

// flameSimpleTheorem is FLAME's Theorem 1 route: each coordinate's shuffle
// by the privacy blanket, the dimension-level (epsilon, delta) composed
// over d.
func flameSimpleTheorem(o *Params, out *Result) error {
	amp, err := flameAmp(o)
	if err != nil {
		return err
	}
	return protocolCmd(o, out, func(epsL float64) (amplify.ProtocolResult, error) {
		return amplify.SSSimple(epsL, o.D, o.N, o.Delta, amp)
	})
}

// runFlameDouble states SS-Double's central guarantee: by default the
// tightest sound route (flameDoubleBest: the random allocation, the clone
// pairs by PLD, or amplify.SSDouble's theorem route); --flame-theorem gives FLAME's Theorems 3-4, which
// are not an upper bound, and --no-subsampling FLAME's Theorem 4 without the
// credit. Every answer at a given eps_l also prints the count statistic's
// lower bound on the true epsilon (flameDoubleLowerBound).
func runFlameDouble(o *Params, out *Result) error {
	if o.FLAMETheorem && o.NoSubsampling {
		return checks.Invalidf("--flame-theorem and --no-subsampling exclude each other: the first is FLAME's Theorems 3-4 with the subsampling credit, the second Theorem 4 without it")
	}
	var err error
	switch {
	case o.Given["composition"] && (o.Composition == "pld" || o.Composition == "alloc") && (o.FLAMETheorem || o.NoSubsampling):
		return checks.Invalidf("--composition %s composes the sound statement's pairs; --flame-theorem and --no-subsampling are FLAME's theorem routes, which have none", o.Composition)
	case o.Given["composition"] && o.Composition == "pld":
		err = flameClones(o, out, doubleClones(o))
	case o.Given["composition"] && o.Composition == "alloc":
		err = flameAlloc(o, out)
	case o.Composition == "best" && !o.LegacyFLAMETypo && !o.FLAMETheorem && !o.NoSubsampling:
		// the default: the tightest rigorous route (flamealloc.go)
		err = flameDoubleBest(o, out)
	default:
		err = flameDoubleTheorem(o, out)
	}
	if err != nil || o.Given["target-epsilon"] {
		return err
	}
	return flameDoubleLowerBound(o, out)
}

// flameDoubleTheorem is the theorem route of flame-double: the sound
// statement's blanket figure per coordinate composed over k (default), or
// FLAME's Theorems 3-4 (--flame-theorem, --no-subsampling).
func flameDoubleTheorem(o *Params, out *Result) error {
	amp, err := flameAmp(o)
	if err != nil {
		return err
	}
	return protocolCmd(o, out, func(epsL float64) (amplify.ProtocolResult, error) {
		switch {
		case o.FLAMETheorem:
			return amplify.SSDoubleFLAME(epsL, o.D, o.K, o.N, o.NP, o.Delta, amp, true)
		case o.NoSubsampling:
			return amplify.SSDoubleFLAME(epsL, o.D, o.K, o.N, o.NP, o.Delta, amp, false)
		}
		return amplify.SSDouble(epsL, o.D, o.K, o.N, o.NP, o.Delta, amp)
	})
}

// flameDoubleLowerBound adds the count statistic (amplify.FLAMECountLowerBound)
// to an SS-Double answer: over --rounds rounds the analyzer sees
// rounds (d n_p) values, rounds k of them the differing user's; the number
// above the best threshold bounds the true epsilon at the stated delta from
// below. A stated figure under it is reported as refuted.
func flameDoubleLowerBound(o *Params, out *Result) error {
	r, err := randomizer(o)
	if err != nil {
		return err
	}
	if r.Mech != amplify.Laplace && r.Mech != amplify.RGammaB {
		out.After = append(out.After, fmt.Sprintf("count-statistic lower bound: not computed for --mech %s (Laplace and rgb only)", o.Mech))
		return nil
	}
	if r.Mech == amplify.RGammaB {
		r.K = o.Domain
	}
	delta := out.Bound.Delta
	if !(delta > 0 && delta < 1) {
		return nil
	}
	// The other users' values and the shuffler's dummies in their own
	// classes: for R_{gamma,b} a dummy (the blanket) is counted far more
	// often than another user's value at input 0, so counting every other
	// value at one rate (FLAMECountLowerBound) is no lower bound there.
	mine := o.K * o.Rounds
	users, dummies := o.Rounds*(o.N-1)*o.K, o.Rounds*(o.D*o.NP-o.N*o.K)
	if dummies < 0 {
		return nil // more reports than padding: no such release
	}
	others := users + dummies
	lb, t, err := amplify.FLAMESparseCountLowerBound(r, o.EpsL/float64(o.K), mine, users, dummies, delta)
	if err != nil {
		return fmt.Errorf("count-statistic lower bound: %w", err)
	}
	out.Extra["count_lower_bound"] = lb
	verdict := "the stated epsilon is above it"
	if out.Bound.Epsilon < lb {
		verdict = "the stated epsilon is BELOW it: REFUTED, not an upper bound"
	}
	out.After = append(out.After, fmt.Sprintf("count-statistic lower bound on the true epsilon at delta %s: %s (values above %s among %d, %d of them the differing user's); %s",
		Figure(delta, 4), FormatSig(lb, 4, false), Figure(t, 4), mine+others, mine, verdict))
	return nil
}

func runFlameTopk(o *Params, out *Result) error {
	beta := o.Beta
	if beta == 0 {
		beta = float64(o.K) / float64(o.D)
	}
	out.NoEpsDelta = true
	if o.Nu > 0 {
		lmin, lmax, err := amplify.FLAMEIndexSlots(o.Nu, beta)
		if err != nil {
			return err
		}
		out.Bound = amplify.Bound{Name: "flame-index-privacy", Note: "FLAME Proposition 2 / Algorithm 4: valid l range; epsilon/delta do not apply (the analyzer's guarantee is flame-double's)"}
		out.Extra["nu"] = o.Nu
		out.Extra["beta"] = beta
		out.Extra["l_min"] = lmin
		out.Extra["l_max"] = lmax
		out.Text = append(out.Text, fmt.Sprintf("nu-index privacy nu = %v holds for l in [%d, %d] slots per top-k index (beta = %s)", o.Nu, lmin, lmax, Figure(beta, 6)))
		return nil
	}
	nu, l, err := amplify.FLAMEIndexNu(o.N, o.NP, beta)
	if err != nil {
		return err
	}
	out.Bound = amplify.Bound{Name: "flame-index-privacy", Note: "FLAME Theorem 5: strongest nu-index privacy against the shuffler; epsilon/delta do not apply (the analyzer's guarantee is flame-double's)"}
	out.Extra["nu"] = nu
	out.Extra["l"] = l
	out.Extra["beta"] = beta
	out.Text = append(out.Text, fmt.Sprintf("strongest nu-index privacy nu = %s with l = %d slots per top-k index (beta = %s)", Figure(nu, 6), l, Figure(beta, 6)))
	if o.Given["eps-l"] || o.Given["delta"] {
		// the central guarantee of SS-Topk's analyzer (flametopk.go)
		return flameTopkCentral(o, out)
	}
	return nil
}

func runSAPES(o *Params, out *Result) error {
	ec, dc := o.EpsC, o.DeltaC
	assumption := "" // of the EoN step, inherited by the user-level result
	if !o.Given["eps-c"] {
		eps, err := budgets(o, out)
		if err != nil {
			return err
		}
		b, err := amplify.EoNNumerical(eps, o.Delta)
		if err != nil {
			return err
		}
		ec, dc, assumption = b.Epsilon, b.Delta, b.Assumption
		out.Extra["eps_c"] = ec
		out.Extra["delta_c"] = dc
	}
	if o.Given["composition"] {
		c, err := composeK(o.Composition, ec, dc, 2*o.B, o.DeltaPrime)
		if err != nil {
			return fmt.Errorf("S-APES: composition over 2b = %d: %w", 2*o.B, err)
		}
		out.Bound = amplify.Bound{Name: "sapes-user-level", Epsilon: c.eps, Delta: c.delta,
			Note: fmt.Sprintf("S-APES Proposition 1 with the 2b = %d compositions done by %s; %s", 2*o.B, c.describe(), sapesApproxNote), Assumption: assumption,
			Approximation: true}
		out.Extra["composition"] = c.method
		return nil
	}
	b, err := amplify.SAPESUserLevel(ec, dc, o.B, o.DeltaPrime)
	if err != nil {
		return err
	}
	b.Assumption = assumption
	b.Approximation = true
	b.Note += "; " + sapesApproxNote
	out.Bound = b
	return nil
}

// sapesApproxNote says why every S-APES figure is an approximation:
// Proposition 1 composes 2b dimension-level guarantees, but the top-b
// selection depends on all d noisy coordinates, so one user's change moves
// every dimension, and no proof is given (docs/ACCOUNTING.md).
const sapesApproxNote = "approximate: S-APES Proposition 1 is not proved (the top-b selection reads all d coordinates), not a rigorous upper bound"

func runSubsample(o *Params, out *Result) error {
	var e, d float64
	var err error
	name := "subsample-" + o.Method
	switch o.Method {
	case "wor":
		e, d, err = account.SubsampleWOR(o.Eps0, o.Delta0, o.Q)
	case "poisson":
		e, d, err = account.SubsamplePoisson(o.Eps0, o.Delta0, o.Q)
	default:
		return checks.Invalidf("--method must be wor or poisson, got %q", o.Method)
	}
	if err != nil {
		return err
	}
	out.Bound = amplify.Bound{Name: name, Epsilon: e, Delta: d, Note: "Balle, Barthe and Gaboardi 2018 (FLAME Lemma 4)"}
	return nil
}

func runCompose(o *Params, out *Result) error {
	c, err := composeK(o.Composition, o.Eps0, o.Delta0, o.Rounds, o.DeltaPrime)
	if err != nil {
		return err
	}
	out.Bound = amplify.Bound{Name: "compose-" + o.Composition, Epsilon: c.eps, Delta: c.delta,
		Note: fmt.Sprintf("%d rounds, %s", o.Rounds, c.describe())}
	out.Extra["composition"] = c.method
	return nil
}
