package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"shufflefl/account"
	"shufflefl/amplify"
	"shufflefl/checks"
	"shufflefl/rng"
)

const boundUsage = `shufflefl bound: privacy amplification by shuffling, subsampling and composition

Usage:
  shufflefl bound SUBCOMMAND [flags]

Uniform local epsilon (eps0 per report, n reports):
  erlingsson    Erlingsson et al. 2019 closed form
  blanket       Balle et al. 2019 privacy blanket (numerical Bennett/Hoeffding; closed form for R_{gamma,b})
  clones        Feldman-McMillan-Talwar 2022 (numerical, exact; or closed form)
  best          the tightest valid rigorous bound, named (uniform, or personalized with --eps-file/--eps-dist)

Personalized local epsilons (--eps-file FILE or --eps-dist NAME --n N --seed S):
  unis          APES Eq. (2) baseline (FMT at max eps_i)
  eon           APES Echo of Neighbors (Theorem 4 closed form, or numerical with exact clone counts)
  eapes         E-APES mu-GDP (an APPROXIMATION, labelled as such)

Protocols and tools:
  flame-simple  FLAME Theorem 1 (SS-Simple)
  flame-double  SS-Double with dummy padding (sound; --flame-theorem: FLAME Theorems 3-4, not an upper bound)
  flame-topk    FLAME Theorem 5 / Proposition 2 (nu-index privacy of SS-Topk)
  sapes         S-APES Proposition 1 (user level after b-of-d sparsification)
  subsample     amplification by subsampling (without replacement or Poisson)
  compose       composition over rounds (basic, advanced, rdp, pld, best)
  sgm           the Poisson-subsampled Gaussian mechanism (DP-SGD, DP-FedAvg) over T steps (rdp or pld)

Common flags: --json (one JSON object), --compare (every applicable bound side by side),
--target-epsilon (the inverse question), --rounds R with --composition basic|advanced|rdp|pld|best
(compose the per-round guarantee; default best, which names the winner).
Every numeric flag is checked before any computation: NaN, infinities and
out-of-range values are rejected (exit status 2, one line on stderr).
Run 'shufflefl bound SUBCOMMAND --help' for all flags and examples.

Examples:
  shufflefl bound clones --eps0 4 --n 100000 --delta 1e-6
  shufflefl bound best --compare --eps0 1 --n 10000 --delta 1e-8
  shufflefl bound flame-double --eps-l 78.5 --n 1000 --k 157 --np 333
`

// boundCmd is one `shufflefl bound` subcommand.
type boundCmd struct {
	summary string
	flags   []string
	// check validates combinations of flags; it runs after every flag's
	// own check and before run.
	check func(o *boundOpts) error
	run   func(o *boundOpts, out *boundOutput) error
}

var personalFlags = []string{"eps-file", "eps-dist", "n", "seed", "delta", "rounds", "composition", "delta-prime", "target-epsilon", "compare", "json"}

var boundCmds = map[string]boundCmd{
	"erlingsson": {"Erlingsson et al. 2019: eps = 12 eps0 sqrt(log(1/delta)/n) (eps0 <= 1/2, n >= 1000, delta <= 0.01)",
		[]string{"eps0", "n", "delta", "rounds", "composition", "delta-prime", "target-epsilon", "compare", "json"}, nil, runErlingsson},
	"blanket": {"Balle et al. 2019 privacy blanket: numerical Bennett (default) or Hoeffding bound, or the closed form of FLAME Lemma 1",
		[]string{"eps0", "n", "delta", "domain", "k-domain", "mech", "variant", "form", "legacy-flame-typo", "rounds", "composition", "delta-prime", "target-epsilon", "compare", "json"}, checkBlanket, runBlanket},
	"clones": {"Feldman, McMillan and Talwar 2022: numerical bound (every clone count exact, guaranteed upper bound) or closed form",
		[]string{"eps0", "n", "delta", "form", "rounds", "composition", "delta-prime", "target-epsilon", "compare", "json"}, checkForm("numerical", "closed", "theorem"), runClones},
	"best": {"the tightest valid rigorous bound, named (uniform; personalized with --eps-file or --eps-dist); never an approximation",
		[]string{"eps0", "n", "delta", "domain", "k-domain", "mech-best", "eps-file", "eps-dist", "seed", "rounds", "composition", "delta-prime", "compare", "json"}, checkBest, runBest},
	"unis": {"UniS baseline: the clones bound at max eps_i for all users (default numerical, APES Table 3's 0.069; --form closed is APES Eq. (2))",
		append([]string{"form"}, personalFlags...), checkForm("numerical", "closed"), runUniS},
	"eon": {"APES Echo of Neighbors: numerical (default; exact Poisson-binomial clone counts) or closed form (Theorem 4)",
		append([]string{"form"}, personalFlags...), checkForm("numerical", "closed"), runEoN},
	"eapes": {"E-APES mu-GDP, mu = 2/sqrt(sum p_i): an APPROXIMATION (central limit), not an upper bound; rounds compose as mu sqrt(rounds)",
		[]string{"delta-local", "tv", "eps-file", "eps-dist", "n", "seed", "delta", "rounds", "target-epsilon", "compare", "json"}, checkEAPES, runEAPES},
	"flame-simple": {"FLAME Theorem 1 (SS-Simple): per-dimension shuffle at eps_l/d, composed over d; --composition pld (or best) composes FMT's clone pair itself over d x rounds coordinates, the tight figure",
		[]string{"eps-l", "d", "n", "delta", "domain", "k-domain", "mech", "variant", "legacy-flame-typo", "rounds", "composition-flame", "delta-prime", "target-epsilon", "json"}, nil, runFlameSimple},
	"flame-double": {"SS-Double (FLAME Algorithm 3), sound: the k dimensions a user reports in, each a shuffle of n_p values, composed without subsampling credit (--flame-theorem: FLAME Theorems 3-4, NOT an upper bound); prints the count-statistic lower bound",
		[]string{"eps-l", "d", "k", "n", "np", "delta", "domain", "mech", "variant", "legacy-flame-typo", "no-subsampling", "flame-theorem", "rounds", "composition-flame", "delta-prime", "target-epsilon", "json"}, nil, runFlameDouble},
	"flame-topk": {"FLAME Theorem 5 / Proposition 2: nu-index privacy of SS-Topk (the central guarantee is that of flame-double)",
		[]string{"n", "np", "d", "k", "beta", "nu", "json"}, checkFlameTopk, runFlameTopk},
	"sapes": {"S-APES Proposition 1: user-level guarantee after b-of-d post-sparsification (2b compositions of the dimension-level guarantee)",
		[]string{"eps-c", "delta-c", "b", "composition-protocol", "delta-prime-sapes", "eps-file", "eps-dist", "n", "seed", "delta", "json"}, checkSAPES, runSAPES},
	"subsample": {"amplification by subsampling (Balle, Barthe, Gaboardi 2018; FLAME Lemma 4): wor or poisson",
		[]string{"eps0-or-zero", "delta0", "q", "method", "json"}, nil, runSubsample},
	"compose": {"composition of --rounds rounds of an (eps0, delta0)-DP mechanism: basic, advanced (FLAME Lemma 3 / APES Lemma 2), rdp, pld or best",
		[]string{"eps0-or-zero", "delta0", "rounds", "delta-prime", "composition", "compose-method", "json"}, nil, runCompose},
	"sgm": {"Poisson-subsampled Gaussian mechanism (rate q, noise multiplier sigma) composed over T steps: epsilon at --delta or delta at --epsilon, by the rdp (default) or pld accountant",
		[]string{"sgm-q", "sigma", "steps", "sgm-delta", "sgm-epsilon", "accountant", "json"}, nil, runSGM},
}

func init() {
	boundFlags["delta-prime-sapes"] = flagDef{"delta-prime", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.deltaPrime, "delta-prime", 1e-8, "the slack delta' of S-APES Proposition 1 (and of --composition advanced, rdp or pld over the 2b compositions), in (0, 1); it is added to the total delta")
	}, boundFlags["delta-prime"].check}
	boundFlags["composition-protocol"] = flagDef{"composition", func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.composition, "composition", "best", "how guarantees compose: basic, advanced, rdp, pld or best (the tightest, named). Over --rounds the default is best; inside the protocol (FLAME: over the dimensions, S-APES: over 2b) the default is the paper's theorem and a given --composition replaces it")
	}, boundFlags["composition"].check}
}

// runBound implements `shufflefl bound SUBCOMMAND [flags]`. It returns the
// process exit status: 0 on success (and for --help, which prints to stdout),
// 2 on a usage or invalid-parameter error (one line on stderr), 1 on an
// internal failure.
//
// Every flag is validated before any computation. The pure computations live
// in package amplify (and account); this function only parses flags, loads
// budgets, calls them and prints.
func runBound(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, boundUsage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, boundUsage)
		return 0
	}
	name := args[0]
	cmd, ok := boundCmds[name]
	if !ok {
		fmt.Fprintf(stderr, "shufflefl bound: unknown subcommand %q (run 'shufflefl bound --help' for the list)\n", name)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "shufflefl bound %s: %v\n", name, err)
		if errors.Is(err, checks.ErrInvalid) {
			return 2
		}
		return 1
	}
	fs := flag.NewFlagSet("shufflefl bound "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported on one line below
	o := &boundOpts{rounds: 1, set: map[string]bool{}}
	for _, f := range cmd.flags {
		boundFlags[f].register(fs, o)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintf(stdout, "Usage: shufflefl bound %s [flags]\n\n%s\n\nFlags:\n", name, cmd.summary)
			printFlags(stdout, fs)
			fmt.Fprintf(stdout, "\nExamples:\n")
			for _, ex := range boundExamples[name] {
				fmt.Fprintf(stdout, "  shufflefl bound %s %s\n", name, ex)
			}
			return 0
		}
		fmt.Fprintf(stderr, "shufflefl bound %s: %s (run 'shufflefl bound %s --help')\n", name, flagError(err), name)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "shufflefl bound %s: unexpected argument %q\n", name, fs.Arg(0))
		return 2
	}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if err := normalizeAliases(o, cmd); err != nil {
		return fail(err)
	}
	for _, f := range cmd.flags {
		if c := boundFlags[f].check; c != nil {
			if err := c(o); err != nil {
				return fail(err)
			}
		}
	}
	if err := checkRoundsFlags(name, o); err != nil {
		return fail(err)
	}
	if cmd.check != nil {
		if err := cmd.check(o); err != nil {
			return fail(err)
		}
	}
	out := &boundOutput{inputs: map[string]any{}, extra: map[string]any{}}
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Usage, "DEPRECATED") && !o.set[f.Name] {
			return
		}
		if g, ok := f.Value.(flag.Getter); ok {
			out.inputs[f.Name] = g.Get()
		}
	})
	switch name {
	case "compose", "subsample", "flame-topk", "sapes", "sgm":
		o.composeInside = true
	}
	err := cmd.run(o, out)
	if err == nil {
		markLegacy(out)
		if !o.composeInside && o.rounds > 1 {
			err = composeOutput(o, out)
		}
	}
	if err == nil && !out.noEpsDelta && (!isFinite(out.result.Epsilon) || !isFinite(out.result.Delta)) {
		err = checks.Invalidf("result is not finite (epsilon = %v, delta = %v): the parameters are beyond what this bound can express", out.result.Epsilon, out.result.Delta)
	}
	if err != nil {
		return fail(err)
	}
	if err := printBound(stdout, o, out); err != nil {
		fmt.Fprintf(stderr, "shufflefl bound %s: %v\n", name, err)
		return 1
	}
	return 0
}

// normalizeAliases resolves deprecated flag names (compose's --method, now
// --composition) and rejects --k where it would mean the randomizer's
// domain size: --k has one meaning in every subcommand, the dimensions
// sampled per user (flame-double, flame-topk); the domain size of krr and
// rgb is --domain. (--k used to be accepted as an alias of --domain in
// blanket, best and flame-simple.)
func normalizeAliases(o *boundOpts, cmd boundCmd) error {
	if slices.Contains(cmd.flags, "k-domain") && o.set["k"] {
		return checks.Invalidf("--k is not a flag of this subcommand: the randomizer's domain size (krr, rgb) is --domain; --k is the number of dimensions sampled per user, in flame-double and flame-topk")
	}
	if slices.Contains(cmd.flags, "compose-method") && o.set["method"] {
		// The deprecated flag's value is checked under its own name, so the
		// error names the flag the user gave.
		if err := oneOf("--method (deprecated; use --composition)", o.method, compositionNames...); err != nil {
			return err
		}
		if o.set["composition"] && o.method != o.composition {
			return checks.Invalidf("--method (deprecated) and --composition disagree (%q and %q); give --composition only", o.method, o.composition)
		}
		o.composition = o.method
		o.set["composition"] = true
	}
	return nil
}

// checkRoundsFlags rejects --composition and --delta-prime where they would
// be ignored: in the subcommands that compose only over --rounds, when there
// is a single round (FLAME also composes over dimensions; S-APES, compose and
// sgm always use them).
func checkRoundsFlags(name string, o *boundOpts) error {
	if o.rounds > 1 {
		return nil
	}
	switch name {
	case "compose", "sapes", "sgm", "subsample", "flame-topk":
		return nil
	case "flame-simple", "flame-double":
		if o.set["delta-prime"] {
			return checks.Invalidf("--delta-prime applies only with --rounds > 1 (FLAME's composition over dimensions uses delta_cd as its slack)")
		}
		return nil
	}
	for _, f := range []string{"composition", "delta-prime"} {
		if o.set[f] {
			return checks.Invalidf("--%s applies only with --rounds > 1", f)
		}
	}
	return nil
}

// checkForm returns a check accepting the given --form values.
func checkForm(allowed ...string) func(o *boundOpts) error {
	return func(o *boundOpts) error { return oneOf("--form", o.form, allowed...) }
}

func checkBlanket(o *boundOpts) error {
	if err := checkForm("numerical", "closed")(o); err != nil {
		return err
	}
	if o.form == "closed" {
		if o.mech != "rgb" {
			return checks.Invalidf("--form closed (FLAME Lemma 1) applies to --mech rgb only")
		}
		if o.legacy || o.set["variant"] {
			return checks.Invalidf("--variant and --legacy-flame-typo apply to --form numerical only")
		}
	}
	return nil
}

func checkBest(o *boundOpts) error {
	if o.epsFile != "" || o.epsDist != "" {
		for _, f := range []string{"eps0", "mech", "domain"} {
			if o.set[f] {
				return checks.Invalidf("--%s applies to uniform budgets; it cannot be combined with --eps-file or --eps-dist", f)
			}
		}
	}
	return nil
}

func checkEAPES(o *boundOpts) error {
	if o.set["target-epsilon"] {
		return checks.Invalidf("--target-epsilon is not offered for E-APES: it is an approximation, not an upper bound; use eon")
	}
	if o.tv > 0 && o.rounds > 1 {
		return checks.Invalidf("--tv (the Berry–Esseen correction) is per round; it cannot be combined with --rounds")
	}
	return nil
}

func checkFlameTopk(o *boundOpts) error {
	if o.set["beta"] && (o.set["k"] || o.set["d"]) {
		return checks.Invalidf("give --beta or --k and --d, not both")
	}
	if o.set["beta"] && o.beta == 0 {
		return checks.Invalidf("--beta must be in (0, 1], got 0")
	}
	if o.nu != 0 && (o.set["n"] || o.set["np"]) {
		return checks.Invalidf("--n and --np are not used with --nu (Proposition 2 depends on nu and beta only)")
	}
	return nil
}

func checkSAPES(o *boundOpts) error {
	if err := checks.IntInRange("--b", o.b, 1, math.MaxInt32); err != nil {
		return err
	}
	if o.set["eps-c"] {
		for _, f := range []string{"delta", "eps-file", "eps-dist", "n", "seed"} {
			if o.set[f] {
				return checks.Invalidf("--%s cannot be combined with --eps-c: it configures the EoN computation of eps^c; give the dimension-level delta with --delta-c", f)
			}
		}
		return nil
	}
	if o.set["delta-c"] {
		return checks.Invalidf("--delta-c needs --eps-c (without --eps-c both are computed by EoN from the budgets and --delta)")
	}
	return nil
}

// setCompare fills out with a comparison and its best rigorous row (rows are
// sorted by epsilon): the first that is neither an approximation nor legacy
// and needs no extra assumption (amplify.Bound.Assumption); only if there is
// none, the first rigorous one under an assumption, which is then printed.
func setCompare(out *boundOutput, rows []amplify.Candidate) error {
	out.rows = rows
	for _, standard := range []bool{true, false} {
		for _, r := range rows {
			if r.Err == "" && !r.Approximation && !isLegacy(r.Bound) && (!standard || r.Assumption == "") {
				out.result = r.Bound
				return nil
			}
		}
	}
	return checks.Invalidf("no bound applies to these parameters")
}

func randomizer(o *boundOpts) (amplify.Randomizer, error) {
	m, err := amplify.ParseMechanism(o.mech)
	if err != nil {
		return amplify.Randomizer{}, err
	}
	return amplify.Randomizer{Mech: m, K: o.domain}, nil
}

func blanketVariant(o *boundOpts) (amplify.BlanketVariant, error) {
	if o.legacy {
		return amplify.BennettLegacyFLAME, nil
	}
	switch o.variant {
	case "bennett":
		return amplify.Bennett, nil
	case "hoeffding":
		return amplify.Hoeffding, nil
	}
	return 0, checks.Invalidf("--variant must be bennett or hoeffding, got %q", o.variant)
}

// capError reports that an inverse search stopped at its cap: every value up
// to the cap meets the target, so there is no finite answer to report.
func capError(what string, limit, epsAtCap, target float64) error {
	return checks.Invalidf("the search for the largest %s reached its cap %s = %v (central epsilon there is %s <= target %v): the target does not constrain %s below the cap; lower --target-epsilon",
		what, what, limit, epsUp(epsAtCap), target, what)
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
func inverseUniform(o *boundOpts, out *boundOutput, name, note string, amp1 amplify.Amplifier) error {
	o.composeInside = true
	total := func(e0 float64) (amplify.Bound, string, error) {
		e, err := amp1(e0, o.n, o.delta)
		if err != nil {
			return amplify.Bound{}, "", err
		}
		return composeRounds(o, amplify.Bound{Name: name, Epsilon: e, Delta: o.delta, Note: "inverse calibration; " + note})
	}
	amp := func(e0 float64, _ int, _ float64) (float64, error) {
		b, _, err := total(e0)
		return b.Epsilon, err
	}
	e0, err := amplify.InverseEps0(amp, o.targetEps, o.n, o.delta, capEps0)
	if err != nil {
		return err
	}
	b, how, err := total(e0)
	if err != nil {
		return err
	}
	if e0 >= capEps0 {
		return capError("eps0", capEps0, b.Epsilon, o.targetEps)
	}
	if o.rounds > 1 {
		out.extra["rounds"] = o.rounds
		out.extra["composition"] = how
	}
	out.inverse = true
	out.result = b
	out.extra["max_eps0"] = e0
	out.text = append(out.text, fmt.Sprintf("largest local eps0 = %s for target central epsilon %v (n = %d, delta = %v per round)", fmtSig(e0, 6, false), o.targetEps, o.n, o.delta))
	return nil
}

func runErlingsson(o *boundOpts, out *boundOutput) error {
	if o.compare {
		rows, err := amplify.CompareUniform(o.eps0, o.n, o.delta, amplify.Randomizer{Mech: amplify.Generic}, false)
		if err != nil {
			return err
		}
		return setCompare(out, rows)
	}
	const note = "Erlingsson et al. 2019"
	if o.set["target-epsilon"] {
		return inverseUniform(o, out, "erlingsson", note, amplify.Erlingsson)
	}
	e, err := amplify.Erlingsson(o.eps0, o.n, o.delta)
	if err != nil {
		return err
	}
	out.result = amplify.Bound{Name: "erlingsson", Epsilon: e, Delta: o.delta, Note: note}
	return nil
}

func runBlanket(o *boundOpts, out *boundOutput) error {
	r, err := randomizer(o)
	if err != nil {
		return err
	}
	if o.compare {
		rows, err := amplify.CompareUniform(o.eps0, o.n, o.delta, r, o.legacy)
		if err != nil {
			return err
		}
		return setCompare(out, rows)
	}
	if o.form == "closed" {
		amp := func(e0 float64, n int, d float64) (float64, error) { return amplify.BlanketClosedForm(e0, r.K, n, d) }
		const note = "Balle et al. 2019 / FLAME Lemma 1"
		if o.set["target-epsilon"] {
			return inverseUniform(o, out, "blanket-closed", note, amp)
		}
		e, err := amp(o.eps0, o.n, o.delta)
		if err != nil {
			return err
		}
		out.result = amplify.Bound{Name: "blanket-closed", Epsilon: e, Delta: o.delta, Note: note}
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
	if o.set["target-epsilon"] {
		return inverseUniform(o, out, name, note, amplify.BlanketAmplifier(r, v))
	}
	e, ok, err := amplify.BlanketEpsilon(r, v, o.eps0, o.n, o.delta)
	if err != nil {
		return err
	}
	if !ok {
		note += "; no amplification at these parameters (eps0 returned)"
	}
	out.result = amplify.Bound{Name: name, Epsilon: e, Delta: o.delta, Note: note}
	return nil
}

func runClones(o *boundOpts, out *boundOutput) error {
	if o.compare {
		rows, err := amplify.CompareUniform(o.eps0, o.n, o.delta, amplify.Randomizer{Mech: amplify.Generic}, false)
		if err != nil {
			return err
		}
		return setCompare(out, rows)
	}
	var amp amplify.Amplifier
	var name, note string
	switch o.form {
	case "numerical":
		amp, name, note = amplify.ClonesNumerical, "clones-numerical", "FMT 2022 numerical, every clone count exact (guaranteed upper bound)"
	case "closed":
		amp, name, note = amplify.ClonesClosedForm, "clones-closed", "FMT 2022 closed form (authors' code form)"
	case "theorem":
		amp, name, note = amplify.ClonesTheorem, "clones-theorem", "FMT 2022 Theorem 3.1 as printed (APES Eq. 2)"
	default:
		return checks.Invalidf("--form must be numerical, closed or theorem, got %q", o.form)
	}
	if o.set["target-epsilon"] {
		return inverseUniform(o, out, name, note, amp)
	}
	e, err := amp(o.eps0, o.n, o.delta)
	if err != nil {
		return err
	}
	out.result = amplify.Bound{Name: name, Epsilon: e, Delta: o.delta, Note: note}
	return nil
}

// budgets loads personalized epsilons from --eps-file or --eps-dist (the
// flags were validated by runBound: one source, n <= account.MaxBudgets).
func budgets(o *boundOpts, out *boundOutput) ([]float64, error) {
	var eps []float64
	switch {
	case o.epsFile != "":
		var r io.Reader = os.Stdin
		if o.epsFile != "-" {
			f, err := os.Open(o.epsFile)
			if err != nil {
				return nil, checks.Invalidf("--eps-file: %v", err)
			}
			defer f.Close()
			r = f
		}
		e, err := account.ReadBudgets(r)
		if err != nil {
			return nil, fmt.Errorf("--eps-file %s: %w", o.epsFile, err)
		}
		eps = e
	case o.epsDist != "":
		e, err := account.Budgets(o.epsDist, o.n, rng.Stream(uint64(o.seed)))
		if err != nil {
			return nil, fmt.Errorf("--eps-dist %s: %w", o.epsDist, err)
		}
		eps = e
	default:
		return nil, checks.Invalidf("personalized bounds need --eps-file FILE or --eps-dist NAME (with --n and --seed)")
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, e := range eps {
		lo, hi = math.Min(lo, e), math.Max(hi, e)
	}
	out.inputs["budgets"] = map[string]any{"count": len(eps), "min": lo, "max": hi}
	return eps, nil
}

// personalCmd runs a personalized bound with --compare and --target-epsilon.
func personalCmd(o *boundOpts, out *boundOutput, bound amplify.PersonalBound) error {
	eps, err := budgets(o, out)
	if err != nil {
		return err
	}
	if o.compare {
		rows, err := comparePersonal(o, out, eps)
		if err != nil {
			return err
		}
		return setCompare(out, rows)
	}
	if o.set["target-epsilon"] {
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
		s, err := amplify.InverseScale(composed, eps, o.delta, o.targetEps, capScale)
		if err != nil {
			return err
		}
		scaled := make([]float64, len(eps))
		for i, e := range eps {
			scaled[i] = s * e
		}
		b, err := composed(scaled, o.delta)
		if err != nil {
			return err
		}
		if s >= capScale {
			return capError("scale factor", capScale, b.Epsilon, o.targetEps)
		}
		if o.rounds > 1 {
			out.extra["rounds"] = o.rounds
			out.extra["composition"] = how
		}
		out.inverse = true
		out.result = b
		out.extra["scale"] = s
		out.text = append(out.text, fmt.Sprintf("largest scale factor on the budget vector = %s for target central epsilon %v", fmtSig(s, 6, false), o.targetEps))
		return nil
	}
	b, err := bound(eps, o.delta)
	if err != nil {
		return err
	}
	out.result = b
	return nil
}

func runUniS(o *boundOpts, out *boundOutput) error {
	if o.form == "closed" {
		return personalCmd(o, out, amplify.UniS)
	}
	return personalCmd(o, out, amplify.UniSNumerical)
}

func runEoN(o *boundOpts, out *boundOutput) error {
	if o.form == "closed" {
		return personalCmd(o, out, amplify.EoNClosedForm)
	}
	return personalCmd(o, out, amplify.EoNNumerical)
}

func runEAPES(o *boundOpts, out *boundOutput) error {
	if !o.compare {
		// The single E-APES result composes by GDP inside eapesRounds.
		o.composeInside = true
	}
	return personalCmd(o, out, func(eps []float64, delta float64) (amplify.Bound, error) {
		var ds []float64
		if o.deltaLocal > 0 {
			ds = make([]float64, len(eps))
			for i := range ds {
				ds[i] = o.deltaLocal
			}
		}
		return eapesRounds(o, out, eps, ds, delta)
	})
}

// eapesRounds returns E-APES for eps composed over o.rounds rounds: GDP
// composes exactly, mu_total = mu sqrt(rounds). The result stays labelled as
// an approximation.
func eapesRounds(o *boundOpts, out *boundOutput, eps, ds []float64, delta float64) (amplify.Bound, error) {
	mu, err := amplify.EAPESMu(eps, ds)
	if err != nil {
		return amplify.Bound{}, err
	}
	out.extra["mu"] = mu
	note := fmt.Sprintf("E-APES mu-GDP, mu = %.6g; central-limit approximation, not an upper bound", mu)
	if o.rounds > 1 {
		mu = account.GDPCompose(mu, o.rounds)
		out.extra["mu_total"] = mu
		note += fmt.Sprintf("; %d rounds composed as mu sqrt(rounds) = %.6g", o.rounds, mu)
	}
	e, err := amplify.GDPEpsilon(mu, delta)
	if err != nil {
		return amplify.Bound{}, err
	}
	if o.tv > 0 {
		// --tv, --delta-local and --delta were validated: an error here
		// means the correction is vacuous at this delta, a result.
		ec, err := amplify.EAPESCorrectedEpsilon(mu, o.tv, o.deltaLocal, delta)
		if err != nil {
			out.extra["eps_berry_esseen_corrected"] = "none: " + err.Error()
		} else {
			out.extra["eps_berry_esseen_corrected"] = ec
		}
	}
	return amplify.Bound{Name: "eapes-gdp", Epsilon: e, Delta: delta, Approximation: true, Note: note}, nil
}

// comparePersonal runs amplify.ComparePersonal and, with --rounds, composes
// the E-APES row by GDP (the rigorous rows are composed by composeOutput).
func comparePersonal(o *boundOpts, out *boundOutput, eps []float64) ([]amplify.Candidate, error) {
	rows, err := amplify.ComparePersonal(eps, o.delta)
	if err != nil || o.rounds <= 1 {
		return rows, err
	}
	for i, r := range rows {
		if r.Name == "eapes-gdp" && r.Err == "" {
			b, err := eapesRounds(o, out, eps, nil, o.delta)
			if err != nil {
				rows[i].Err = err.Error()
				continue
			}
			rows[i].Bound = b
		}
	}
	return rows, nil
}

func runBest(o *boundOpts, out *boundOutput) error {
	var rows []amplify.Candidate
	if o.epsFile != "" || o.epsDist != "" {
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
		if rows, err = amplify.CompareUniform(o.eps0, o.n, o.delta, r, false); err != nil {
			return err
		}
	}
	if err := setCompare(out, rows); err != nil {
		return err
	}
	if !o.compare {
		out.rows = nil
	}
	return nil
}

func flameAmp(o *boundOpts) (amplify.Amplifier, error) {
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
func flameCompose(o *boundOpts, p amplify.ProtocolResult) (amplify.ProtocolResult, error) {
	if !o.set["composition"] {
		return p, nil
	}
	c, err := composeK(o.composition, p.EpsDim, p.DeltaDim, compositionCount(p.Compositions), p.DeltaDim)
	if err != nil {
		return p, fmt.Errorf("composition over dimensions: %w", err)
	}
	p.Epsilon, p.Delta = c.eps, c.delta
	p.Note += fmt.Sprintf("; dimensions composed by %s", c.describe())
	return p, nil
}

func protocolExtra(out *boundOutput, p amplify.ProtocolResult) {
	out.result = p.Bound
	out.extra["eps_local_per_dimension"] = p.EpsLocal
	out.extra["eps_shuffle"] = p.EpsShuffle
	out.extra["delta_shuffle"] = p.DeltaShuffle
	out.extra["eps_dimension"] = p.EpsDim
	out.extra["delta_dimension"] = p.DeltaDim
	out.extra["compositions"] = p.Compositions
}

// protocolCmd runs a FLAME protocol at --eps-l, or answers --target-epsilon
// with the largest eps_l.
func protocolCmd(o *boundOpts, out *boundOutput, f func(epsL float64) (amplify.ProtocolResult, error)) error {
	g := func(epsL float64) (amplify.ProtocolResult, error) {
		p, err := f(epsL)
		if err != nil {
			return p, err
		}
		if o.legacy {
			// Labelled before any composition, which keeps the label.
			p.Name += "-legacy-flame-typo"
			p.Approximation = true
			p.Note += "; FLAWED legacy pre-July-2020 Bennett code: understates delta, NOT RIGOROUS, for reproducing FLAME's published figures only"
		}
		return flameCompose(o, p)
	}
	if !o.set["target-epsilon"] {
		p, err := g(o.epsL)
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
	e, err := amplify.InverseEps0(amp, o.targetEps, o.n, o.delta, capEpsL)
	if err != nil {
		return err
	}
	p, b, how, err := total(e)
	if err != nil {
		return err
	}
	if e >= capEpsL {
		return capError("eps_l", capEpsL, b.Epsilon, o.targetEps)
	}
	protocolExtra(out, p)
	out.result.Epsilon, out.result.Delta, out.result.Note = b.Epsilon, b.Delta, b.Note
	if o.rounds > 1 {
		out.extra["rounds"] = o.rounds
		out.extra["composition"] = how
	}
	out.inverse = true
	out.extra["max_eps_l"] = e
	out.text = append(out.text, fmt.Sprintf("largest eps_l = %s for target central epsilon %v", fmtSig(e, 6, false), o.targetEps))
	return nil
}

// runFlameSimple implements `bound flame-simple`: FLAME's Theorem 1 by
// default (or with an explicit --composition basic, advanced or rdp over
// the dimensions); --composition pld composes FMT's clone pair itself over
// d x rounds coordinates (flameClones), and best takes the tighter
// of the two routes (flameBest).
func runFlameSimple(o *boundOpts, out *boundOutput) error {
	if o.set["composition"] {
		switch {
		case o.composition == "pld":
			return flameClones(o, out, simpleClones(o))
		case (o.composition == "best" || o.composition == "") && !o.legacy:
			return flameBest(o, out, simpleClones(o), flameSimpleTheorem)
		}
	}
	return flameSimpleTheorem(o, out)
}

// flameSimpleTheorem is FLAME's Theorem 1 route: each coordinate's shuffle
// by the privacy blanket, the dimension-level (epsilon, delta) composed
// over d.
func flameSimpleTheorem(o *boundOpts, out *boundOutput) error {
	amp, err := flameAmp(o)
	if err != nil {
		return err
	}
	return protocolCmd(o, out, func(epsL float64) (amplify.ProtocolResult, error) {
		return amplify.SSSimple(epsL, o.d, o.n, o.delta, amp)
	})
}

// runFlameDouble states SS-Double's central guarantee: by default the sound
// one (amplify.SSDouble); --flame-theorem gives FLAME's Theorems 3-4, which
// are not an upper bound, and --no-subsampling FLAME's Theorem 4 without the
// credit. Every answer at a given eps_l also prints the count statistic's
// lower bound on the true epsilon (flameDoubleLowerBound).
func runFlameDouble(o *boundOpts, out *boundOutput) error {
	if o.flameTheorem && o.noSubsample {
		return checks.Invalidf("--flame-theorem and --no-subsampling exclude each other: the first is FLAME's Theorems 3-4 with the subsampling credit, the second Theorem 4 without it")
	}
	var err error
	switch {
	case o.set["composition"] && o.composition == "pld" && (o.flameTheorem || o.noSubsample):
		return checks.Invalidf("--composition pld composes the sound statement's clone pairs; --flame-theorem and --no-subsampling are FLAME's theorem routes, which have none")
	case o.set["composition"] && o.composition == "pld":
		err = flameClones(o, out, doubleClones(o))
	case o.set["composition"] && o.composition == "best" && !o.legacy && !o.flameTheorem && !o.noSubsample:
		err = flameBest(o, out, doubleClones(o), flameDoubleTheorem)
	default:
		err = flameDoubleTheorem(o, out)
	}
	if err != nil || o.set["target-epsilon"] {
		return err
	}
	return flameDoubleLowerBound(o, out)
}

// flameDoubleTheorem is the theorem route of flame-double: the sound
// statement's blanket figure per coordinate composed over k (default), or
// FLAME's Theorems 3-4 (--flame-theorem, --no-subsampling).
func flameDoubleTheorem(o *boundOpts, out *boundOutput) error {
	amp, err := flameAmp(o)
	if err != nil {
		return err
	}
	return protocolCmd(o, out, func(epsL float64) (amplify.ProtocolResult, error) {
		switch {
		case o.flameTheorem:
			return amplify.SSDoubleFLAME(epsL, o.d, o.k, o.n, o.np, o.delta, amp, true)
		case o.noSubsample:
			return amplify.SSDoubleFLAME(epsL, o.d, o.k, o.n, o.np, o.delta, amp, false)
		}
		return amplify.SSDouble(epsL, o.d, o.k, o.n, o.np, o.delta, amp)
	})
}

// flameDoubleLowerBound adds the count statistic (amplify.FLAMECountLowerBound)
// to an SS-Double answer: over --rounds rounds the analyzer sees
// rounds (d n_p) values, rounds k of them the differing user's; the number
// above the best threshold bounds the true epsilon at the stated delta from
// below. A stated figure under it is reported as refuted.
func flameDoubleLowerBound(o *boundOpts, out *boundOutput) error {
	r, err := randomizer(o)
	if err != nil {
		return err
	}
	if r.Mech != amplify.Laplace && r.Mech != amplify.RGammaB {
		out.after = append(out.after, fmt.Sprintf("count-statistic lower bound: not computed for --mech %s (Laplace and rgb only)", o.mech))
		return nil
	}
	if r.Mech == amplify.RGammaB {
		r.K = o.domain
	}
	delta := out.result.Delta
	if !(delta > 0 && delta < 1) {
		return nil
	}
	mine := o.k * o.rounds
	others := o.rounds * (o.d*o.np - o.k)
	lb, t, err := amplify.FLAMECountLowerBound(r, o.epsL/float64(o.k), mine, others, delta)
	if err != nil {
		return fmt.Errorf("count-statistic lower bound: %w", err)
	}
	out.extra["count_lower_bound"] = lb
	verdict := "the stated epsilon is above it"
	if out.result.Epsilon < lb {
		verdict = "the stated epsilon is BELOW it: REFUTED, not an upper bound"
	}
	out.after = append(out.after, fmt.Sprintf("count-statistic lower bound on the true epsilon at delta %.4g: %s (values above %.4g among %d, %d of them the differing user's); %s",
		delta, fmtSig(lb, 4, false), t, mine+others, mine, verdict))
	return nil
}

func runFlameTopk(o *boundOpts, out *boundOutput) error {
	beta := o.beta
	if beta == 0 {
		beta = float64(o.k) / float64(o.d)
	}
	out.noEpsDelta = true
	if o.nu > 0 {
		lmin, lmax, err := amplify.FLAMEIndexSlots(o.nu, beta)
		if err != nil {
			return err
		}
		out.result = amplify.Bound{Name: "flame-index-privacy", Note: "FLAME Proposition 2 / Algorithm 4: valid l range; epsilon/delta do not apply (the analyzer's guarantee is flame-double's)"}
		out.extra["nu"] = o.nu
		out.extra["beta"] = beta
		out.extra["l_min"] = lmin
		out.extra["l_max"] = lmax
		out.text = append(out.text, fmt.Sprintf("nu-index privacy nu = %v holds for l in [%d, %d] slots per top-k index (beta = %.6g)", o.nu, lmin, lmax, beta))
		return nil
	}
	nu, l, err := amplify.FLAMEIndexNu(o.n, o.np, beta)
	if err != nil {
		return err
	}
	out.result = amplify.Bound{Name: "flame-index-privacy", Note: "FLAME Theorem 5: strongest nu-index privacy against the shuffler; epsilon/delta do not apply (the analyzer's guarantee is flame-double's)"}
	out.extra["nu"] = nu
	out.extra["l"] = l
	out.extra["beta"] = beta
	out.text = append(out.text, fmt.Sprintf("strongest nu-index privacy nu = %.6g with l = %d slots per top-k index (beta = %.6g)", nu, l, beta))
	return nil
}

func runSAPES(o *boundOpts, out *boundOutput) error {
	ec, dc := o.epsC, o.deltaC
	assumption := "" // of the EoN step, inherited by the user-level result
	if !o.set["eps-c"] {
		eps, err := budgets(o, out)
		if err != nil {
			return err
		}
		b, err := amplify.EoNNumerical(eps, o.delta)
		if err != nil {
			return err
		}
		ec, dc, assumption = b.Epsilon, b.Delta, b.Assumption
		out.extra["eps_c"] = ec
		out.extra["delta_c"] = dc
	}
	if o.set["composition"] {
		c, err := composeK(o.composition, ec, dc, 2*o.b, o.deltaPrime)
		if err != nil {
			return fmt.Errorf("S-APES: composition over 2b = %d: %w", 2*o.b, err)
		}
		out.result = amplify.Bound{Name: "sapes-user-level", Epsilon: c.eps, Delta: c.delta,
			Note: fmt.Sprintf("S-APES Proposition 1 with the 2b = %d compositions done by %s", 2*o.b, c.describe()), Assumption: assumption}
		out.extra["composition"] = c.method
		return nil
	}
	b, err := amplify.SAPESUserLevel(ec, dc, o.b, o.deltaPrime)
	if err != nil {
		return err
	}
	b.Assumption = assumption
	out.result = b
	return nil
}

func runSubsample(o *boundOpts, out *boundOutput) error {
	var e, d float64
	var err error
	name := "subsample-" + o.method
	switch o.method {
	case "wor":
		e, d, err = account.SubsampleWOR(o.eps0, o.delta0, o.q)
	case "poisson":
		e, d, err = account.SubsamplePoisson(o.eps0, o.delta0, o.q)
	default:
		return checks.Invalidf("--method must be wor or poisson, got %q", o.method)
	}
	if err != nil {
		return err
	}
	out.result = amplify.Bound{Name: name, Epsilon: e, Delta: d, Note: "Balle, Barthe and Gaboardi 2018 (FLAME Lemma 4)"}
	return nil
}

func runCompose(o *boundOpts, out *boundOutput) error {
	c, err := composeK(o.composition, o.eps0, o.delta0, o.rounds, o.deltaPrime)
	if err != nil {
		return err
	}
	out.result = amplify.Bound{Name: "compose-" + o.composition, Epsilon: c.eps, Delta: c.delta,
		Note: fmt.Sprintf("%d rounds, %s", o.rounds, c.describe())}
	out.extra["composition"] = c.method
	return nil
}
