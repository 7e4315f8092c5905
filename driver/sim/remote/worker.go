package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/transport/jetstream"
)

// WorkerOptions configure ServeWorker. Zero fields take the defaults.
type WorkerOptions struct {
	// Goroutines is how many blocks the process computes at once
	// (default 1).
	Goroutines int
	// Load loads a run's dataset (default: data.Load of the run's
	// dataset, data directory and seed, as `shufflefl run` does).
	Load func(round.Config) (data.Split, error)
	// Log, if set, gets a line when the worker joins a run and for each
	// block it fails.
	Log io.Writer
	// AckWait is how long a task may go unacknowledged before it is given
	// to another worker (default 30s); a worker busy with a task tells the
	// server so every AckWait/3.
	AckWait time.Duration
}

// ServeWorker computes blocks of clients for the coordinators (engines attached
// with Attach) that share conn's server, until ctx is done (it then returns
// nil) or the connection fails. It takes a task from the queue, builds the
// task's run from its settings (once per run: the engine, the data), trains
// and encodes the block's clients exactly as the coordinator's own workers
// would, and publishes their partial aggregate; it acknowledges the task
// only after the result is stored, so that a worker killed mid-block leaves
// the task to another. A task of a run or round that is over is dropped.
func ServeWorker(ctx context.Context, conn *jetstream.Conn, o WorkerOptions) error {
	if o.Goroutines == 0 {
		o.Goroutines = 1
	}
	if o.AckWait == 0 {
		o.AckWait = 30 * time.Second
	}
	if o.Load == nil {
		o.Load = func(cfg round.Config) (data.Split, error) {
			return cfg.LoadData()
		}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Goroutines < 1 || o.AckWait < 300*time.Millisecond {
		return fmt.Errorf("worker: %d goroutines and ack wait %v: need at least 1 and 300ms", o.Goroutines, o.AckWait)
	}
	sw := &simWorker{o: o}
	var err error
	if sw.tasks, sw.results, sw.blobs, err = openQueues(ctx, conn); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if sw.cons, err = sw.tasks.Consumer(ctx, jetstream.ConsumerConfig{Name: workerGroup, AckWait: o.AckWait}); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	errs := make([]error, o.Goroutines)
	var wg sync.WaitGroup
	for i := range o.Goroutines {
		wg.Go(func() { errs[i] = sw.loop(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// simWorker is one worker process: its queues and the run it last built.
type simWorker struct {
	o              WorkerOptions
	tasks, results *jetstream.Queue
	blobs          *jetstream.Blobs
	cons           *jetstream.Consumer

	mu     sync.Mutex
	run    string
	eng    *sim.Engine
	rounds map[int]*roundSpec // the run's rounds seen, the last two kept
}

// slot is one goroutine's trainer for the engine it was built for.
type slot struct {
	w   *sim.BlockWorker
	agg *protocol.Aggregate
}

func (sw *simWorker) loop(ctx context.Context) error {
	var sl slot
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		msgs, err := sw.cons.Fetch(fctx, 1)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("worker: %w", err)
		}
		for _, m := range msgs {
			if err := sw.handle(ctx, m, &sl); err != nil {
				return err
			}
		}
	}
	return nil
}

// handle computes one task and publishes its result, telling the server it
// is in progress meanwhile (a block begun is finished when ctx is done). Only a failure to talk to the server is an
// error: a block that fails is reported to the coordinator.
func (sw *simWorker) handle(ctx context.Context, m *jetstream.Msg, sl *slot) error {
	var task blockTask
	if err := task.unmarshal(m.Data()); err != nil {
		fmt.Fprintf(sw.o.Log, "worker: dropping a task: %v\n", err)
		return m.Term()
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(sw.o.AckWait / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_ = m.InProgress() // a lost one only risks a redelivery
			}
		}
	}()
	res, gone := sw.compute(ctx, &task, sl)
	if gone {
		return m.Term() // the run or the round is over
	}
	// A block begun is answered even if the worker is told to stop.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	id := fmt.Sprintf("%s.%d.%d", task.Run, task.Round, task.Block)
	if _, err := sw.results.Publish(pctx, resultQueue+"."+task.Run, id, res.marshal()); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return m.AckSync(pctx)
}

// compute returns the task's result; gone reports a task whose run or
// round is over.
func (sw *simWorker) compute(ctx context.Context, task *blockTask, sl *slot) (res blockResult, gone bool) {
	res = blockResult{Run: task.Run, Round: task.Round, Block: task.Block}
	e, rs, err := sw.prepare(ctx, task)
	if errors.Is(err, jetstream.ErrNotFound) {
		return res, true
	}
	if err == nil {
		if sl.w == nil || sl.w.Engine() != e {
			*sl = slot{w: e.NewBlockWorker(), agg: protocol.NewAggregate(e.Model().Dim())}
		}
		sl.agg.Reset()
		res.TrainNS, res.EncodeNS, res.AggNS, err = sl.w.Block(rs.Round, rs.Shape, rs.Weights, task.Clients, sl.agg)
	}
	if err != nil {
		res.Err = err.Error()
		fmt.Fprintf(sw.o.Log, "worker: run %s round %d block %d: %v\n", task.Run, task.Round, task.Block, err)
		return res, false
	}
	res.Agg = sl.agg
	return res, false
}

// prepare returns the engine of the task's run (building it on the run's
// first task) and its round's settings.
func (sw *simWorker) prepare(ctx context.Context, task *blockTask) (*sim.Engine, *roundSpec, error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.run != task.Run {
		sw.run, sw.eng, sw.rounds = "", nil, nil
		e, err := sw.build(ctx, task.Run)
		if err != nil {
			return nil, nil, err
		}
		sw.run, sw.eng, sw.rounds = task.Run, e, map[int]*roundSpec{}
	}
	rs := sw.rounds[task.Round]
	if rs == nil {
		b, err := sw.blobs.Get(ctx, task.Run+"/round-"+strconv.Itoa(task.Round))
		if err != nil {
			return nil, nil, err
		}
		rs = new(roundSpec)
		if err := gobDecode(b, rs); err != nil {
			return nil, nil, fmt.Errorf("round %d's settings: %w", task.Round, err)
		}
		if len(rs.Weights) != sw.eng.Model().Dim() || rs.Round != task.Round {
			return nil, nil, fmt.Errorf("round %d's settings: round %d with %d weights for a model of dimension %d", task.Round, rs.Round, len(rs.Weights), sw.eng.Model().Dim())
		}
		delete(sw.rounds, task.Round-2)
		sw.rounds[task.Round] = rs
	}
	return sw.eng, rs, nil
}

// build builds run's engine from the settings its coordinator published.
func (sw *simWorker) build(ctx context.Context, run string) (*sim.Engine, error) {
	b, err := sw.blobs.Get(ctx, run+"/spec")
	if err != nil {
		return nil, err
	}
	var spec runSpec
	if err := gobDecode(b, &spec); err != nil {
		return nil, fmt.Errorf("the run's settings: %w", err)
	}
	split, err := sw.o.Load(spec.Config)
	if err != nil {
		return nil, fmt.Errorf("loading dataset %s: %w", spec.Config.Dataset, err)
	}
	var e *sim.Engine
	if budgets, given := spec.budgets(); given {
		e, err = sim.NewBudgets(spec.Config, split, budgets)
	} else {
		e, err = sim.New(spec.Config, split, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("building the run's engine: %w", err)
	}
	if e.Fingerprint() != spec.Fingerprint {
		return nil, errors.New("this worker's calibrated protocol, budgets or training data differ from the coordinator's (another shufflefl version, or another copy of the dataset?)")
	}
	fmt.Fprintf(sw.o.Log, "worker: joined run %s (%s, %d clients, d = %d)\n", run, spec.Config.Protocol, spec.Config.Clients, e.Model().Dim())
	return e, nil
}
