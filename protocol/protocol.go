// Package protocol defines the Encode-Shuffle-Analyze protocols of shufflefl as
// pure state machines: no goroutines, no network, no disk. A protocol is the
// papers' triple plus its accounting, each part a small interface:
//
//   - the client role (Encoder): clip and randomize one local update into a
//     Report, using the client's own privacy Budget;
//   - the shuffler role (Padder and the Shuffle function): strip identities,
//     pad with dummies drawn from the protocol's padding distribution,
//     permute;
//   - the analyzer role (Estimator for one global model, Clustered for k):
//     decode the Aggregate of all reports, de-bias or calibrate, and estimate
//     the mean update;
//   - the accountant (Accounter): the round's Privacy, its local and central
//     (epsilon, delta) and the finer descriptions (Components, RDP) that the
//     run's account.Accountant composes over rounds.
//
// Protocol is what a run holds (Encoder, Padder, Accounter); New builds one
// by its registry name.
//
// Every analyzer of the papers (FLAME, APES, S-APES, E-APES and the baselines)
// estimates a per-coordinate mean, so the analyzer sees reports only through an
// Aggregate: per-coordinate sums and counts plus the separately shuffled
// metadata (APES's epsilon list). Because an Aggregate does not depend on the
// order of reports, a simulation may stream reports into it without
// materialising the shuffled batch; the faithful path (Shuffle) really
// permutes and pads, and both give the same model up to floating-point
// summation order (see the tests).
//
// The roles (package role) drive these functions, in simulation and in
// deployment alike.
package protocol

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
)

// Budget is one client's privacy parameters for the release of one local
// update in one round: the local epsilon of the WHOLE update (user level:
// FLAME's eps_l; APES's eps_i^l times d — a protocol that spends per
// coordinate divides by d itself) and, for approximate mechanisms, the local
// delta of that release. Personalized budgets are first-class: every client
// carries its own. It is account.Budget (one type for an (epsilon, delta)
// budget across the packages).
type Budget = account.Budget

// Report is what a client hands to the shuffler in one round.
//
// Values holds the randomized coordinates. If Coords is nil the report is
// dense (Values[j] is coordinate j); otherwise Values[i] belongs to coordinate
// Coords[i] (sparse protocols: SS-Double, SS-Topk). Meta holds values that the
// shuffler permutes separately from Values (APES sends its epsilon_i this way,
// so the analyzer learns the multiset of budgets but not whose is whose).
// A Report never carries the client's identity: the transport knows the
// sender, the protocol does not.
type Report struct {
	Coords []int32
	Values []float64
	Meta   []float64
}

// Reset empties the report, keeping its buffers.
func (r *Report) Reset() {
	r.Coords = r.Coords[:0]
	r.Values = r.Values[:0]
	r.Meta = r.Meta[:0]
}

// ShuffleMode says how the shuffler permutes the reports of a round.
type ShuffleMode int

const (
	// NoShuffle: reports go to the analyzer as sent (LDP baselines, central DP,
	// non-private FedAvg). There is no amplification credit.
	NoShuffle ShuffleMode = iota
	// PerCoordinate: each coordinate's values are permuted independently
	// (FLAME's per-dimension shuffling, APES Algorithm 1) and Meta is permuted
	// on its own; the link between coordinates of one report is broken.
	PerCoordinate
	// WholeReport: whole reports are permuted (E-APES shuffled SGD).
	WholeReport
)

// String returns the mode's name.
func (m ShuffleMode) String() string {
	switch m {
	case NoShuffle:
		return "none"
	case PerCoordinate:
		return "per-coordinate"
	case WholeReport:
		return "whole-report"
	}
	return fmt.Sprintf("ShuffleMode(%d)", int(m))
}

// Shape is what every role may know about a round: the model dimension, the
// population size, the number of clients sampled and the number of
// participants (reports expected).
//
// Sampled and Participants differ when sampled clients refuse (their ledger
// is at its cap) or drop out: amplification by shuffling is computed for the
// Participants who really report (fewer reports, weaker amplification), while
// the client-sampling credit uses the true sampling rate Sampled/Population,
// never the smaller Participants/Population.
type Shape struct {
	Round        int // 1-based round number
	Dim          int // model dimension d
	Population   int // N, all clients
	Participants int // n, clients reporting this round
	// Sampled is the number of clients sampled this round (0 means
	// Participants: nobody refused).
	Sampled int
}

// Validate checks the shape.
func (s Shape) Validate() error {
	if err := checks.IntAtLeast("round", s.Round, 1); err != nil {
		return err
	}
	if err := checks.IntAtLeast("dimension", s.Dim, 1); err != nil {
		return err
	}
	if err := checks.IntAtLeast("participants", s.Participants, 1); err != nil {
		return err
	}
	if s.Population < s.Participants {
		return checks.Invalidf("population %d is smaller than participants %d", s.Population, s.Participants)
	}
	if s.Sampled != 0 && (s.Sampled < s.Participants || s.Sampled > s.Population) {
		return checks.Invalidf("%d clients sampled for %d participants in a population of %d", s.Sampled, s.Participants, s.Population)
	}
	return nil
}

// SampleRate is the probability that a given client is sampled in a round
// when the engine samples uniformly without replacement: Sampled/N (or n/N
// when Sampled is 0). Refusals after sampling do not lower it.
func (s Shape) SampleRate() float64 {
	m := s.Sampled
	if m < s.Participants {
		m = s.Participants
	}
	return float64(m) / float64(s.Population)
}

// The parts of a protocol. Each role needs one of them: a client encodes
// (Encoder), the shuffler pads (Padder), the analyzer estimates (Estimator,
// or Clustered's EstimateModels for k models) and the accountant states the
// round's privacy (Accounter). An implementation is immutable after
// construction and safe for concurrent use: Encode runs on many goroutines
// at once, each with its own generator and Report buffer.

// Encoder is a protocol's client role.
type Encoder interface {
	// Name is the registry name, e.g. "ldp-laplace".
	Name() string
	// Mode is how the shuffler permutes this protocol's reports.
	Mode() ShuffleMode
	// Encode is the client role. update is the client's local update (model
	// delta or gradient, length s.Dim); Encode may modify it in place (clip)
	// and writes the randomized report into out, reusing out's buffers.
	Encode(r *rand.Rand, s Shape, update []float64, b Budget, out *Report) error
}

// Padder is a protocol's shuffler role.
type Padder interface {
	// Mode is how the shuffler permutes this protocol's reports.
	Mode() ShuffleMode
	// Pad is the shuffler role's padding: given the number of real reports per
	// coordinate (known to the shuffler, which sees indices but never values),
	// it emits dummy values drawn from the protocol's padding distribution.
	// Protocols without padding emit nothing.
	Pad(r *rand.Rand, s Shape, counts []int64, emit func(coord int, v float64)) error
}

// Estimator is the analyzer role of a protocol with one global model.
type Estimator interface {
	// Estimate writes, from the aggregate of all (shuffled, padded)
	// reports, the estimate of the mean update into dst (length s.Dim). r
	// is the analyzer's own generator (central DP adds noise here).
	Estimate(r *rand.Rand, s Shape, agg *Aggregate, dst []float64) error
}

// Accounter is a protocol's accountant: it checks a run's parameters and
// states each round's privacy.
type Accounter interface {
	// Name is the registry name, e.g. "ldp-laplace".
	Name() string
	// Check validates the protocol's parameters against the run before any
	// round starts: the shape and every participant's budget. Errors name the
	// violated constraint of the paper.
	Check(s Shape, budgets []Budget) error
	// Account states the privacy of one round of shape s for the given
	// participants' budgets: local figures, the round's central guarantee
	// (with any client-sampling credit at s.SampleRate()), and the finer
	// descriptions (Components, RDP) the run's account.Accountant composes.
	// Composition across rounds is the accountant's job, not the protocol's:
	// the Cumulative fields are left zero.
	Account(s Shape, budgets []Budget) (Privacy, error)
}

// Protocol is an Encode-Shuffle-Analyze protocol with its accountant: what
// a run holds. The analyzer's part is separate, because it takes two
// forms: a protocol with one global model is also an Estimator (see
// SingleModel), one with k models is Clustered. Estimating returns the
// Estimator of p, or an error naming p when p keeps k models.
type Protocol interface {
	Encoder
	Padder
	Accounter
}

// SingleModel is a protocol whose analyzer keeps one global model.
type SingleModel interface {
	Protocol
	Estimator
}

// Estimating returns p's analyzer role for one global model, or an error
// when p keeps k models (Clustered) and has none.
func Estimating(p Protocol) (Estimator, error) {
	if e, ok := p.(Estimator); ok {
		return e, nil
	}
	return nil, checks.Invalidf("%s keeps k models: it has no single-model estimate (Clustered.EstimateModels)", p.Name())
}

// Stats summarises a per-client quantity.
type Stats struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// Summarize returns the min, median and max of xs (zero Stats if empty).
func Summarize(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Stats{Min: s[0], Median: med, Max: s[n-1]}
}

// Privacy is the accountant's statement for one round. Epsilons of +Inf mean
// "no guarantee" (non-private training); JSON encoders should write them as
// null (see the metrics package).
type Privacy struct {
	// Private is false for non-private protocols.
	Private bool `json:"private"`
	// LocalEpsilon is each client's local epsilon for its whole update in this
	// round (user level), summarised over participants.
	LocalEpsilon Stats `json:"local_epsilon"`
	// LocalCoordEpsilon is the local epsilon spent per coordinate (dimension
	// level), summarised over participants.
	LocalCoordEpsilon Stats `json:"local_coord_epsilon"`
	// LocalDelta is the largest local delta of any participant.
	LocalDelta float64 `json:"local_delta"`
	// CentralEpsilon and CentralDelta bound what the analyzer learns about any
	// one client's whole update in this round (user level), including the
	// client-sampling credit where the protocol takes it.
	CentralEpsilon float64 `json:"central_epsilon"`
	CentralDelta   float64 `json:"central_delta"`
	// CentralCoordEpsilon and CentralCoordDelta are the dimension-level central
	// guarantee (one coordinate), where the protocol's analysis gives one.
	CentralCoordEpsilon float64 `json:"central_coord_epsilon"`
	CentralCoordDelta   float64 `json:"central_coord_delta"`
	// CumulativeEpsilon and CumulativeDelta compose the rounds that happened
	// (rounds 1..Round); they are filled by the run's account.Accountant, not
	// by Protocol.Account.
	CumulativeEpsilon float64 `json:"cumulative_epsilon"`
	CumulativeDelta   float64 `json:"cumulative_delta"`
	// CumulativeMethod names the composition behind the cumulative figures.
	CumulativeMethod string `json:"cumulative_method,omitempty"`
	// CumulativeApproximate is true when some composed round's statement is
	// an approximation, so the cumulative figure is one too.
	CumulativeApproximate bool `json:"cumulative_approximate,omitempty"`
	// Components decompose the round's mechanism for tighter composition
	// across rounds (account.Component); RDP is its Rényi curve at
	// account.DefaultRDPOrders where the protocol has one. Both are optional.
	Components []account.Component `json:"-"`
	RDP        []float64           `json:"-"`
	// TV, if positive, says the round's release is only within total
	// variation distance TV of a mechanism with the curve RDP (see
	// account.Statement.TV); CentralEpsilon and CentralDelta include it.
	TV float64 `json:"tv,omitempty"`
	// Bound names the analysis behind the central figures.
	Bound string `json:"bound"`
	// Approximate is true when the central figure is an approximation rather
	// than a rigorous upper bound (E-APES's Gaussian CLT step).
	Approximate bool `json:"approximate"`
	// DPrivacy is set by protocols whose guarantee is d-privacy (clustered
	// FL with the Euclidean Laplace mechanism); such a round has no
	// (epsilon, delta) guarantee (Private is false, the epsilons +Inf).
	DPrivacy *DPrivacy `json:"d_privacy,omitempty"`
}

// NonPrivate is the Privacy of a round that offers no guarantee.
func NonPrivate() Privacy {
	inf := math.Inf(1)
	return Privacy{
		LocalEpsilon:        Stats{inf, inf, inf},
		LocalCoordEpsilon:   Stats{inf, inf, inf},
		CentralEpsilon:      inf,
		CentralDelta:        0,
		CentralCoordEpsilon: inf,
		CumulativeEpsilon:   inf,
		Bound:               "none",
	}
}

// Params are the settings a protocol is built from. Fields a protocol does not
// use are ignored; each protocol's constructor validates the ones it uses.
type Params struct {
	// Clip is the clipping bound C: per coordinate ([-C, C]) for local
	// protocols, L2 norm for dp-central.
	Clip float64
	// Delta is the target central delta of the whole run (all Rounds
	// rounds); each protocol derives its per-round share with
	// account.RoundDelta and its per-dimension deltas from that share.
	Delta float64
	// Epsilon is a client's local epsilon for its whole update in one round
	// (user level) for protocols with one public local budget (FLAME), and
	// the target central epsilon of the whole run for protocols calibrated
	// centrally (dp-central). Personalized protocols take their epsilons from
	// the clients' Budgets, which are user level too.
	Epsilon float64
	// Rounds is the planned number of rounds (for calibration).
	Rounds int
	// SampleRate is the fraction of the population taking part in a round
	// (for calibration of subsampled guarantees).
	SampleRate float64
	// Population is the number of clients N when the driver knows it (0
	// otherwise), for protocols whose parameters depend on it (split-mix
	// sizes its padding from the distribution of the number of reporters).
	Population int
	// Secure selects the floating-point-safe samplers of package mechanism
	// (outputs snapped to a power-of-two grid fixed by the noise scale,
	// Mironov 2012) for every continuous noise the protocol draws, and the
	// integer-only exact Skellam sampler (mechanism.SkellamExact) for
	// split-mix's discrete noise. Deployment must set it; simulations may
	// leave it off for speed.
	Secure bool
	// Layers are the sizes of the model's layers in parameter order (they
	// sum to the dimension), for protocols that treat layers separately
	// (ifca-dp's per-layer sanitization); nil means one block.
	Layers []int
	// Extra holds protocol-specific numeric options by name (for example "k",
	// "np", "nu", "b"); unknown names are rejected by the constructor.
	Extra map[string]float64
}

// Factory builds a protocol from its parameters.
type Factory func(p Params) (Protocol, error)

var registry = map[string]registration{}

type registration struct {
	factory Factory
	summary string
}

// Register adds a protocol under name. It panics on a duplicate name, which is
// a programming error caught by any test.
func Register(name, summary string, f Factory) {
	if _, dup := registry[name]; dup {
		panic("protocol: duplicate registration of " + name)
	}
	registry[name] = registration{f, summary}
}

// Names lists the registered protocols in lexical order.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Summary returns the one-line description of a registered protocol.
func Summary(name string) string { return registry[name].summary }

// New builds the protocol registered under name.
func New(name string, p Params) (Protocol, error) {
	reg, ok := registry[name]
	if !ok {
		return nil, checks.Invalidf("unknown protocol %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	pr, err := reg.factory(p)
	if err != nil {
		return nil, fmt.Errorf("protocol %s: %w", name, err)
	}
	return pr, nil
}

// extraKeys rejects options a protocol does not understand.
func extraKeys(p Params, allowed ...string) error {
	for k := range p.Extra {
		ok := false
		for _, a := range allowed {
			if k == a {
				ok = true
			}
		}
		if !ok {
			if len(allowed) == 0 {
				return checks.Invalidf("option %q is not used by this protocol (it takes none)", k)
			}
			return checks.Invalidf("option %q is not used by this protocol (it takes: %s)", k, strings.Join(allowed, ", "))
		}
	}
	return nil
}
