package protocol

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
)

func init() {
	Register("e-apes", "E-APES (Chen, Cao and Ge 2023, Algorithm 1): L2 clipping, personalized (eps_i, delta_i) Gaussian noise, whole-report shuffling; rigorous central bound plus the paper's mu-GDP approximation", newEAPES)
	RegisterInfo("e-apes", Info{
		Summary: "E-APES: personalized (eps_i, delta_i) Gaussian noise, whole-report shuffling",
		Paper:   "E-APES (Chen, Cao and Ge 2023), Algorithm 1 and Theorems 2-3",
		Options: []OptionSpec{
			apesDeltaSInfo("half the round's share of --delta", "the delta at which the paper's mu-GDP approximation is stated (the rigorous bound does not use it)"),
			apesDeltaPrimeInfo(apesUnused("no composition over coordinates")),
			apesHiddenInfo(apesUnused("no EoN bound")),
			apesSecureInfo(),
		},
		Budgets: budgetsPersonalizedDelta,
	})
}

// EAPES is the shuffled noisy SGD of "Enhancing Privacy in Personalized
// Differential Privacy under the Shuffle Model" (Chen, Cao and Ge 2023),
// Algorithm 1, as a federated protocol.
//
// Budget reading. E-APES gives each user one (eps_i, delta_i) for its whole
// noisy gradient, so Budget.Epsilon is the epsilon of the whole update and
// Budget.Delta its delta (the engine sets every client's delta to the
// round's share account.RoundDelta of the run's --delta).
// A single coordinate changing by at most 2C is covered by the same
// guarantee, so LocalCoordEpsilon reports eps_i as well.
//
// Client (Encode): clip the update to L2 norm C (Algorithm 1 line 11) and
// add N(0, sigma_i² I) with sigma_i the analytic-Gaussian calibration
// (Balle and Wang 2018) of (eps_i, delta_i) for L2 sensitivity 2C, the
// replace-one distance of two clipped updates. Algorithm 1 line 7 prints the
// classic sigma = (2C/m)·sqrt(2 ln(1.25/delta))/eps, whose (eps, delta)
// guarantee is proved only for eps < 1 (Dwork and Roth, Theorem A.1); the
// analytic calibration is exact for every eps and never larger. Its 1/m
// factor is the per-example sensitivity of a batch mean of m examples; a
// federated client releases its whole update, whose sensitivity is 2C.
//
// Shuffler: whole reports are permuted (Mode WholeReport); the analyzer
// averages them (unbiased for the mean clipped update).
//
// Accounting (Account). Two statements for the same budgets:
//
//   - Rigorous (CentralEpsilon/CentralDelta, Approximate false): the
//     shuffle is post-processing of reports that are each (eps_i, delta_i)-DP
//     for their owner, so the round is (max eps_i, max delta_i)-DP. No
//     rigorous amplification bound for heterogeneous Gaussian randomizers is
//     available here: the clone bounds of amplify (FMT, EoN) need pure
//     eps-LDP randomizers and, for EoN, Clip-Laplace's echo probabilities.
//     The round also gives its Gaussian premise (gaussianComponent: the
//     Gaussian pair of the smallest noise multiplier sigma_i/(2C),
//     account.KindGaussian), which the run's accountant composes over the
//     rounds exactly by PLD (mu-GDP composition; 7.995 -> 2.415 on the
//     default 10-round run), unless option secure is set.
//   - The paper's figure (in Bound, and from Approximation): E-APES Theorems
//     2–3 give mu = 2/sqrt(Σ_{i>=2} p_i), p_i = 2(1-delta_i)/(1+e^eps_i)
//     (amplify.EAPESMu). That is a central-limit APPROXIMATION of the clone
//     count (Theorem 3 drops its Berry–Esseen term), not an upper bound.
//     E-APES Theorem 3 also treats the delta_max branch as perfectly private
//     (T = 1 - alpha when Delta_2 = 1), whereas in Lemma 1 that branch is the
//     one where the two inputs are told apart (outputs A and B); the sound
//     reading adds delta_max to the delta: the figure is reported as
//     (GDPEpsilon(mu, delta_s), delta_s + max delta_i) with delta_s =
//     half the round's share of the run's delta (apesOptions), and
//     cumulatively mu·sqrt(T) (GDP composition).
//
// Options: "delta-prime" (in (0, 1)), "secure" (0 or 1: the floating-point
// safe Gaussian, as deployment must use).
type EAPES struct {
	apesOptions
	sigmas *sync.Map // [2]float64{eps, delta} -> sigma
}

func newEAPES(p Params) (Protocol, error) {
	o, err := apesParse(p)
	if err != nil {
		return nil, err
	}
	return EAPES{apesOptions: o, sigmas: new(sync.Map)}, nil
}

// Name implements Protocol.
func (EAPES) Name() string { return "e-apes" }

// UserEpsilon returns eps_i: the budget covers the whole update.
func (EAPES) UserEpsilon(_ Shape, b Budget) float64 { return b.Epsilon }

// Check implements Protocol: one budget per participant with eps_i in
// (0, inf) and delta_i in (0, 1) (the Gaussian mechanism needs both).
func (EAPES) Check(s Shape, budgets []Budget) error { return eapesCheck(s, budgets) }

func eapesCheck(s Shape, budgets []Budget) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if len(budgets) != s.Participants {
		return checks.Invalidf("got %d budgets for %d participants: E-APES Algorithm 1 takes one (eps_i, delta_i) per user", len(budgets), s.Participants)
	}
	for i, b := range budgets {
		if err := checks.Epsilon("eps_i", b.Epsilon); err != nil {
			return fmt.Errorf("budget of participant %d: %w (the Gaussian mechanism of E-APES Algorithm 1 needs eps_i > 0)", i, err)
		}
		if err := checks.Delta("delta_i", b.Delta); err != nil {
			return fmt.Errorf("budget of participant %d: %w (the Gaussian mechanism of E-APES Algorithm 1 needs delta_i in (0, 1))", i, err)
		}
	}
	return nil
}

// Mode implements Protocol: whole reports are shuffled.
func (EAPES) Mode() ShuffleMode { return WholeReport }

// Sigma returns the noise standard deviation of a client with budget b.
func (m EAPES) Sigma(b Budget) (float64, error) {
	key := [2]float64{b.Epsilon, b.Delta}
	if v, ok := m.sigmas.Load(key); ok {
		return v.(float64), nil
	}
	sig, err := mechanism.AnalyticGaussianSigma(b.Epsilon, b.Delta, 2*m.clip)
	if err != nil {
		return 0, fmt.Errorf("e-apes: calibrating the Gaussian for eps_i=%v delta_i=%v, L2 sensitivity 2C=%v: %w", b.Epsilon, b.Delta, 2*m.clip, err)
	}
	m.sigmas.Store(key, sig)
	return sig, nil
}

// Encode implements Protocol: E-APES Algorithm 1 lines 7–13 for one user.
func (m EAPES) Encode(r *rand.Rand, s Shape, update []float64, b Budget, out *Report) error {
	if err := checkUpdate(s, update); err != nil {
		return err
	}
	if err := checks.Delta("delta_i", b.Delta); err != nil {
		return fmt.Errorf("e-apes: %w", err)
	}
	sig, err := m.Sigma(b)
	if err != nil {
		return err
	}
	clipL2(update, m.clip)
	out.Reset()
	out.Coords = nil
	out.Values = append(out.Values, update...)
	mechanism.Gaussian{Sigma: sig, Secure: m.secure}.Perturb(r, out.Values)
	return nil
}

// Pad implements Protocol: no padding.
func (EAPES) Pad(*rand.Rand, Shape, []int64, func(int, float64)) error { return nil }

// Estimate implements Protocol: the mean of the shuffled reports.
func (EAPES) Estimate(_ *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	return meanEstimate(s, agg, dst)
}

// EAPESApproximation is E-APES's own central figure for one round and
// cumulatively: a mu-GDP central-limit approximation, not an upper bound.
type EAPESApproximation struct {
	Mu                float64 // per round, E-APES Theorem 2
	Epsilon, Delta    float64 // (eps, delta_s + max delta_i) from mu
	CumulativeMu      float64 // mu·sqrt(T), GDP composition
	CumulativeEpsilon float64 // at the same delta
}

// Approximation returns E-APES's mu-GDP figure for the participants'
// budgets (see the type documentation). It is labelled as what it is: an
// approximation.
func (m EAPES) Approximation(s Shape, budgets []Budget) (EAPESApproximation, error) {
	if err := eapesCheck(s, budgets); err != nil {
		return EAPESApproximation{}, err
	}
	eps := budgetEpsilons(budgets)
	deltas := make([]float64, len(budgets))
	dmax := 0.0
	for i, b := range budgets {
		deltas[i] = b.Delta
		dmax = math.Max(dmax, b.Delta)
	}
	mu, err := amplify.EAPESMu(eps, deltas)
	if err != nil {
		return EAPESApproximation{}, fmt.Errorf("e-apes approximation (Theorem 2): %w", err)
	}
	deltaS, _ := m.deltas(1)
	e1, err := account.GDPToEpsilon(mu, deltaS)
	if err != nil {
		return EAPESApproximation{}, fmt.Errorf("e-apes approximation: %w", err)
	}
	cmu := account.GDPCompose(mu, s.Round)
	ct, err := account.GDPToEpsilon(cmu, deltaS)
	if err != nil {
		return EAPESApproximation{}, fmt.Errorf("e-apes approximation over %d rounds: %w", s.Round, err)
	}
	return EAPESApproximation{Mu: mu, Epsilon: e1, Delta: math.Min(1, deltaS+dmax), CumulativeMu: cmu, CumulativeEpsilon: ct}, nil
}

// Account implements Protocol (see the type documentation).
func (m EAPES) Account(s Shape, budgets []Budget) (Privacy, error) {
	if err := eapesCheck(s, budgets); err != nil {
		return Privacy{}, fmt.Errorf("e-apes accountant: %w", err)
	}
	eps := budgetEpsilons(budgets)
	st := Summarize(eps)
	dmax := 0.0
	for _, b := range budgets {
		dmax = math.Max(dmax, b.Delta)
	}
	bound := "rigorous: no shuffle credit, (max eps_i, max delta_i)"
	comps, gbound := m.gaussianComponent(budgets, st.Max, dmax)
	bound += gbound
	if a, err := m.Approximation(s, budgets); err == nil {
		bound += fmt.Sprintf("; E-APES mu-GDP APPROXIMATION (CLT, not a bound): mu=%.4g, eps=%.4g at delta=%.3g, cumulative mu=%.4g eps=%.4g",
			a.Mu, a.Epsilon, a.Delta, a.CumulativeMu, a.CumulativeEpsilon)
	} else {
		bound += "; E-APES approximation unavailable: " + err.Error()
	}
	return Privacy{
		Private:             true,
		LocalEpsilon:        st,
		LocalCoordEpsilon:   st,
		LocalDelta:          dmax,
		CentralEpsilon:      st.Max,
		CentralDelta:        dmax,
		CentralCoordEpsilon: st.Max,
		CentralCoordDelta:   dmax,
		Components:          comps,
		Bound:               bound,
		Approximate:         false,
	}, nil
}

// gaussianComponent returns the round's Gaussian premise for the run's PLD
// accountant (account.KindGaussian) and a note for the bound: every
// reporter's report is its clipped update (L2 norm at most C, so two
// values of one user are at L2 distance at most 2C) plus N(0, sigma_i^2 I)
// with the sigma_i that Encode uses (Sigma), and the shuffled multiset is
// a post-processing of the differing user's report, since the other
// reports do not depend on its data. That user's release is therefore
// dominated by the Gaussian pair of noise multiplier sigma_i/(2C) >=
// min_j sigma_j/(2C), and the smallest multiplier of the round's
// reporters covers every user (the Gaussian pair with the larger
// multiplier is a post-processing of the one with the smaller: add
// independent noise). Composed over the rounds by PLD this is the exact
// composition of the premise (mu-GDP with mu^2 the sum of the rounds'
// 1/multiplier^2); no shuffle credit is taken. With option secure the
// noise is the snapped ziggurat Gaussian, whose guarantee is
// (eps_i + eta, delta_i + 1e-30) rather than an exact Gaussian pair, so
// no component is given and the accountant composes (max eps_i, max
// delta_i) as before.
func (m EAPES) gaussianComponent(budgets []Budget, epsMax, deltaMax float64) ([]account.Component, string) {
	if m.secure {
		return nil, ""
	}
	smin := math.Inf(1)
	for _, b := range budgets {
		sig, err := m.Sigma(b)
		if err != nil {
			return nil, ""
		}
		smin = math.Min(smin, sig)
	}
	mult := smin / (2 * m.clip)
	if !(mult > 0) || math.IsInf(mult, 0) {
		return nil, ""
	}
	c := account.Component{Epsilon: epsMax, Delta: deltaMax, Count: 1, Kind: account.KindGaussian, Sigma: mult}
	return []account.Component{c}, fmt.Sprintf("; run: the Gaussian premise (noise multiplier min sigma_i/(2C) = %.4g) composed by PLD", mult)
}

// NoShuffleCredit reports that E-APES's rigorous statement takes no
// amplification from the shuffle (none is proved; the mu-GDP figure that
// does is an approximation): more clients per round do not lower it.
func (EAPES) NoShuffleCredit() bool { return true }
