package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/transport/jetstream"
)

// Names of the JetStream queues and object store that a coordinator and its
// remote workers share; one run's messages are on subjects named by its id.
const (
	taskQueue   = "shufflefl_sim_tasks"
	resultQueue = "shufflefl_sim_results"
	specBlobs   = "shufflefl_sim"
	workerGroup = "workers"
)

// Options tune a coordinator's use of remote workers. Zero fields take the
// defaults.
type Options struct {
	// Window is the most blocks in flight at once: published and not yet
	// merged (default 64). The coordinator holds at most Window partial
	// aggregates, so its memory does not grow with the clients.
	Window int
	// Timeout is how long the coordinator waits without any result before
	// it fails the round (default 10 minutes): no worker is running, or
	// every worker died.
	Timeout time.Duration
}

// Remote is a coordinator's link to remote worker processes (ServeWorker)
// through JetStream, an engine's sim.Runner: the engine publishes each
// block of a round's participants as a task, any worker computes the
// block's partial aggregate and publishes it as a result, and the engine
// merges the results in block order, exactly as its own goroutines'
// blocks: the results are bit-identical whatever the number of workers,
// local or remote.
type Remote struct {
	tasks, results *jetstream.Queue
	blobs          *jetstream.Blobs
	cons           *jetstream.Consumer
	run            string
	opts           Options
	merged         int       // blocks merged so far
	pool           sync.Pool // partial aggregates of the model's dimension
}

// openQueues opens (creating them if needed) the task and result queues and
// the object store of the simulation's workers.
func openQueues(ctx context.Context, conn *jetstream.Conn) (tasks, results *jetstream.Queue, blobs *jetstream.Blobs, err error) {
	if tasks, err = conn.Queue(ctx, jetstream.QueueConfig{Name: taskQueue}); err != nil {
		return nil, nil, nil, err
	}
	size := int(conn.MaxPayload()) - 2<<10
	if results, err = conn.Queue(ctx, jetstream.QueueConfig{Name: resultQueue, MaxMsgSize: size}); err != nil {
		return nil, nil, nil, err
	}
	if blobs, err = conn.Blobs(ctx, specBlobs); err != nil {
		return nil, nil, nil, err
	}
	return tasks, results, blobs, nil
}

// Attach makes e run its clients on the remote workers reachable through
// conn, from the next round on (e.SetRunner): it publishes the run's
// settings, from which each worker builds the same engine and loads the
// same data. Rounds of clustered protocols, faithful rounds (Config.Faithful)
// and rounds with hooks (SetHooks) still run in e's process. Close the
// Remote after the run.
func Attach(ctx context.Context, e *sim.Engine, conn *jetstream.Conn, o Options) (*Remote, error) {
	if o.Window == 0 {
		o.Window = 64
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.Window < 1 || o.Timeout < 0 {
		return nil, fmt.Errorf("remote workers: window %d and timeout %v must be positive", o.Window, o.Timeout)
	}
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("remote workers: run id: %w", err)
	}
	r := &Remote{run: hex.EncodeToString(id), opts: o}
	var err error
	if r.tasks, r.results, r.blobs, err = openQueues(ctx, conn); err != nil {
		return nil, fmt.Errorf("remote workers: %w", err)
	}
	dim := e.Model().Dim()
	if need := 17*dim + 1<<10; int64(need) > conn.MaxPayload() {
		return nil, fmt.Errorf("remote workers: a block's aggregate of dimension %d may need %d bytes, over the server's max payload %d", dim, need, conn.MaxPayload())
	}
	r.pool.New = func() any { return protocol.NewAggregate(dim) }
	r.cons, err = r.results.Consumer(ctx, jetstream.ConsumerConfig{Name: "run_" + r.run, Subject: resultQueue + "." + r.run})
	if err != nil {
		return nil, fmt.Errorf("remote workers: %w", err)
	}
	rs := runSpec{Config: e.Config(), Fingerprint: e.Fingerprint()}
	if b, ok := e.Given().Uniform(); ok {
		rs.Uniform = &b
	} else {
		rs.Budgets = e.Given().Slice()
	}
	spec, err := gobEncode(rs)
	if err != nil {
		return nil, fmt.Errorf("remote workers: encoding the run's settings: %w", err)
	}
	if err := r.blobs.Put(ctx, r.run+"/spec", spec); err != nil {
		return nil, fmt.Errorf("remote workers: %w", err)
	}
	e.SetRunner(r)
	return r, nil
}

// Close withdraws the run: workers drop its remaining tasks, and its
// settings, results and consumer are deleted.
func (r *Remote) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(r.blobs.Delete(ctx, r.run+"/spec"),
		r.tasks.Purge(ctx, taskQueue+"."+r.run),
		r.results.DeleteConsumer(ctx, "run_"+r.run),
		r.results.Purge(ctx, resultQueue+"."+r.run))
}

// merge is the coordinator's side of one remote round: the blocks
// published, the results waiting for their turn and the next block to
// merge.
type merge struct {
	r       *Remote
	b       *sim.RoundBlocks
	t       int
	next    int
	closed  int
	pending map[int]*protocol.Aggregate
}

// RunRound runs a round's clients on the remote workers (sim.Runner): it
// publishes the round's model, keeps up to Window blocks in flight and
// hands the results to b.Absorb strictly in block order.
func (r *Remote) RunRound(b *sim.RoundBlocks) error {
	ctx := context.Background()
	t := b.Round
	name := r.run + "/round-" + strconv.Itoa(t)
	spec, err := gobEncode(roundSpec{Round: t, Shape: b.Shape, Weights: b.Weights})
	if err != nil {
		return fmt.Errorf("remote workers: encoding round %d: %w", t, err)
	}
	if err := r.blobs.Put(ctx, name, spec); err != nil {
		return fmt.Errorf("remote workers: %w", err)
	}
	m := &merge{r: r, b: b, t: t, pending: map[int]*protocol.Aggregate{}}
	err = m.run(ctx)
	// Workers drop the tasks of a round whose model is gone.
	if derr := r.blobs.Delete(ctx, name); err == nil && derr != nil {
		err = fmt.Errorf("remote workers: %w", derr)
	}
	for _, agg := range m.pending {
		r.pool.Put(agg)
	}
	if err != nil {
		_ = r.tasks.Purge(ctx, taskQueue+"."+r.run) // best effort: they are dropped anyway
	}
	return err
}

func (m *merge) run(ctx context.Context) error {
	nb := m.b.Blocks()
	last := time.Now()
	for m.closed < nb {
		for m.next < nb && m.next < m.closed+m.r.opts.Window {
			if err := m.publish(ctx, m.next); err != nil {
				return err
			}
			m.next++
		}
		fctx, cancel := context.WithTimeout(ctx, time.Second)
		msgs, err := m.r.cons.Fetch(fctx, m.r.opts.Window)
		cancel()
		if err != nil {
			return fmt.Errorf("remote workers: %w", err)
		}
		for _, msg := range msgs {
			if err := m.take(msg.Data()); err != nil {
				return err
			}
			_ = msg.Ack() // a lost ack redelivers a result that is then ignored
		}
		if len(msgs) > 0 {
			last = time.Now()
		} else if time.Since(last) > m.r.opts.Timeout {
			return fmt.Errorf("remote workers: no result for %v (block %d of %d awaited; is a 'shufflefl worker' running?)", m.r.opts.Timeout, m.closed, nb)
		}
		for m.pending[m.closed] != nil {
			agg := m.pending[m.closed]
			delete(m.pending, m.closed)
			m.closed++
			m.r.merged++
			err := m.b.Absorb(agg)
			m.r.pool.Put(agg)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// publish publishes block b's task; a task id is published once per run.
func (m *merge) publish(ctx context.Context, b int) error {
	task := blockTask{Run: m.r.run, Round: m.t, Block: b, Clients: m.b.Clients(b)}
	id := fmt.Sprintf("%s.%d.%d", m.r.run, m.t, b)
	if _, err := m.r.tasks.Publish(ctx, taskQueue+"."+m.r.run, id, task.marshal()); err != nil {
		return fmt.Errorf("remote workers: %w", err)
	}
	return nil
}

// take records one result: a block of this round not yet merged waits for
// its turn; a duplicate or a stale result (an earlier round's, delivered
// twice) is ignored; a worker's error fails the round.
func (m *merge) take(data []byte) error {
	agg := m.r.pool.Get().(*protocol.Aggregate)
	var res blockResult
	err := res.unmarshal(data, agg)
	switch {
	case err != nil:
		m.r.pool.Put(agg)
		return fmt.Errorf("remote workers: %w", err)
	case res.Run != m.r.run || res.Round != m.t || res.Block < m.closed || res.Block >= m.next || m.pending[res.Block] != nil:
		m.r.pool.Put(agg)
		return nil
	case res.Err != "":
		m.r.pool.Put(agg)
		return fmt.Errorf("remote worker: block %d: %s", res.Block, res.Err)
	}
	m.pending[res.Block] = agg
	m.b.AddTimes(res.TrainNS, res.EncodeNS, res.AggNS)
	return nil
}
