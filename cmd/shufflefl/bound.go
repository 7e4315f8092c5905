package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

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
  flame-double  FLAME Theorems 3-4 (SS-Double with dummy padding)
  flame-topk    FLAME Theorem 5 / Proposition 2 (nu-index privacy of SS-Topk)
  sapes         S-APES Proposition 1 (user level after b-of-d sparsification)
  subsample     amplification by subsampling (without replacement or Poisson)
  compose       composition over rounds (basic, advanced, best)

Common flags: --json (one JSON object), --compare (every applicable bound side by side),
--target-epsilon (the inverse question), --rounds R (compose the per-round guarantee).
Run 'shufflefl bound SUBCOMMAND --help' for all flags.
`

// boundOpts holds every flag of every subcommand; each subcommand registers
// only the flags it reads.
type boundOpts struct {
	eps0, epsL, delta, delta0, deltaPrime, q, nu, beta, targetEps, epsC, deltaC, deltaLocal float64
	n, d, k, np, rounds, b, seed                                                            int
	mech, variant, form, method, epsFile, epsDist                                           string
	legacy, jsonOut, compare, noSubsample                                                   bool
	// composeInside is set when the subcommand handles --rounds itself (or
	// when composition already happened inside an inverse search).
	composeInside bool
	tv            float64
}

// flagSpec registers one flag on fs.
type flagSpec func(fs *flag.FlagSet, o *boundOpts)

var boundFlags = map[string]flagSpec{
	"eps0": func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.eps0, "eps0", 1, "local epsilon of each report (eps0 > 0)")
	},
	"eps-l": func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.epsL, "eps-l", 78.5, "a client's local budget for its whole d-dimensional vector (FLAME's eps_l)")
	},
	"n": func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.n, "n", 1000, "number of shuffled reports (users); with --eps-dist, the number of budgets drawn (n >= 2)")
	},
	"delta": func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.delta, "delta", 1e-6, "target central delta in (0, 1) (APES: delta_s; FLAME: delta_c)")
	},
	"d": func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.d, "d", 7850, "model dimension d")
	},
	"k": func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.k, "k", 157, "dimensions sampled per user (SS-Double: beta = k/d); for blanket: domain size of krr/rgb")
	},
	"np": func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.np, "np", 333, "SS-Double/SS-Topk dummy padding: reports per dimension after padding (n_p >= beta n)")
	},
	"rounds": func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.rounds, "rounds", 1, "number of rounds: the per-round guarantee is composed over them (compose: the mechanism's; other subcommands: the better of basic and advanced composition with --delta-prime, E-APES: mu sqrt(rounds)); with --target-epsilon the target applies after composition")
	},
	"nu": func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.nu, "nu", 0, "requested nu-index privacy (1 <= nu <= 1/beta); 0 prints the strongest nu allowed (Theorem 5)")
	},
	"beta": func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.beta, "beta", 0, "sampling ratio beta = k/d in (0, 1]; 0 means k/d from --k and --d")
	},
	"mech": func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.mech, "mech", "laplace", "local randomizer: laplace (scale 1/eps0 on [0,1]), krr (k-ary RR, --k), rgb (Balle's R_{gamma,b}, b = --k), generic (any eps0-LDP)")
	},
	"mech-best": func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.mech, "mech", "generic", "local randomizer: generic (any eps0-LDP, default), laplace (scale 1/eps0 on [0,1]), krr (k-ary RR, --k), rgb (Balle's R_{gamma,b}, b = --k); a specific mechanism adds its privacy-blanket bounds")
	},
	"variant": func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.variant, "variant", "bennett", "privacy-blanket concentration bound: bennett (corrected, default) or hoeffding")
	},
	"legacy-flame-typo": func(fs *flag.FlagSet, o *boundOpts) {
		fs.BoolVar(&o.legacy, "legacy-flame-typo", false, "use the FLAWED pre-July-2020 Bennett code (extra factor 1/(m(e^eps-1)) per term) that FLAME's published 0.91/0.24/20.53 came from; it UNDERSTATES delta and must not be used to certify privacy")
	},
	"form": func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.form, "form", "numerical", "numerical (default, tightest) or closed; clones also accepts theorem (FMT Theorem 3.1 as printed); blanket accepts closed (FLAME Lemma 1, needs --mech rgb)")
	},
	"method": func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.method, "method", "", "subsample: wor (without replacement, default) or poisson; compose: best (default), basic or advanced")
	},
	"eps-file": func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.epsFile, "eps-file", "", "personalized budgets: a file with one epsilon per line, or CSV ('-' reads stdin)")
	},
	"eps-dist": func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.epsDist, "eps-dist", "", "personalized budgets drawn from a named distribution ("+strings.Join(account.BudgetDistributions(), ", ")+") with --n and --seed")
	},
	"seed": func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.seed, "seed", 1, "seed for --eps-dist (reproducible)")
	},
	"delta0": func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.delta0, "delta0", 0, "delta of the mechanism being subsampled or composed, in [0, 1)")
	},
	"delta-prime": func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.deltaPrime, "delta-prime", 1e-8, "the slack delta' of advanced composition, in (0, 1)")
	},
	"q": func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.q, "q", 0.01, "sampling rate q in (0, 1] (m/n without replacement, inclusion probability for Poisson)")
	},
	"eps-c": func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.epsC, "eps-c", 0, "dimension-level central epsilon eps^c (0: compute it by EoN numerical from --eps-file/--eps-dist and --delta)")
	},
	"delta-c": func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.deltaC, "delta-c", 0, "dimension-level central delta^c (with --eps-c)")
	},
	"b": func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.b, "b", 1570, "S-APES: dimensions uploaded after post-sparsification (0 < b <= d)")
	},
	"tv": func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.tv, "tv", 0, "E-APES Theorem 3's Berry–Esseen distance tau = C/sqrt(n-1) (the paper's example: 0.0206); > 0 also reports the corrected epsilon (still an approximation; vacuous for delta below about tau)")
	},
	"delta-local": func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.deltaLocal, "delta-local", 0, "E-APES: every user's local delta_i in [0, 1)")
	},
	"target-epsilon": func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.targetEps, "target-epsilon", 0, "inverse question: the largest local epsilon (or, for personalized budgets, the largest scale factor on the budget vector) whose central epsilon is at most this")
	},
	"json": func(fs *flag.FlagSet, o *boundOpts) {
		fs.BoolVar(&o.jsonOut, "json", false, "print one JSON object (bound, epsilon, delta, approximation, note, inputs)")
	},
	"compare": func(fs *flag.FlagSet, o *boundOpts) {
		fs.BoolVar(&o.compare, "compare", false, "print every applicable bound side by side (approximations and inapplicable bounds labelled)")
	},
	"no-subsampling": func(fs *flag.FlagSet, o *boundOpts) {
		fs.BoolVar(&o.noSubsample, "no-subsampling", false, "SS-Double without the subsampling credit of Theorem 3 (FLAME's 20.53 figure)")
	},
}

// boundCmd is one `shufflefl bound` subcommand.
type boundCmd struct {
	summary string
	flags   []string
	run     func(o *boundOpts, fs *flag.FlagSet, out *boundOutput) error
}

var personalFlags = []string{"eps-file", "eps-dist", "n", "seed", "delta", "rounds", "delta-prime", "target-epsilon", "compare", "json"}

var boundCmds = map[string]boundCmd{
	"erlingsson": {"Erlingsson et al. 2019: eps = 12 eps0 sqrt(log(1/delta)/n) (eps0 <= 1/2, n >= 1000, delta <= 0.01)",
		[]string{"eps0", "n", "delta", "rounds", "delta-prime", "target-epsilon", "compare", "json"}, runErlingsson},
	"blanket": {"Balle et al. 2019 privacy blanket: numerical Bennett (default) or Hoeffding bound, or the closed form of FLAME Lemma 1",
		[]string{"eps0", "n", "delta", "mech", "k", "variant", "form", "legacy-flame-typo", "rounds", "delta-prime", "target-epsilon", "compare", "json"}, runBlanket},
	"clones": {"Feldman, McMillan and Talwar 2022: numerical bound (every clone count exact, guaranteed upper bound) or closed form",
		[]string{"eps0", "n", "delta", "form", "rounds", "delta-prime", "target-epsilon", "compare", "json"}, runClones},
	"best": {"the tightest valid rigorous bound, named (uniform; personalized with --eps-file or --eps-dist); never an approximation",
		[]string{"eps0", "n", "delta", "mech-best", "k", "eps-file", "eps-dist", "seed", "rounds", "delta-prime", "compare", "json"}, runBest},
	"unis": {"UniS baseline: the clones bound at max eps_i for all users (default numerical, APES Table 3's 0.069; --form closed is APES Eq. (2))",
		append([]string{"form"}, personalFlags...), runUniS},
	"eon": {"APES Echo of Neighbors: numerical (default; exact Poisson-binomial clone counts) or closed form (Theorem 4)",
		append([]string{"form"}, personalFlags...), runEoN},
	"eapes": {"E-APES mu-GDP, mu = 2/sqrt(sum p_i): an APPROXIMATION (central limit), not an upper bound",
		append([]string{"delta-local", "tv"}, personalFlags...), runEAPES},
	"flame-simple": {"FLAME Theorem 1 (SS-Simple): per-dimension shuffle at eps_l/d, composed over d",
		[]string{"eps-l", "d", "n", "delta", "mech", "k", "variant", "legacy-flame-typo", "rounds", "delta-prime", "target-epsilon", "json"}, runFlameSimple},
	"flame-double": {"FLAME Theorems 3-4 (SS-Double): k of d dimensions, padding to n_p, subsampling, composition over 2 beta d",
		[]string{"eps-l", "d", "k", "n", "np", "delta", "mech", "variant", "legacy-flame-typo", "no-subsampling", "rounds", "delta-prime", "target-epsilon", "json"}, runFlameDouble},
	"flame-topk": {"FLAME Theorem 5 / Proposition 2: nu-index privacy of SS-Topk (the central guarantee is that of flame-double)",
		[]string{"n", "np", "k", "d", "beta", "nu", "json"}, runFlameTopk},
	"sapes": {"S-APES Proposition 1: user-level guarantee after b-of-d post-sparsification",
		[]string{"eps-c", "delta-c", "b", "delta-prime", "eps-file", "eps-dist", "n", "seed", "delta", "json"}, runSAPES},
	"subsample": {"amplification by subsampling (Balle, Barthe, Gaboardi 2018; FLAME Lemma 4): wor or poisson",
		[]string{"eps0", "delta0", "q", "method", "json"}, runSubsample},
	"compose": {"composition of rounds: basic, advanced (FLAME Lemma 3 / APES Lemma 2) or best",
		[]string{"eps0", "delta0", "rounds", "delta-prime", "method", "json"}, runCompose},
}

// boundOutput collects what a subcommand reports.
type boundOutput struct {
	result  amplify.Bound
	rows    []amplify.Candidate
	extra   map[string]any
	inputs  map[string]any
	text    []string
	inverse bool
}

// runBound implements `shufflefl bound SUBCOMMAND [flags]`. It returns the process exit status: 0 on success, 2 on a usage or invalid-parameter error (one clear message on stderr), 1 on an internal failure.
//
// The pure computations live in package amplify (and account); this
// function only parses flags, loads budgets, calls them and prints.
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
		fmt.Fprintf(stderr, "shufflefl bound: unknown subcommand %q\n\n%s", name, boundUsage)
		return 2
	}
	fs := flag.NewFlagSet("shufflefl bound "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &boundOpts{rounds: 1}
	for _, f := range cmd.flags {
		boundFlags[f](fs, o)
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: shufflefl bound %s [flags]\n\n%s\n\nFlags:\n", name, cmd.summary)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "shufflefl bound %s: unexpected argument %q\n", name, fs.Arg(0))
		return 2
	}
	out := &boundOutput{inputs: map[string]any{}, extra: map[string]any{}}
	fs.VisitAll(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			out.inputs[f.Name] = g.Get()
		}
	})
	if err := checks.IntAtLeast("--rounds", o.rounds, 1); err != nil {
		fmt.Fprintf(stderr, "shufflefl bound %s: %v\n", name, err)
		return 2
	}
	if name == "compose" || name == "subsample" || name == "flame-topk" || name == "sapes" {
		o.composeInside = true
	}
	err := cmd.run(o, fs, out)
	if err == nil && !o.composeInside && o.rounds > 1 {
		err = composeOutput(o, out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "shufflefl bound %s: %v\n", name, err)
		if errors.Is(err, checks.ErrInvalid) {
			return 2
		}
		return 1
	}
	if err := printBound(stdout, name, o, out); err != nil {
		fmt.Fprintf(stderr, "shufflefl bound %s: %v\n", name, err)
		return 1
	}
	return 0
}

// printBound writes the result as text or as one JSON object.
func printBound(w io.Writer, name string, o *boundOpts, out *boundOutput) error {
	if o.jsonOut {
		obj := map[string]any{
			"bound":         out.result.Name,
			"epsilon":       out.result.Epsilon,
			"delta":         out.result.Delta,
			"approximation": out.result.Approximation,
			"inputs":        out.inputs,
		}
		if out.result.Note != "" {
			obj["note"] = out.result.Note
		}
		for k, v := range out.extra {
			obj[k] = v
		}
		if out.rows != nil {
			rows := make([]map[string]any, 0, len(out.rows))
			for _, r := range out.rows {
				m := map[string]any{"bound": r.Name, "approximation": r.Approximation}
				if r.Err != "" {
					m["error"] = r.Err
					m["epsilon"] = nil
				} else {
					m["epsilon"] = r.Epsilon
					m["delta"] = r.Delta
					m["note"] = r.Note
				}
				rows = append(rows, m)
			}
			obj["compare"] = rows
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(obj)
	}
	for _, t := range out.text {
		fmt.Fprintln(w, t)
	}
	if out.rows != nil {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "BOUND\tEPSILON\tDELTA\tNOTE")
		for _, r := range out.rows {
			if r.Err != "" {
				fmt.Fprintf(tw, "%s\t-\t-\tnot applicable: %s\n", r.Name, r.Err)
				continue
			}
			note := r.Note
			if r.Approximation {
				note = "APPROXIMATION (not an upper bound): " + note
			}
			fmt.Fprintf(tw, "%s\t%.6g\t%.3g\t%s\n", r.Name, r.Epsilon, r.Delta, note)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "best (rigorous): %s epsilon = %.6g delta = %.3g\n", out.result.Name, out.result.Epsilon, out.result.Delta)
		return nil
	}
	r := out.result
	label := "epsilon"
	if out.inverse {
		label = "central epsilon at that value"
	}
	fmt.Fprintf(w, "%s: %s = %.6g, delta = %.3g\n", r.Name, label, r.Epsilon, r.Delta)
	if r.Approximation {
		fmt.Fprintln(w, "WARNING: this is an APPROXIMATION (central-limit step), not a proven upper bound")
	}
	if r.Note != "" {
		fmt.Fprintf(w, "  (%s)\n", r.Note)
	}
	keys := make([]string, 0, len(out.extra))
	for k := range out.extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s = %v\n", k, out.extra[k])
	}
	return nil
}

// composeRounds composes a rigorous per-round guarantee over o.rounds rounds
// with the better of basic and advanced composition (account.ComposeBest).
func composeRounds(o *boundOpts, b amplify.Bound) (amplify.Bound, error) {
	if o.rounds <= 1 {
		return b, nil
	}
	if b.Approximation {
		return b, checks.Invalidf("bound %s is an approximation and is not composed here", b.Name)
	}
	e, d, adv, err := account.ComposeBest(b.Epsilon, b.Delta, o.rounds, o.deltaPrime)
	if err != nil {
		return b, err
	}
	how := "basic"
	if adv {
		how = "advanced"
	}
	b.Note = fmt.Sprintf("%s; composed over %d rounds (%s composition)", b.Note, o.rounds, how)
	b.Epsilon, b.Delta = e, d
	return b, nil
}

// composeOutput applies --rounds to the result and to every comparison row.
func composeOutput(o *boundOpts, out *boundOutput) error {
	out.extra["per_round_epsilon"] = out.result.Epsilon
	out.extra["per_round_delta"] = out.result.Delta
	out.extra["rounds"] = o.rounds
	var err error
	if !out.result.Approximation && out.result.Name != "" {
		if out.result, err = composeRounds(o, out.result); err != nil {
			return err
		}
	}
	for i, r := range out.rows {
		if r.Err != "" || r.Approximation {
			continue
		}
		if out.rows[i].Bound, err = composeRounds(o, r.Bound); err != nil {
			out.rows[i].Err = err.Error()
		}
	}
	return nil
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
		mu *= math.Sqrt(float64(o.rounds))
		out.extra["mu_total"] = mu
		note += fmt.Sprintf("; %d rounds composed as mu sqrt(rounds) = %.6g", o.rounds, mu)
	}
	e, err := amplify.GDPEpsilon(mu, delta)
	if err != nil {
		return amplify.Bound{}, err
	}
	if o.tv > 0 {
		if o.rounds > 1 {
			return amplify.Bound{}, checks.Invalidf("--tv (the Berry–Esseen correction) is per round; it cannot be combined with --rounds")
		}
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

// setCompare fills out with a comparison and its best rigorous row.
func setCompare(out *boundOutput, rows []amplify.Candidate) error {
	out.rows = rows
	for _, r := range rows {
		if r.Err == "" && !r.Approximation && !strings.Contains(r.Name, "legacy") {
			out.result = r.Bound
			return nil
		}
	}
	return checks.Invalidf("no bound applies to these parameters")
}

func randomizer(o *boundOpts) (amplify.Randomizer, error) {
	m, err := amplify.ParseMechanism(o.mech)
	if err != nil {
		return amplify.Randomizer{}, err
	}
	return amplify.Randomizer{Mech: m, K: o.k}, nil
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

// inverseUniform answers --target-epsilon for a uniform amplifier.
func inverseUniform(o *boundOpts, out *boundOutput, name string, amp1 amplify.Amplifier) error {
	amp := func(e0 float64, n int, d float64) (float64, error) {
		e, err := amp1(e0, n, d)
		if err != nil {
			return 0, err
		}
		b, err := composeRounds(o, amplify.Bound{Epsilon: e, Delta: d})
		return b.Epsilon, err
	}
	o.composeInside = true
	e0, err := amplify.InverseEps0(amp, o.targetEps, o.n, o.delta, 30)
	if err != nil {
		return err
	}
	e, err := amp(e0, o.n, o.delta)
	if err != nil {
		return err
	}
	out.inverse = true
	out.result, _ = composeRounds(o, amplify.Bound{Name: name, Epsilon: e, Delta: o.delta, Note: "inverse calibration"})
	if o.rounds > 1 {
		out.result.Epsilon = e
	}
	out.extra["max_eps0"] = e0
	out.text = append(out.text, fmt.Sprintf("largest local eps0 = %.6g for target central epsilon %.6g (n = %d, delta = %.3g)", e0, o.targetEps, o.n, o.delta))
	return nil
}

func runErlingsson(o *boundOpts, _ *flag.FlagSet, out *boundOutput) error {
	if o.compare {
		rows, err := amplify.CompareUniform(o.eps0, o.n, o.delta, amplify.Randomizer{Mech: amplify.Generic}, false)
		if err != nil {
			return err
		}
		return setCompare(out, rows)
	}
	if o.targetEps > 0 {
		return inverseUniform(o, out, "erlingsson", amplify.Erlingsson)
	}
	e, err := amplify.Erlingsson(o.eps0, o.n, o.delta)
	if err != nil {
		return err
	}
	out.result = amplify.Bound{Name: "erlingsson", Epsilon: e, Delta: o.delta, Note: "Erlingsson et al. 2019"}
	return nil
}

func runBlanket(o *boundOpts, _ *flag.FlagSet, out *boundOutput) error {
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
		if r.Mech != amplify.RGammaB {
			return checks.Invalidf("--form closed (FLAME Lemma 1) applies to --mech rgb only")
		}
		amp := func(e0 float64, n int, d float64) (float64, error) { return amplify.BlanketClosedForm(e0, r.K, n, d) }
		if o.targetEps > 0 {
			return inverseUniform(o, out, "blanket-closed", amp)
		}
		e, err := amp(o.eps0, o.n, o.delta)
		if err != nil {
			return err
		}
		out.result = amplify.Bound{Name: "blanket-closed", Epsilon: e, Delta: o.delta, Note: "Balle et al. 2019 / FLAME Lemma 1"}
		return nil
	} else if o.form != "numerical" {
		return checks.Invalidf("--form must be numerical or closed for blanket, got %q", o.form)
	}
	v, err := blanketVariant(o)
	if err != nil {
		return err
	}
	name := "blanket-" + v.String() + "-" + r.Mech.String()
	if o.targetEps > 0 {
		return inverseUniform(o, out, name, amplify.BlanketAmplifier(r, v))
	}
	e, ok, err := amplify.BlanketEpsilon(r, v, o.eps0, o.n, o.delta)
	if err != nil {
		return err
	}
	note := "Balle et al. 2019, numerical"
	if v == amplify.BennettLegacyFLAME {
		note = "FLAWED legacy pre-July-2020 Bennett code: understates delta; for reproducing FLAME's figures only"
	}
	if !ok {
		note += "; no amplification at these parameters (eps0 returned)"
	}
	out.result = amplify.Bound{Name: name, Epsilon: e, Delta: o.delta, Note: note}
	return nil
}

func runClones(o *boundOpts, _ *flag.FlagSet, out *boundOutput) error {
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
	if o.targetEps > 0 {
		return inverseUniform(o, out, name, amp)
	}
	e, err := amp(o.eps0, o.n, o.delta)
	if err != nil {
		return err
	}
	out.result = amplify.Bound{Name: name, Epsilon: e, Delta: o.delta, Note: note}
	return nil
}

// budgets loads personalized epsilons from --eps-file or --eps-dist.
func budgets(o *boundOpts, out *boundOutput) ([]float64, error) {
	var eps []float64
	switch {
	case o.epsFile != "" && o.epsDist != "":
		return nil, checks.Invalidf("give either --eps-file or --eps-dist, not both")
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
		if o.seed < 0 {
			return nil, checks.Invalidf("--seed must be >= 0, got %d", o.seed)
		}
		e, err := account.Budgets(o.epsDist, o.n, rng.Stream(uint64(o.seed)))
		if err != nil {
			return nil, err
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
	if o.targetEps > 0 {
		o.composeInside = true
		composed := func(e []float64, d float64) (amplify.Bound, error) {
			b, err := bound(e, d)
			if err != nil {
				return b, err
			}
			return composeRounds(o, b)
		}
		s, err := amplify.InverseScale(composed, eps, o.delta, o.targetEps, 1e3)
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
		out.inverse = true
		out.result = b
		out.extra["scale"] = s
		out.text = append(out.text, fmt.Sprintf("largest scale factor on the budget vector = %.6g for target central epsilon %.6g", s, o.targetEps))
		return nil
	}
	b, err := bound(eps, o.delta)
	if err != nil {
		return err
	}
	out.result = b
	return nil
}

func runUniS(o *boundOpts, _ *flag.FlagSet, out *boundOutput) error {
	switch o.form {
	case "closed":
		return personalCmd(o, out, amplify.UniS)
	case "numerical", "":
		return personalCmd(o, out, amplify.UniSNumerical)
	}
	return checks.Invalidf("--form must be closed or numerical, got %q", o.form)
}

func runEoN(o *boundOpts, _ *flag.FlagSet, out *boundOutput) error {
	switch o.form {
	case "numerical", "":
		return personalCmd(o, out, amplify.EoNNumerical)
	case "closed":
		return personalCmd(o, out, amplify.EoNClosedForm)
	}
	return checks.Invalidf("--form must be numerical or closed, got %q", o.form)
}

func runEAPES(o *boundOpts, _ *flag.FlagSet, out *boundOutput) error {
	if err := checks.DeltaOrZero("--delta-local", o.deltaLocal); err != nil {
		return err
	}
	if o.targetEps > 0 {
		return checks.Invalidf("--target-epsilon is not offered for E-APES: it is an approximation, not an upper bound; use eon")
	}
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

func runBest(o *boundOpts, _ *flag.FlagSet, out *boundOutput) error {
	if o.epsFile != "" || o.epsDist != "" {
		eps, err := budgets(o, out)
		if err != nil {
			return err
		}
		rows, err := comparePersonal(o, out, eps)
		if err != nil {
			return err
		}
		if err := setCompare(out, rows); err != nil {
			return err
		}
		if !o.compare {
			out.rows = nil
		}
		return nil
	}
	r, err := randomizer(o)
	if err != nil {
		return err
	}
	rows, err := amplify.CompareUniform(o.eps0, o.n, o.delta, r, false)
	if err != nil {
		return err
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

func protocolExtra(out *boundOutput, o *boundOpts, p amplify.ProtocolResult) {
	out.result = p.Bound
	if o.legacy {
		out.result.Name += "-legacy-flame-typo"
		out.result.Note += "; FLAWED legacy pre-July-2020 Bennett code: understates delta, for reproducing FLAME's published figures only"
	}
	out.extra["eps_local_per_dimension"] = p.EpsLocal
	out.extra["eps_shuffle"] = p.EpsShuffle
	out.extra["delta_shuffle"] = p.DeltaShuffle
	out.extra["eps_dimension"] = p.EpsDim
	out.extra["delta_dimension"] = p.DeltaDim
	out.extra["compositions"] = p.Compositions
}

// inverseProtocol answers --target-epsilon for a protocol: the largest eps_l.
func inverseProtocol(o *boundOpts, out *boundOutput, f func(epsL float64) (amplify.ProtocolResult, error)) error {
	o.composeInside = true
	amp := func(e float64, _ int, _ float64) (float64, error) {
		p, err := f(e)
		if err != nil {
			return 0, err
		}
		b, err := composeRounds(o, p.Bound)
		return b.Epsilon, err
	}
	e, err := amplify.InverseEps0(amp, o.targetEps, o.n, o.delta, 1e5)
	if err != nil {
		return err
	}
	p, err := f(e)
	if err != nil {
		return err
	}
	protocolExtra(out, o, p)
	if out.result, err = composeRounds(o, out.result); err != nil {
		return err
	}
	out.inverse = true
	out.extra["max_eps_l"] = e
	out.text = append(out.text, fmt.Sprintf("largest eps_l = %.6g for target central epsilon %.6g", e, o.targetEps))
	return nil
}

func runFlameSimple(o *boundOpts, _ *flag.FlagSet, out *boundOutput) error {
	amp, err := flameAmp(o)
	if err != nil {
		return err
	}
	f := func(epsL float64) (amplify.ProtocolResult, error) {
		return amplify.SSSimple(epsL, o.d, o.n, o.delta, amp)
	}
	if o.targetEps > 0 {
		return inverseProtocol(o, out, f)
	}
	p, err := f(o.epsL)
	if err != nil {
		return err
	}
	protocolExtra(out, o, p)
	return nil
}

func runFlameDouble(o *boundOpts, _ *flag.FlagSet, out *boundOutput) error {
	amp, err := flameAmp(o)
	if err != nil {
		return err
	}
	f := func(epsL float64) (amplify.ProtocolResult, error) {
		return amplify.SSDouble(epsL, o.d, o.k, o.n, o.np, o.delta, amp, !o.noSubsample)
	}
	if o.targetEps > 0 {
		return inverseProtocol(o, out, f)
	}
	p, err := f(o.epsL)
	if err != nil {
		return err
	}
	protocolExtra(out, o, p)
	return nil
}

func runFlameTopk(o *boundOpts, _ *flag.FlagSet, out *boundOutput) error {
	beta := o.beta
	if beta == 0 {
		if err := checks.IntAtLeast("--d", o.d, 1); err != nil {
			return err
		}
		beta = float64(o.k) / float64(o.d)
	}
	if o.nu > 0 {
		lmin, lmax, err := amplify.FLAMEIndexSlots(o.nu, beta)
		if err != nil {
			return err
		}
		out.result = amplify.Bound{Name: "flame-index-privacy", Note: "FLAME Proposition 2 / Algorithm 4: valid l range"}
		out.extra["nu"] = o.nu
		out.extra["beta"] = beta
		out.extra["l_min"] = lmin
		out.extra["l_max"] = lmax
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

func runSAPES(o *boundOpts, _ *flag.FlagSet, out *boundOutput) error {
	ec, dc := o.epsC, o.deltaC
	if ec == 0 {
		eps, err := budgets(o, out)
		if err != nil {
			return err
		}
		b, err := amplify.EoNNumerical(eps, o.delta)
		if err != nil {
			return err
		}
		ec, dc = b.Epsilon, b.Delta
		out.extra["eps_c"] = ec
		out.extra["delta_c"] = dc
	}
	b, err := amplify.SAPESUserLevel(ec, dc, o.b, o.deltaPrime)
	if err != nil {
		return err
	}
	out.result = b
	return nil
}

func runSubsample(o *boundOpts, _ *flag.FlagSet, out *boundOutput) error {
	var e, d float64
	var err error
	name := "subsample-wor"
	switch o.method {
	case "", "wor":
		e, d, err = account.SubsampleWOR(o.eps0, o.delta0, o.q)
	case "poisson":
		name = "subsample-poisson"
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

func runCompose(o *boundOpts, _ *flag.FlagSet, out *boundOutput) error {
	var e, d float64
	var err error
	name := "compose-" + o.method
	switch o.method {
	case "", "best":
		name = "compose-best"
		var adv bool
		e, d, adv, err = account.ComposeBest(o.eps0, o.delta0, o.rounds, o.deltaPrime)
		out.extra["advanced_won"] = adv
	case "basic":
		e, d, err = account.ComposeBasic(o.eps0, o.delta0, o.rounds)
	case "advanced":
		e, d, err = account.ComposeAdvanced(o.eps0, o.delta0, o.rounds, o.deltaPrime)
	default:
		return checks.Invalidf("--method must be best, basic or advanced, got %q", o.method)
	}
	if err != nil {
		return err
	}
	out.result = amplify.Bound{Name: name, Epsilon: e, Delta: d, Note: "composition of --rounds rounds"}
	return nil
}
