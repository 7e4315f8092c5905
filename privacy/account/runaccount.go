package account

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/pld"
)

// RoundDelta is the delta each of the planned rounds of a run may spend when
// the whole run targets runDelta: half of the run's delta is shared equally
// by the rounds' own guarantees, and the other half is left as the slack
// delta' of the composition across rounds (advanced composition). Every
// protocol derives its per-round (and from it its per-dimension) deltas from
// this one share, so `--delta` always means the target central delta of the
// whole run.
func RoundDelta(runDelta float64, rounds int) float64 {
	if rounds < 1 {
		rounds = 1
	}
	return runDelta / (2 * float64(rounds))
}

// Component is one mechanism of a round's release, applied Count times
// (APES: d per-dimension shuffles of (eps^c, delta^c) each). A round's user
// level mechanism is the adaptive composition of its components, so the run
// may compose all components of all rounds at once instead of composing the
// rounds' user-level statements (one advanced composition instead of two
// nested ones). Components carry no client-sampling credit.
type Component struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	Count   int     `json:"count"`
	// Kind selects the dominating pair the PLD accountant composes for this
	// release (Epsilon and Delta stay a valid statement of it either way):
	//   - "" : a generic (Epsilon, Delta)-DP mechanism (pld.PureDP when
	//     Delta is 0, pld.ApproxDP otherwise: the pairs of Kairouz et al.
	//     that dominate every such mechanism);
	//   - KindShuffle: shuffling Reporters reports of Eps0-LDP randomizers,
	//     dominated by the clone pair of Feldman, McMillan and Talwar
	//     (pld.ShuffleClones; substitution relation);
	//   - KindSampledGaussian: the Poisson-subsampled Gaussian mechanism with
	//     rate Q and noise multiplier Sigma (pld.SampledGaussian; add/remove);
	//   - KindShuffleHetero: shuffling Reporters reports of which the
	//     differing user's is Eps0-LDP and the others reproduce it with the
	//     clone probabilities Clones (kind_hetero.go);
	//   - KindGaussian: the Gaussian mechanism with noise multiplier Sigma
	//     (kind_gaussian.go);
	//   - KindAlloc: one round of K-of-Dim random allocation under a blanket
	//     (FLAME's SS-Double; Eps0, Levels, Dim, K, Slots, Reporters, Fail;
	//     see kind_alloc.go);
	//   - KindSampledSkellam: the Poisson-subsampled (rate Q) sum of Dim
	//     integer coordinates with L2 sensitivity L2 plus Skellam noise of
	//     variance Variance per coordinate (kind_skellam.go; add/remove);
	//   - KindBlanket: one column of FLAME's SS-Simple, Reporters reports
	//     of R_{gamma,b} (Levels = b) or Laplace (Levels 0) at Eps0,
	//     composed by its blanket route and as its clone pair, the smaller
	//     epsilon stated (kind_blanket.go).
	Kind      string  `json:"kind,omitempty"`
	Eps0      float64 `json:"eps0,omitempty"`
	Reporters int     `json:"reporters,omitempty"`
	Q         float64 `json:"q,omitempty"`
	Sigma     float64 `json:"sigma,omitempty"`
	// Clones is KindShuffleHetero's histogram of the other users' clone
	// probabilities, in the canonical text form of HeteroClones (a string,
	// so that Component stays comparable and identical releases merge).
	Clones string `json:"clones,omitempty"`
	// KindAlloc's and KindSampledSkellam's fields (appended; older ledgers
	// decode without them). Dim is the dimension of both.
	Dim      int     `json:"dim,omitempty"`
	K        int     `json:"k,omitempty"`
	Slots    int     `json:"slots,omitempty"`
	Levels   int     `json:"levels,omitempty"`
	Fail     float64 `json:"fail,omitempty"`
	Variance float64 `json:"variance,omitempty"`
	L2       float64 `json:"l2,omitempty"`
}

// Component kinds (Component.Kind).
const (
	KindShuffle         = "shuffle"
	KindSampledGaussian = "sampled-gaussian"
)

// lossBound is a bound on (or for the Gaussian, a wide quantile of) the
// privacy loss of one application, used to size the PLD grid.
func (c Component) lossBound() float64 {
	if k, ok := componentKinds[c.Kind]; ok {
		return k.lossBound(c)
	}
	return c.Epsilon
}

// pair returns the component's dominating pair as a PLD (one application);
// clone pairs come from the memo clonePairs.
func (c Component) pair(o pld.Options) (*pld.PLD, error) {
	if c.Kind == "" {
		switch {
		case c.Delta == 0:
			return pld.PureDP(c.Epsilon, o)
		case c.Epsilon == 0:
			// (0, delta): loss +Inf with probability delta, 0 otherwise
			// (SS-Double's padding failure). ApproxDP needs eps > 0.
			d := c.Delta
			return pld.FromPair([]float64{d, 1 - d, 0}, []float64{0, 1 - d, d}, o)
		}
		return pld.ApproxDP(c.Epsilon, c.Delta, o)
	}
	if k, ok := componentKinds[c.Kind]; ok {
		return k.pair(c, o)
	}
	return nil, checks.Invalidf("unknown component kind %q", c.Kind)
}

// componentKind is what the accountant needs of a Component kind other
// than the generic "": a bound on one application's privacy loss (to size
// the PLD grid), its dominating pair, and a check of the fields it reads.
// Each kind registers itself (registerKind) from its own file.
type componentKind struct {
	lossBound func(c Component) float64
	pair      func(c Component, o pld.Options) (*pld.PLD, error)
	// validate returns a description of what is wrong with c's fields,
	// or "" when they are valid.
	validate func(c Component) string
	// minTV, if set, is the total variation term (Statement.TV) that one
	// application of c requires of the statement carrying it: the pair
	// dominates a mechanism within that distance of the real release.
	minTV func(c Component) float64
}

// componentKinds holds the registered kinds by name.
var componentKinds = map[string]componentKind{}

// registerKind adds a component kind; a duplicate name panics (a
// programming error every test catches).
func registerKind(name string, k componentKind) {
	if _, dup := componentKinds[name]; dup || name == "" {
		panic("account: duplicate component kind " + name)
	}
	componentKinds[name] = k
}

func init() {
	registerKind(KindShuffle, componentKind{
		lossBound: func(c Component) float64 { return c.Eps0 },
		pair: func(c Component, o pld.Options) (*pld.PLD, error) {
			return clonePairs.get(c.Eps0, c.Reporters, o)
		},
		validate: func(c Component) string {
			if !(c.Eps0 > 0) || math.IsInf(c.Eps0, 0) || c.Reporters < 1 {
				return fmt.Sprintf("shuffle component needs eps0 > 0 and reporters >= 1, got %v and %d", c.Eps0, c.Reporters)
			}
			return ""
		},
	})
	registerKind(KindSampledGaussian, componentKind{
		lossBound: func(c Component) float64 { return 1/(c.Sigma*c.Sigma) + 10/c.Sigma },
		pair: func(c Component, o pld.Options) (*pld.PLD, error) {
			return pld.SampledGaussian(c.Q, c.Sigma, o)
		},
		validate: func(c Component) string {
			if !(c.Q > 0 && c.Q <= 1) || !(c.Sigma > 0) || math.IsInf(c.Sigma, 0) {
				return fmt.Sprintf("sampled-Gaussian component needs q in (0, 1] and sigma > 0, got %v and %v", c.Q, c.Sigma)
			}
			return ""
		},
	})
}

// Statement is the accountant's record of one round that happened: the
// round's user-level central guarantee as its protocol states it for the
// clients that really reported, the true sampling rate, and the optional
// finer descriptions of the round (components, an RDP curve) that allow
// tighter composition across rounds.
type Statement struct {
	Round int `json:"round"`
	// SampleRate is the true probability that a given client was sampled in
	// this round (clients sampled / population), whatever number of them
	// later refused or dropped out.
	SampleRate float64 `json:"sample_rate"`
	// Sampled and Reporters count the clients sampled and those whose report
	// reached the analyzer.
	Sampled   int `json:"sampled"`
	Reporters int `json:"reporters"`
	// Released says whether the round released anything (a model update).
	// A round that released nothing (nobody reported under fixed-size
	// sampling, or the round was void) spends nothing. Under Poisson sampling
	// with a central mechanism a round releases noise even with no
	// participant, and is charged.
	Released bool `json:"released"`
	// Epsilon and Delta are the round's user-level central guarantee,
	// including any client-sampling credit the protocol takes.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Components, if set, decompose the round's mechanism (without sampling
	// credit).
	Components []Component `json:"components,omitempty"`
	// RDP, if set, is the round's Rényi DP curve at DefaultRDPOrders.
	RDP []float64 `json:"rdp,omitempty"`
	// TV, if positive, says that the round's release is only within total
	// variation distance TV of a mechanism with the curve RDP (split-mix:
	// the split-and-mix security term plus the probability of a void
	// round); RDP composition then converts with RDPToEpsilonTV and the
	// rounds' TV terms add up (a hybrid argument over the rounds). Epsilon
	// and Delta must already account for it.
	TV float64 `json:"tv,omitempty"`
	// Bound names the analysis behind Epsilon and Delta.
	Bound string `json:"bound"`
	// Approximate marks a statement that is not a rigorous upper bound; the
	// composition of the run inherits the mark.
	Approximate bool `json:"approximate,omitempty"`
}

// validate checks one statement.
func (s Statement) validate() error {
	if s.Round < 1 {
		return checks.Invalidf("round %d: rounds are numbered from 1", s.Round)
	}
	if s.Reporters < 0 || s.Sampled < 0 || s.Reporters > s.Sampled && s.Sampled > 0 {
		return checks.Invalidf("round %d: %d reporters of %d sampled clients", s.Round, s.Reporters, s.Sampled)
	}
	if math.IsNaN(s.SampleRate) || s.SampleRate < 0 || s.SampleRate > 1 {
		return checks.Invalidf("round %d: sample rate %v is not in [0, 1]", s.Round, s.SampleRate)
	}
	if !s.Released {
		return nil
	}
	if math.IsNaN(s.Epsilon) || s.Epsilon < 0 {
		return checks.Invalidf("round %d: epsilon %v is not >= 0", s.Round, s.Epsilon)
	}
	if math.IsNaN(s.Delta) || s.Delta < 0 || s.Delta > 1 {
		return checks.Invalidf("round %d: delta %v is not in [0, 1]", s.Round, s.Delta)
	}
	needTV := 0.0
	for i, c := range s.Components {
		if math.IsNaN(c.Epsilon) || c.Epsilon < 0 || math.IsInf(c.Epsilon, 0) || math.IsNaN(c.Delta) || c.Delta < 0 || c.Delta >= 1 || c.Count < 1 {
			return checks.Invalidf("round %d: component %d (%v, %v) x %d is not a valid guarantee", s.Round, i, c.Epsilon, c.Delta, c.Count)
		}
		if c.Kind == "" {
			continue
		}
		k, ok := componentKinds[c.Kind]
		if !ok {
			return checks.Invalidf("round %d: component %d has unknown kind %q", s.Round, i, c.Kind)
		}
		if why := k.validate(c); why != "" {
			return checks.Invalidf("round %d: component %d: %s", s.Round, i, why)
		}
		if k.minTV != nil {
			needTV += k.minTV(c) * float64(c.Count)
		}
	}
	if s.TV < needTV*(1-1e-9) {
		return checks.Invalidf("round %d: total variation term %v is below the %v its components require", s.Round, s.TV, needTV)
	}
	if s.RDP != nil && len(s.RDP) != len(defaultOrders) {
		return checks.Invalidf("round %d: an RDP curve of %d orders, want %d (DefaultRDPOrders)", s.Round, len(s.RDP), len(defaultOrders))
	}
	if math.IsNaN(s.TV) || s.TV < 0 || s.TV >= 1 {
		return checks.Invalidf("round %d: total variation term %v is not in [0, 1)", s.Round, s.TV)
	}
	for _, v := range s.RDP {
		if math.IsNaN(v) || v < 0 {
			return checks.Invalidf("round %d: RDP curve value %v is not >= 0", s.Round, v)
		}
	}
	return nil
}

// Spent is the privacy spent by the rounds recorded so far: the run is
// (Epsilon, Delta)-DP for every client (user level, central), by the method
// named. Epsilon is +Inf if no method gives a finite figure.
type Spent struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	Method  string  `json:"method"`
	// Releases counts the rounds in which something was released.
	Releases int `json:"releases"`
	// Approximate is true when some composed round's statement is an
	// approximation rather than a rigorous bound: the run's figure is then
	// an approximation too.
	Approximate bool `json:"approximate,omitempty"`
}

// tally holds the sums every composition method needs, so that adding T
// identical rounds costs O(1) per method.
type tally struct {
	approx        bool
	releases      int
	epsSum        float64 // basic composition of round statements
	deltaSum      float64
	sq, mean      float64 // advanced composition of round statements
	compAll       bool    // every release has components
	compSq, compM float64
	compEps       float64
	compDelta     float64
	compCount     int
	rdpAll        bool // every release has an RDP curve
	rdp           []float64
	tv            float64 // sum of the releases' TV terms (Statement.TV)
	// pairs is the multiset of dominating pairs for the PLD accountant:
	// every component of every release (or the round's own (eps, delta)).
	pairs []pairCount
}

// pairCount is one distinct component (Count 1) and how many times it was
// applied in all.
type pairCount struct {
	c Component
	n int
}

// clone returns a copy that shares no mutable state with t.
func (t tally) clone() tally {
	if t.rdp != nil {
		t.rdp = append([]float64(nil), t.rdp...)
	}
	t.pairs = append([]pairCount(nil), t.pairs...)
	return t
}

// addPair counts n applications of component c.
func (t *tally) addPair(c Component, n int) {
	c.Count = 1
	for i := range t.pairs {
		if t.pairs[i].c == c {
			t.pairs[i].n += n
			return
		}
	}
	t.pairs = append(t.pairs, pairCount{c, n})
}

func newTally() tally { return tally{compAll: true, rdpAll: true} }

// add records s, times times.
func (t *tally) add(s Statement, times int) {
	if !s.Released || times == 0 {
		return
	}
	k := float64(times)
	t.releases += times
	t.approx = t.approx || s.Approximate
	t.epsSum += k * s.Epsilon
	t.deltaSum += k * s.Delta
	t.sq += k * s.Epsilon * s.Epsilon
	t.mean += k * s.Epsilon * math.Expm1(s.Epsilon)
	if s.Components == nil {
		t.compAll = false
		t.addPair(Component{Epsilon: s.Epsilon, Delta: s.Delta}, times)
	}
	for _, c := range s.Components {
		t.addPair(c, times*c.Count)
		n := k * float64(c.Count)
		t.compSq += n * c.Epsilon * c.Epsilon
		t.compM += n * c.Epsilon * math.Expm1(c.Epsilon)
		t.compEps += n * c.Epsilon
		t.compDelta += n * c.Delta
		t.compCount += times * c.Count
	}
	t.tv += k * s.TV
	if s.RDP == nil {
		t.rdpAll = false
		t.rdp = nil
	} else if t.rdpAll {
		if t.rdp == nil {
			t.rdp = make([]float64, len(s.RDP))
		}
		for i, v := range s.RDP {
			t.rdp[i] += k * v
		}
	}
}

// spent evaluates every applicable method at the run's target delta and
// returns the one with the smallest epsilon among those whose delta is at
// most the target. If none fits the target, it returns basic composition
// with its own (too large) delta, so the caller can see by how much.
func (t tally) spent(target float64, withPLD bool) Spent {
	if t.releases == 0 {
		return Spent{Method: "nothing released"}
	}
	s := t.spentRigour(target, withPLD)
	s.Approximate = t.approx
	if t.approx {
		s.Method += " (APPROXIMATE: a round's statement is not a rigorous bound)"
	}
	return s
}

// spentRigour is spent without the approximation mark.
func (t tally) spentRigour(target float64, withPLD bool) Spent {
	best := Spent{Epsilon: math.Inf(1), Delta: target, Method: "no finite bound", Releases: t.releases}
	// The smaller epsilon wins; within a relative 1e-4 of each other the
	// smaller delta does (basic composition of pure rounds, (6, 0), is a
	// better statement than a PLD's (5.99998, 1e-5)).
	consider := func(e, d float64, m string) {
		if math.IsNaN(e) || d > target*(1+1e-12) {
			return
		}
		if e < best.Epsilon*(1-1e-4) || e <= best.Epsilon*(1+1e-4) && d < best.Delta {
			best = Spent{Epsilon: e, Delta: d, Method: m, Releases: t.releases}
		}
	}
	consider(t.epsSum, t.deltaSum, "basic composition of the rounds")
	if dp := target - t.deltaSum; dp > 0 && t.releases > 1 {
		e := math.Sqrt(2*math.Log(1/dp)*t.sq) + t.mean
		consider(e, target, fmt.Sprintf("advanced composition of the %d rounds (delta'=%.3g)", t.releases, dp))
	}
	if t.compAll && t.compCount > 0 {
		consider(t.compEps, t.compDelta, fmt.Sprintf("basic composition of %d releases", t.compCount))
		if dp := target - t.compDelta; dp > 0 && t.compCount > 1 {
			e := math.Sqrt(2*math.Log(1/dp)*t.compSq) + t.compM
			consider(e, target, fmt.Sprintf("advanced composition of %d releases (delta'=%.3g)", t.compCount, dp))
		}
	}
	if t.rdpAll && t.rdp != nil {
		if e, order, err := RDPToEpsilonTV(defaultOrders, t.rdp, target, t.tv); err == nil {
			consider(e, target, fmt.Sprintf("RDP composition of the %d rounds (order %.4g)", t.releases, order))
		}
	}
	if withPLD && usePLD && len(t.pairs) > 0 {
		// the TV terms (Statement.TV) are charged as for RDP: a pair of a
		// TV round dominates the ideal mechanism (KindSampledSkellam); the
		// other rounds' TV, if any, is already in their (eps, delta).
		if e, err := t.pldEpsilon(target); err == nil {
			m := fmt.Sprintf("PLD composition of %d releases (pessimistic, FFT)", t.pldReleases())
			if t.hasAlloc() {
				m += "; allocation rounds: the smaller of their random-allocation PLD chained to substitution and their clone pairs"
			}
			consider(e, target, m)
		}
	}
	if math.IsInf(best.Epsilon, 1) && t.deltaSum > target*(1+1e-12) {
		// Even the rounds' own deltas exceed the target: report basic
		// composition as it is, so the caller sees by how much.
		return Spent{Epsilon: t.epsSum, Delta: t.deltaSum, Method: "basic composition of the rounds (over the target delta)", Releases: t.releases}
	}
	return best
}

// usePLD enables the PLD method in spent (tests compare with and without).
var usePLD = true

// hasAlloc reports whether some recorded pair is an allocation round.
func (t tally) hasAlloc() bool {
	for _, p := range t.pairs {
		if p.c.Kind == KindAlloc {
			return true
		}
	}
	return false
}

// pldReleases counts the releases the PLD method composes.
func (t tally) pldReleases() int {
	n := 0
	for _, p := range t.pairs {
		n += p.n
	}
	return n
}

// pldEpsilon composes every recorded dominating pair with package pld and
// returns the epsilon at the target delta: the tightest rigorous method
// (pessimistic discretisation, error terms included in delta).
func (t tally) pldEpsilon(target float64) (float64, error) {
	cs := make([]Component, len(t.pairs))
	for i, p := range t.pairs {
		cs[i] = p.c
		cs[i].Count = p.n
	}
	return pldEpsilonTV(cs, target, t.tv)
}

// pldBins is the number of grid points the composed privacy loss is sized
// to (see PLDEpsilon): 2^16 keeps the epsilon within about 0.1% of its
// converged value at 10^5 compositions (2^17: 0.02%, at twice the cost).
const pldBins = 1 << 16

// pldProbeBins is the number of grid points per loss bound of the probe
// discretisation each pair is built with first (see PLDEpsilon).
const pldProbeBins = 1 << 14

// PLDEpsilon composes every component's dominating pair (the clone pair of
// FMT for KindShuffle, the sampled-Gaussian pair, or the pair dominating
// every (Epsilon, Delta)-DP mechanism), each Count times, with package pld,
// and returns the epsilon at delta: a rigorous upper bound (pessimistic
// discretisation; every truncation and floating-point error term is
// included in the delta). Allocation rounds (KindAlloc) are add/remove
// pairs against a reference: when every component is one, their
// composition is chained to substitution (pld.PLD.ChainEpsilon) and the
// smaller of that and their clone pairs is returned; mixed with other
// kinds, only their clone pairs are used (kind_alloc.go). Blanket columns
// (KindBlanket, FLAME's SS-Simple) are composed twice, as their clone
// pairs and by their blanket route, and the smaller epsilon is returned
// (kind_blanket.go).
//
// Grid. The pessimism of the discretisation grows with the grid interval h
// (connect-the-dots adds a variance of at most h^2/4 per composition, which
// moves epsilon by about k h^2/12 (1 + z/sigma_K) over k compositions, with
// sigma_K the standard deviation of the composed loss and z about 4-5 at
// small deltas), and the cost of the FFT with the width of the composed
// loss over h. Each pair is first built on a fine probe grid (its loss
// bound over 2^14), which gives its loss's standard deviation sigma_i;
// the composed loss lies in a window of about 20 sqrt(sum k_i sigma_i^2)
// (the composition's Chernoff window at tail mass 1e-16 is about 16.5
// standard deviations; it cannot exceed the sum of the pairs' ranges
// either), and h is that width over pldBins = 2^16 grid points. The pairs
// are then moved to that grid (pld.PLD.Regrid, pessimistic) or, if it is
// finer than the probe, rebuilt on it (h is at least 2^-17 times the
// largest loss bound, which keeps each pair's construction cheap: a
// sampled Gaussian at q = 0.001 would otherwise be built on millions of
// points). The epsilon is then about 0.1%
// above its converged value at 10^5 compositions (0.04% at 39,250; the
// error grows like k/pldBins^2), and one evaluation takes tens of
// milliseconds whatever k. (A bound on the loss,
// eps0 for a shuffle, is no guide to its spread: the shuffled clone pair
// at eps0 = 0.146 and n = 1000 has a standard deviation of 0.0064, and a
// grid sized by the loss bound, as before, was 20 times too coarse and 4%
// pessimistic over 39,250 compositions.)
func PLDEpsilon(cs []Component, delta float64) (float64, error) {
	if len(cs) == 0 {
		return 0, nil
	}
	if any, clones := splitBlanket(cs); any {
		// Blanket columns (kind_blanket.go): the smaller epsilon of their
		// blanket pairs and of their clone pairs.
		e, err := pldEpsilonRoutes(clones, delta)
		if bs, errb := blanketRoute(cs); errb == nil {
			if eb, errb := pldEpsilonRoutes(bs, delta); errb == nil && (err != nil || eb < e) {
				e, err = eb, nil
			}
		}
		return e, err
	}
	return pldEpsilonRoutes(cs, delta)
}

// pldEpsilonRoutes is PLDEpsilon without the blanket routes.
func pldEpsilonRoutes(cs []Component, delta float64) (float64, error) {
	if any, all, without := splitAlloc(cs); any {
		// Allocation rounds: their substitution pairs without the
		// allocation credit, and, when every component is an allocation
		// round, the add/remove composition chained to substitution
		// (kind_alloc.go); the smaller epsilon of the two.
		e, err := pldEpsilon(without, delta, false)
		if all {
			if ea, erra := chainEpsilonMemo(cs, delta); erra == nil && (err != nil || ea < e) {
				e, err = ea, nil
			}
		}
		return e, err
	}
	return pldEpsilon(cs, delta, false)
}

// pldEpsilon is PLDEpsilon on one relation: with chain, every pair is an
// add/remove pair against a common reference and the composition is
// converted to substitution by pld.PLD.ChainEpsilon.
func pldEpsilon(cs []Component, delta float64, chain bool) (float64, error) {
	acc, err := pldCompose(cs)
	if err != nil {
		return math.Inf(1), err
	}
	if chain {
		return acc.PLD().ChainEpsilon(delta)
	}
	return acc.Epsilon(delta)
}

// pldCompose is PLDEpsilon's composition: the accountant of every
// component's pair, each Count times, on the grid PLDEpsilon describes
// (cs is not empty).
func pldCompose(cs []Component) (*pld.Accountant, error) {
	probes := make([]*pld.PLD, len(cs))
	var v, width, floor float64
	for i, c := range cs {
		if c.Count < 1 {
			return nil, checks.Invalidf("component %d is applied %d times", i, c.Count)
		}
		l := c.lossBound()
		p, err := c.pair(pld.Options{Interval: pldInterval(l / pldProbeBins)})
		if err != nil {
			return nil, err
		}
		probes[i] = p
		n := float64(c.Count)
		s := p.LossStdDev()
		v += n * s * s
		width += 2 * n * l
		// the pair's own grid, whose construction costs about its number
		// of points, stays below 2^18 points per loss range
		floor = math.Max(floor, 2*l/(1<<18))
	}
	w := math.Min(width, 20*math.Sqrt(v))
	h := pldInterval(math.Max(w/pldBins, floor))
	var acc pld.Accountant
	for i, c := range cs {
		p := probes[i]
		var err error
		switch {
		case h > p.Interval():
			p, err = p.Regrid(h)
		case h < p.Interval():
			p, err = c.pair(pld.Options{Interval: h})
		}
		if err != nil {
			return nil, err
		}
		if err := acc.Add(p, c.Count); err != nil {
			return nil, err
		}
	}
	return &acc, nil
}

// pldInterval clamps a grid interval to the range package pld accepts and
// this package uses, [1e-9, 1].
func pldInterval(h float64) float64 {
	if !(h > 1e-9) {
		return 1e-9
	}
	return math.Min(h, 1)
}

// Accountant is the stateful accountant of one run: it records the statement
// of every round that happened, in order, and composes them. It is the one
// place a driver (the simulation engine, the networked analyzer) asks what
// has been spent. Rounds in which nobody reported are recorded but spend
// nothing. It is checkpointable (MarshalJSON / RestoreAccountant) and not
// safe for concurrent use. It implements RunAccountant (see the package
// documentation for the accountants' hierarchy).
//
// Composition: the smallest epsilon, at the run's target delta, of basic
// composition of the rounds' statements, heterogeneous advanced composition
// of them (slack delta' = target - sum of the rounds' deltas), basic and
// advanced composition of all the rounds' components (when every round
// gives them), and RDP composition (when every round gives a curve). Each is
// a rigorous upper bound, so their minimum is.
type Accountant struct {
	target float64
	log    []Statement
	t      tally
	noPLD  bool
}

// WithoutPLD returns a copy of a that does not use the PLD method (the
// other methods are much cheaper; their epsilon is never smaller). Target
// calibration brackets with it before refining with the full accountant.
func (a *Accountant) WithoutPLD() *Accountant {
	b := *a
	b.log = append([]Statement(nil), a.log...)
	b.t = a.t.clone()
	b.noPLD = true
	return &b
}

// NewAccountant returns an accountant for a run whose target central delta
// is targetDelta (in (0, 1)).
func NewAccountant(targetDelta float64) (*Accountant, error) {
	if err := checks.Delta("target delta of the run", targetDelta); err != nil {
		return nil, fmt.Errorf("accountant: %w", err)
	}
	return &Accountant{target: targetDelta, t: newTally()}, nil
}

// TargetDelta returns the run's target delta.
func (a *Accountant) TargetDelta() float64 { return a.target }

// Record adds the statement of the next round. Rounds must be recorded once
// each and in increasing order; a statement that is invalid or out of order is
// rejected and nothing is recorded.
func (a *Accountant) Record(s Statement) error {
	if err := s.validate(); err != nil {
		return fmt.Errorf("accountant: %w", err)
	}
	if n := len(a.log); n > 0 && s.Round <= a.log[n-1].Round {
		return fmt.Errorf("accountant: %w", checks.Invalidf("round %d recorded after round %d (each round once, in order)", s.Round, a.log[n-1].Round))
	}
	if s.Released && math.IsInf(s.Epsilon, 1) {
		return fmt.Errorf("accountant: %w", checks.Invalidf("round %d has no finite guarantee", s.Round))
	}
	s.Components = append([]Component(nil), s.Components...)
	s.RDP = append([]float64(nil), s.RDP...)
	if len(s.RDP) == 0 {
		s.RDP = nil
	}
	if len(s.Components) == 0 {
		s.Components = nil
	}
	a.log = append(a.log, s)
	a.t.add(s, 1)
	return nil
}

// Rounds returns the number of rounds recorded.
func (a *Accountant) Rounds() int { return len(a.log) }

// Log returns a copy of the recorded statements.
func (a *Accountant) Log() []Statement { return append([]Statement(nil), a.log...) }

// Spent returns what the recorded rounds have spent.
func (a *Accountant) Spent() Spent { return a.t.spent(a.target, !a.noPLD) }

// Plan returns what the run would have spent after `more` further rounds
// with statement s each (the recorded rounds included), without recording
// anything: the pre-flight check, target calibration and the run-level
// target check use it. s is taken as released.
func (a *Accountant) Plan(s Statement, more int) (Spent, error) {
	if more < 0 {
		return Spent{}, fmt.Errorf("accountant: %w", checks.Invalidf("cannot plan %d rounds", more))
	}
	if s.Round == 0 {
		s.Round = len(a.log) + 1
	}
	s.Released = true
	if err := s.validate(); err != nil {
		return Spent{}, fmt.Errorf("accountant: %w", err)
	}
	t := a.t.clone()
	t.add(s, more)
	return t.spent(a.target, !a.noPLD), nil
}

// PastTarget reports whether releasing the round s states would take the
// cumulative epsilon past target (a run's hard limit, with a relative slack
// of 1e-9 for the calibration's rounding), and returns what the run would
// then have spent. A target <= 0 means none.
func (a *Accountant) PastTarget(s Statement, target float64) (Spent, bool, error) {
	sp, err := a.Plan(s, 1)
	if err != nil {
		return Spent{}, false, err
	}
	return sp, target > 0 && sp.Epsilon > target*(1+1e-9), nil
}

// PlanAll is Plan for a sequence of different further rounds, each taken
// as released.
func (a *Accountant) PlanAll(ss []Statement) (Spent, error) {
	t := a.t.clone()
	for i, s := range ss {
		if s.Round == 0 {
			s.Round = len(a.log) + 1 + i
		}
		s.Released = true
		if err := s.validate(); err != nil {
			return Spent{}, fmt.Errorf("accountant: %w", err)
		}
		t.add(s, 1)
	}
	return t.spent(a.target, !a.noPLD), nil
}

// accountantState is the checkpoint format.
type accountantState struct {
	TargetDelta float64     `json:"target_delta"`
	Rounds      []Statement `json:"rounds"`
}

// MarshalJSON writes the accountant's state (the target and every recorded
// statement).
func (a *Accountant) MarshalJSON() ([]byte, error) {
	return json.Marshal(accountantState{TargetDelta: a.target, Rounds: a.log})
}

// RestoreAccountant rebuilds an accountant from MarshalJSON's output,
// re-validating every statement.
func RestoreAccountant(b []byte) (*Accountant, error) {
	var st accountantState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("accountant checkpoint: %w", checks.Invalidf("%v", err))
	}
	a, err := NewAccountant(st.TargetDelta)
	if err != nil {
		return nil, err
	}
	for _, s := range st.Rounds {
		if err := a.Record(s); err != nil {
			return nil, fmt.Errorf("accountant checkpoint: %w", err)
		}
	}
	return a, nil
}

// String summarises the accountant.
func (a *Accountant) String() string {
	s := a.Spent()
	var b strings.Builder
	fmt.Fprintf(&b, "%d rounds (%d with a release): epsilon %.4g, delta %.3g by %s", len(a.log), s.Releases, s.Epsilon, s.Delta, s.Method)
	return b.String()
}
