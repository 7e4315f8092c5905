package bound

import (
	"flag"
	"math"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
)

// Params are the typed parameters of every command; a command reads only
// those it lists (Command.Params). The zero value is not the CLI's default:
// Register binds the fields to flags with their defaults.
type Params struct {
	Eps0          float64 // local epsilon of each report (or of the mechanism subsampled or composed)
	EpsL          float64 // FLAME's eps_l, a client's budget for its d-dimensional vector
	Delta         float64 // central delta (per round with Rounds > 1); sgm: the target delta
	Delta0        float64 // delta of the mechanism subsampled or composed
	DeltaPrime    float64 // slack delta' of advanced, rdp and pld composition
	Q             float64 // sampling rate
	Nu            float64 // requested nu-index privacy (0: the strongest)
	Beta          float64 // sampling ratio k/d (0: from K and D)
	TargetEpsilon float64 // the inverse question's target (when Given["target-epsilon"])
	EpsC, DeltaC  float64 // S-APES dimension-level guarantee
	DeltaLocal    float64 // E-APES: every user's local delta
	TV            float64 // E-APES Berry–Esseen distance
	Sigma         float64 // sgm noise multiplier
	Epsilon       float64 // sgm: the target epsilon
	Variance      float64 // skellam: the noise variance per coordinate
	L1, L2        float64 // skellam: the sum's sensitivities (L1 0: sqrt(d) L2)

	N, D, K, Domain, NP, Rounds, B, Seed, Steps int

	Mech, Variant, Form, Method, EpsFile, EpsDist, Composition, Accountant string

	LegacyFLAMETypo, Compare, NoSubsampling, FLAMETheorem bool

	// Given holds the flag names of the parameters given explicitly (set
	// by the caller, e.g. from flag.FlagSet.Visit); several commands
	// behave differently for a default and a given value.
	Given map[string]bool
	// composeInside is set when the command handles Rounds itself (or
	// when composition already happened inside an inverse search).
	composeInside bool
}

// param is one parameter: its flag name, how the flag is registered and
// how its value is checked. check runs before any computation, so a bad
// value never costs time or memory.
type param struct {
	name     string
	register func(fs *flag.FlagSet, o *Params)
	check    func(o *Params) error
}

// Register defines on fs the flags of the command called name, bound to
// the fields of p and set to their defaults (so p holds the CLI's defaults
// until fs is parsed). It returns false for an unknown command.
func Register(fs *flag.FlagSet, name string, p *Params) bool {
	cmd, ok := commands[name]
	if !ok {
		return false
	}
	p.Rounds = 1
	for _, f := range cmd.Params {
		params[f].register(fs, p)
	}
	return true
}

// Defaults returns the parameters of the command called name at their
// defaults (those of its flags), with an empty Given; false for an unknown
// command. Set Given for a parameter whose presence matters (TargetEpsilon,
// an explicit Composition, ...).
func Defaults(name string) (Params, bool) {
	var p Params
	ok := Register(flag.NewFlagSet(name, flag.ContinueOnError), name, &p)
	p.Given = map[string]bool{}
	return p, ok
}

// FlagName returns the command-line name of the parameter with id f (ids
// are those of Command.Params; several ids share a flag name).
func FlagName(f string) string { return params[f].name }

// maxDistN is the largest --n accepted with --eps-dist (account.MaxBudgets).
const maxDistN = account.MaxBudgets

// Values of --composition.
var compositionNames = []string{"basic", "advanced", "best", "rdp", "pld"}

func inRange(name string, v, lo, hi float64, loOpen, hiOpen bool) error {
	if err := checks.Finite(name, v); err != nil {
		return err
	}
	if (loOpen && v <= lo) || (!loOpen && v < lo) || (hiOpen && v >= hi) || (!hiOpen && v > hi) {
		l, h := "[", "]"
		if loOpen {
			l = "("
		}
		if hiOpen {
			h = ")"
		}
		return checks.Invalidf("%s must be in %s%v, %v%s, got %v", name, l, lo, hi, h, v)
	}
	return nil
}

func oneOf(name, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return checks.Invalidf("%s must be one of %s, got %q", name, strings.Join(allowed, ", "), v)
}

// mechCheck validates --mech and, for krr and rgb, --domain.
func mechCheck(o *Params) error {
	m, err := amplify.ParseMechanism(o.Mech)
	if err != nil {
		return checks.Invalidf("--mech: %v", strings.TrimPrefix(err.Error(), checks.ErrInvalid.Error()+": "))
	}
	if (m == amplify.KRR || m == amplify.RGammaB) && o.Domain < 2 {
		return checks.Invalidf("--mech %s needs --domain (its domain size, >= 2)", o.Mech)
	}
	return nil
}

var params = map[string]param{
	"eps0": {"eps0", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.Eps0, "eps0", 1, "local epsilon of each report (eps0 > 0)")
	}, func(o *Params) error { return checks.Epsilon("--eps0", o.Eps0) }},
	"eps0-or-zero": {"eps0", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.Eps0, "eps0", 1, "epsilon of the mechanism being subsampled or composed (eps0 >= 0)")
	}, func(o *Params) error { return checks.EpsilonOrZero("--eps0", o.Eps0) }},
	"eps-l": {"eps-l", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.EpsL, "eps-l", 78.5, "a client's local budget for its whole d-dimensional vector (FLAME's eps_l > 0)")
	}, func(o *Params) error { return checks.Epsilon("--eps-l", o.EpsL) }},
	"n": {"n", func(fs *flag.FlagSet, o *Params) {
		fs.IntVar(&o.N, "n", 1000, "number of shuffled reports (users); with --eps-dist, the number of budgets drawn (1 <= n <= 10^8)")
	}, func(o *Params) error {
		if o.EpsDist != "" {
			return checks.IntInRange("--n", o.N, 1, maxDistN)
		}
		return checks.IntAtLeast("--n", o.N, 1)
	}},
	"delta": {"delta", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.Delta, "delta", 1e-6, "target central delta in (0, 1) (APES: delta_s; FLAME: delta_c); with --rounds, per round")
	}, func(o *Params) error { return checks.Delta("--delta", o.Delta) }},
	"d": {"d", func(fs *flag.FlagSet, o *Params) {
		fs.IntVar(&o.D, "d", 7850, "model dimension d (1 <= d <= 2^40)")
	}, func(o *Params) error { return checks.IntInRange("--d", o.D, 1, 1<<40) }},
	"k": {"k", func(fs *flag.FlagSet, o *Params) {
		fs.IntVar(&o.K, "k", 157, "dimensions sampled per user, 1 <= k <= d (SS-Double/SS-Topk: beta = k/d)")
	}, func(o *Params) error { return checks.IntInRange("--k", o.K, 1, max(o.D, 1)) }},
	"domain": {"domain", func(fs *flag.FlagSet, o *Params) {
		fs.IntVar(&o.Domain, "domain", 0, "domain size of --mech krr (k-ary RR) or rgb (b of R_{gamma,b}), >= 2; required by those mechanisms, unused by laplace and generic")
	}, func(o *Params) error {
		if o.Given["domain"] {
			return checks.IntAtLeast("--domain", o.Domain, 2)
		}
		return nil
	}},
	"k-domain": {"k", func(fs *flag.FlagSet, o *Params) {
		fs.Int("k", 0, "not accepted here (an error pointing to --domain): --k always means the dimensions sampled per user (flame-double, flame-topk); the domain size of krr/rgb is --domain")
	}, nil},
	"np": {"np", func(fs *flag.FlagSet, o *Params) {
		fs.IntVar(&o.NP, "np", 333, "SS-Double/SS-Topk dummy padding: reports per dimension after padding (n_p >= beta n, >= 1)")
	}, func(o *Params) error { return checks.IntAtLeast("--np", o.NP, 1) }},
	"rounds": {"rounds", func(fs *flag.FlagSet, o *Params) {
		fs.IntVar(&o.Rounds, "rounds", 1, "number of rounds (>= 1): the per-round guarantee is composed over them by --composition (E-APES: mu sqrt(rounds)); with --target-epsilon the target applies after composition")
	}, func(o *Params) error { return checks.IntAtLeast("--rounds", o.Rounds, 1) }},
	"nu": {"nu", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.Nu, "nu", 0, "requested nu-index privacy (1 <= nu <= 1/beta); 0 prints the strongest nu allowed (Theorem 5)")
	}, func(o *Params) error {
		if err := checks.Finite("--nu", o.Nu); err != nil {
			return err
		}
		if o.Nu != 0 && o.Nu < 1 {
			return checks.Invalidf("--nu must be 0 (strongest) or >= 1, got %v", o.Nu)
		}
		return nil
	}},
	"beta": {"beta", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.Beta, "beta", 0, "sampling ratio beta = k/d in (0, 1]; 0 means k/d from --k and --d")
	}, func(o *Params) error { return inRange("--beta", o.Beta, 0, 1, false, false) }},
	"mech": {"mech", func(fs *flag.FlagSet, o *Params) {
		fs.StringVar(&o.Mech, "mech", "laplace", "local randomizer: laplace (scale 1/eps0 on [0,1]), krr (k-ary RR, --domain), rgb (Balle's R_{gamma,b}, b = --domain), generic (any eps0-LDP)")
	}, mechCheck},
	"mech-best": {"mech", func(fs *flag.FlagSet, o *Params) {
		fs.StringVar(&o.Mech, "mech", "generic", "local randomizer: generic (any eps0-LDP, default), laplace (scale 1/eps0 on [0,1]), krr (k-ary RR, --domain), rgb (Balle's R_{gamma,b}, b = --domain); a specific mechanism adds its privacy-blanket bounds")
	}, mechCheck},
	"variant": {"variant", func(fs *flag.FlagSet, o *Params) {
		fs.StringVar(&o.Variant, "variant", "bennett", "privacy-blanket concentration bound: bennett (corrected, default) or hoeffding")
	}, func(o *Params) error {
		if o.LegacyFLAMETypo && o.Given["variant"] {
			return checks.Invalidf("--variant cannot be combined with --legacy-flame-typo (which selects the flawed Bennett code)")
		}
		return oneOf("--variant", o.Variant, "bennett", "hoeffding")
	}},
	"legacy-flame-typo": {"legacy-flame-typo", func(fs *flag.FlagSet, o *Params) {
		fs.BoolVar(&o.LegacyFLAMETypo, "legacy-flame-typo", false, "use the FLAWED pre-July-2020 Bennett code (extra factor 1/(m(e^eps-1)) per term) that FLAME's published 0.91/0.24/20.53 came from; it UNDERSTATES delta, its results are labelled NOT RIGOROUS (approximation) and must not be used to certify privacy")
	}, nil},
	"form": {"form", func(fs *flag.FlagSet, o *Params) {
		fs.StringVar(&o.Form, "form", "numerical", "numerical (default, tightest) or closed; clones also accepts theorem (FMT Theorem 3.1 as printed); blanket accepts closed (FLAME Lemma 1, needs --mech rgb)")
	}, nil}, // checked by the subcommand's own check
	"method": {"method", func(fs *flag.FlagSet, o *Params) {
		fs.StringVar(&o.Method, "method", "wor", "subsampling: wor (without replacement, default) or poisson")
	}, func(o *Params) error { return oneOf("--method", o.Method, "wor", "poisson") }},
	"compose-method": {"method", func(fs *flag.FlagSet, o *Params) {
		fs.StringVar(&o.Method, "method", "", "DEPRECATED alias of --composition")
	}, nil},
	"composition": {"composition", func(fs *flag.FlagSet, o *Params) {
		fs.StringVar(&o.Composition, "composition", "best", "how the per-round guarantee composes over --rounds (> 1): basic, advanced (with --delta-prime), rdp (Rényi DP of the pure part, with --delta-prime), pld (privacy loss distribution of the dominating pair, with --delta-prime) or best (the tightest of them, named); total delta = rounds*delta (+ delta' except basic)")
	}, func(o *Params) error { return oneOf("--composition", o.Composition, compositionNames...) }},
	"eps-file": {"eps-file", func(fs *flag.FlagSet, o *Params) {
		fs.StringVar(&o.EpsFile, "eps-file", "", "personalized budgets: a file with one epsilon per line, or a CSV whose first line is a header naming an 'epsilon' or 'eps' column; '#' starts a comment line ('-' reads stdin)")
	}, func(o *Params) error {
		if o.EpsFile != "" && o.EpsDist != "" {
			return checks.Invalidf("give either --eps-file or --eps-dist, not both")
		}
		if o.EpsFile != "" && (o.Given["n"] || o.Given["seed"]) {
			return checks.Invalidf("--n and --seed apply to --eps-dist only; with --eps-file the budgets are the file's")
		}
		return nil
	}},
	"eps-dist": {"eps-dist", func(fs *flag.FlagSet, o *Params) {
		fs.StringVar(&o.EpsDist, "eps-dist", "", "personalized budgets drawn from a named distribution ("+strings.Join(account.BudgetDistributions(), ", ")+") with --n (at most 10^8) and --seed")
	}, func(o *Params) error {
		if o.EpsDist == "" {
			return nil
		}
		if _, err := account.BudgetSource(o.EpsDist); err != nil {
			return checks.Invalidf("--eps-dist: %s", strings.TrimPrefix(err.Error(), checks.ErrInvalid.Error()+": "))
		}
		return nil
	}},
	"seed": {"seed", func(fs *flag.FlagSet, o *Params) {
		fs.IntVar(&o.Seed, "seed", 1, "seed for --eps-dist (reproducible, >= 0)")
	}, func(o *Params) error { return checks.IntAtLeast("--seed", o.Seed, 0) }},
	"delta0": {"delta0", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.Delta0, "delta0", 0, "delta of the mechanism being subsampled or composed, in [0, 1)")
	}, func(o *Params) error { return checks.DeltaOrZero("--delta0", o.Delta0) }},
	"delta-prime": {"delta-prime", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.DeltaPrime, "delta-prime", 1e-8, "the slack delta' of advanced, rdp and pld composition over --rounds (> 1), in (0, 1); it is added to the total delta")
	}, func(o *Params) error { return checks.Delta("--delta-prime", o.DeltaPrime) }},
	"q": {"q", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.Q, "q", 0.01, "sampling rate q in (0, 1] (m/n without replacement, inclusion probability for Poisson)")
	}, func(o *Params) error { return inRange("--q", o.Q, 0, 1, true, false) }},
	"eps-c": {"eps-c", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.EpsC, "eps-c", 0, "dimension-level central epsilon eps^c > 0 (not given: computed by EoN numerical from --eps-file/--eps-dist and --delta)")
	}, func(o *Params) error {
		if o.Given["eps-c"] {
			return checks.Epsilon("--eps-c", o.EpsC)
		}
		return nil
	}},
	"delta-c": {"delta-c", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.DeltaC, "delta-c", 0, "dimension-level central delta^c in [0, 1) (with --eps-c only)")
	}, func(o *Params) error { return checks.DeltaOrZero("--delta-c", o.DeltaC) }},
	"b": {"b", func(fs *flag.FlagSet, o *Params) {
		fs.IntVar(&o.B, "b", 1570, "S-APES: dimensions uploaded after post-sparsification (b >= 1)")
	}, func(o *Params) error { return checks.IntAtLeast("--b", o.B, 1) }},
	"tv": {"tv", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.TV, "tv", 0, "E-APES Theorem 3's Berry–Esseen distance tau = C/sqrt(n-1) in [0, 1) (the paper's example: 0.0206); > 0 also reports the corrected epsilon (still an approximation; vacuous for delta below about tau)")
	}, func(o *Params) error { return inRange("--tv", o.TV, 0, 1, false, true) }},
	"delta-local": {"delta-local", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.DeltaLocal, "delta-local", 0, "E-APES: every user's local delta_i in [0, 1)")
	}, func(o *Params) error { return checks.DeltaOrZero("--delta-local", o.DeltaLocal) }},
	"target-epsilon": {"target-epsilon", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.TargetEpsilon, "target-epsilon", 0, "inverse question (> 0): the largest local epsilon (or, for personalized budgets, the largest scale factor on the budget vector) whose central epsilon is at most this; an error if the search reaches its cap")
	}, func(o *Params) error {
		if !o.Given["target-epsilon"] {
			return nil
		}
		if o.Compare {
			return checks.Invalidf("--target-epsilon cannot be combined with --compare")
		}
		return checks.Epsilon("--target-epsilon", o.TargetEpsilon)
	}},
	"json": {"json", func(fs *flag.FlagSet, o *Params) {
		fs.Bool("json", false, "print one JSON object (bound, epsilon, delta, approximation, rigorous, note, inputs); non-finite numbers are null")
	}, nil},
	"compare": {"compare", func(fs *flag.FlagSet, o *Params) {
		fs.BoolVar(&o.Compare, "compare", false, "print every applicable bound side by side (approximations and inapplicable bounds labelled)")
	}, nil},
	"no-subsampling": {"no-subsampling", func(fs *flag.FlagSet, o *Params) {
		fs.BoolVar(&o.NoSubsampling, "no-subsampling", false, "FLAME's Theorem 4 without the subsampling credit of Theorem 3, composed over 2 beta d = 2k dimensions (FLAME's 20.53 figure; an upper bound, looser than the default)")
	}, nil},
	"flame-theorem": {"flame-theorem", func(fs *flag.FlagSet, o *Params) {
		fs.BoolVar(&o.FLAMETheorem, "flame-theorem", false, "FLAME's Theorems 3-4 as published (the subsampling credit on 2 beta d releases, FLAME's 0.24/0.305): NOT RIGOROUS, refuted by the count statistic; for reproducing the paper only")
	}, nil},
	"sgm-q": {"q", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.Q, "q", 0, "Poisson sampling rate q in (0, 1] of each step (required)")
	}, func(o *Params) error { return inRange("--q", o.Q, 0, 1, true, false) }},
	"sigma": {"sigma", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.Sigma, "sigma", 0, "noise multiplier sigma > 0: noise standard deviation / clipping norm (required)")
	}, func(o *Params) error { return checks.Positive("--sigma", o.Sigma) }},
	"steps": {"steps", func(fs *flag.FlagSet, o *Params) {
		fs.IntVar(&o.Steps, "steps", 0, "number of composed steps T >= 1 (required)")
	}, func(o *Params) error { return checks.IntAtLeast("--steps", o.Steps, 1) }},
	"sgm-delta": {"delta", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.Delta, "delta", 0, "target delta in (0, 1): print the epsilon (exactly one of --delta and --epsilon)")
	}, func(o *Params) error {
		if o.Given["delta"] == o.Given["epsilon"] {
			return checks.Invalidf("give exactly one of --delta and --epsilon")
		}
		if o.Given["delta"] {
			return checks.Delta("--delta", o.Delta)
		}
		return nil
	}},
	"sgm-epsilon": {"epsilon", func(fs *flag.FlagSet, o *Params) {
		fs.Float64Var(&o.Epsilon, "epsilon", 0, "target epsilon >= 0: print the delta (exactly one of --delta and --epsilon)")
	}, func(o *Params) error {
		if o.Given["epsilon"] {
			return checks.EpsilonOrZero("--epsilon", o.Epsilon)
		}
		return nil
	}},
	"accountant": {"accountant", func(fs *flag.FlagSet, o *Params) {
		fs.StringVar(&o.Accountant, "accountant", "best", "best (the tighter rigorous figure of rdp and pld, named), rdp (Rényi DP, Mironov et al. 2019) or pld (privacy loss distribution)")
	}, func(o *Params) error { return oneOf("--accountant", o.Accountant, "best", "rdp", "pld") }},
}

// isFinite reports whether v is neither NaN nor infinite.
func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
