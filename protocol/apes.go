package protocol

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"shufflefl/account"
	"shufflefl/amplify"
	"shufflefl/checks"
	"shufflefl/mechanism"
)

func init() {
	Register("apes", "APES (Liu et al. AAAI 2023, Algorithm 1): per-coordinate Clip-Laplace with each client's per-dimension eps_i, per-dimension shuffling of values and of the epsilon list, Eq. (1) calibration, EoN accounting", newAPES)
}

// APES is the basic framework of "Echo of Neighbors" (Liu, Zhao, Xiong, Liu
// and Chen, AAAI 2023), Algorithm 1.
//
// Budget reading. APES states every local budget per dimension: eps_i^l is
// the epsilon of ONE coordinate (Theorem 3: eps_i^l-LDP at dimension level,
// d·eps_i^l-LDP at user level), and APES Table 2's distributions (Uniform2 =
// U(0.05, 1), `--eps-dist uniform2`) are per-dimension values. The APES
// family of this package (apes, s-apes, pldp, ldp-min, unis) therefore reads
// Budget.Epsilon as the per-dimension eps_i^l: Privacy.LocalCoordEpsilon
// reports eps_i and Privacy.LocalEpsilon reports d·eps_i (APES Table 3's
// eps^ul, 392.5–7850 for d = 7,850). This differs from FLAME's protocols and
// ldp-laplace, whose Budget.Epsilon is the whole update's epsilon; compare
// protocols across families through the reported Privacy, not through the
// --epsilon flag. UserEpsilon converts one budget to its user-level value.
//
// Client (Encode): clip every coordinate to [-C, C] (C = Params.Clip) and
// release CLap(g_k, λ_i, C) per coordinate with λ_i = Δf/eps_i, Δf = 2C
// (Definition 4, Theorem 1: input and output range [-C, C], hence
// eps_i-LDP per coordinate). The report is dense; Report.Meta = [eps_i]
// travels to the shuffler beside the values.
//
// Shuffler: every coordinate's column and the epsilon list are permuted
// independently (Mode PerCoordinate); there is no padding.
//
// Analyzer (Estimate): from the shuffled epsilon multiset (Aggregate.Meta)
// it builds F(x) = (1/n) Σ_i E[CLap(x, 2C/eps_i, C)] (APES Eq. 1) and solves
// F(ĝ_k) = avg_k for every coordinate (mechanism.ClipLaplaceCalibrator). The
// solution is clamped to [-C, C] when noise pushes avg_k outside F's range,
// so no estimate is ever divided by a vanishing slope. The inversion is exact
// in expectation when all clients share the coordinate's value and otherwise
// uses APES's approximation E[avg] ≈ F(mean g) (APES "Analyzing Process").
//
// FedProx: APES trains with the proximal objective h(w; w0) = F(w) +
// (mu/2)||w - w0||² (Li et al. 2020); that is the engine's --mu setting and
// is independent of the protocol.
//
// Accounting (Account): dimension level, the EoN numerical bound at the
// participants' budgets and delta_s = Params.Delta (APES Theorem 4 / Lemma 6
// with the exact Poisson-binomial clone count, amplify.EoNNumerical); user
// level, the composition of the d independent columns by the better of basic
// and advanced composition (APES Lemma 2, as in Table 3's eps^uc) with slack
// delta' (option "delta-prime", default Params.Delta: APES Table 3 uses
// delta_s = delta' = 1e-8); cumulatively, the same composition over the d·T
// column releases of T rounds. No credit is taken for client subsampling.
// When the EoN bound does not apply (fewer than two participants, or a
// budget vector it cannot evaluate) the statement falls back to the
// unamplified max eps_i, which holds by post-processing.
//
// Options: "delta-prime" (in (0, 1)); "secure" (0 or 1, default 0: 1 snaps
// every output to Clip-Laplace's power-of-two grid, as deployment must).
type APES struct {
	clip, deltaS, deltaPrime float64
	secure                   bool
}

// UserLevelBudget is implemented by the protocols of this family, whose
// Budget.Epsilon is not always the epsilon of the whole update (the APES
// protocols read it per dimension): UserEpsilon converts one client's budget
// into the local epsilon of its whole update in one round — the amount a
// per-client ledger should charge (the engine currently charges
// Budget.Epsilon).
type UserLevelBudget interface {
	UserEpsilon(s Shape, b Budget) float64
}

var (
	_ UserLevelBudget = APES{}
	_ UserLevelBudget = SAPES{}
	_ UserLevelBudget = EAPES{}
	_ UserLevelBudget = PLDP{}
	_ UserLevelBudget = LDPMin{}
	_ UserLevelBudget = UniS{}
)

// apesOptions are the settings shared by the APES family.
type apesOptions struct {
	clip, deltaS, deltaPrime float64
	secure                   bool
}

// apesParse validates Clip, Delta and the shared options "delta-prime" and
// "secure"; extra lists further options the caller accepts.
func apesParse(p Params, extra ...string) (apesOptions, error) {
	if err := extraKeys(p, append([]string{"delta-prime", "secure"}, extra...)...); err != nil {
		return apesOptions{}, err
	}
	if err := checks.Positive("clip", p.Clip); err != nil {
		return apesOptions{}, err
	}
	if err := checks.Delta("delta (delta_s of the shuffle bound)", p.Delta); err != nil {
		return apesOptions{}, err
	}
	o := apesOptions{clip: p.Clip, deltaS: p.Delta, deltaPrime: p.Delta}
	if v, ok := p.Extra["delta-prime"]; ok {
		if err := checks.Delta("option delta-prime (APES Lemma 2 slack)", v); err != nil {
			return apesOptions{}, err
		}
		o.deltaPrime = v
	}
	if v, ok := p.Extra["secure"]; ok {
		if v != 0 && v != 1 {
			return apesOptions{}, checks.Invalidf("option secure must be 0 or 1, got %v", v)
		}
		o.secure = v == 1
	}
	o.secure = o.secure || p.Secure
	return o, nil
}

func newAPES(p Params) (Protocol, error) {
	o, err := apesParse(p)
	if err != nil {
		return nil, err
	}
	return APES{clip: o.clip, deltaS: o.deltaS, deltaPrime: o.deltaPrime, secure: o.secure}, nil
}

// Name implements Protocol.
func (APES) Name() string { return "apes" }

// UserEpsilon returns the user-level local epsilon of one round for a
// client with budget b: d·eps_i (APES Theorem 3).
func (APES) UserEpsilon(s Shape, b Budget) float64 { return float64(s.Dim) * b.Epsilon }

// Check implements Protocol: one budget per participant, each eps_i^l
// positive and finite (APES Theorem 1 needs eps > 0).
func (APES) Check(s Shape, budgets []Budget) error { return apesCheck(s, budgets) }

// apesCheck validates the shape and the participants' per-dimension budgets.
func apesCheck(s Shape, budgets []Budget) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if len(budgets) != s.Participants {
		return checks.Invalidf("got %d budgets for %d participants: every participant needs its own eps_i^l (APES Algorithm 1 input)", len(budgets), s.Participants)
	}
	for i, b := range budgets {
		if err := checks.Epsilon("per-dimension eps_i^l", b.Epsilon); err != nil {
			return fmt.Errorf("budget of participant %d: %w (Clip-Laplace, APES Theorem 1, needs 0 < eps_i^l < inf)", i, err)
		}
	}
	return nil
}

// Mode implements Protocol: per-coordinate shuffling (APES Algorithm 1).
func (APES) Mode() ShuffleMode { return PerCoordinate }

// apesClap returns the Clip-Laplace randomizer of a client with
// per-dimension budget eps: CLap(., 2C/eps, C).
func apesClap(eps, clip float64, secure bool) (mechanism.ClipLaplace, error) {
	m, err := mechanism.NewClipLaplace(eps, 2*clip, clip)
	if err != nil {
		return m, fmt.Errorf("clip-laplace with eps_i^l=%v, C=%v: %w", eps, clip, err)
	}
	m.Secure = secure
	return m, nil
}

// Encode implements Protocol: the Randomize step of APES Algorithm 1.
func (m APES) Encode(r *rand.Rand, s Shape, update []float64, b Budget, out *Report) error {
	if err := checkUpdate(s, update); err != nil {
		return err
	}
	clap, err := apesClap(b.Epsilon, m.clip, m.secure)
	if err != nil {
		return fmt.Errorf("apes: %w", err)
	}
	clipCoordinates(update, m.clip)
	out.Reset()
	out.Coords = nil
	out.Values = append(out.Values, update...)
	if err := clap.Perturb(r, out.Values); err != nil {
		return fmt.Errorf("apes: %w", err)
	}
	out.Meta = append(out.Meta, b.Epsilon)
	return nil
}

// Pad implements Protocol: APES has no shuffler padding.
func (APES) Pad(*rand.Rand, Shape, []int64, func(int, float64)) error { return nil }

// Estimate implements Protocol: APES Eq. (1) calibration of every
// coordinate's average from the shuffled epsilon list.
func (m APES) Estimate(_ *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	return apesCalibrate(s, agg, dst, m.clip)
}

// apesCalibrate writes F^{-1}(avg_k) for every coordinate k, where F is
// APES Eq. (1) averaged over the epsilons in agg.Meta (one per report).
func apesCalibrate(s Shape, agg *Aggregate, dst []float64, clip float64) error {
	if err := checkAggregate(s, agg, dst); err != nil {
		return err
	}
	cal, err := apesCalibrator(agg, clip)
	if err != nil {
		return err
	}
	for j, sum := range agg.Sum {
		c := agg.Count[j]
		if c == 0 {
			dst[j] = 0
			continue
		}
		dst[j] = cal.Invert(sum / float64(c))
	}
	return nil
}

// apesCheckMeta checks that the aggregate carries one epsilon per value of
// every reported coordinate (each APES report carries exactly one).
func apesCheckMeta(agg *Aggregate) error {
	n := int64(len(agg.Meta))
	if n == 0 {
		if agg.Reports > 0 {
			return checks.Invalidf("the analyzer received %d reports but no epsilons: APES calibration (Eq. 1) needs the shuffled eps_i list", agg.Reports)
		}
		return checks.Invalidf("no reports: APES calibration (Eq. 1) needs at least one (value, eps_i) pair")
	}
	for j, c := range agg.Count {
		if c != 0 && c != n {
			return checks.Invalidf("coordinate %d has %d values but the analyzer received %d epsilons: APES calibration needs one eps_i per report (Algorithm 1 sends (g_i, eps_i) together)", j, c, n)
		}
	}
	return nil
}

// apesCalibrator builds the Eq. (1) calibrator from the aggregate's shuffled
// epsilons, checking that there is one epsilon per value of every reported
// coordinate (each APES report carries exactly one).
func apesCalibrator(agg *Aggregate, clip float64) (*mechanism.ClipLaplaceCalibrator, error) {
	if err := apesCheckMeta(agg); err != nil {
		return nil, err
	}
	cal, err := mechanism.NewClipLaplaceCalibrator(apesBinEpsilons(agg.Meta, apesBinRatio), 2*clip, clip)
	if err != nil {
		return nil, fmt.Errorf("apes calibration (Eq. 1) from the shuffled epsilons: %w", err)
	}
	return cal, nil
}

// apesBinRatio is the relative width of the epsilon bins of the analyzer.
const apesBinRatio = 1e-3

// apesBinEpsilons returns a copy of eps (sorted) in which every run of
// budgets within a relative width ratio (a bin [e0, e0(1+ratio)]) is replaced
// by the bin's mean. The calibrator's cost is proportional to the number of
// distinct epsilons (10,000 for Uniform2 at n = 10,000, about 0.4 s); binning
// brings it to a few thousand classes at most. The error is second order:
// replacing eps_i by its bin mean leaves F(x) = (1/n) Σ Mean(x; eps_i)
// unchanged to first order, and the second-order term is at most
// (1/8)(ratio·eps)²·|∂²Mean/∂eps²|, below 1e-7·C in F for APES's budgets
// (TestAPESBinnedCalibration bounds the effect on the estimate).
func apesBinEpsilons(eps []float64, ratio float64) []float64 {
	out := slices.Clone(eps)
	slices.Sort(out)
	for i := 0; i < len(out); {
		j, sum := i, 0.0
		for j < len(out) && out[j] <= out[i]*(1+ratio) {
			sum += out[j]
			j++
		}
		m := sum / float64(j-i)
		for k := i; k < j; k++ {
			out[k] = m
		}
		i = j
	}
	return out
}

// Account implements Protocol (see the type documentation).
func (m APES) Account(s Shape, budgets []Budget) (Privacy, error) {
	if err := apesCheck(s, budgets); err != nil {
		return Privacy{}, fmt.Errorf("apes accountant: %w", err)
	}
	eps := budgetEpsilons(budgets)
	epsC, deltaC, bound := apesEoN(eps, m.deltaS)
	return apesPrivacy(s, eps, float64(s.Dim), epsC, deltaC, s.Dim, m.deltaPrime, bound, false)
}

// apesEoN returns the dimension-level central (eps^c, delta^c) of shuffling
// Clip-Laplace reports with the given per-dimension budgets: the EoN
// numerical bound (APES Theorem 4 / Lemma 6) or, when it does not apply,
// the unamplified (max eps_i, 0).
func apesEoN(eps []float64, deltaS float64) (epsC, deltaC float64, bound string) {
	b, err := amplify.EoNNumerical(eps, deltaS)
	emax := Summarize(eps).Max
	if err != nil || !(b.Epsilon < emax) {
		why := "no amplification"
		if err != nil {
			why = err.Error()
		}
		return emax, 0, fmt.Sprintf("unamplified max eps_i (EoN not applicable: %s)", why)
	}
	return b.Epsilon, b.Delta, fmt.Sprintf("EoN numerical (APES Theorem 4 / Lemma 6, exact clone counts) at delta_s=%.3g", deltaS)
}

// apesPrivacy assembles the Privacy of an APES-family round from the
// per-dimension local budgets eps, the user-level multiplier (d: APES
// Theorem 3), the dimension-level central (epsC, deltaC) and the number k
// of dimension-level releases composed per round (d for APES, 2b for S-APES
// Proposition 1), composing with the better of basic and advanced
// composition (APES Lemma 2) at slack deltaPrime. Cumulative figures compose
// the k·T releases of T = s.Round rounds the same way.
func apesPrivacy(s Shape, eps []float64, userMult, epsC, deltaC float64, k int, deltaPrime float64, bound string, approx bool) (Privacy, error) {
	user := make([]float64, len(eps))
	for i, e := range eps {
		user[i] = userMult * e
	}
	ue, ud, adv, err := account.ComposeBest(epsC, deltaC, k, deltaPrime)
	if err != nil {
		return Privacy{}, fmt.Errorf("user-level composition over %d dimension-level releases (APES Lemma 2): %w", k, err)
	}
	ce, cd, cadv, err := account.ComposeBest(epsC, deltaC, k*s.Round, deltaPrime)
	if err != nil {
		return Privacy{}, fmt.Errorf("composition over %d rounds (APES Lemma 2): %w", s.Round, err)
	}
	how := func(a bool) string {
		if a {
			return fmt.Sprintf("advanced, delta'=%.3g", deltaPrime)
		}
		return "basic"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "dimension: %s; user: %d releases, %s; cumulative: %d releases, %s", bound, k, how(adv), k*s.Round, how(cadv))
	return Privacy{
		Private:             true,
		LocalEpsilon:        Summarize(user),
		LocalCoordEpsilon:   Summarize(eps),
		LocalDelta:          0,
		CentralEpsilon:      ue,
		CentralDelta:        ud,
		CentralCoordEpsilon: epsC,
		CentralCoordDelta:   deltaC,
		CumulativeEpsilon:   ce,
		CumulativeDelta:     cd,
		Bound:               sb.String(),
		Approximate:         approx,
	}, nil
}
