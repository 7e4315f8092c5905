package protocol

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
)

func init() {
	Register("apes", "APES (Liu et al. AAAI 2023, Algorithm 1): per-coordinate Clip-Laplace with each client's per-dimension eps_i, per-dimension shuffling of values and of the epsilon list, Eq. (1) calibration, EoN accounting", newAPES)
	RegisterInfo("apes", Info{
		Summary: "APES: personalized per-coordinate Clip-Laplace, per-dimension shuffling, Echo-of-Neighbors accounting",
		Paper:   "APES (Liu et al., AAAI 2023), Algorithm 1",
		Options: []OptionSpec{
			apesDeltaSInfo("the round's share of --delta / (2d)", "delta_s, the delta of one dimension's shuffle (EoN) bound"),
			apesDeltaPrimeInfo("delta', the slack of advanced composition over the d coordinates (APES Lemma 2)"),
			apesHiddenInfo(apesHiddenUsed),
			apesSecureInfo(),
		},
		Budgets: budgetsPersonalizedCoord,
	})
}

// APES is the basic framework of "Echo of Neighbors" (Liu, Zhao, Xiong, Liu
// and Chen, AAAI 2023), Algorithm 1.
//
// Budget reading. APES states every local budget per dimension: eps_i^l is
// the epsilon of ONE coordinate (Theorem 3: eps_i^l-LDP at dimension level,
// d·eps_i^l-LDP at user level). shufflefl has one meaning of epsilon:
// Budget.Epsilon is always the client's local epsilon for its whole update
// in one round (user level), so every protocol of this family (apes, s-apes,
// pldp, ldp-min, unis) spends eps_i^l = Budget.Epsilon/d per coordinate;
// Privacy.LocalEpsilon reports Budget.Epsilon and Privacy.LocalCoordEpsilon
// eps_i/d. APES Table 3's setting (per-dimension U(0.05, 1), d = 7,850) is
// therefore the user-level budgets 7,850·U(0.05, 1); the paper reproductions
// scale their per-coordinate figures explicitly.
//
// Client (Encode): clip every coordinate to [-C, C] (C = Params.Clip) and
// release CLap(g_k, λ_i, C) per coordinate with λ_i = Δf/eps_i^l, Δf = 2C
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
// Accounting (Account): dimension level, for the standard definition of DP
// the EoN analysis for public budgets with Clip-Laplace's exact echo
// probabilities (amplify.EoNExactEcho, never above amplify.EoNWorstCase's
// Lemma 6 weights), or with option hidden-budget=1 APES's own EoN
// numerical bound under its hidden-budget assumption (APES Theorem 4 /
// Lemma 6 with the exact Poisson-binomial clone count, amplify.EoNNumerical;
// see apesShuffleBound), at the participants' budgets and delta_s; user
// level, the composition of the d independent columns by the better of basic
// and advanced composition (APES Lemma 2, as in Table 3's eps^uc) with slack
// delta' (apesOptions: derived from the run's delta, or the options
// "delta-s" and "delta-prime": APES Table 3 uses delta_s = delta' = 1e-8);
// the run's accountant composes the d·T column releases of T rounds, each
// as the dominating clone pair of the same analysis (apesComponent:
// account.KindShuffleHetero with a Poisson-binomial clone count, or FMT's
// pair for equal budgets) by PLD. No credit is taken for client
// subsampling.
// When no bound applies (fewer than two participants, or a budget vector
// it cannot evaluate) the statement falls back to the unamplified max
// eps_i^l, which holds by post-processing.
//
// Options: "delta-s" and "delta-prime" (in (0, 1)); "hidden-budget" (0 or
// 1, default 0: account under APES's hidden-budget assumption, labelled);
// "secure" (0 or 1, default 0: 1 snaps every output to Clip-Laplace's
// power-of-two grid, as deployment must).
type APES struct {
	apesOptions
}

// UserLevelBudget is implemented by the protocols of this family:
// UserEpsilon returns the local epsilon of one client's whole update in one
// round — the amount a per-client ledger charges. Since Budget.Epsilon is
// user level for every protocol it is Budget.Epsilon (ldp-min: the minimum
// budget every client uses); the interface remains for callers that want
// the figure from the protocol itself.
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
//
// Deltas. Params.Delta is the target delta of the whole run; one round may
// spend account.RoundDelta(Delta, Rounds) of it. A round of APES composes k
// dimension-level releases (k = d, or 2b for S-APES), each (eps^c, delta_s)
// by the shuffle bound, with slack delta' (APES Lemma 2), so the round's
// share is split as delta_s = share/(2k) and delta' = share/2. The options
// "delta-s" and "delta-prime" set them explicitly instead (the paper
// reproductions use APES Table 3's delta_s = delta' = 1e-8).
type apesOptions struct {
	clip               float64
	runDelta           float64
	rounds             int
	deltaS, deltaPrime float64 // explicit options (0: derived)
	secure             bool
	hidden             bool // option hidden-budget: APES's assumption
}

// deltas returns delta_s and delta' for a round of k dimension-level
// releases (see apesOptions).
func (o apesOptions) deltas(k int) (deltaS, deltaPrime float64) {
	share := account.RoundDelta(o.runDelta, o.rounds)
	deltaS, deltaPrime = o.deltaS, o.deltaPrime
	if deltaS == 0 {
		deltaS = share / (2 * float64(max(k, 1)))
	}
	if deltaPrime == 0 {
		deltaPrime = share / 2
	}
	return deltaS, deltaPrime
}

// coordEpsilons returns the per-coordinate epsilons eps_i/d of the
// participants' user-level budgets.
func coordEpsilons(s Shape, budgets []Budget) []float64 {
	eps := budgetEpsilons(budgets)
	for i := range eps {
		eps[i] /= float64(s.Dim)
	}
	// The statement is a function of the multiset of budgets: sorted, its
	// floating-point sums do not depend on the order the driver lists the
	// reporters in (the deployment sorts them; the simulation does not).
	slices.Sort(eps)
	return eps
}

// apesParse validates Clip, Delta and the shared options "delta-prime" and
// "secure"; extra lists further options the caller accepts.
func apesParse(p Params, extra ...string) (apesOptions, error) {
	if err := extraKeys(p, append([]string{"delta-prime", "delta-s", "secure", "hidden-budget"}, extra...)...); err != nil {
		return apesOptions{}, err
	}
	if err := checks.Positive("clip", p.Clip); err != nil {
		return apesOptions{}, err
	}
	if err := checks.Delta("delta (target central delta of the run)", p.Delta); err != nil {
		return apesOptions{}, err
	}
	o := apesOptions{clip: p.Clip, runDelta: p.Delta, rounds: max(p.Rounds, 1)}
	if v, ok := p.Extra["delta-prime"]; ok {
		if err := checks.Delta("option delta-prime (APES Lemma 2 slack)", v); err != nil {
			return apesOptions{}, err
		}
		o.deltaPrime = v
	}
	if v, ok := p.Extra["delta-s"]; ok {
		if err := checks.Delta("option delta-s (delta of one dimension's shuffle bound)", v); err != nil {
			return apesOptions{}, err
		}
		o.deltaS = v
	}
	if v, ok := p.Extra["secure"]; ok {
		if v != 0 && v != 1 {
			return apesOptions{}, checks.Invalidf("option secure must be 0 or 1, got %v", v)
		}
		o.secure = v == 1
	}
	if v, ok := p.Extra["hidden-budget"]; ok {
		if v != 0 && v != 1 {
			return apesOptions{}, checks.Invalidf("option hidden-budget must be 0 or 1, got %v", v)
		}
		o.hidden = v == 1
	}
	o.secure = o.secure || p.Secure
	return o, nil
}

func newAPES(p Params) (Protocol, error) {
	o, err := apesParse(p)
	if err != nil {
		return nil, err
	}
	return APES{o}, nil
}

// Name implements Protocol.
func (APES) Name() string { return "apes" }

// UserEpsilon returns the user-level local epsilon of one round for a
// client with budget b: Budget.Epsilon, which covers the d coordinates of
// eps_i^l = Budget.Epsilon/d each (APES Theorem 3).
func (APES) UserEpsilon(_ Shape, b Budget) float64 { return b.Epsilon }

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
		if err := checks.Epsilon("user-level eps_i", b.Epsilon); err != nil {
			return fmt.Errorf("budget of participant %d: %w (Clip-Laplace, APES Theorem 1, needs 0 < eps_i^l < inf)", i, err)
		}
		if c := b.Epsilon / float64(s.Dim); !(c > 0) {
			return checks.Invalidf("budget of participant %d: eps_i/d = %v/%d underflows to 0 (APES Theorem 1 needs eps_i^l > 0)", i, b.Epsilon, s.Dim)
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
	ce := b.Epsilon / float64(s.Dim)
	clap, err := apesClap(ce, m.clip, m.secure)
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
	out.Meta = append(out.Meta, ce)
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
	eps := coordEpsilons(s, budgets)
	deltaS, deltaPrime := m.deltas(s.Dim)
	epsC, deltaC, bound, pair := apesShuffleBound(eps, deltaS, m.hidden)
	return apesPrivacy(s, eps, budgetEpsilons(budgets), apesComponent(eps, epsC, deltaC, pair), s.Dim, deltaPrime, bound, false)
}

// apesPair says which analysis gave a dimension-level APES statement, and
// so which dominating pair the run's PLD accountant may compose for it.
type apesPair int

const (
	apesPairNone    apesPair = iota // unamplified, or a bound without a pair
	apesPairWorst                   // EoN for the largest public budget (standard DP)
	apesPairHidden                  // EoN under APES's hidden-budget assumption
	apesPairUniform                 // FMT's clones, equal budgets
)

// apesShuffleBound returns the dimension-level central (eps^c, delta^c) of
// shuffling Clip-Laplace reports with the given per-dimension budgets, for
// the standard definition of DP unless hidden is set:
//
//   - standard (default): APES's EoN analysis for public budgets with
//     Clip-Laplace's exact echo probabilities (amplify.EoNExactEcho: the
//     differing user at the largest budget eps*, every other user but one
//     of smallest budget echoing with G(eps_i)/F(eps*), proved in
//     amplify.ClipLaplaceExactEchoProb and amplify.eonExactOthers; never
//     above amplify.EoNWorstCase, which uses APES Lemma 6's smaller
//     weights);
//   - hidden (option hidden-budget=1): APES's EoN numerical bound
//     (Theorem 4 / Lemma 6), which averages the clone probabilities over the
//     differing user's budget and therefore assumes the adversary cannot
//     tell which budget that user holds (APES Step (i)); the bound string
//     says so. APES Table 3's 0.057 is this figure.
//
// When the budgets are all equal, FMT's clone bound applies rigorously and
// the smaller figure is used. When no bound applies the statement is the
// unamplified (max eps_i, 0). The last result names the analysis chosen.
func apesShuffleBound(eps []float64, deltaS float64, hidden bool) (epsC, deltaC float64, bound string, pair apesPair) {
	st := Summarize(eps)
	emax := st.Max
	type cand struct {
		b    amplify.Bound
		name string
		pair apesPair
	}
	var cs []cand
	var why []string
	if hidden {
		if b, err := amplify.EoNNumerical(eps, deltaS); err == nil {
			cs = append(cs, cand{b, "EoN numerical (APES Theorem 4 / Lemma 6, exact clone counts) UNDER APES's HIDDEN-BUDGET ASSUMPTION (not standard DP)", apesPairHidden})
		} else {
			why = append(why, err.Error())
		}
	}
	if b, err := amplify.EoNExactEcho(eps, deltaS); err == nil {
		cs = append(cs, cand{b, "EoN for public budgets with Clip-Laplace's exact echo probabilities, exact clone counts (standard DP)", apesPairWorst})
	} else {
		why = append(why, err.Error())
	}
	if st.Min == st.Max {
		if b, err := amplify.ClonesNumerical(emax, len(eps), deltaS); err == nil {
			cs = append(cs, cand{amplify.Bound{Epsilon: b, Delta: deltaS}, fmt.Sprintf("FMT numerical clones at the common eps_i/d = %.4g (standard DP)", emax), apesPairUniform})
		}
	}
	best := -1
	for i, c := range cs {
		if c.b.Epsilon < emax && (best < 0 || c.b.Epsilon < cs[best].b.Epsilon) {
			best = i
		}
	}
	if best < 0 {
		w := "no amplification"
		if len(why) > 0 {
			w = strings.Join(why, "; ")
		}
		return emax, 0, fmt.Sprintf("unamplified max eps_i (no shuffle bound applies: %s)", w), apesPairNone
	}
	c := cs[best]
	return c.b.Epsilon, c.b.Delta, fmt.Sprintf("%s at delta_s=%.3g", c.name, deltaS), c.pair
}

// apesComponent describes one dimension-level release of a shuffled APES
// family protocol for the run's accountant: the central (epsC, deltaC) and
// the dominating pair for the PLD accountant of the analysis that gave
// them (pair, from apesShuffleBound):
//
//   - equal budgets: FMT's clone pair (account.KindShuffle), rigorous for
//     any eps-LDP randomizers;
//   - EoN (heterogeneous Clip-Laplace budgets): the clone pair with the
//     Poisson-binomial clone count of the same analysis
//     (account.KindShuffleHetero; its documentation proves that it
//     dominates): for the standard definition the differing user at the
//     largest budget eps* and the others' echo probabilities
//     ClipLaplaceEchoProb(eps_i, eps*) (APES Lemmas 4 and 6), or, only when
//     the chosen bound is the one under APES's hidden-budget assumption,
//     Lemma 5's averaged probabilities (amplify.EoNClonePair), so that the
//     pair rests on exactly the assumption the round's bound names. The
//     probabilities are stored as a pessimistically quantised histogram
//     (account.HeteroClones).
//
// Otherwise (unamplified, or a pair that cannot be described) the generic
// (epsC, deltaC) pair is composed.
func apesComponent(eps []float64, epsC, deltaC float64, pair apesPair) account.Component {
	c := account.Component{Epsilon: epsC, Delta: deltaC}
	if deltaC <= 0 || len(eps) < 2 {
		return c
	}
	if st := Summarize(eps); st.Min == st.Max {
		c.Kind, c.Eps0, c.Reporters = account.KindShuffle, st.Max, len(eps)
		return c
	}
	if pair != apesPairWorst && pair != apesPairHidden {
		return c
	}
	others, es, err := amplify.EoNClonePair(eps, pair == apesPairHidden)
	if err != nil {
		return c
	}
	h, err := account.HeteroClones(others)
	if err != nil {
		return c
	}
	c.Kind, c.Eps0, c.Reporters, c.Clones = account.KindShuffleHetero, es, len(eps), h
	return c
}

// apesPrivacy assembles the Privacy of an APES-family round from the
// per-dimension local budgets eps, the user-level ones (d·eps: APES
// Theorem 3), one dimension-level release comp (its central (epsC, deltaC)
// and, for the PLD accountant, its dominating pair) and the number k
// of dimension-level releases composed per round (d for APES, 2b for S-APES
// Proposition 1), composing with the better of basic and advanced
// composition (APES Lemma 2) at slack deltaPrime. The k releases are also
// the round's Components, so the run's accountant composes the k·T releases
// of T rounds at once. No client-sampling credit is taken.
func apesPrivacy(s Shape, eps, user []float64, comp account.Component, k int, deltaPrime float64, bound string, approx bool) (Privacy, error) {
	epsC, deltaC := comp.Epsilon, comp.Delta
	comp.Count = k
	ue, ud, adv, err := account.ComposeBest(epsC, deltaC, k, deltaPrime)
	if err != nil {
		return Privacy{}, fmt.Errorf("user-level composition over %d dimension-level releases (APES Lemma 2): %w", k, err)
	}
	how := "basic"
	if adv {
		how = fmt.Sprintf("advanced, delta'=%.3g", deltaPrime)
	}
	return Privacy{
		Private:             true,
		LocalEpsilon:        Summarize(user),
		LocalCoordEpsilon:   Summarize(eps),
		LocalDelta:          0,
		CentralEpsilon:      ue,
		CentralDelta:        ud,
		CentralCoordEpsilon: epsC,
		CentralCoordDelta:   deltaC,
		Components:          []account.Component{comp},
		Bound:               fmt.Sprintf("dimension: %s; user: %d releases, %s", bound, k, how),
		Approximate:         approx,
	}, nil
}
