package ifcaref

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
)

// Config is a simulation of Algorithm 1 (Simulate).
type Config struct {
	K         int // number of hypotheses k >= 1
	PerRound  int // U, clients sampled per round (uniformly, without replacement), >= K
	MaxRounds int // T, an upper bound on the rounds
	Client    ClientConfig
	// ValidateEvery (v) and Patience (p) drive early stopping on the
	// validation clients; ValidateEvery = 0 disables validation.
	ValidateEvery, Patience int
	// ValSample, if positive, validates on that many validation clients
	// drawn afresh each time (Section 5.2 samples 200); 0 uses all of them.
	ValSample  int
	KMeansIter int    // k-means iteration bound (0: 100)
	Seed       uint64 // all randomness derives from it (rng.Stream)
	Workers    int    // goroutines for clients and k-means; results do not depend on it
	// KeepVectors keeps every round's released and true updated vectors in
	// the records (the paper's Figure 1; only for small models).
	KeepVectors bool
	// Sample and Noise, if set, replace the simulation's own random
	// streams: Sample(t) returns round t's participants (training-client
	// indices), Noise(t, c) the stream client c's sanitization noise is
	// drawn from in round t (by default it continues the client's training
	// stream). The engine test sets them to the engine's streams.
	Sample func(t int) []int
	Noise  func(t, client int) *rand.Rand
}

// Validate checks the configuration for models of dimension dim and the
// given numbers of training and validation clients.
func (c Config) Validate(dim, train, val int) error {
	if err := checks.IntAtLeast("k (hypotheses)", c.K, 1); err != nil {
		return err
	}
	if err := checks.IntAtLeast("clients per round U", c.PerRound, 1); err != nil {
		return err
	}
	if c.K > c.PerRound {
		return checks.Invalidf("k = %d hypotheses is larger than the %d clients per round: some clusters could never be estimated", c.K, c.PerRound)
	}
	if c.PerRound > train {
		return checks.Invalidf("clients per round U = %d exceeds the %d training clients", c.PerRound, train)
	}
	if err := checks.IntAtLeast("rounds", c.MaxRounds, 1); err != nil {
		return err
	}
	if c.ValidateEvery < 0 || c.Patience < 0 || c.ValSample < 0 || c.KMeansIter < 0 {
		return checks.Invalidf("validation every %d, patience %d, validation sample %d and k-means iterations %d must be >= 0", c.ValidateEvery, c.Patience, c.ValSample, c.KMeansIter)
	}
	if c.ValidateEvery > 0 && val < 1 {
		return checks.Invalidf("validation every %d rounds needs validation clients", c.ValidateEvery)
	}
	return c.Client.Validate(dim)
}

// Round is the record of one simulated round.
type Round struct {
	Round        int
	Participants []int // training-client indices sampled this round
	Chosen       []int // each participant's hypothesis (-1 if it declined before training; simulation only)
	Released     int   // number of releases the server received
	Declined     map[string]int
	Assign       []int // k-means cluster of each release, in release order
	Sizes        []int
	// Hypotheses after the round (copied).
	Hypotheses [][]float64
	// Releases and Updates (KeepVectors only): the released vectors and the
	// clients' true updated vectors, in participant order (nil for a client
	// that released nothing).
	Releases, Updates [][]float64
	// ValLoss is the validation loss (mean over validation clients of the
	// lowest loss among the hypotheses), NaN if not validated this round.
	ValLoss float64
	// MaxLeakage and MedianLeakage are over all training clients after the
	// round; GroupMaxLeakage[g] and GroupMedianLeakage[g] over the training
	// clients of group g (the groups passed to Simulate).
	MaxLeakage, MedianLeakage           float64
	GroupMaxLeakage, GroupMedianLeakage []float64
}

// Summary is the outcome of Simulate.
type Summary struct {
	Rounds        int         // rounds run
	Stopped       bool        // stopped early (patience exhausted)
	BestRound     int         // round of the best validation loss (0 if never validated)
	BestLoss      float64     // best validation loss (NaN if never validated)
	Best          [][]float64 // hypotheses at the best validation (the final ones if never validated)
	Final         [][]float64 // hypotheses after the last round
	Ledger        *Ledger
	MaxLeakage    float64 // over all training clients at the end
	MedianLeakage float64 // median over all training clients at the end
}

// ValidationLoss returns the personalized validation loss of hypotheses on
// clients: the mean over clients of min_j Loss_c(θ_j) (each held-out client
// picks its hypothesis as a participant would).
func ValidationLoss(clients []Client, hyps [][]float64) float64 {
	var s float64
	for _, c := range clients {
		best := math.Inf(1)
		for _, h := range hyps {
			best = min(best, c.Loss(h))
		}
		s += best
	}
	return s / float64(len(clients))
}

// Simulate runs Algorithm 1 on in-memory clients from the initial
// hypotheses init: each round samples U training clients uniformly without
// replacement, runs ClientRound for each (in parallel, each with its own
// random streams rng.Stream(Seed, LabelTraining, round, client)), charges
// the ledger, runs ServerRound on the releases in participant order, and
// validates every ValidateEvery rounds; it stops after MaxRounds or when
// Patience validations pass without improvement. groups (may be nil) labels
// the training clients' latent group for GroupMaxLeakage. observe (may be
// nil) is called after each round. Deterministic for any Workers.
func Simulate(cfg Config, init [][]float64, train, val []Client, groups []int, observe func(Round)) (Summary, error) {
	members, err := checkSimulate(cfg, init, train, val, groups)
	if err != nil {
		return Summary{}, fmt.Errorf("simulate: %w", err)
	}
	ledger, err := NewLedger(len(train))
	if err != nil {
		return Summary{}, err
	}
	s := &sim{cfg: cfg, train: train, val: val, members: members, ledger: ledger, hyps: cloneAll(init),
		stop:    fl.EarlyStop{Every: cfg.ValidateEvery, Patience: cfg.Patience},
		sampler: rng.Stream(cfg.Seed, rng.LabelSampling), valRand: rng.Stream(cfg.Seed, rng.LabelSampling, 1)}
	s.ccfg = cfg.Client
	s.ccfg.KeepUpdated = s.ccfg.KeepUpdated || cfg.KeepVectors
	sum := Summary{Ledger: ledger, BestLoss: math.NaN(), Best: cloneAll(init)}
	for t := 1; t <= cfg.MaxRounds; t++ {
		rec, err := s.round(t)
		if err != nil {
			return sum, fmt.Errorf("simulate: round %d: %w", t, err)
		}
		sum.Rounds, sum.Final = t, s.hyps
		halt := false
		if s.stop.Due(t) {
			rec.ValLoss = ValidationLoss(s.validators(), s.hyps)
			improved, st := s.stop.Observe(t, rec.ValLoss)
			if improved {
				sum.Best = cloneAll(s.hyps)
			}
			halt = st
		}
		if observe != nil {
			observe(rec)
		}
		if halt {
			sum.Stopped = true
			break
		}
	}
	if s.stop.Seen {
		sum.BestLoss, sum.BestRound = s.stop.Best()
	} else {
		sum.Best = cloneAll(sum.Final)
	}
	sum.MaxLeakage, sum.MedianLeakage = ledger.LeakageStats(nil)
	return sum, nil
}

// checkSimulate checks Simulate's arguments and returns the training
// clients of every group (all in group 0 when groups is nil).
func checkSimulate(cfg Config, init [][]float64, train, val []Client, groups []int) ([][]int, error) {
	if err := checkHypotheses(init); err != nil {
		return nil, err
	}
	if len(init) != cfg.K {
		return nil, checks.Invalidf("%d initial hypotheses for k = %d", len(init), cfg.K)
	}
	dim := len(init[0])
	if err := cfg.Validate(dim, len(train), len(val)); err != nil {
		return nil, err
	}
	for _, set := range [][]Client{train, val} {
		for i, c := range set {
			if err := checkClientDim(c, dim); err != nil {
				return nil, fmt.Errorf("client %d: %w", i, err)
			}
		}
	}
	if groups != nil && len(groups) != len(train) {
		return nil, checks.Invalidf("%d group labels for %d training clients", len(groups), len(train))
	}
	nGroups := 1
	for _, g := range groups {
		if g < 0 {
			return nil, checks.Invalidf("negative group label %d", g)
		}
		nGroups = max(nGroups, g+1)
	}
	members := make([][]int, nGroups)
	for i := range train {
		g := 0
		if groups != nil {
			g = groups[i]
		}
		members[g] = append(members[g], i)
	}
	return members, nil
}

// sim is the state of one Simulate call.
type sim struct {
	cfg              Config
	ccfg             ClientConfig
	train, val       []Client
	members          [][]int
	ledger           *Ledger
	hyps             [][]float64
	stop             fl.EarlyStop
	sampler, valRand *rand.Rand
}

// participants returns round t's sample: Config.Sample's, or U clients
// drawn without replacement from the run's sampling stream.
func (s *sim) participants(t int) []int {
	if s.cfg.Sample != nil {
		return s.cfg.Sample(t)
	}
	return sampleWithoutReplacement(s.sampler, len(s.train), s.cfg.PerRound)
}

// round runs the clients and the server of round t and records it (without
// its validation).
func (s *sim) round(t int) (Round, error) {
	part := s.participants(t)
	results := make([]ClientResult, len(part))
	errs := make([]error, len(part))
	mechanism.ForEachClient(len(part), s.cfg.Workers,
		func(i int) *rand.Rand { return rng.Stream(s.cfg.Seed, rng.LabelTraining, uint64(t), uint64(part[i])) },
		func(i int, r *rand.Rand) {
			c := part[i]
			var noise *rand.Rand
			if s.cfg.Noise != nil {
				noise = s.cfg.Noise(t, c)
			}
			results[i], errs[i] = ClientRound(r, noise, s.train[c], s.hyps, s.ccfg, s.ledger.Spent(c))
		})
	rec := Round{Round: t, Participants: part, Declined: map[string]int{}, ValLoss: math.NaN()}
	var releases [][]float64
	for i, res := range results {
		if errs[i] != nil {
			return rec, fmt.Errorf("client %d: %w", part[i], errs[i])
		}
		rec.Chosen = append(rec.Chosen, res.Chosen)
		if s.cfg.KeepVectors {
			rec.Releases = append(rec.Releases, res.Released)
			rec.Updates = append(rec.Updates, res.Updated)
		}
		if res.Declined != "" {
			rec.Declined[res.Declined]++
			continue
		}
		if err := s.ledger.Charge(part[i], res.Cost); err != nil {
			return rec, err
		}
		releases = append(releases, res.Released)
	}
	rec.Released = len(releases)
	if len(releases) > 0 {
		sr, err := ServerRound(releases, s.hyps, s.cfg.KMeansIter, s.cfg.Workers)
		if err != nil {
			return rec, err
		}
		s.hyps, rec.Assign, rec.Sizes = sr.Hypotheses, sr.Assign, sr.Sizes
	}
	rec.Hypotheses = cloneAll(s.hyps)
	rec.MaxLeakage, rec.MedianLeakage = s.ledger.LeakageStats(nil)
	for _, m := range s.members {
		mx, med := s.ledger.LeakageStats(m)
		rec.GroupMaxLeakage = append(rec.GroupMaxLeakage, mx)
		rec.GroupMedianLeakage = append(rec.GroupMedianLeakage, med)
	}
	return rec, nil
}

// validators returns the validation clients of one validation: all of
// them, or ValSample drawn afresh.
func (s *sim) validators() []Client {
	n := s.cfg.ValSample
	if n <= 0 || n >= len(s.val) {
		return s.val
	}
	idx := sampleWithoutReplacement(s.valRand, len(s.val), n)
	vc := make([]Client, len(idx))
	for i, j := range idx {
		vc[i] = s.val[j]
	}
	return vc
}

// sampleWithoutReplacement returns m distinct indices of [0, n) in the
// order drawn (a partial Fisher-Yates shuffle).
func sampleWithoutReplacement(r *rand.Rand, n, m int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	for i := range m {
		j := i + r.IntN(n-i)
		p[i], p[j] = p[j], p[i]
	}
	return p[:m:m]
}

func cloneAll(v [][]float64) [][]float64 {
	out := make([][]float64, len(v))
	for i := range v {
		out[i] = slices.Clone(v[i])
	}
	return out
}
