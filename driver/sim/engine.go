package sim

import (
	"errors"
	"fmt"
	"math"
	goruntime "runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
)

// blockSize is the number of consecutive participants whose reports one
// worker folds into one partial aggregate. Partial aggregates are merged in
// block order, so the floating-point result does not depend on the number of
// workers. It is a constant, not a tuning knob: changing it changes results.
const blockSize = 16

// Engine runs a federated training simulation. It is not safe for concurrent
// use; Step runs one round using all configured workers.
type Engine struct {
	// satOut counts the round's participants whose external trainer
	// failed (sitOut); satOutFirst and satOutErr are the lowest such
	// client and its failure.
	satOutMu    sync.Mutex
	satOut      int
	satOutFirst int
	satOutErr   string

	cfg     round.Config
	pre     *round.Prepared // the run as the pre-flight built it
	proto   protocol.Protocol
	model   fl.Model
	train   *data.Dataset
	test    *data.Dataset
	trainEx fl.Examples
	testEx  fl.Examples
	groups  []int           // rotation group of each client (partition "rotated")
	part    round.Partition // the clients' shards (Shard(c); drawn on demand for "sampled")
	nshards int             // training clients with shards (validation clients split off)
	budgets round.ClientBudgets
	ledger  *account.Ledger
	acct    *account.Accountant // nil for non-private protocols
	plan    round.Plan
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
	// given are the budgets New was given (before calibration), and
	// runner, when set, what runs the clients instead of the engine's
	// goroutines (SetRunner; package driver/sim/remote).
	given  round.ClientBudgets
	runner Runner
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
	ext     Trainer // SetTrainers' trainer (nil: trainer)
	update  []float64
	report  protocol.Report
	sub     fl.Examples // a client's shard, for clustered protocols' model choice
	// shard holds the drawn shard of the client being trained (partition
	// "sampled"): one per worker, not one per client.
	shard []int
}

// New builds an engine for cfg on the given data. budgets may be nil (they
// are then resolved by Budgets(cfg, nil)). Budgets that are all the same
// are held as one (round.ListBudgets): the caller's list is not kept.
func New(cfg round.Config, split data.Split, budgets []protocol.Budget) (*Engine, error) {
	if budgets == nil {
		return newEngine(cfg, split, round.ClientBudgets{}, false)
	}
	return newEngine(cfg, split, round.ListBudgets(budgets), true)
}

// NewBudgets is New with the budgets held compactly (round.ResolveBudgets).
func NewBudgets(cfg round.Config, split data.Split, budgets round.ClientBudgets) (*Engine, error) {
	return newEngine(cfg, split, budgets, true)
}

// newEngine is New; with given unset the budgets are resolved from cfg.
func newEngine(cfg round.Config, split data.Split, budgets round.ClientBudgets, given bool) (*Engine, error) {
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
	if !given {
		if budgets, err = round.ResolveBudgets(cfg, nil); err != nil {
			return nil, err
		}
	}
	if budgets.Len() != cfg.Clients {
		return nil, checks.Invalidf("%d budgets for %d clients", budgets.Len(), cfg.Clients)
	}
	e.budgets, e.given = budgets, budgets
	if e.ledger, err = newLedger(cfg); err != nil {
		return nil, err
	}

	part, err := round.PartitionData(cfg, split)
	if err != nil {
		return nil, err
	}
	e.part, e.nshards, e.groups, e.trainEx, e.testEx = part, part.Clients(), part.Groups, part.Train, part.Test
	if err := e.splitHoldout(); err != nil {
		return nil, err
	}

	if e.pre, err = round.PrepareBudgets(cfg, model, budgets); err != nil {
		return nil, err
	}
	e.cfg, e.proto, e.perRound, e.poisson = e.pre.Config, e.pre.Proto, e.pre.PerRound, e.pre.Poisson

	e.local, e.scale = round.Training(cfg)
	if err := e.local.Validate(); err != nil {
		return nil, err
	}

	if err := e.setWorkers(); err != nil {
		return nil, err
	}
	if err := e.preflight(); err != nil {
		return nil, err
	}
	return e, nil
}

// setWorkers builds the workers' trainers and aggregates and the run's
// initial model(s).
func (e *Engine) setWorkers() error {
	e.workers = e.cfg.Workers
	if e.workers == 0 {
		e.workers = goruntime.GOMAXPROCS(0)
	}
	d := e.model.Dim()
	k := 1
	if c, ok := e.proto.(protocol.Clustered); ok {
		k = c.Hypotheses()
	}
	ms := round.InitModels(e.cfg, e.model, k)
	e.w = ms[0]
	e.trainers = make(chan *worker, e.workers)
	for i := 0; i < e.workers; i++ {
		e.trainers <- &worker{trainer: fl.NewTrainer(e.model), update: make([]float64, d)}
	}
	if c, ok := e.proto.(protocol.Clustered); ok {
		e.clustered = c
		if need := float64(e.perRound) * float64(d) * 8; need > maxKeptBytes {
			return checks.Invalidf("%s keeps every released model for its k-means: %d clients per round × %d parameters need %.1f GiB, more than the %.1f GiB this engine allows; lower --clients-per-round or use a smaller model",
				e.cfg.Protocol, e.perRound, d, need/(1<<30), maxKeptBytes/(1<<30))
		}
		e.models = ms
		e.dleak = make([]float64, e.cfg.Clients)
	}
	e.pool.New = func() any {
		agg := protocol.NewAggregate(d)
		if e.clustered != nil {
			agg.KeepVectors()
		}
		return agg
	}

	return nil
}

// preflight runs the pre-flight and builds the analyzer machine on the
// calibrated protocol.
func (e *Engine) preflight() error {
	// Pre-flight: validate the protocol against the first round's shape,
	// calibrate the budgets to the privacy target, check that the planned
	// rounds compose within the run's delta, and try round 1's mechanisms
	// once on zero updates (trialRound), so that anything that would fail
	// in round k fails before any training.
	if err := e.pre.Preflight(); err != nil {
		return err
	}
	p := e.pre
	e.proto, e.budgets, e.plan, e.acct, e.round1 = p.Proto, p.ClientBudgets, p.Plan, p.Accountant, p.Round1
	e.charges, e.approxLocal, e.dlevel = p.Charges, p.LocalDelta, p.DLevel
	if err := e.trialRound(); err != nil {
		// Zero updates and the run's own parameters: whatever failed, the
		// parameters are to blame.
		if !IsUsageError(err) {
			err = fmt.Errorf("%w: %w", checks.ErrInvalid, err)
		}
		return fmt.Errorf("pre-flight: round 1 tried once before anything is written: %w", err)
	}
	e.warn(e.round1)
	ac := role.AnalyzerConfig{Protocol: e.proto, Model: e.w, ServerLR: e.scale, Accountant: e.acct, TargetEpsilon: e.cfg.TargetEpsilon}
	if e.models != nil {
		ac.Hypotheses = e.models[1:]
	}
	var err error
	if e.an, err = role.NewAnalyzer(ac); err != nil {
		return err
	}
	return nil
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

func (e *Engine) shape(t int) protocol.Shape { return e.pre.Shape(t) }

// Sample returns the participants of round t in increasing order
// (round.Prepared.Sample).
func (e *Engine) Sample(t int) []int { return e.pre.Sample(t) }

// participants is Sample held compactly (round.Prepared.Participants).
func (e *Engine) participants(t int) round.Participants { return e.pre.Participants(t) }

// Step runs one round and returns its results: it samples the round's
// clients, lets their ledgers refuse the round, hands the facts to the
// analyzer machine (which decides release or void), charges and runs the
// clients that report, and evaluates the model.
func (e *Engine) Step() (round.RoundResult, error) {
	start := time.Now()
	t := e.round + 1
	s := e.shape(t)
	parts := e.participants(t)
	res := round.RoundResult{Round: t}
	sampled := parts.Len()
	if !e.poisson {
		s.Sampled = sampled
	}

	// The statement does not depend on the data, so the analyzer decides
	// the round before anything is released, for the clients who really
	// report (fewer reporters, weaker amplification) at the true sampling
	// rate. Under fixed-size sampling the round's shape has the clients
	// that report; Poisson-sampled protocols keep the expected count
	// (dp-central's fixed denominator) and release noise even when nobody
	// takes part.
	t0 := time.Now()
	parts, err := e.admit(t, parts, &res)
	if err != nil {
		return res, err
	}
	if !e.poisson && parts.Len() > 0 {
		s.Participants = parts.Len()
	}
	f := role.Facts{Shape: s, Sampled: sampled, Reporters: parts.Len(), MinReports: e.minReports()}
	if parts.Len() > 0 {
		f.Budgets = e.budgets.Of(parts)
	} else {
		f.Budgets = e.budgets.Slice() // Poisson round with nobody sampled
	}
	rd, err := e.an.Open(f) // its errors name the round
	if err != nil {
		return res, err
	}
	f.Budgets = nil // the statement is made: the list is garbage
	res.Privacy = rd.Privacy
	res.Timing.Accounting = time.Since(t0).Seconds()
	if rd.Accepting {
		e.satOut = 0
		rd, err = e.release(t, s, parts, &res)
		if e.satOut > 0 {
			res.SatOut, res.TrainerError = e.satOut, e.satOutErr
			res.Participants -= e.satOut
		}
		if err != nil {
			return res, err
		}
		if rd.Released {
			// Close's statement: Open's, or the one Close made again from
			// the counts it opened (fewer reports than Open counted).
			res.Privacy = rd.Privacy
		}
	} else {
		e.voided(rd, &res)
	}
	if err := e.statePrivacy(rd, &res); err != nil {
		return res, fmt.Errorf("round %d: accountant: %w", t, err)
	}
	if err := e.evaluate(t, &res); err != nil {
		return res, err
	}
	e.round = t
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// admit keeps the clients of round t's sample whose ledger admits the
// round: a release that would exceed a client's cap (or, for d-privacy,
// take its cumulative leakage past the cap: the paper decides right before
// releasing) is refused and the client sits the round out (res.Refused
// counts them). When nobody can be refused (no ledger, no cap) the sample
// itself is returned, and a list of the kept clients is made only from the
// first refusal on: the round keeps nothing per client it need not.
func (e *Engine) admit(t int, parts round.Participants, res *round.RoundResult) (round.Participants, error) {
	dcap := e.dlevel > 0 && e.cfg.ClientCap > 0
	if !e.charges && !dcap {
		res.Participants = parts.Len()
		return parts, nil
	}
	var kept []int // nil until a client is refused
	for i := range parts.Len() {
		c := parts.At(i)
		ok := true
		if e.charges {
			err := e.client(c).Check(t)
			switch {
			case errors.Is(err, account.ErrCapExceeded):
				ok = false
			case err != nil:
				return round.Participants{}, fmt.Errorf("round %d: ledger: %w", t, err)
			}
		}
		if ok && dcap && !account.Fits(e.dleak[c], e.dlevel, e.cfg.ClientCap) {
			ok = false
		}
		switch {
		case !ok && kept == nil:
			kept = parts.Block(0, i)
			res.Refused++
		case !ok:
			res.Refused++
		case kept != nil:
			kept = append(kept, c)
		}
	}
	if kept != nil {
		parts = round.ParticipantList(kept)
	}
	res.Participants = parts.Len()
	return parts, nil
}

// advance makes the releases of one block's reports durable, in the
// block's order, and confirms each to the client machine that staged it
// (role.Client.Advance): only then may the block's reports reach the
// analyzer. A machine with no ledger (the protocol charges nothing) only
// closes its stage.
func (e *Engine) advance(t int, ms []role.Client, rds []role.ClientReady) error {
	for j := range ms {
		rd := rds[j]
		if rd.Round == 0 {
			continue // the client sat the round out (sitOut)
		}
		if rd.Charge {
			if err := e.chargeOne(t, rd.Release); err != nil {
				return err
			}
		}
		if err := ms[j].Advance(rd); err != nil {
			return fmt.Errorf("round %d: %w", t, err)
		}
	}
	return nil
}

// chargeRemote makes durable the releases of a block whose reports a
// remote worker's client machines staged (those hold no ledger: the
// ledger is the coordinator's): the block's partial aggregate is absorbed
// only after this returns nil.
func (e *Engine) chargeRemote(t int, clients []int) error {
	if !e.charges {
		return nil
	}
	for _, c := range clients {
		if err := e.chargeOne(t, e.client(c).Release(t)); err != nil {
			return err
		}
	}
	return nil
}

// chargeOne records rel in the run's ledger (durable when it returns nil)
// and keeps the largest spend.
func (e *Engine) chargeOne(t int, rel account.Release) error {
	if err := e.ledger.Charge(rel); err != nil {
		return fmt.Errorf("round %d: ledger: %w", t, err)
	}
	sp, err := e.ledger.Spent(rel.Client)
	if err != nil {
		return fmt.Errorf("round %d: ledger: %w", t, err)
	}
	e.maxSpent = math.Max(e.maxSpent, sp.Epsilon)
	return nil
}

// release runs the accepted round's clients, collects their reports into
// the analyzer and closes the round. An estimate the analyzer refused
// stops the run.
func (e *Engine) release(t int, s protocol.Shape, parts round.Participants, res *round.RoundResult) (role.Ready, error) {
	if e.clustered != nil {
		e.chosen = make([]int, parts.Len())
	}
	var err error
	if e.cfg.Faithful {
		err = e.collectFaithful(t, s, parts, &res.Timing)
	} else {
		err = e.collectStreaming(t, s, parts, &res.Timing)
	}
	if err != nil {
		return role.Ready{}, fmt.Errorf("round %d: %w", t, err)
	}
	agg := e.an.Aggregate()
	res.Reports, res.Dummies = agg.Reports, agg.Dummies
	t0 := time.Now()
	rd, err := e.an.Close(e.mechStream(rng.LabelAnalyzer, uint64(t)))
	if err == nil && rd.Err != nil {
		err = rd.Err
	}
	if err != nil {
		return rd, fmt.Errorf("round %d: analyzer: %w", t, err)
	}
	res.Timing.Analyze = time.Since(t0).Seconds()
	if e.clustered != nil {
		e.recordClusters(res, parts.Slice())
		ca, err := e.clusterAccuracy(parts.Slice())
		if err != nil {
			return rd, fmt.Errorf("round %d: cluster accuracy: %w", t, err)
		}
		res.ClusterAccuracy = ca
	}
	return rd, nil
}

// voided records a round the analyzer voided at Open: the clients' local
// figures stay, the central ones go, and a round past the run's target
// halts the run.
func (e *Engine) voided(rd role.Ready, res *round.RoundResult) {
	loc := res.Privacy
	res.Privacy = protocol.Privacy{Private: loc.Private, LocalEpsilon: loc.LocalEpsilon, LocalCoordEpsilon: loc.LocalCoordEpsilon}
	res.Privacy.Bound = "no release (every sampled client refused: cap reached)"
	if rd.Void == role.PastTarget {
		e.halted = rd.Why + ": stopped"
		res.Privacy.Bound = "no release (" + e.halted + ")"
	}
	res.Participants = 0
}

// statePrivacy fills the round's cumulative figures from the accountant
// and the round alone at the run's delta.
func (e *Engine) statePrivacy(rd role.Ready, res *round.RoundResult) error {
	res.Alone = round.AloneRound{Epsilon: math.Inf(1)}
	if e.acct == nil {
		res.Privacy.CumulativeEpsilon = math.Inf(1)
		return nil
	}
	sp := e.acct.Spent()
	res.Privacy.Private = true
	res.Privacy.CumulativeEpsilon, res.Privacy.CumulativeDelta, res.Privacy.CumulativeMethod = sp.Epsilon, sp.Delta, sp.Method
	res.Privacy.CumulativeApproximate = sp.Approximate
	if !rd.Statement.Released {
		return nil
	}
	var err error
	res.Alone, err = round.Alone(e.cfg.Delta, rd.Statement)
	return err
}

// evaluate evaluates the model(s) on the test set and, when due, on the
// validation clients, and completes the round's client figures.
func (e *Engine) evaluate(t int, res *round.RoundResult) error {
	if e.dlevel > 0 {
		res.DPrivacy = e.dprivacyRound()
	}
	t0 := time.Now()
	var err error
	if e.clustered != nil {
		err = e.evaluateClustered(res)
	} else {
		res.TestAccuracy, res.TestLoss, err = fl.Evaluate(e.model, e.w, e.testEx, e.workers)
	}
	if err != nil {
		return fmt.Errorf("round %d: evaluation: %w", t, err)
	}
	res.Timing.Evaluate = time.Since(t0).Seconds()
	t0 = time.Now()
	if err := e.validate(t, res); err != nil {
		return fmt.Errorf("round %d: %w", t, err)
	}
	res.Timing.Validate = time.Since(t0).Seconds()
	res.MaxClientEpsilon = e.maxSpent
	if !e.charges {
		res.MaxClientEpsilon = math.Inf(1)
	}
	return nil
}

// client returns the client machine of client c for one round: its
// budget, a view of the run's ledger (when the protocol charges clients)
// and whether its releases spend their local delta (approximate local
// randomizers). The machine is per round: its state (staged, charged)
// guards one round, and the ledger carries everything across rounds.
func (e *Engine) client(c int) *role.Client { return role.NewClient(e.clientConfig(c, e.charges)) }

// clientConfig is client c's machine configuration, reading the run's
// ledger when withLedger is set.
func (e *Engine) clientConfig(c int, withLedger bool) role.ClientConfig {
	cc := role.ClientConfig{ID: strconv.Itoa(c), Budget: e.budgets.At(c), Protocol: e.proto, LocalDelta: e.approxLocal}
	if withLedger {
		cc.Ledger = e.ledger
	}
	return cc
}

// clientReport runs one client's local update and encoding into w.report
// on the client's machine cl, and returns what the machine asks to persist.
func (e *Engine) clientReport(w *worker, t int, s protocol.Shape, slot, client int, cl *role.Client, trainNS, encodeNS *atomic.Int64) (role.ClientReady, error) {
	base := e.w
	if e.clustered != nil {
		// The client receives all k models and trains the one with the
		// lowest loss on its own data (ties: the lowest index).
		h, err := e.chooseHypothesis(w, e.shard(w, client))
		if err != nil {
			return role.ClientReady{}, fmt.Errorf("client %d: choosing a model: %w", client, err)
		}
		e.chosen[slot], base = h, e.models[h]
	}
	return e.trainEncode(w, t, s, base, client, cl, trainNS, encodeNS)
}

// trainEncode trains client from base (the global model, or the model a
// clustered client chose) and stages its report on the client's machine
// cl into w.report (role.Client.Stage): what a remote worker computes for
// the client too. The report may leave w only after the returned ready is
// persisted and advanced.
func (e *Engine) trainEncode(w *worker, t int, s protocol.Shape, base []float64, client int, cl *role.Client, trainNS, encodeNS *atomic.Int64) (role.ClientReady, error) {
	t0 := time.Now()
	rt := rng.Stream(e.cfg.Seed, rng.LabelTraining, uint64(t), uint64(client))
	if err := e.localUpdate(w, t, client, rt, base); err != nil {
		return role.ClientReady{}, fmt.Errorf("client %d: local update: %w", client, err)
	}
	t1 := time.Now()
	if e.hooks.Update != nil {
		e.hooks.Update(t, client, w.update)
	}
	rn := e.mechStream(rng.LabelNoise, uint64(t), uint64(client))
	var rd role.ClientReady
	var err error
	if e.clustered != nil {
		rd, err = cl.StageModel(rn, s, base, w.update, &w.report)
	} else {
		rd, err = cl.Stage(rn, s, w.update, &w.report)
	}
	if err != nil {
		return role.ClientReady{}, err
	}
	if e.hooks.Report != nil {
		e.hooks.Report(t, client, &w.report)
	}
	trainNS.Add(int64(t1.Sub(t0)))
	encodeNS.Add(int64(time.Since(t1)))
	return rd, nil
}

// shard returns client's shard, drawn into w's buffer when the partition
// draws shards on demand (valid until w trains another client).
func (e *Engine) shard(w *worker, client int) []int {
	if e.part.Shards != nil {
		return e.part.Shard(client)
	}
	w.shard = e.part.ShardInto(client, w.shard)
	return w.shard
}

// sitOut records that client c's external trainer failed in the round
// in progress (err wraps ErrTrainer): the client sends nothing and is
// charged nothing, and the analyzer states the round from the counts it
// opens (role.Analyzer.Close restates it for the reporters that remain,
// or voids it). Safe for concurrent use by the workers.
func (e *Engine) sitOut(c int, err error) {
	e.satOutMu.Lock()
	defer e.satOutMu.Unlock()
	if e.satOut == 0 || c < e.satOutFirst {
		e.satOutFirst, e.satOutErr = c, err.Error()
	}
	e.satOut++
}

// clientBlock is one block of a round's participants in flight: the
// caller's state (open), and each participant's client machine with the
// ready its Stage returned.
type clientBlock struct {
	st  any
	ms  []role.Client
	rds []role.ClientReady
}

// clientTimes accumulates the CPU time of the client phase over workers.
type clientTimes struct {
	train, encode, aggregate atomic.Int64
}

func (c *clientTimes) into(tm *round.Timing) {
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
// workers. Each participant has its own client machine for the round, which
// stages its report (role.Client.Stage); before closeBlock hands a block's
// reports on, the block's charges are made durable in order and confirmed
// to their machines (advance). The first error stops the phase.
func (e *Engine) runClients(t int, s protocol.Shape, parts round.Participants, ct *clientTimes,
	open func() any, fold func(st any, w *worker, i int) error, closeBlock func(st any) error) error {
	nb := (parts.Len() + blockSize - 1) / blockSize
	window := 2 * e.workers
	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		next     int
		closed   int
		pending  = map[int]*clientBlock{}
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

				lo, hi := b*blockSize, min((b+1)*blockSize, parts.Len())
				blk := &clientBlock{st: open(), ms: make([]role.Client, hi-lo), rds: make([]role.ClientReady, hi-lo)}
				var err error
				for i := lo; i < hi; i++ {
					c := parts.At(i)
					blk.ms[i-lo] = *e.client(c)
					if blk.rds[i-lo], err = e.clientReport(w, t, s, i, c, &blk.ms[i-lo], &ct.train, &ct.encode); errors.Is(err, ErrTrainer) {
						// The client's trainer failed: it sits the round
						// out, staged nothing and is charged nothing.
						e.sitOut(c, err)
						err = nil
						continue
					} else if err != nil {
						break
					}
					if err = fold(blk.st, w, i); err != nil {
						err = fmt.Errorf("client %d: report rejected: %w", c, err)
						break
					}
				}
				mu.Lock()
				if err != nil {
					fail(err)
					mu.Unlock()
					return
				}
				pending[b] = blk
				for {
					p, ok := pending[closed]
					if !ok {
						break
					}
					delete(pending, closed)
					closed++
					if firstErr != nil {
						break
					}
					err := e.advance(t, p.ms, p.rds)
					if err == nil {
						err = closeBlock(p.st)
					}
					if err != nil {
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
func (e *Engine) collectStreaming(t int, s protocol.Shape, parts round.Participants, tm *round.Timing) error {
	start := time.Now()
	var ct clientTimes
	absorb := func(agg *protocol.Aggregate) error { return e.an.Absorb(role.PartInput(agg)) }
	var err error
	if e.remoteRound() {
		charge := func(clients []int) error { return e.chargeRemote(t, clients) }
		err = e.runner.RunRound(&RoundBlocks{Round: t, Shape: s, Weights: e.w, Participants: parts, absorb: absorb, charge: charge, ct: &ct})
	} else {
		err = e.streamLocal(t, s, parts, &ct, absorb)
	}
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
		if err := e.an.Absorb(role.DummyInput(j, v)); err != nil && derr == nil {
			derr = err
		}
	}
	counts := slices.Clone(e.an.Aggregate().Count)
	// The senders are the participants who reported: a client whose
	// trainer failed sent nothing (sitOut).
	if err := sh.CloseCounts(e.mechStream(rng.LabelShuffle, uint64(t), 0), parts.Len()-e.satOut, counts, emit); err != nil {
		return err
	}
	if derr != nil {
		return fmt.Errorf("shuffler: padding: %w", derr)
	}
	tm.Shuffle = time.Since(t0).Seconds()
	return nil
}

// streamLocal runs the clients on the engine's worker goroutines, folding
// their reports into per-block aggregates that absorb takes in block order.
func (e *Engine) streamLocal(t int, s protocol.Shape, parts round.Participants, ct *clientTimes, absorb func(*protocol.Aggregate) error) error {
	return e.runClients(t, s, parts, ct,
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
			return absorb(agg)
		})
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
func (e *Engine) collectFaithful(t int, s protocol.Shape, parts round.Participants, tm *round.Timing) error {
	start := time.Now()
	reports := make([]protocol.Report, parts.Len())
	var ct clientTimes
	err := e.runClients(t, s, parts, &ct,
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
		if reports[i].Values == nil {
			continue // the client sat the round out (sitOut)
		}
		msgs = role.Messages(mode, &reports[i], msgs[:0])
		if _, err := sh.Accept(strconv.Itoa(parts.At(i)), msgs); err != nil {
			return fmt.Errorf("client %d: %w", parts.At(i), err)
		}
		reports[i] = protocol.Report{} // the shuffler holds the values now
	}
	batch, err := sh.Close(e.mechStream(rng.LabelShuffle, uint64(t), 0), e.mechStream(rng.LabelShuffle, uint64(t), 1), role.PlainDummy(mode))
	if err != nil {
		return err
	}
	tm.Shuffle = time.Since(t0).Seconds()
	t0 = time.Now()
	if err := e.an.Absorb(role.BatchInput(batch)); err != nil {
		return err
	}
	tm.Aggregate = time.Since(t0).Seconds()
	return nil
}

// Run executes the remaining rounds, calling observe after each (observe may
// be nil). It stops at the first error.
func (e *Engine) Run(observe func(round.RoundResult)) (round.Summary, error) {
	start := time.Now()
	sum := round.Summary{Dim: e.model.Dim(), Workers: e.workers, TrainSamples: e.train.Len(), TestSamples: e.test.Len()}
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
