package audit

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/amplify"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/research/bound"
)

// OptimalCompositionLowerBound returns the exact epsilon at delta (rounded
// down) of the k-fold composition of binary randomized response with
// epsilon eps0: the optimal composition theorem of Kairouz, Oh and
// Viswanath (2015, Theorem 3.3) for k homogeneous eps0-DP mechanisms, in
// Murtagh and Vadhan's (2016) exact form,
//
//	delta(eps) = sum over x with (2x-k) eps0 > eps of
//	             Bin(x; k, p) (1 - e^(eps - (2x-k) eps0)),   p = e^eps0/(1+e^eps0).
//
// Randomized response attains it, so it is a LOWER bound on any figure
// proved from "each of the k releases is eps0-DP" alone: an accountant that
// states less for such a run is wrong. (A mechanism's own privacy loss
// distribution, e.g. the Laplace mechanism's, may prove less; shufflefl's
// accountant composes pure-DP releases as generic ones, pld.PureDP.)
//
// The binomial pmf is evaluated in log space, every term with expm1, and
// each term deflated by its worst relative rounding error, so the computed
// delta never exceeds the exact one; the largest eps whose computed delta
// exceeds the target is returned. Cost: O(k) per bisection step, about 60
// steps.
func OptimalCompositionLowerBound(eps0 float64, k int, delta float64) (float64, error) {
	if err := checks.Positive("eps0", eps0); err != nil {
		return 0, fmt.Errorf("optimal composition: %w", err)
	}
	if err := checks.IntAtLeast("k (releases)", k, 1); err != nil {
		return 0, fmt.Errorf("optimal composition: %w", err)
	}
	if delta == 0 {
		// Basic composition is exact at delta 0 (rounded down by an ulp's
		// worth of the product).
		return eps0 * float64(k) * (1 - 1e-15), nil
	}
	if err := checks.Delta("delta", delta); err != nil {
		return 0, fmt.Errorf("optimal composition: %w", err)
	}
	c := newOptComp(eps0, k, delta)
	if c.delta(0) <= delta {
		return 0, nil
	}
	lo, hi := 0.0, eps0*float64(k) // c.delta(lo) > delta >= c.delta(hi) = 0
	for range 200 {
		m := lo + (hi-lo)/2
		if m <= lo || m >= hi {
			break
		}
		if c.delta(m) > delta {
			lo = m
		} else {
			hi = m
		}
	}
	return lo, nil
}

// optComp tabulates log Bin(x; k, p) on the window of x that matters.
type optComp struct {
	eps0    float64
	k       int
	lo      int       // lp[i] is the log pmf at lo + i
	lp      []float64 // log pmf, deflated
	deflate float64
}

func newOptComp(eps0 float64, k int, delta float64) optComp {
	l1p := math.Log1p(math.Exp(-eps0))
	lpOne, lpZero := -l1p, -eps0-l1p // log p, log(1-p)
	kf := float64(k)
	lpmf := func(x int) float64 {
		lg := func(v float64) float64 { r, _ := math.Lgamma(v); return r }
		return lg(kf+1) - lg(float64(x)+1) - lg(float64(k-x)+1) + float64(x)*lpOne + float64(k-x)*lpZero
	}
	// Only x above the mode can have a positive privacy loss beyond any
	// eps >= 0 with non-negligible mass; walk up from the smallest x with a
	// positive loss and stop where the pmf falls below delta e^-60
	// (dropping positive terms keeps the computed delta a lower bound).
	start := k/2 + 1
	cut := math.Log(delta) - 60
	c := optComp{eps0: eps0, k: k, lo: start}
	mode := int(math.Floor((kf + 1) / (1 + math.Exp(-eps0))))
	for x := start; x <= k; x++ {
		v := lpmf(x)
		if v < cut && x > mode {
			break
		}
		c.lp = append(c.lp, v)
	}
	// Lgamma carries a few ulps of k log k; each term's exp is off by at
	// most that relative amount (as in amplify's shuffled-RR bound).
	c.deflate = 1 - 4e-16*(kf*math.Log(kf+2)+kf+1) - 1e-14
	return c
}

// delta returns a lower bound on the exact delta(eps) of the k-fold
// composition (one direction; the pair is symmetric).
func (c optComp) delta(eps float64) float64 {
	var d float64
	for i, lp := range c.lp {
		x := c.lo + i
		loss := float64(2*x-c.k) * c.eps0
		if loss <= eps {
			continue
		}
		d += math.Exp(lp) * -math.Expm1(eps-loss)
	}
	return d * c.deflate
}

// RunRound is what a run's metrics say about one round.
type RunRound struct {
	Round        int
	Participants int
	// LocalEps is the largest user-level local epsilon of the round's
	// participants and LocalEpsMin the smallest (equal for uniform budgets);
	// LocalCoordEps is the largest per-coordinate local epsilon.
	LocalEps, LocalEpsMin, LocalCoordEps float64
	// Claimed is the run's cumulative epsilon after the round at the
	// cumulative delta Delta (NaN: no claim); Approximate marks a claim the
	// run itself labels approximate.
	Claimed, Delta float64
	Approximate    bool
	// K and NP are the sparse FLAME protocols' coordinates per user and
	// values per dimension after padding (0 otherwise).
	K, NP int
}

// RunFacts describes a finished run: its protocol and what each round
// released, read from the run's files (cmd/shufflefl audit accountant).
type RunFacts struct {
	Protocol string
	Dim      int
	Clients  int
	// Sampled: clients were sampled per round. The lower bounds here
	// assume the differing user reports in every round, which sampling
	// does not guarantee; such runs are not checked.
	Sampled bool
	// Randomizer is a FLAME protocol's local randomizer (nil otherwise).
	Randomizer *amplify.Randomizer
	Rounds     []RunRound
	// Params are the run's protocol parameters (Epsilon aside: each
	// round's local epsilon is set from its record), to rebuild the
	// protocol and bound its own mechanism (protocol.LowerBounder); nil
	// leaves that bound out. RoundDelta is every client's delta of one
	// round (the run's budgets: account.RoundDelta of the run's delta).
	Params     *protocol.Params
	RoundDelta float64
	// CentralTarget: the protocol calibrates its noise to the run's
	// target (Params.Epsilon, kept as given), not to local budgets.
	CentralTarget bool
}

// AccountantCheck is one independent lower bound set against one of a
// run's statements.
type AccountantCheck struct {
	// Round: the statement checked is the cumulative one after this round.
	Round   int     `json:"round"`
	Claimed float64 `json:"claimed"`
	Delta   float64 `json:"delta"`
	// Bound names the lower bound and the releases it covers.
	Bound string  `json:"bound"`
	Lower float64 `json:"lower"`
	// Violation: the claim is below the lower bound.
	Violation bool `json:"violation"`
	// Error says why the bound could not be computed (Lower is then 0).
	Error string `json:"error,omitempty"`
}

// Protocol classes of CheckAccountant.
var (
	// pureLocal protocols randomize every coordinate independently with a
	// pure eps_c-DP mechanism and send the report unshuffled.
	pureLocal = map[string]bool{"ldp-laplace": true, "pldp": true, "ldp-min": true}
	// genericShuffle protocols shuffle every coordinate's values (dense
	// reports) and state a bound that holds for every eps_c-LDP randomizer
	// (the clone pair of Feldman, McMillan and Talwar).
	genericShuffle = map[string]bool{"apes": true, "unis": true, "ss-simple": true}
	// flameSparse protocols report k of d coordinates, padded to n_p values
	// per dimension with the randomizer's blanket.
	flameSparse = map[string]bool{"ss-double": true, "ss-topk": true}
	// ownMechanism protocols bound the true epsilon of their own mechanism
	// (protocol.LowerBounder), whatever their statement rests on.
	ownMechanism = map[string]bool{"ldp-laplace": true, "pldp": true, "ldp-min": true, "apes": true, "unis": true,
		"ss-simple": true, "ss-double": true, "ss-topk": true, "e-apes": true, "split-mix": true}
	// notChecked says why the other protocols have no lower bound here.
	notChecked = map[string]string{
		"nonprivate":   "no privacy claim",
		"ifca":         "no privacy claim",
		"ifca-dp":      "d-privacy, not (epsilon, delta)-DP",
		"dp-central":   "Gaussian noise with Poisson sampling: no lower bound implemented here",
		"ldp-gaussian": "Gaussian noise: no lower bound implemented here",
		"s-apes": "S-APES keeps the b largest noisy coordinates, so a user's count above a threshold is not a binomial; " +
			"no count statistic is implemented (and its figures are labelled approximate)",
	}
)

// CheckAccountant sets independent lower bounds against a run's cumulative
// statements after its first and its last round:
//
//   - pure local protocols (ldp-laplace, pldp, ldp-min): the optimal
//     composition of the d·t per-coordinate eps_c-DP releases
//     (OptimalCompositionLowerBound);
//   - shuffled protocols with a generic bound (apes, unis, ss-simple), with
//     uniform budgets: the shuffled binary randomized response of one
//     coordinate in one round (amplify.ShuffledRRLowerBound) and the count
//     of ones over all d·t shuffled releases of randomized response
//     (amplify.CountLowerBound);
//   - every protocol with a protocol.LowerBounder (the FLAME protocols, the
//     APES family, E-APES, split-mix), with uniform or personalized
//     budgets: the count statistic of the run's own mechanism over every
//     value released in the t rounds, for the user with the largest budget
//     (split-mix: thresholds on the sum of one coordinate's decoded sums
//     over the t rounds and on the largest round, covering its Poisson
//     sampling), when the facts carry the run's Params; without them the
//     FLAME protocols get the count with the run's randomizer
//     (amplify.FLAMESparseCountLowerBound).
//
// Every bound is exact for a neighbouring pair the statement covers, so a
// statement below it is wrong. It returns the checks and, when the run
// cannot be checked, the reason.
func CheckAccountant(f RunFacts) ([]AccountantCheck, string, error) {
	if why, ok := notChecked[f.Protocol]; ok {
		return nil, why, nil
	}
	own := ownMechanism[f.Protocol] && (f.Params != nil || f.Randomizer != nil)
	if !pureLocal[f.Protocol] && !genericShuffle[f.Protocol] && !flameSparse[f.Protocol] && !own {
		return nil, fmt.Sprintf("protocol %s has no lower bound here", f.Protocol), nil
	}
	// split-mix's own bound covers its Poisson sampling.
	sampledOK := own && f.Protocol == "split-mix"
	if f.Sampled && !sampledOK {
		return nil, "clients were sampled per round: the lower bounds assume the differing user reports in every round", nil
	}
	if len(f.Rounds) == 0 {
		return nil, "", checks.Invalidf("the run has no rounds")
	}
	if err := checks.IntAtLeast("dimension", f.Dim, 1); err != nil {
		return nil, "", err
	}
	first := f.Rounds[0]
	uniform := true
	for _, r := range f.Rounds {
		if r.Participants < f.Clients && !sampledOK {
			return nil, fmt.Sprintf("round %d had %d of %d clients: the lower bounds assume every client reports in every round", r.Round, r.Participants, f.Clients), nil
		}
		// The pure local bound takes the user with the largest budget
		// (personalized budgets are fine), and so does the own-mechanism
		// bound; the generic shuffled ones need every user at one budget.
		uniform = uniform && r.LocalEps == first.LocalEps && r.LocalEpsMin == r.LocalEps
	}
	if !uniform && !pureLocal[f.Protocol] && f.Params == nil {
		return nil, "the local budgets are personalized or change between rounds: the shuffled bounds here need one uniform budget", nil
	}
	var out []AccountantCheck
	for _, last := range []int{1, len(f.Rounds)} {
		if last == 1 && len(f.Rounds) == 1 && len(out) > 0 {
			break
		}
		rounds := f.Rounds[:last]
		st := rounds[last-1]
		if math.IsNaN(st.Claimed) || math.IsInf(st.Claimed, 1) || st.Approximate {
			continue
		}
		for _, c := range lowerBounds(f, rounds, st.Delta, uniform) {
			c.Round, c.Claimed, c.Delta = st.Round, st.Claimed, st.Delta
			// The bounds are rounded down: any claim below one is wrong.
			c.Violation = c.Error == "" && c.Claimed < c.Lower
			out = append(out, c)
		}
		if len(f.Rounds) == 1 {
			break
		}
	}
	return out, "", nil
}

// lowerBounds returns the protocol's lower bounds for the statement after
// rounds at delta; a bound that cannot be computed is returned with its
// error. uniform says every round had one budget for every user.
func lowerBounds(f RunFacts, rounds []RunRound, delta float64, uniform bool) []AccountantCheck {
	t := len(rounds)
	d := f.Dim
	var out []AccountantCheck
	add := func(c AccountantCheck, err error) {
		if err != nil {
			c.Lower, c.Error = 0, err.Error()
		}
		out = append(out, c)
	}
	switch {
	case pureLocal[f.Protocol]:
		// The user with the largest budget: eps_c-DP per coordinate in
		// every round (its smallest value over the rounds, as the bound
		// grows with eps0).
		eps0 := math.Inf(1)
		for _, r := range rounds {
			eps0 = math.Min(eps0, r.LocalCoordEps)
		}
		k := d * t
		lb, err := OptimalCompositionLowerBound(eps0, k, delta)
		add(AccountantCheck{Bound: fmt.Sprintf("optimal composition of %d eps_c = %s releases (randomized response)", k, bound.Figure(eps0, 4)), Lower: lb}, err)
	case genericShuffle[f.Protocol] && uniform:
		eps0 := rounds[0].LocalCoordEps
		maxN, others := 0, 0
		for _, r := range rounds {
			maxN = max(maxN, r.Participants)
			others += (r.Participants - 1) * d
		}
		lb, err := amplify.ShuffledRRLowerBound(eps0, maxN, delta)
		add(AccountantCheck{Bound: fmt.Sprintf("shuffled randomized response, one coordinate, n = %d, eps_c = %s", maxN, bound.Figure(eps0, 4)), Lower: lb}, err)
		add(rrCountBound(eps0, d*t, others, delta))
	}
	switch {
	case f.Params != nil && ownMechanism[f.Protocol]:
		add(ownMechanismBound(f, rounds, delta))
	case f.Randomizer != nil && (f.Protocol == "ss-simple" || flameSparse[f.Protocol]):
		add(flameCountBound(f, rounds, delta))
	}
	return out
}

// flameMineOthers returns the count statistic's sizes for a FLAME run over
// rounds, and the per-value epsilon: ss-simple releases d values per user
// at eps_l/d among n per dimension; ss-double and ss-topk release k values
// at eps_l/k among n_p per dimension. users counts the other users'
// randomized values, dummies the blanket draws (the shuffler's padding and
// SS-Topk's blanket slots): for the Laplace randomizer both are
// distributed as the report of 1/2, for R_{gamma,b} they are not.
func flameMineOthers(f RunFacts, rounds []RunRound) (mine, users, dummies int, eps0 float64, err error) {
	d := f.Dim
	for _, r := range rounds {
		if f.Protocol == "ss-simple" {
			mine += d
			users += (r.Participants - 1) * d
			eps0 = r.LocalEps / float64(d)
			continue
		}
		if r.K < 1 || r.NP < 1 || r.NP*d < r.K || r.NP*d < r.Participants*r.K {
			return 0, 0, 0, 0, checks.Invalidf("round %d: k = %d, n_p = %d: not a sparse FLAME round", r.Round, r.K, r.NP)
		}
		mine += r.K
		users += (r.Participants - 1) * r.K
		dummies += r.NP*d - r.Participants*r.K
		eps0 = r.LocalEps / float64(r.K)
	}
	return mine, users, dummies, eps0, nil
}
