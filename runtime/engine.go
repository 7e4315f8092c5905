package runtime

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"shufflefl/account"
	"shufflefl/checks"
	"shufflefl/data"
	"shufflefl/fl"
	"shufflefl/protocol"
	"shufflefl/rng"
	"shufflefl/role"
)

// blockSize is the number of consecutive participants whose reports one
// worker folds into one partial aggregate. Partial aggregates are merged in
// block order, so the floating-point result does not depend on the number of
// workers. It is a constant, not a tuning knob: changing it changes results.
const blockSize = 16

// RoundResult is everything observed in one round.
type RoundResult struct {
	Round        int              `json:"round"`
	Participants int              `json:"participants"`
	TestAccuracy float64          `json:"test_accuracy"`
	TestLoss     float64          `json:"test_loss"`
	Privacy      protocol.Privacy `json:"privacy"`
	// MaxClientEpsilon is the largest cumulative local epsilon any client has
	// actually spent so far (its ledger total: it counts only the rounds the
	// client took part in).
	MaxClientEpsilon float64 `json:"max_client_epsilon"`
	// Refused counts sampled clients whose ledger refused the release
	// because it would exceed their cap (they sat the round out).
	Refused int `json:"refused"`
	// Reports and Dummies count what reached the analyzer.
	Reports int64   `json:"reports"`
	Dummies int64   `json:"dummies"`
	Seconds float64 `json:"seconds"`
	Timing  Timing  `json:"timing"`
	// Hypotheses describes each model of a clustered protocol (nil
	// otherwise).
	Hypotheses []Hypothesis `json:"hypotheses,omitempty"`
	// DPrivacy is the round's d-privacy accounting, for protocols whose
	// guarantee is d-privacy (nil otherwise).
	DPrivacy *DPrivacyRound `json:"d_privacy,omitempty"`
	// Validation is the round's validation on the held-out clients (nil
	// when none was due).
	Validation *ValidationRound `json:"validation,omitempty"`
	// ClusterAccuracy scores the participants' choices of hypothesis
	// against their true groups (clustered protocols on the "rotated"
	// partition; nil otherwise).
	ClusterAccuracy *ClusterAccuracy `json:"cluster_accuracy,omitempty"`
	// Alone is this round alone, composed by the run's accountant at the
	// run's delta: the per-round figure comparable with the cumulative one
	// (Privacy.CentralEpsilon is the protocol's own analysis, at the
	// round's delta share).
	Alone AloneRound `json:"alone"`
}

// AloneRound is one round's release on its own, stated the way the run's
// cumulative figure is: by the run's accountant (the tightest of its
// compositions) at the run's target delta. Epsilon is +Inf for a round
// that released nothing or a run without a guarantee.
type AloneRound struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	Method  string  `json:"method"`
}

// aloneRound states round st on its own at the run's target delta.
func aloneRound(target float64, st account.Statement) (AloneRound, error) {
	a, err := account.NewAccountant(target)
	if err != nil {
		return AloneRound{}, err
	}
	sp, err := a.Plan(st, 1)
	if err != nil {
		return AloneRound{}, err
	}
	return AloneRound{Epsilon: sp.Epsilon, Delta: sp.Delta, Method: sp.Method}, nil
}

// Hypothesis is one model of a clustered protocol after a round.
type Hypothesis struct {
	// Size is the number of released vectors the analyzer's k-means put in
	// this model's cluster.
	Size int `json:"size"`
	// Chosen is the number of participants that chose this model to train
	// (the clients' private choice: a simulation diagnostic the analyzer
	// of a deployment never learns).
	Chosen int `json:"chosen"`
	// Accuracy and Loss are the model's test accuracy and loss on each test
	// group (one group unless the partition is "rotated").
	Accuracy []float64 `json:"accuracy"`
	Loss     []float64 `json:"loss"`
	// MaxLeakage and MedianLeakage are the largest and the median
	// cumulative d-privacy leakage of the clients that chose this model this
	// round (0 if none did).
	MaxLeakage    float64 `json:"max_leakage"`
	MedianLeakage float64 `json:"median_leakage"`
}

// DPrivacyRound is the d-privacy accounting of one round: the leakage of
// one participation, and the clients' cumulative leakage composed over
// their participations (group-privacy paper, Theorem 1).
type DPrivacyRound struct {
	Level            float64 `json:"level"`
	MaxCumulative    float64 `json:"max_cumulative"`
	MedianCumulative float64 `json:"median_cumulative"`
}

// Timing splits a round's time. Train (local training), Encode (clipping and
// the local randomizer's noise) and Aggregate (folding reports into the
// analyzer's aggregate) are summed over workers (CPU seconds); Clients is the
// wall-clock time of that parallel phase; Shuffle (padding, and permuting in
// the faithful path), Analyze, Evaluate and Accounting are wall-clock.
type Timing struct {
	Train      float64 `json:"train"`
	Encode     float64 `json:"encode"`
	Aggregate  float64 `json:"aggregate"`
	Clients    float64 `json:"clients_wall"`
	Shuffle    float64 `json:"shuffle"`
	Analyze    float64 `json:"analyze"`
	Evaluate   float64 `json:"evaluate"`
	Validate   float64 `json:"validate,omitempty"`
	Accounting float64 `json:"accounting"`
}

// Engine runs a federated training simulation. It is not safe for concurrent
// use; Step runs one round using all configured workers.
type Engine struct {
	cfg     Config
	proto   protocol.Protocol
	model   fl.Model
	train   *data.Dataset
	test    *data.Dataset
	trainEx fl.Examples
	testEx  fl.Examples
	groups  []int // rotation group of each client (partition "rotated")
	shards  [][]int
	budgets []protocol.Budget
	ledger  *account.Ledger
	acct    *account.Accountant // nil for non-private protocols
	plan    Plan
	halted  string // why the run stopped before its planned rounds
	charges bool
	// approxLocal: the local randomizer spends the budgets' deltas.
	approxLocal bool
	stop        func() bool // Run stops before a round when it returns true
	maxSpent    float64
	w           []float64
	round       int
	workers     int
	poisson     bool
	perRound    int
	local       fl.LocalConfig
	scale       float64
	pool        sync.Pool
	trainers    chan *worker
	hooks       Hooks
	// an is the analyzer role: it holds the global model (w, shared) and
	// the run's accountant.
	an *role.Analyzer
	// Clustered protocols: the k models (models[0] is w), each
	// participant's choice in the current round, every client's cumulative
	// d-privacy leakage and the leakage of one participation.
	clustered protocol.Clustered
	models    [][]float64
	chosen    []int
	dleak     []float64
	dlevel    float64
	// val holds the validation clients and the early-stopping state (nil
	// without Config.HoldoutClients).
	val *validation
	// noiseRMS is the root mean square, over the coordinates, of round 1's
	// estimate of an all-zero round: the noise the analyzer adds to the
	// mean update (trialRound; 0 for clustered protocols).
	noiseRMS float64
	// warnings are the pre-flight's warnings (Warnings).
	warnings []string
	// round1 is round 1's privacy statement, as planned (after
	// calibration; zero for protocols without a guarantee).
	round1 protocol.Privacy
}

// maxKeptBytes bounds the memory of the whole-report accumulator (every
// released vector kept for the analyzer, 8·d bytes each): 8 GiB, a third
// of the 24 GiB machines this project targets. A variable so that tests can
// lower it.
var maxKeptBytes float64 = 8 << 30

type worker struct {
	trainer *fl.Trainer
	update  []float64
	report  protocol.Report
	sub     fl.Examples // a client's shard, for clustered protocols' model choice
}

// Budgets resolves the clients' privacy budgets from the configuration: a
// named distribution (EpsDist), an explicit list (one per client, e.g. read
// from EpsFile by the caller), or the uniform Epsilon. Every epsilon is user
// level (a whole update in one round); every budget's delta is the round's
// share account.RoundDelta(Delta, Rounds) of the run's target delta (the
// local delta of approximate mechanisms such as ldp-gaussian and e-apes).
func Budgets(cfg Config, explicit []float64) ([]protocol.Budget, error) {
	n := cfg.Clients
	var eps []float64
	switch {
	case explicit != nil:
		if len(explicit) != n {
			return nil, checks.Invalidf("the budget file has %d epsilons but there are %d clients", len(explicit), n)
		}
		eps = explicit
	case cfg.EpsDist != "":
		var err error
		eps, err = account.Budgets(cfg.EpsDist, n, rng.Stream(cfg.Seed, rng.LabelBudget))
		if err != nil {
			return nil, fmt.Errorf("eps-dist: %w", err)
		}
	default:
		eps = make([]float64, n)
		for i := range eps {
			eps[i] = cfg.Epsilon
		}
	}
	scale := cfg.EpsScale
	if scale == 0 {
		scale = 1
	}
	out := make([]protocol.Budget, n)
	for i, e := range eps {
		e *= scale
		if err := checks.Epsilon(fmt.Sprintf("epsilon of client %d", i), e); err != nil {
			return nil, err
		}
		out[i] = protocol.Budget{Epsilon: e, Delta: account.RoundDelta(cfg.Delta, cfg.Rounds)}
	}
	return out, nil
}

// clientCount describes the clients the training set is split over.
func clientCount(cfg Config) string {
	if cfg.HoldoutClients > 0 {
		return fmt.Sprintf("%d training + %d validation clients", cfg.Clients, cfg.HoldoutClients)
	}
	return strconv.Itoa(cfg.Clients)
}

// New builds an engine for cfg on the given data. budgets may be nil (they
// are then resolved by Budgets(cfg, nil)).
func New(cfg Config, split data.Split, budgets []protocol.Budget) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if split.Train == nil || split.Test == nil || split.Train.Len() == 0 || split.Test.Len() == 0 {
		return nil, checks.Invalidf("dataset %q has an empty training or test set", cfg.Dataset)
	}
	model, err := fl.NewModel(cfg.Model, split.Train.Features, split.Train.Classes)
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, model: model, train: split.Train, test: split.Test}
	e.trainEx = fl.Examples{X: split.Train.X, Y: split.Train.Y, Features: split.Train.Features}
	e.testEx = fl.Examples{X: split.Test.X, Y: split.Test.Y, Features: split.Test.Features}
	if budgets == nil {
		if budgets, err = Budgets(cfg, nil); err != nil {
			return nil, err
		}
	}
	if len(budgets) != cfg.Clients {
		return nil, checks.Invalidf("%d budgets for %d clients", len(budgets), cfg.Clients)
	}
	e.budgets = budgets
	if e.ledger, err = newLedger(cfg); err != nil {
		return nil, err
	}

	part, err := PartitionData(cfg, split)
	if err != nil {
		return nil, err
	}
	e.shards, e.groups, e.trainEx, e.testEx = part.Shards, part.Groups, part.Train, part.Test
	if err := e.splitHoldout(); err != nil {
		return nil, err
	}

	e.perRound = cfg.ClientsPerRound
	if e.perRound == 0 {
		e.perRound = cfg.Clients
	}
	if cfg.Protocol == "ldp-min" {
		// LDP-Min perturbs every client at the population's minimum budget;
		// unless the option is given, derive it from the budgets.
		if _, ok := cfg.Options["min-epsilon"]; !ok {
			lo := math.Inf(1)
			for _, b := range budgets {
				lo = math.Min(lo, b.Epsilon)
			}
			opts := maps.Clone(cfg.Options)
			if opts == nil {
				opts = map[string]float64{}
			}
			opts["min-epsilon"] = lo
			e.cfg.Options = opts
		}
	}
	if e.proto, err = e.buildProtocol(1); err != nil {
		return nil, err
	}
	if ps, ok := e.proto.(protocol.PoissonSampler); ok && ps.PoissonSampling() {
		e.poisson = true
	}

	e.local = fl.LocalConfig{Epochs: cfg.LocalEpochs, Steps: cfg.LocalSteps, Batch: cfg.Batch, LR: cfg.LR, Mu: cfg.Mu}
	e.scale = cfg.ServerLR
	if cfg.Mode == "fedsgd" {
		e.local.Mode = fl.FedSGD
		e.scale = -cfg.ServerLR * cfg.LR
	} else {
		e.local.Mode = fl.FedAvg
	}
	if err := e.local.Validate(); err != nil {
		return nil, err
	}

	e.workers = cfg.Workers
	if e.workers == 0 {
		e.workers = goruntime.GOMAXPROCS(0)
	}
	d := model.Dim()
	e.w = make([]float64, d)
	model.Init(rng.Stream(cfg.Seed, rng.LabelInit), e.w)
	e.trainers = make(chan *worker, e.workers)
	for i := 0; i < e.workers; i++ {
		e.trainers <- &worker{trainer: fl.NewTrainer(model), update: make([]float64, d)}
	}
	if c, ok := e.proto.(protocol.Clustered); ok {
		e.clustered = c
		if need := float64(e.perRound) * float64(d) * 8; need > maxKeptBytes {
			return nil, checks.Invalidf("%s keeps every released model for its k-means: %d clients per round × %d parameters need %.1f GiB, more than the %.1f GiB this engine allows; lower --clients-per-round or use a smaller model",
				cfg.Protocol, e.perRound, d, need/(1<<30), maxKeptBytes/(1<<30))
		}
		e.models = e.initHypotheses(c.Hypotheses())
		e.dleak = make([]float64, cfg.Clients)
	}
	e.pool.New = func() any {
		agg := protocol.NewAggregate(d)
		if e.clustered != nil {
			agg.KeepVectors()
		}
		return agg
	}

	// Pre-flight: validate the protocol against the first round's shape,
	// calibrate the budgets to the privacy target, check that the planned
	// rounds compose within the run's delta, and try round 1's mechanisms
	// once on zero updates (trialRound), so that anything that would fail
	// in round k fails before any training.
	if err := e.preflight(); err != nil {
		return nil, err
	}
	if err := e.trialRound(); err != nil {
		// Zero updates and the run's own parameters: whatever failed, the
		// parameters are to blame.
		if !IsUsageError(err) {
			err = fmt.Errorf("%w: %w", checks.ErrInvalid, err)
		}
		return nil, fmt.Errorf("pre-flight: round 1 tried once before anything is written: %w", err)
	}
	e.warn(e.round1)
	if cfg.ClientCap > 0 && !e.charges && !(e.dlevel > 0 && !math.IsInf(e.dlevel, 1)) {
		return nil, checks.Invalidf("client-cap needs a protocol with a local guarantee; %s gives clients none", cfg.Protocol)
	}
	ac := role.AnalyzerConfig{Protocol: e.proto, Model: e.w, ServerLR: e.scale, Accountant: e.acct}
	if e.models != nil {
		ac.Hypotheses = e.models[1:]
	}
	if e.an, err = role.NewAnalyzer(ac); err != nil {
		return nil, err
	}
	return e, nil
}

// Groups returns each client's rotation group (nil unless the partition is
// "rotated").
func (e *Engine) Groups() []int { return e.groups }

// Protocol returns the protocol the engine runs.
func (e *Engine) Protocol() protocol.Protocol { return e.proto }

// Model returns the model architecture.
func (e *Engine) Model() fl.Model { return e.model }

// Weights returns the current global model (not a copy: do not modify).
func (e *Engine) Weights() []float64 { return e.w }

// Ledger returns the per-client privacy ledger (every release charged so
// far).
func (e *Engine) Ledger() *account.Ledger { return e.ledger }

// Round returns the number of completed rounds.
func (e *Engine) Round() int { return e.round }

// Workers is the number of worker goroutines.
func (e *Engine) Workers() int { return e.workers }

func (e *Engine) shape(t int) protocol.Shape {
	return protocol.Shape{Round: t, Dim: e.model.Dim(), Population: e.cfg.Clients, Participants: e.perRound}
}

// Sample returns the participants of round t in increasing order: a uniform
// n-subset of the population, or under Poisson sampling each client
// independently with probability n/N.
func (e *Engine) Sample(t int) []int {
	r := rng.Stream(e.cfg.Seed, rng.LabelSampling, uint64(t))
	N, n := e.cfg.Clients, e.perRound
	if e.poisson {
		q := float64(n) / float64(N)
		var out []int
		for i := 0; i < N; i++ {
			if r.Float64() < q {
				out = append(out, i)
			}
		}
		return out
	}
	return SampleFixed(r, N, n)
}

// SampleFixed draws a uniform m-subset of [0, n) without replacement, in
// increasing order, from r: a partial Fisher-Yates shuffle over a lazily
// materialised permutation. When m >= n every index is returned and r is
// not used. The engine's fixed-size client sampling (Sample) and a
// deployment's shuffler draw their samples with it, so the same stream
// gives the same sample.
func SampleFixed(r *rand.Rand, n, m int) []int {
	if m >= n {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	swapped := map[int]int{}
	get := func(i int) int {
		if v, ok := swapped[i]; ok {
			return v
		}
		return i
	}
	out := make([]int, m)
	for i := 0; i < m; i++ {
		j := i + r.IntN(n-i)
		vi, vj := get(i), get(j)
		swapped[j] = vi
		out[i] = vj
	}
	slices.Sort(out)
	return out
}

// Step runs one round and returns its results.
func (e *Engine) Step() (RoundResult, error) {
	start := time.Now()
	t := e.round + 1
	s := e.shape(t)
	parts := e.Sample(t)
	clients := make([]*role.Client, len(parts))
	for i, c := range parts {
		clients[i] = e.client(c)
	}
	res := RoundResult{Round: t}
	sampled := len(parts)
	if !e.poisson {
		s.Sampled = sampled
	}

	// The accountant's statement does not depend on the data, so it is made
	// before anything is released. Each participant's ledger is consulted
	// first: a release that would exceed the client's cap is refused and the
	// client sits the round out. The statement is then made for the clients
	// who really report (fewer reporters, weaker amplification) at the true
	// sampling rate.
	t0 := time.Now()
	var err error
	if e.charges {
		kept := parts[:0:0]
		var keptC []*role.Client
		for i, c := range parts {
			err := clients[i].Check(t)
			switch {
			case err == nil:
				kept = append(kept, c)
				keptC = append(keptC, clients[i])
			case errors.Is(err, account.ErrCapExceeded):
				res.Refused++
			default:
				return res, fmt.Errorf("round %d: ledger: %w", t, err)
			}
		}
		parts, clients = kept, keptC
	}
	if e.dlevel > 0 && e.cfg.ClientCap > 0 {
		// d-privacy: a client declines a release that would take its
		// cumulative leakage past its cap (the paper decides right before
		// releasing).
		kept := parts[:0:0]
		var keptC []*role.Client
		for i, c := range parts {
			if !account.Fits(e.dleak[c], e.dlevel, e.cfg.ClientCap) {
				res.Refused++
				continue
			}
			kept = append(kept, c)
			keptC = append(keptC, clients[i])
		}
		parts, clients = kept, keptC
	}
	budgets := make([]protocol.Budget, len(clients))
	for i, cl := range clients {
		budgets[i] = cl.Budget()
	}
	res.Participants = len(parts)
	// Under fixed-size sampling the round's shape has the clients that
	// really report. Poisson-sampled protocols keep the expected count
	// (dp-central's fixed denominator) and release noise even when nobody
	// takes part.
	release := e.poisson || len(parts) > 0
	if !e.poisson && len(parts) > 0 {
		s.Participants = len(parts)
	}
	if release {
		statBudgets := budgets
		if len(statBudgets) == 0 {
			statBudgets = e.budgets // Poisson round with nobody sampled
		}
		if err := e.proto.Check(s, statBudgets); err != nil {
			return res, fmt.Errorf("round %d: %w", t, err)
		}
		if res.Privacy, err = e.proto.Account(s, statBudgets); err != nil {
			return res, fmt.Errorf("round %d: accountant: %w", t, err)
		}
	}
	var st account.Statement
	if e.acct != nil {
		st = statement(s, sampled, len(parts), release, res.Privacy)
		if release && e.cfg.TargetEpsilon > 0 {
			// The run's target is a hard limit: a round that would take the
			// cumulative epsilon past it is not released.
			sp, past, err := e.acct.PastTarget(st, e.cfg.TargetEpsilon)
			if err != nil {
				return res, fmt.Errorf("round %d: accountant: %w", t, err)
			}
			if past {
				release = false
				st.Released = false
				e.halted = fmt.Sprintf("round %d would take the cumulative epsilon to %.4g, past the target %g: stopped", t, sp.Epsilon, e.cfg.TargetEpsilon)
			}
		}
	}
	if release && e.charges {
		// A charge is recorded before the report exists.
		for i, cl := range clients {
			if err := cl.Charge(t); err != nil {
				return res, fmt.Errorf("round %d: ledger: %w", t, err)
			}
			sp, err := e.ledger.Spent(strconv.Itoa(parts[i]))
			if err != nil {
				return res, fmt.Errorf("round %d: ledger: %w", t, err)
			}
			e.maxSpent = math.Max(e.maxSpent, sp.Epsilon)
		}
	}
	skip := !release
	res.Timing.Accounting = time.Since(t0).Seconds()

	if err := e.an.Open(s); err != nil {
		return res, fmt.Errorf("round %d: %w", t, err)
	}
	if !skip {
		if e.clustered != nil {
			e.chosen = make([]int, len(parts))
		}
		if e.cfg.Faithful {
			err = e.collectFaithful(t, s, parts, clients, &res.Timing)
		} else {
			err = e.collectStreaming(t, s, parts, clients, &res.Timing)
		}
		if err != nil {
			return res, fmt.Errorf("round %d: %w", t, err)
		}
		agg := e.an.Aggregate()
		res.Reports, res.Dummies = agg.Reports, agg.Dummies

		t0 = time.Now()
		if e.acct == nil {
			st = account.Statement{Round: t, Released: true}
		}
		if _, err := e.an.Release(e.mechStream(rng.LabelAnalyzer, uint64(t)), st); err != nil {
			return res, fmt.Errorf("round %d: analyzer: %w", t, err)
		}
		res.Timing.Analyze = time.Since(t0).Seconds()
		if e.clustered != nil {
			e.recordClusters(&res, parts)
			ca, err := e.clusterAccuracy(parts)
			if err != nil {
				return res, fmt.Errorf("round %d: cluster accuracy: %w", t, err)
			}
			res.ClusterAccuracy = ca
		}
	} else {
		if e.acct == nil {
			st = account.Statement{Round: t}
		}
		if err := e.an.Void(st); err != nil {
			return res, fmt.Errorf("round %d: %w", t, err)
		}
		loc := res.Privacy
		res.Privacy = protocol.Privacy{Private: loc.Private, LocalEpsilon: loc.LocalEpsilon, LocalCoordEpsilon: loc.LocalCoordEpsilon}
		res.Privacy.Bound = "no release (every sampled client refused: cap reached)"
		if e.halted != "" {
			res.Privacy.Bound = "no release (" + e.halted + ")"
		}
		res.Participants = 0
	}
	if e.acct != nil {
		sp := e.acct.Spent()
		res.Privacy.Private = true
		res.Privacy.CumulativeEpsilon, res.Privacy.CumulativeDelta, res.Privacy.CumulativeMethod = sp.Epsilon, sp.Delta, sp.Method
		res.Privacy.CumulativeApproximate = sp.Approximate
		res.Alone = AloneRound{Epsilon: math.Inf(1)}
		if st.Released {
			if res.Alone, err = aloneRound(e.cfg.Delta, st); err != nil {
				return res, fmt.Errorf("round %d: accountant: %w", t, err)
			}
		}
	} else {
		res.Privacy.CumulativeEpsilon = math.Inf(1)
		res.Alone = AloneRound{Epsilon: math.Inf(1)}
	}

	if e.dlevel > 0 {
		res.DPrivacy = e.dprivacyRound()
	}
	t0 = time.Now()
	if e.clustered != nil {
		err = e.evaluateClustered(&res)
	} else {
		res.TestAccuracy, res.TestLoss, err = fl.Evaluate(e.model, e.w, e.testEx, e.workers)
	}
	if err != nil {
		return res, fmt.Errorf("round %d: evaluation: %w", t, err)
	}
	res.Timing.Evaluate = time.Since(t0).Seconds()
	t0 = time.Now()
	if err := e.validate(t, &res); err != nil {
		return res, fmt.Errorf("round %d: %w", t, err)
	}
	res.Timing.Validate = time.Since(t0).Seconds()

	res.MaxClientEpsilon = e.maxSpent
	if !e.charges {
		res.MaxClientEpsilon = math.Inf(1)
	}

	e.round = t
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// client returns the client role of client c for one round: its budget,
// the run's ledger (when the protocol charges clients) and whether its
// releases spend their local delta (approximate local randomizers). The
// role is per round: its state (charged, encoded) guards one round, and
// the ledger carries everything across rounds.
func (e *Engine) client(c int) *role.Client {
	cc := role.ClientConfig{ID: strconv.Itoa(c), Budget: e.budgets[c], Protocol: e.proto, LocalDelta: e.approxLocal}
	if e.charges {
		cc.Ledger = e.ledger
	}
	return role.NewClient(cc)
}

// clientReport runs one client's local update and encoding into w.report.
func (e *Engine) clientReport(w *worker, t int, s protocol.Shape, slot, client int, cl *role.Client, trainNS, encodeNS *atomic.Int64) error {
	t0 := time.Now()
	rt := rng.Stream(e.cfg.Seed, rng.LabelTraining, uint64(t), uint64(client))
	base := e.w
	if e.clustered != nil {
		// The client receives all k models and trains the one with the
		// lowest loss on its own data (ties: the lowest index).
		h, err := e.chooseHypothesis(w, e.shards[client])
		if err != nil {
			return fmt.Errorf("client %d: choosing a model: %w", client, err)
		}
		e.chosen[slot], base = h, e.models[h]
	}
	if _, err := w.trainer.LocalUpdate(w.update, rt, base, e.trainEx, e.shards[client], e.local); err != nil {
		return fmt.Errorf("client %d: local update: %w", client, err)
	}
	t1 := time.Now()
	if e.hooks.Update != nil {
		e.hooks.Update(t, client, w.update)
	}
	rn := e.mechStream(rng.LabelNoise, uint64(t), uint64(client))
	if e.clustered != nil {
		if err := cl.EncodeModel(rn, s, base, w.update, &w.report); err != nil {
			return err
		}
	} else if err := cl.Encode(rn, s, w.update, &w.report); err != nil {
		return err
	}
	if e.hooks.Report != nil {
		e.hooks.Report(t, client, &w.report)
	}
	trainNS.Add(int64(t1.Sub(t0)))
	encodeNS.Add(int64(time.Since(t1)))
	return nil
}

// clientTimes accumulates the CPU time of the client phase over workers.
type clientTimes struct {
	train, encode, aggregate atomic.Int64
}

func (c *clientTimes) into(tm *Timing) {
	tm.Train = float64(c.train.Load()) / 1e9
	tm.Encode = float64(c.encode.Load()) / 1e9
	tm.Aggregate = float64(c.aggregate.Load()) / 1e9
}

// runClients runs every participant's local update and encoding on the
// workers. Participants are cut into blocks of blockSize consecutive ones;
// workers take blocks in order, and at most 2·workers blocks are in flight.
// For each block, open returns the block's state, fold is called after each
// participant's report is in the worker's buffer (on the worker's
// goroutine), and closeBlock is called for the blocks strictly in block
// order, under a lock — so what it does is deterministic whatever the number of
// workers. The first error stops the phase.
func (e *Engine) runClients(t int, s protocol.Shape, parts []int, clients []*role.Client, ct *clientTimes,
	open func() any, fold func(st any, w *worker, i int) error, closeBlock func(st any) error) error {
	nb := (len(parts) + blockSize - 1) / blockSize
	window := 2 * e.workers
	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		next     int
		closed   int
		pending  = map[int]any{}
		firstErr error
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
		cond.Broadcast()
	}
	for wi := 0; wi < e.workers; wi++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := <-e.trainers
			defer func() { e.trainers <- w }()
			for {
				mu.Lock()
				for firstErr == nil && next < nb && next >= closed+window {
					cond.Wait()
				}
				if firstErr != nil || next >= nb {
					mu.Unlock()
					return
				}
				b := next
				next++
				mu.Unlock()

				st := open()
				var err error
				for i := b * blockSize; i < min((b+1)*blockSize, len(parts)); i++ {
					if err = e.clientReport(w, t, s, i, parts[i], clients[i], &ct.train, &ct.encode); err != nil {
						break
					}
					if err = fold(st, w, i); err != nil {
						err = fmt.Errorf("client %d: report rejected: %w", parts[i], err)
						break
					}
				}
				mu.Lock()
				if err != nil {
					fail(err)
					mu.Unlock()
					return
				}
				pending[b] = st
				for {
					p, ok := pending[closed]
					if !ok {
						break
					}
					delete(pending, closed)
					closed++
					if err := closeBlock(p); err != nil {
						fail(err)
					}
				}
				cond.Broadcast()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// collectStreaming runs the clients in parallel, folding their reports into
// per-block aggregates that the analyzer merges in block order
// (deterministic whatever the number of workers), then lets the shuffler
// pad from the per-coordinate counts. The shuffler's permutation is
// skipped: the analyzer's aggregate does not depend on the order of
// reports. Memory is O(workers·d), not O(n·d).
func (e *Engine) collectStreaming(t int, s protocol.Shape, parts []int, clients []*role.Client, tm *Timing) error {
	start := time.Now()
	var ct clientTimes
	err := e.runClients(t, s, parts, clients, &ct,
		func() any {
			agg := e.pool.Get().(*protocol.Aggregate)
			agg.Reset()
			return agg
		},
		func(st any, w *worker, _ int) error {
			t0 := time.Now()
			err := st.(*protocol.Aggregate).AddReport(&w.report)
			ct.aggregate.Add(int64(time.Since(t0)))
			return err
		},
		func(st any) error {
			agg := st.(*protocol.Aggregate)
			defer e.pool.Put(agg)
			return e.an.Merge(agg)
		})
	if err != nil {
		return err
	}
	ct.into(tm)
	tm.Clients = time.Since(start).Seconds()

	t0 := time.Now()
	sh, err := role.NewShuffler[role.Plain](e.proto, s, e.minReports())
	if err != nil {
		return err
	}
	var derr error
	emit := func(j int, v float64) {
		if err := e.an.AddDummy(j, v); err != nil && derr == nil {
			derr = err
		}
	}
	counts := slices.Clone(e.an.Aggregate().Count)
	if err := sh.CloseCounts(e.mechStream(rng.LabelShuffle, uint64(t), 0), len(parts), counts, emit); err != nil {
		return err
	}
	if derr != nil {
		return fmt.Errorf("shuffler: padding: %w", derr)
	}
	tm.Shuffle = time.Since(t0).Seconds()
	return nil
}

// minReports is the shuffler's minimum number of reports for a round to be
// released: one, except under Poisson sampling, where central DP adds its
// noise whoever takes part.
func (e *Engine) minReports() int {
	if e.poisson {
		return 0
	}
	return 1
}

// collectFaithful runs the clients in parallel and keeps every report; each
// client then submits its messages to the shuffler role (in participant
// order), which pads and permutes them, and the analyzer role absorbs the
// shuffled batch — the data flow of a deployment, in the clear. Memory is
// O(n·d).
func (e *Engine) collectFaithful(t int, s protocol.Shape, parts []int, clients []*role.Client, tm *Timing) error {
	start := time.Now()
	reports := make([]protocol.Report, len(parts))
	var ct clientTimes
	err := e.runClients(t, s, parts, clients, &ct,
		func() any { return nil },
		func(_ any, w *worker, i int) error {
			// Each participant owns its slot: no two workers write the same one.
			rep := &reports[i]
			rep.Values = slices.Clone(w.report.Values)
			if w.report.Coords != nil {
				rep.Coords = slices.Clone(w.report.Coords)
			}
			rep.Meta = slices.Clone(w.report.Meta)
			return nil
		},
		func(any) error { return nil })
	if err != nil {
		return err
	}
	ct.into(tm)
	tm.Clients = time.Since(start).Seconds()

	t0 := time.Now()
	mode := e.proto.Mode()
	sh, err := role.NewShuffler[role.Plain](e.proto, s, e.minReports())
	if err != nil {
		return err
	}
	var msgs []role.Message[role.Plain]
	for i := range reports {
		msgs = role.Messages(mode, &reports[i], msgs[:0])
		if err := sh.Accept(clients[i].ID(), msgs); err != nil {
			return fmt.Errorf("client %d: %w", parts[i], err)
		}
		reports[i] = protocol.Report{} // the shuffler holds the values now
	}
	batch, err := sh.Close(e.mechStream(rng.LabelShuffle, uint64(t), 0), e.mechStream(rng.LabelShuffle, uint64(t), 1), role.PlainDummy(mode))
	if err != nil {
		return err
	}
	tm.Shuffle = time.Since(t0).Seconds()
	t0 = time.Now()
	if err := e.an.Absorb(batch); err != nil {
		return err
	}
	tm.Aggregate = time.Since(t0).Seconds()
	return nil
}

// Summary is the outcome of a whole run.
type Summary struct {
	Rounds           int              `json:"rounds"`
	FinalAccuracy    float64          `json:"final_test_accuracy"`
	FinalLoss        float64          `json:"final_test_loss"`
	BestAccuracy     float64          `json:"best_test_accuracy"`
	Privacy          protocol.Privacy `json:"final_privacy"`
	MaxClientEpsilon float64          `json:"max_client_epsilon"`
	Seconds          float64          `json:"seconds"`
	Dim              int              `json:"dim"`
	Workers          int              `json:"workers"`
	TrainSamples     int              `json:"train_samples"`
	TestSamples      int              `json:"test_samples"`
	// Plan is the pre-flight privacy statement (planned rounds, calibration).
	Plan Plan `json:"plan"`
	// Halted says why the run stopped before its planned rounds ("" if not).
	Halted string `json:"halted,omitempty"`
	// Warnings are the pre-flight's warnings (Engine.Warnings).
	Warnings []string `json:"warnings,omitempty"`
	// Alone is the last round alone at the run's delta (RoundResult.Alone).
	Alone AloneRound `json:"alone"`
	// Validation is the early-stopping outcome (nil without validation
	// clients).
	Validation *ValidationSummary `json:"validation,omitempty"`
	// ClusterAccuracy is the cluster-assignment accuracy of the last round
	// that has one (nil if none has).
	ClusterAccuracy *ClusterAccuracy `json:"cluster_accuracy,omitempty"`
}

// Run executes the remaining rounds, calling observe after each (observe may
// be nil). It stops at the first error.
func (e *Engine) Run(observe func(RoundResult)) (Summary, error) {
	start := time.Now()
	sum := Summary{Dim: e.model.Dim(), Workers: e.workers, TrainSamples: e.train.Len(), TestSamples: e.test.Len()}
	for e.round < e.cfg.Rounds && e.halted == "" {
		if e.stop != nil && e.stop() {
			break
		}
		res, err := e.Step()
		if err != nil {
			return sum, err
		}
		sum.Rounds = res.Round
		sum.FinalAccuracy, sum.FinalLoss = res.TestAccuracy, res.TestLoss
		sum.BestAccuracy = math.Max(sum.BestAccuracy, res.TestAccuracy)
		sum.Privacy = res.Privacy
		sum.MaxClientEpsilon = res.MaxClientEpsilon
		if res.ClusterAccuracy != nil {
			sum.ClusterAccuracy = res.ClusterAccuracy
		}
		sum.Alone = res.Alone
		if observe != nil {
			observe(res)
		}
	}
	sum.Plan, sum.Halted, sum.Warnings = e.plan, e.halted, e.warnings
	sum.Validation = e.validationSummary()
	sum.Seconds = time.Since(start).Seconds()
	return sum, nil
}

// IsUsageError reports whether err was caused by invalid input (a bad
// parameter or data file) rather than an internal failure.
func IsUsageError(err error) bool {
	return errors.Is(err, checks.ErrInvalid) || errors.Is(err, data.ErrData)
}
