package protocol

import (
	"fmt"

	"github.com/shufflefl/shufflefl/privacy/account"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/amplify"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
)

func init() {
	Register("pldp", "PLDP baseline of APES: per-coordinate classic Laplace with each client's per-dimension eps_i (scale 2C/eps_i), no shuffler", newPLDP)
	Register("ldp-min", "LDP-Min baseline of APES: every client perturbs with the population's minimum per-dimension epsilon (option min-epsilon), no shuffler", newLDPMin)
	Register("unis", "UniS baseline of APES: per-coordinate classic Laplace with personalized eps_i, per-dimension shuffling, FMT bound at max eps_i (APES Eq. 2, numerical)", newUniS)
	composeD := "delta', the slack of advanced composition over the d coordinates (APES Lemma 2)"
	RegisterInfo("pldp", Info{
		Summary: "APES's PLDP baseline: personalized per-coordinate Laplace, no shuffler",
		Paper:   "APES (Liu et al., AAAI 2023), baseline PLDP",
		Options: []OptionSpec{
			apesDeltaSInfo("the round's share of --delta / (2d)", apesUnused("no shuffler")),
			apesDeltaPrimeInfo(composeD),
			apesHiddenInfo(apesUnused("no shuffler")),
			apesSecureInfo(),
		},
		Budgets: budgetsPersonalizedCoord,
	})
	RegisterInfo("ldp-min", Info{
		Summary: "APES's LDP-Min baseline: every client perturbs at the population's minimum budget, no shuffler",
		Paper:   "APES (Liu et al., AAAI 2023), baseline LDP-Min",
		Options: []OptionSpec{
			{Name: "min-epsilon", Default: "min of the clients' budgets",
				Meaning: "the user-level epsilon every client perturbs with (min-epsilon/d per coordinate); scaled with the budgets under --target-epsilon",
				Range:   "> 0 and at most every participant's budget"},
			apesDeltaSInfo("the round's share of --delta / (2d)", apesUnused("no shuffler")),
			apesDeltaPrimeInfo(composeD),
			apesHiddenInfo(apesUnused("no shuffler")),
			apesSecureInfo(),
		},
		Budgets: "personalized: --epsilon, --eps-dist or --eps-file (user level); every client spends the minimum, min-epsilon/d per coordinate",
	})
	RegisterInfo("unis", Info{
		Summary: "APES's UniS baseline: personalized per-coordinate Laplace, per-dimension shuffling, FMT bound",
		Paper:   "APES (Liu et al., AAAI 2023), baseline UniS (Eq. 2)",
		Options: []OptionSpec{
			apesDeltaSInfo("the round's share of --delta / (2d)", "delta_s, the delta of one dimension's shuffle (FMT) bound"),
			apesDeltaPrimeInfo(composeD),
			apesHiddenInfo(apesUnused("UniS uses the FMT bound, not EoN")),
			apesSecureInfo(),
		},
		Budgets: budgetsPersonalizedCoord,
	})
}

// apesLaplaceEncode is the client of the APES baselines (PLDP, LDP-Min,
// UniS): clip each coordinate to [-C, C] and add classic Laplace noise of
// scale 2C/eps per coordinate (sensitivity 2C, per-dimension budget eps:
// APES Definition 3, "all the baseline frameworks exploit classic Laplace").
func apesLaplaceEncode(r *rand.Rand, s Shape, update []float64, eps, clip float64, secure bool, out *Report) error {
	if err := checkUpdate(s, update); err != nil {
		return err
	}
	var lap mechanism.Laplace
	var err error
	if secure {
		lap, err = mechanism.NewSecureLaplace(eps, 2*clip)
	} else {
		lap, err = mechanism.NewLaplace(eps, 2*clip)
	}
	if err != nil {
		return fmt.Errorf("laplace with per-dimension eps=%v, sensitivity 2C=%v: %w", eps, 2*clip, err)
	}
	clipCoordinates(update, clip)
	out.Reset()
	out.Coords = nil
	out.Values = append(out.Values, update...)
	lap.Perturb(r, out.Values)
	return nil
}

// apesLocalPrivacy is the accounting of the unshuffled APES baselines: the
// analyzer sees every report, so the dimension-level central epsilon is the
// largest per-dimension local epsilon and the user level composes the d
// coordinates (better of basic and advanced, APES Lemma 2), as in APES
// Table 3's PLDP (eps^uc = 7850 = d·1) and LDP-Min rows.
func apesLocalPrivacy(s Shape, eps, user []float64, deltaPrime float64, bound string) (Privacy, error) {
	return apesPrivacy(s, eps, user, account.Component{Epsilon: Summarize(eps).Max}, s.Dim, deltaPrime, bound, false)
}

// PLDP is the personalized-LDP baseline of APES ("PLDP: FedProx with
// personalized LDP"): each client clips every coordinate to [-C, C] and adds
// classic Laplace noise of scale 2C/eps_i^l per coordinate, where
// eps_i^l = Budget.Epsilon/d (the user-level budget spread over the d
// coordinates, see APES); there is no shuffler, and the analyzer averages
// (unbiased). It is the behaviour of ldp-laplace, kept under APES's name for
// the whole update. Central = local: eps^c = max eps_i per dimension and the
// user level composes the d coordinates.
//
// Options: "delta-prime" (slack of advanced composition, default half the
// round's share of the run's delta), "secure" (0 or 1).
type PLDP struct {
	apesOptions
}

func newPLDP(p Params) (Protocol, error) {
	o, err := apesParse(p)
	if err != nil {
		return nil, err
	}
	return PLDP{o}, nil
}

// Name implements Protocol.
func (PLDP) Name() string { return "pldp" }

// UserEpsilon returns Budget.Epsilon (user level).
func (PLDP) UserEpsilon(_ Shape, b Budget) float64 { return b.Epsilon }

// Check implements Protocol.
func (PLDP) Check(s Shape, budgets []Budget) error { return apesCheck(s, budgets) }

// Mode implements Protocol: no shuffler.
func (PLDP) Mode() ShuffleMode { return NoShuffle }

// Encode implements Protocol.
func (m PLDP) Encode(r *rand.Rand, s Shape, update []float64, b Budget, out *Report) error {
	if err := apesLaplaceEncode(r, s, update, b.Epsilon/float64(s.Dim), m.clip, m.secure, out); err != nil {
		return fmt.Errorf("pldp: %w", err)
	}
	return nil
}

// Pad implements Protocol: no padding.
func (PLDP) Pad(*rand.Rand, Shape, []int64, func(int, float64)) error { return nil }

// Estimate implements Protocol: the per-coordinate mean (unbiased).
func (PLDP) Estimate(_ *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	return meanEstimate(s, agg, dst)
}

// Account implements Protocol.
func (m PLDP) Account(s Shape, budgets []Budget) (Privacy, error) {
	if err := apesCheck(s, budgets); err != nil {
		return Privacy{}, fmt.Errorf("pldp accountant: %w", err)
	}
	_, deltaPrime := m.deltas(s.Dim)
	return apesLocalPrivacy(s, coordEpsilons(s, budgets), budgetEpsilons(budgets), deltaPrime, "no shuffler: central = local (max eps_i per dimension)")
}

// LDPMin is APES's LDP-Min baseline: "all users adopt min eps_i^l as privacy
// budget compulsively". Every client perturbs each coordinate with classic
// Laplace of scale 2C/eps_min; no shuffler; the analyzer averages.
//
// Where eps_min comes from. A Protocol is immutable and its Encode sees one
// client's budget, while the engine hands Check and Account only the current
// participants' budgets, so the protocol cannot learn the population minimum
// by itself. It is therefore a required option, "min-epsilon" (the caller —
// the CLI or the experiment runner — computes min_i eps_i over the whole
// population). Check rejects a round in which some participant's budget is
// smaller than min-epsilon, since perturbing at min-epsilon would then exceed
// that client's budget; a min-epsilon below the true minimum is allowed (it
// is still honoured by every client, just more conservatively). The
// user-level reading applies: min-epsilon is a whole update's epsilon,
// LocalCoordEpsilon = eps_min/d and
// LocalEpsilon = d·eps_min for every client.
//
// Options: "min-epsilon" (required, > 0), "delta-prime", "secure".
type LDPMin struct {
	apesOptions
	epsMin float64
}

func newLDPMin(p Params) (Protocol, error) {
	o, err := apesParse(p, "min-epsilon")
	if err != nil {
		return nil, err
	}
	v, ok := p.Extra["min-epsilon"]
	if !ok {
		return nil, checks.Invalidf("ldp-min needs option min-epsilon = min_i eps_i^l over the population (APES LDP-Min: every user adopts the minimum budget)")
	}
	if err := checks.Epsilon("option min-epsilon", v); err != nil {
		return nil, err
	}
	return LDPMin{apesOptions: o, epsMin: v}, nil
}

// Name implements Protocol.
func (LDPMin) Name() string { return "ldp-min" }

// MinEpsilon returns the user-level epsilon every client uses.
func (m LDPMin) MinEpsilon() float64 { return m.epsMin }

// UserEpsilon returns eps_min: every client spends the minimum budget.
func (m LDPMin) UserEpsilon(Shape, Budget) float64 { return m.epsMin }

// Check implements Protocol: APES's budget constraints and eps_i >= min-epsilon.
func (m LDPMin) Check(s Shape, budgets []Budget) error {
	if err := apesCheck(s, budgets); err != nil {
		return err
	}
	for i, b := range budgets {
		if b.Epsilon < m.epsMin {
			return checks.Invalidf("participant %d has budget %v < min-epsilon = %v: LDP-Min must use the minimum budget of the population", i, b.Epsilon, m.epsMin)
		}
	}
	return nil
}

// Mode implements Protocol: no shuffler.
func (LDPMin) Mode() ShuffleMode { return NoShuffle }

// Encode implements Protocol: the client's own budget must be at least
// min-epsilon; it perturbs at min-epsilon.
func (m LDPMin) Encode(r *rand.Rand, s Shape, update []float64, b Budget, out *Report) error {
	if !(b.Epsilon >= m.epsMin) {
		return checks.Invalidf("ldp-min: the client's budget %v is below min-epsilon = %v", b.Epsilon, m.epsMin)
	}
	if err := apesLaplaceEncode(r, s, update, m.epsMin/float64(s.Dim), m.clip, m.secure, out); err != nil {
		return fmt.Errorf("ldp-min: %w", err)
	}
	return nil
}

// Pad implements Protocol: no padding.
func (LDPMin) Pad(*rand.Rand, Shape, []int64, func(int, float64)) error { return nil }

// Estimate implements Protocol: the per-coordinate mean (unbiased).
func (LDPMin) Estimate(_ *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	return meanEstimate(s, agg, dst)
}

// Account implements Protocol: every client spends eps_min per dimension.
func (m LDPMin) Account(s Shape, budgets []Budget) (Privacy, error) {
	if err := m.Check(s, budgets); err != nil {
		return Privacy{}, fmt.Errorf("ldp-min accountant: %w", err)
	}
	eps := make([]float64, len(budgets))
	user := make([]float64, len(budgets))
	for i := range eps {
		eps[i] = m.epsMin / float64(s.Dim)
		user[i] = m.epsMin
	}
	_, deltaPrime := m.deltas(s.Dim)
	return apesLocalPrivacy(s, eps, user, deltaPrime, "no shuffler: central = local (eps_min/d per dimension)")
}

// UniS is APES's "Uni-Shuffle" baseline: clients perturb every coordinate
// with classic Laplace of scale 2C/eps_i (per-dimension eps_i as in APES),
// the shuffler permutes every coordinate independently (Mode PerCoordinate),
// and the analyzer averages (unbiased; no epsilons are needed).
//
// Accounting: the dimension-level eps^c is the FMT bound evaluated as if
// every user had max_i eps_i — APES Eq. (2) (the FMT Theorem 3.1 closed
// form) and, as the figure reported, FMT's numerical bound
// (amplify.UniSNumerical: APES Table 3's 0.069); user level and cumulative
// compose the d columns as APES. APES's footnote 1 warns that with
// heterogeneous budgets the classic Laplace randomizers of different users
// do not "echo" one another (their divergence is unbounded): FMT's clone
// reduction needs every user's output to contain e^-eps0 times the
// differing user's, which fails for Laplace noise of different scales, so
// the figure is only an approximation then: Approximate is set whenever the
// budgets differ. With equal budgets the FMT bound is rigorous (and its
// clone pair feeds the PLD accountant). If neither form applies, the
// unamplified max eps_i is reported (rigorous).
//
// Options: "delta-prime", "secure" (as APES).
type UniS struct {
	apesOptions
}

func newUniS(p Params) (Protocol, error) {
	o, err := apesParse(p)
	if err != nil {
		return nil, err
	}
	return UniS{o}, nil
}

// Name implements Protocol.
func (UniS) Name() string { return "unis" }

// UserEpsilon returns Budget.Epsilon (user level).
func (UniS) UserEpsilon(_ Shape, b Budget) float64 { return b.Epsilon }

// Check implements Protocol.
func (UniS) Check(s Shape, budgets []Budget) error { return apesCheck(s, budgets) }

// Mode implements Protocol: per-coordinate shuffling.
func (UniS) Mode() ShuffleMode { return PerCoordinate }

// Encode implements Protocol.
func (m UniS) Encode(r *rand.Rand, s Shape, update []float64, b Budget, out *Report) error {
	if err := apesLaplaceEncode(r, s, update, b.Epsilon/float64(s.Dim), m.clip, m.secure, out); err != nil {
		return fmt.Errorf("unis: %w", err)
	}
	return nil
}

// Pad implements Protocol: no padding.
func (UniS) Pad(*rand.Rand, Shape, []int64, func(int, float64)) error { return nil }

// Estimate implements Protocol: the per-coordinate mean (unbiased).
func (UniS) Estimate(_ *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	return meanEstimate(s, agg, dst)
}

// Account implements Protocol (see the type documentation).
func (m UniS) Account(s Shape, budgets []Budget) (Privacy, error) {
	if err := apesCheck(s, budgets); err != nil {
		return Privacy{}, fmt.Errorf("unis accountant: %w", err)
	}
	eps := coordEpsilons(s, budgets)
	st := Summarize(eps)
	deltaS, deltaPrime := m.deltas(s.Dim)
	num, errN := amplify.UniSNumerical(eps, deltaS)
	if errN != nil || !(num.Epsilon < st.Max) {
		why := "no amplification"
		if errN != nil {
			why = errN.Error()
		}
		return apesLocalPrivacy(s, eps, budgetEpsilons(budgets), deltaPrime, fmt.Sprintf("unamplified max eps_i (UniS not applicable: %s)", why))
	}
	bound := fmt.Sprintf("UniS: FMT numerical at max eps_i/d=%.4g, delta_s=%.3g", st.Max, deltaS)
	if cf, err := amplify.UniS(eps, deltaS); err == nil {
		bound += fmt.Sprintf(" (APES Eq. 2 closed form: %.4g)", cf.Epsilon)
	} else {
		bound += " (APES Eq. 2 closed form outside its validity region)"
	}
	approx := st.Min != st.Max
	if approx {
		bound += "; approximate: heterogeneous classic-Laplace budgets (APES footnote 1)"
	}
	return apesPrivacy(s, eps, budgetEpsilons(budgets), apesComponent(eps, num.Epsilon, num.Delta, apesPairUniform), s.Dim, deltaPrime, bound, approx)
}
