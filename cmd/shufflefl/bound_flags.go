package main

import (
	"flag"
	"math"
	"strings"

	"shufflefl/account"
	"shufflefl/amplify"
	"shufflefl/checks"
)

// boundOpts holds every flag of every subcommand; each subcommand registers
// only the flags it reads.
type boundOpts struct {
	eps0, epsL, delta, delta0, deltaPrime, q, nu, beta, targetEps, epsC, deltaC, deltaLocal float64
	tv, sigma, epsilon                                                                      float64
	n, d, k, domain, kAlias, np, rounds, b, seed, steps                                     int
	mech, variant, form, method, epsFile, epsDist, composition, accountant                  string
	legacy, jsonOut, compare, noSubsample, flameTheorem                                     bool
	// set holds the names of the flags given on the command line.
	set map[string]bool
	// composeInside is set when the subcommand handles --rounds itself (or
	// when composition already happened inside an inverse search).
	composeInside bool
}

// flagDef is one flag: its name on the command line, how it is registered and
// how its value is checked. check runs after parsing and before any
// computation, so a bad value never costs time or memory.
type flagDef struct {
	name     string
	register func(fs *flag.FlagSet, o *boundOpts)
	check    func(o *boundOpts) error
}

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
func mechCheck(o *boundOpts) error {
	m, err := amplify.ParseMechanism(o.mech)
	if err != nil {
		return checks.Invalidf("--mech: %v", strings.TrimPrefix(err.Error(), checks.ErrInvalid.Error()+": "))
	}
	if (m == amplify.KRR || m == amplify.RGammaB) && o.domain < 2 {
		return checks.Invalidf("--mech %s needs --domain (its domain size, >= 2)", o.mech)
	}
	return nil
}

var boundFlags = map[string]flagDef{
	"eps0": {"eps0", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.eps0, "eps0", 1, "local epsilon of each report (eps0 > 0)")
	}, func(o *boundOpts) error { return checks.Epsilon("--eps0", o.eps0) }},
	"eps0-or-zero": {"eps0", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.eps0, "eps0", 1, "epsilon of the mechanism being subsampled or composed (eps0 >= 0)")
	}, func(o *boundOpts) error { return checks.EpsilonOrZero("--eps0", o.eps0) }},
	"eps-l": {"eps-l", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.epsL, "eps-l", 78.5, "a client's local budget for its whole d-dimensional vector (FLAME's eps_l > 0)")
	}, func(o *boundOpts) error { return checks.Epsilon("--eps-l", o.epsL) }},
	"n": {"n", func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.n, "n", 1000, "number of shuffled reports (users); with --eps-dist, the number of budgets drawn (1 <= n <= 10^8)")
	}, func(o *boundOpts) error {
		if o.epsDist != "" {
			return checks.IntInRange("--n", o.n, 1, maxDistN)
		}
		return checks.IntAtLeast("--n", o.n, 1)
	}},
	"delta": {"delta", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.delta, "delta", 1e-6, "target central delta in (0, 1) (APES: delta_s; FLAME: delta_c); with --rounds, per round")
	}, func(o *boundOpts) error { return checks.Delta("--delta", o.delta) }},
	"d": {"d", func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.d, "d", 7850, "model dimension d (1 <= d <= 2^40)")
	}, func(o *boundOpts) error { return checks.IntInRange("--d", o.d, 1, 1<<40) }},
	"k": {"k", func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.k, "k", 157, "dimensions sampled per user, 1 <= k <= d (SS-Double/SS-Topk: beta = k/d)")
	}, func(o *boundOpts) error { return checks.IntInRange("--k", o.k, 1, max(o.d, 1)) }},
	"domain": {"domain", func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.domain, "domain", 0, "domain size of --mech krr (k-ary RR) or rgb (b of R_{gamma,b}), >= 2; required by those mechanisms, unused by laplace and generic")
	}, func(o *boundOpts) error {
		if o.set["domain"] {
			return checks.IntAtLeast("--domain", o.domain, 2)
		}
		return nil
	}},
	"k-domain": {"k", func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.kAlias, "k", 0, "not accepted here (an error pointing to --domain): --k always means the dimensions sampled per user (flame-double, flame-topk); the domain size of krr/rgb is --domain")
	}, nil},
	"np": {"np", func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.np, "np", 333, "SS-Double/SS-Topk dummy padding: reports per dimension after padding (n_p >= beta n, >= 1)")
	}, func(o *boundOpts) error { return checks.IntAtLeast("--np", o.np, 1) }},
	"rounds": {"rounds", func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.rounds, "rounds", 1, "number of rounds (>= 1): the per-round guarantee is composed over them by --composition (E-APES: mu sqrt(rounds)); with --target-epsilon the target applies after composition")
	}, func(o *boundOpts) error { return checks.IntAtLeast("--rounds", o.rounds, 1) }},
	"nu": {"nu", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.nu, "nu", 0, "requested nu-index privacy (1 <= nu <= 1/beta); 0 prints the strongest nu allowed (Theorem 5)")
	}, func(o *boundOpts) error {
		if err := checks.Finite("--nu", o.nu); err != nil {
			return err
		}
		if o.nu != 0 && o.nu < 1 {
			return checks.Invalidf("--nu must be 0 (strongest) or >= 1, got %v", o.nu)
		}
		return nil
	}},
	"beta": {"beta", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.beta, "beta", 0, "sampling ratio beta = k/d in (0, 1]; 0 means k/d from --k and --d")
	}, func(o *boundOpts) error { return inRange("--beta", o.beta, 0, 1, false, false) }},
	"mech": {"mech", func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.mech, "mech", "laplace", "local randomizer: laplace (scale 1/eps0 on [0,1]), krr (k-ary RR, --domain), rgb (Balle's R_{gamma,b}, b = --domain), generic (any eps0-LDP)")
	}, mechCheck},
	"mech-best": {"mech", func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.mech, "mech", "generic", "local randomizer: generic (any eps0-LDP, default), laplace (scale 1/eps0 on [0,1]), krr (k-ary RR, --domain), rgb (Balle's R_{gamma,b}, b = --domain); a specific mechanism adds its privacy-blanket bounds")
	}, mechCheck},
	"variant": {"variant", func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.variant, "variant", "bennett", "privacy-blanket concentration bound: bennett (corrected, default) or hoeffding")
	}, func(o *boundOpts) error {
		if o.legacy && o.set["variant"] {
			return checks.Invalidf("--variant cannot be combined with --legacy-flame-typo (which selects the flawed Bennett code)")
		}
		return oneOf("--variant", o.variant, "bennett", "hoeffding")
	}},
	"legacy-flame-typo": {"legacy-flame-typo", func(fs *flag.FlagSet, o *boundOpts) {
		fs.BoolVar(&o.legacy, "legacy-flame-typo", false, "use the FLAWED pre-July-2020 Bennett code (extra factor 1/(m(e^eps-1)) per term) that FLAME's published 0.91/0.24/20.53 came from; it UNDERSTATES delta, its results are labelled NOT RIGOROUS (approximation) and must not be used to certify privacy")
	}, nil},
	"form": {"form", func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.form, "form", "numerical", "numerical (default, tightest) or closed; clones also accepts theorem (FMT Theorem 3.1 as printed); blanket accepts closed (FLAME Lemma 1, needs --mech rgb)")
	}, nil}, // checked by the subcommand's own check
	"method": {"method", func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.method, "method", "wor", "subsampling: wor (without replacement, default) or poisson")
	}, func(o *boundOpts) error { return oneOf("--method", o.method, "wor", "poisson") }},
	"compose-method": {"method", func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.method, "method", "", "DEPRECATED alias of --composition")
	}, nil},
	"composition": {"composition", func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.composition, "composition", "best", "how the per-round guarantee composes over --rounds (> 1): basic, advanced (with --delta-prime), rdp (Rényi DP of the pure part, with --delta-prime), pld (privacy loss distribution of the dominating pair, with --delta-prime) or best (the tightest of them, named); total delta = rounds*delta (+ delta' except basic)")
	}, func(o *boundOpts) error { return oneOf("--composition", o.composition, compositionNames...) }},
	"eps-file": {"eps-file", func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.epsFile, "eps-file", "", "personalized budgets: a file with one epsilon per line, or a CSV whose first line is a header naming an 'epsilon' or 'eps' column; '#' starts a comment line ('-' reads stdin)")
	}, func(o *boundOpts) error {
		if o.epsFile != "" && o.epsDist != "" {
			return checks.Invalidf("give either --eps-file or --eps-dist, not both")
		}
		if o.epsFile != "" && (o.set["n"] || o.set["seed"]) {
			return checks.Invalidf("--n and --seed apply to --eps-dist only; with --eps-file the budgets are the file's")
		}
		return nil
	}},
	"eps-dist": {"eps-dist", func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.epsDist, "eps-dist", "", "personalized budgets drawn from a named distribution ("+strings.Join(account.BudgetDistributions(), ", ")+") with --n (at most 10^8) and --seed")
	}, func(o *boundOpts) error {
		if o.epsDist == "" {
			return nil
		}
		if _, err := account.BudgetSource(o.epsDist); err != nil {
			return checks.Invalidf("--eps-dist: %s", strings.TrimPrefix(err.Error(), checks.ErrInvalid.Error()+": "))
		}
		return nil
	}},
	"seed": {"seed", func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.seed, "seed", 1, "seed for --eps-dist (reproducible, >= 0)")
	}, func(o *boundOpts) error { return checks.IntAtLeast("--seed", o.seed, 0) }},
	"delta0": {"delta0", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.delta0, "delta0", 0, "delta of the mechanism being subsampled or composed, in [0, 1)")
	}, func(o *boundOpts) error { return checks.DeltaOrZero("--delta0", o.delta0) }},
	"delta-prime": {"delta-prime", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.deltaPrime, "delta-prime", 1e-8, "the slack delta' of advanced, rdp and pld composition over --rounds (> 1), in (0, 1); it is added to the total delta")
	}, func(o *boundOpts) error { return checks.Delta("--delta-prime", o.deltaPrime) }},
	"q": {"q", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.q, "q", 0.01, "sampling rate q in (0, 1] (m/n without replacement, inclusion probability for Poisson)")
	}, func(o *boundOpts) error { return inRange("--q", o.q, 0, 1, true, false) }},
	"eps-c": {"eps-c", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.epsC, "eps-c", 0, "dimension-level central epsilon eps^c > 0 (not given: computed by EoN numerical from --eps-file/--eps-dist and --delta)")
	}, func(o *boundOpts) error {
		if o.set["eps-c"] {
			return checks.Epsilon("--eps-c", o.epsC)
		}
		return nil
	}},
	"delta-c": {"delta-c", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.deltaC, "delta-c", 0, "dimension-level central delta^c in [0, 1) (with --eps-c only)")
	}, func(o *boundOpts) error { return checks.DeltaOrZero("--delta-c", o.deltaC) }},
	"b": {"b", func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.b, "b", 1570, "S-APES: dimensions uploaded after post-sparsification (b >= 1)")
	}, func(o *boundOpts) error { return checks.IntAtLeast("--b", o.b, 1) }},
	"tv": {"tv", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.tv, "tv", 0, "E-APES Theorem 3's Berry–Esseen distance tau = C/sqrt(n-1) in [0, 1) (the paper's example: 0.0206); > 0 also reports the corrected epsilon (still an approximation; vacuous for delta below about tau)")
	}, func(o *boundOpts) error { return inRange("--tv", o.tv, 0, 1, false, true) }},
	"delta-local": {"delta-local", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.deltaLocal, "delta-local", 0, "E-APES: every user's local delta_i in [0, 1)")
	}, func(o *boundOpts) error { return checks.DeltaOrZero("--delta-local", o.deltaLocal) }},
	"target-epsilon": {"target-epsilon", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.targetEps, "target-epsilon", 0, "inverse question (> 0): the largest local epsilon (or, for personalized budgets, the largest scale factor on the budget vector) whose central epsilon is at most this; an error if the search reaches its cap")
	}, func(o *boundOpts) error {
		if !o.set["target-epsilon"] {
			return nil
		}
		if o.compare {
			return checks.Invalidf("--target-epsilon cannot be combined with --compare")
		}
		return checks.Epsilon("--target-epsilon", o.targetEps)
	}},
	"json": {"json", func(fs *flag.FlagSet, o *boundOpts) {
		fs.BoolVar(&o.jsonOut, "json", false, "print one JSON object (bound, epsilon, delta, approximation, rigorous, note, inputs); non-finite numbers are null")
	}, nil},
	"compare": {"compare", func(fs *flag.FlagSet, o *boundOpts) {
		fs.BoolVar(&o.compare, "compare", false, "print every applicable bound side by side (approximations and inapplicable bounds labelled)")
	}, nil},
	"no-subsampling": {"no-subsampling", func(fs *flag.FlagSet, o *boundOpts) {
		fs.BoolVar(&o.noSubsample, "no-subsampling", false, "FLAME's Theorem 4 without the subsampling credit of Theorem 3, composed over 2 beta d = 2k dimensions (FLAME's 20.53 figure; an upper bound, looser than the default)")
	}, nil},
	"flame-theorem": {"flame-theorem", func(fs *flag.FlagSet, o *boundOpts) {
		fs.BoolVar(&o.flameTheorem, "flame-theorem", false, "FLAME's Theorems 3-4 as published (the subsampling credit on 2 beta d releases, FLAME's 0.24/0.305): NOT RIGOROUS, refuted by the count statistic; for reproducing the paper only")
	}, nil},
	"sgm-q": {"q", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.q, "q", 0, "Poisson sampling rate q in (0, 1] of each step (required)")
	}, func(o *boundOpts) error { return inRange("--q", o.q, 0, 1, true, false) }},
	"sigma": {"sigma", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.sigma, "sigma", 0, "noise multiplier sigma > 0: noise standard deviation / clipping norm (required)")
	}, func(o *boundOpts) error { return checks.Positive("--sigma", o.sigma) }},
	"steps": {"steps", func(fs *flag.FlagSet, o *boundOpts) {
		fs.IntVar(&o.steps, "steps", 0, "number of composed steps T >= 1 (required)")
	}, func(o *boundOpts) error { return checks.IntAtLeast("--steps", o.steps, 1) }},
	"sgm-delta": {"delta", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.delta, "delta", 0, "target delta in (0, 1): print the epsilon (exactly one of --delta and --epsilon)")
	}, func(o *boundOpts) error {
		if o.set["delta"] == o.set["epsilon"] {
			return checks.Invalidf("give exactly one of --delta and --epsilon")
		}
		if o.set["delta"] {
			return checks.Delta("--delta", o.delta)
		}
		return nil
	}},
	"sgm-epsilon": {"epsilon", func(fs *flag.FlagSet, o *boundOpts) {
		fs.Float64Var(&o.epsilon, "epsilon", 0, "target epsilon >= 0: print the delta (exactly one of --delta and --epsilon)")
	}, func(o *boundOpts) error {
		if o.set["epsilon"] {
			return checks.EpsilonOrZero("--epsilon", o.epsilon)
		}
		return nil
	}},
	"accountant": {"accountant", func(fs *flag.FlagSet, o *boundOpts) {
		fs.StringVar(&o.accountant, "accountant", "best", "best (the tighter rigorous figure of rdp and pld, named), rdp (Rényi DP, Mironov et al. 2019) or pld (privacy loss distribution)")
	}, func(o *boundOpts) error { return oneOf("--accountant", o.accountant, "best", "rdp", "pld") }},
}

// isFinite reports whether v is neither NaN nor infinite.
func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
