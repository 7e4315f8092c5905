package sim

import (
	"fmt"
	"time"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
)

// BlockSize is the number of consecutive participants whose reports make
// one partial aggregate (a block): a Runner's blocks are participants
// [b·BlockSize, min((b+1)·BlockSize, n)). It is part of the results: blocks
// are merged in block order.
const BlockSize = blockSize

// A Runner computes a round's client phase away from the engine's own
// goroutines: package driver/sim/remote runs it on worker processes. The
// engine hands it the rounds that can run elsewhere (not clustered
// protocols, faithful rounds or rounds with hooks); the results must be
// the blocks' partial aggregates exactly as a BlockWorker computes them,
// handed to Absorb strictly in block order, so that the run is
// bit-identical to one in a single process.
type Runner interface {
	RunRound(b *RoundBlocks) error
}

// RoundBlocks is one round's client phase handed to a Runner.
type RoundBlocks struct {
	// Round is the round, Shape its shape and Weights the global model
	// the clients train from (read only).
	Round   int
	Shape   protocol.Shape
	Weights []float64
	// Participants are the round's reporters, in order.
	Participants round.Participants

	absorb func(*protocol.Aggregate) error
	charge func(clients []int) error // the coordinator's ledger (Engine.chargeRemote)
	ct     *clientTimes
	next   int // the block Absorb takes next
}

// Blocks is the number of blocks of the round.
func (b *RoundBlocks) Blocks() int { return (b.Participants.Len() + blockSize - 1) / blockSize }

// Clients returns block i's clients (a new slice).
func (b *RoundBlocks) Clients(i int) []int {
	return b.Participants.Block(i*blockSize, min((i+1)*blockSize, b.Participants.Len()))
}

// Absorb hands the next block's partial aggregate to the analyzer, after
// the block's clients' releases are charged in the coordinator's ledger;
// blocks must come in block order. agg may be reused once Absorb returns.
func (b *RoundBlocks) Absorb(agg *protocol.Aggregate) error {
	if b.next >= b.Blocks() {
		return fmt.Errorf("block %d of a round of %d blocks", b.next, b.Blocks())
	}
	if b.charge != nil {
		if err := b.charge(b.Clients(b.next)); err != nil {
			return err
		}
	}
	b.next++
	return b.absorb(agg)
}

// AddTimes adds a block's CPU times (nanoseconds of training, encoding and
// aggregation) to the round's timing.
func (b *RoundBlocks) AddTimes(trainNS, encodeNS, aggNS int64) {
	b.ct.train.Add(trainNS)
	b.ct.encode.Add(encodeNS)
	b.ct.aggregate.Add(aggNS)
}

// SetRunner makes the engine run the clients of the rounds that can run
// elsewhere on r, from the next round on (nil: on its own goroutines).
func (e *Engine) SetRunner(r Runner) { e.runner = r }

// Config is the configuration the engine was built with.
func (e *Engine) Config() round.Config { return e.cfg }

// Given returns the budgets New was given, before calibration (the zero
// ClientBudgets when it had none and resolved them from the configuration).
func (e *Engine) Given() round.ClientBudgets { return e.given }

// A BlockWorker computes blocks of an engine's clients as the engine's own
// workers do: a remote worker process holds one per goroutine, over an
// engine built from the coordinator's settings (whose Fingerprint must be
// the coordinator's). It is not safe for concurrent use.
type BlockWorker struct {
	e *Engine
	w *worker
}

// NewBlockWorker returns a BlockWorker of e.
func (e *Engine) NewBlockWorker() *BlockWorker {
	return &BlockWorker{e: e, w: &worker{trainer: fl.NewTrainer(e.model), update: make([]float64, e.model.Dim())}}
}

// Engine is the engine b computes for.
func (b *BlockWorker) Engine() *Engine { return b.e }

// Block trains and encodes one block of clients of round t (shape s, global
// model weights) into agg, as the engine's own workers do (the client's
// local update and encoding, then AddReport). The clients' machines here
// hold no ledger: the ledger is the coordinator's, which charges the
// block's releases before it absorbs agg (RoundBlocks.Absorb). It returns the CPU time of
// training, encoding and aggregation in nanoseconds.
func (b *BlockWorker) Block(t int, s protocol.Shape, weights []float64, clients []int, agg *protocol.Aggregate) (trainNS, encodeNS, aggNS int64, err error) {
	e, w := b.e, b.w
	var ct clientTimes
	defer func() { trainNS, encodeNS, aggNS = ct.train.Load(), ct.encode.Load(), ct.aggregate.Load() }()
	if len(clients) == 0 || len(clients) > blockSize {
		return 0, 0, 0, fmt.Errorf("a block of %d clients (want 1 to %d)", len(clients), blockSize)
	}
	for _, c := range clients {
		if c < 0 || c >= e.budgets.Len() {
			return 0, 0, 0, fmt.Errorf("client %d is not in [0, %d)", c, e.budgets.Len())
		}
		cl := role.NewClient(e.clientConfig(c, false))
		rd, err := e.trainEncode(w, t, s, weights, c, cl, &ct.train, &ct.encode)
		if err == nil {
			err = cl.Advance(rd)
		}
		if err != nil {
			return 0, 0, 0, err
		}
		t0 := time.Now()
		err = agg.AddReport(&w.report)
		ct.aggregate.Add(int64(time.Since(t0)))
		if err != nil {
			return 0, 0, 0, fmt.Errorf("client %d: report rejected: %w", c, err)
		}
	}
	return 0, 0, 0, nil
}

// remoteRound reports whether this round's clients run on the Runner.
func (e *Engine) remoteRound() bool {
	h := e.hooks
	return e.runner != nil && e.clustered == nil && h.Update == nil && h.Report == nil && h.NoiseSalt == 0
}
