package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// AnalyzerConfig configures an analyzer service.
type AnalyzerConfig struct {
	Setup *Setup
	// DB is the analyzer's database (round log, checkpoints).
	DB *store.DB
	// Key is the analyzer's HPKE private key.
	Key *seal.PrivateKey
	// Shuffler is the shuffler's control service (dialled with mutual
	// TLS).
	Shuffler wire.ShufflerControlClient
	// RoundTimeout is the time clients have to report (the deadline is the
	// announcement time plus it).
	RoundTimeout time.Duration
	// TTL is the task's time-to-live at the clients (RoundTimeout if zero).
	TTL time.Duration
	// MinReports is the minimum number of reports for a release (1 if
	// zero).
	MinReports int
	// TestSeed, if set, draws the analyzer's estimate randomness from the
	// simulation's stream (rng.Stream(seed, LabelAnalyzer, round)): test
	// mode only.
	TestSeed *uint64
	// Workers evaluate the model (GOMAXPROCS if zero).
	Workers int
	// Observe is called after every finished round (may be nil).
	Observe func(round.RoundResult)
	// Logf logs events (log.Printf if nil).
	Logf func(format string, a ...any)
	// Progress, if set, receives the rounds' progress (opening, then
	// released or void), at most one intermediate event per ProgressEvery
	// (250 ms if zero); see Progress. It is called while the analyzer
	// holds its batch lock, as Observe is: it must not call the
	// Analyzer's methods.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// Openers, if set, connects to the analyzer's NATS JetStream server:
	// the batches are opened by the opener processes on its queue
	// (ServeOpener) instead of on this process's cores, with the same
	// result bit for bit. OpenerChunk is the number of messages of a
	// chunk (DefaultOpenerChunk if zero), OpenWindow how many bytes of
	// chunks may wait on the queue unanswered (DefaultOpenWindow if zero).
	Openers     *jetstream.Conn
	OpenerChunk int
	OpenWindow  int
}

// Analyzer is the analyzer service (wire.AnalyzerServer): it holds the
// role.Analyzer with the run's model and accountant, and the HPKE private
// key, and drives the rounds.
type Analyzer struct {
	wire.UnimplementedAnalyzerServer

	cfg  AnalyzerConfig
	st   *Setup
	an   *role.Analyzer
	acct *account.Accountant
	w    []float64
	logf func(string, ...any)
	prog *meter
	// openq is the opener queue (nil: the batches are opened here) and
	// openMAC the key of its MACs.
	openq   *openStreams
	openMAC []byte

	mu       sync.Mutex // one batch at a time; guards the fields below
	pending  int64      // the announced round awaiting its batch (0: none)
	finished int64
	done     chan int64
	released int // rounds released (for the clients' spend bound)
	stats    seal.Stats
	sum      round.Summary
	// announced is when the pending round was (last) announced.
	announced time.Time

	// parts holds sharded rounds' pieces until complete
	// (analyzer_parts.go). Not guarded by mu: it has its own lock,
	// taken after mu.
	parts partHold
}

// NewAnalyzer builds the analyzer service, resuming from its database: the
// latest checkpoint's model and accountant, the round log's last finished
// round, and an announced round still open.
func NewAnalyzer(cfg AnalyzerConfig) (*Analyzer, error) {
	if cfg.Setup == nil || cfg.DB == nil || cfg.Key == nil || cfg.Shuffler == nil {
		return nil, errf("deploy: analyzer: incomplete configuration")
	}
	if cfg.RoundTimeout < 0 {
		return nil, checks.Invalidf("deploy: analyzer: round timeout %v: it must be positive (0: derived from the round's work)", cfg.RoundTimeout)
	}
	if cfg.RoundTimeout == 0 {
		cfg.RoundTimeout = DefaultRoundTimeout(cfg.Setup)
		logf := cfg.Logf
		if logf == nil {
			logf = log.Printf
		}
		logf("analyzer: round timeout %v (about %d messages a round on %d cores; --round-timeout sets it)", cfg.RoundTimeout, RoundMessages(cfg.Setup), runtime.NumCPU())
	}
	if cfg.TTL <= 0 {
		cfg.TTL = cfg.RoundTimeout
	}
	if cfg.MinReports <= 0 {
		cfg.MinReports = 1
	}
	st := cfg.Setup
	// A clustered protocol's k-means needs at least k released vectors
	// (protocol.Clustered's Check): fewer reports void the round at the
	// shuffler, as any round below its minimum.
	cfg.MinReports = max(cfg.MinReports, st.K)
	a := &Analyzer{cfg: cfg, st: st, acct: st.Accountant, w: append([]float64(nil), st.Init...), logf: cfg.Logf, done: make(chan int64, 1),
		prog: newMeter(cfg.Progress, cfg.ProgressEvery)}
	if a.logf == nil {
		a.logf = log.Printf
	}
	var hs [][]float64 // the role updates its models in place: copies, not the Setup's
	for _, h := range st.Hypotheses {
		hs = append(hs, append([]float64(nil), h...))
	}
	var err error
	a.an, err = a.newRole(hs)
	if err != nil {
		return nil, err
	}
	if err := a.resume(); err != nil {
		return nil, err
	}
	if err := a.joinOpeners(); err != nil {
		return nil, err
	}
	return a, nil
}

// joinOpeners opens the opener queue when the analyzer has openers, and
// purges the last finished round's chunks and results (left there if the
// analyzer stopped between the release and the purge).
func (a *Analyzer) joinOpeners() error {
	if a.cfg.Openers == nil {
		return nil
	}
	if a.cfg.OpenerChunk <= 0 {
		a.cfg.OpenerChunk = DefaultOpenerChunk
	}
	if a.cfg.OpenWindow <= 0 {
		a.cfg.OpenWindow = DefaultOpenWindow
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	if a.openMAC, err = openerMACKey(a.cfg.Key); err != nil {
		return err
	}
	if a.openq, err = openOpenerStreams(ctx, a.cfg.Openers, true); err != nil {
		return err
	}
	if err := a.checkOpenerPayload(); err != nil {
		return err
	}
	a.purgeOpening(a.finished)
	return nil
}

// resume restores the latest checkpoint and the round log.
func (a *Analyzer) resume() error {
	log, err := a.cfg.DB.RoundLog()
	if err != nil {
		return err
	}
	var last int64
	for _, e := range log {
		switch e.Status {
		case store.RoundOpen:
			a.pending = e.Round
		case store.RoundReleased:
			a.released++
			last = max(last, e.Round)
		default:
			last = max(last, e.Round)
		}
	}
	cp, err := a.cfg.DB.LatestCheckpoint()
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	default:
		ms, err := unpackModels(cp.Model, a.st.K, len(a.w))
		if err != nil {
			return errf("deploy: analyzer: checkpoint %d: %w", cp.Round, err)
		}
		if a.acct != nil {
			if a.acct, err = account.RestoreAccountant(cp.Accountant); err != nil {
				return errf("deploy: analyzer: checkpoint %d: %w", cp.Round, err)
			}
		}
		if err := a.an.Restore(int(cp.Round), ms[0], a.acct); err != nil {
			return err
		}
		if err := a.an.RestoreHypotheses(ms[1:]); err != nil {
			return errf("deploy: analyzer: checkpoint %d: %w", cp.Round, err)
		}
	}
	if last > int64(a.an.Round()) {
		// Void rounds after the checkpoint: nothing was released.
		w := append([]float64(nil), a.an.Model()...)
		if err := a.an.Restore(int(last), w, a.acct); err != nil {
			return err
		}
	}
	a.finished = last
	if a.pending != 0 && a.pending != last+1 {
		return errf("deploy: analyzer: round log has round %d open after round %d finished", a.pending, last)
	}
	if len(log) > 0 {
		a.logf("analyzer: resumed after round %d (pending %d)", last, a.pending)
	}
	return nil
}

// Model returns a copy of the global model.
func (a *Analyzer) Model() []float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]float64(nil), a.an.Model()...)
}

// Round returns the last finished round.
func (a *Analyzer) Round() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.finished
}

// Stats returns the opening counts summed over the rounds of this process.
func (a *Analyzer) Stats() seal.Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// Accountant returns the run's accountant (nil for non-private protocols).
func (a *Analyzer) Accountant() *account.Accountant { return a.acct }

// announcement builds round t's announcement; the caller holds a.mu.
func (a *Analyzer) announcement(t int64, deadline time.Time) (*wire.RoundAnnouncement, error) {
	models, err := announcedModels(a.an.Models())
	if err != nil {
		return nil, err
	}
	return &wire.RoundAnnouncement{
		Round: t, RunId: a.st.RunID, Protocol: a.st.Config.Protocol, Params: Params(a.st),
		Models:           models,
		DeadlineUnixNano: deadline.UnixNano(), TtlMillis: a.cfg.TTL.Milliseconds(), MinReports: uint32(a.cfg.MinReports),
		SamplingRate: 1, AnalyzerPublicKey: a.cfg.Key.Public().Bytes(), HpkeSuite: a.cfg.Key.Suite().String(),
	}, nil
}

// Params are the protocol parameters an announcement carries; clients
// refuse a task whose parameters differ from their own Setup's.
func Params(st *Setup) []*wire.Param {
	c := st.Config
	num := func(n string, v float64) *wire.Param {
		return &wire.Param{Name: n, Value: &wire.Param_Number{Number: v}}
	}
	ps := []*wire.Param{num("clip", c.Clip), num("epsilon", st.Budget.Epsilon), num("delta", c.Delta),
		{Name: "rounds", Value: &wire.Param_Integer{Integer: int64(c.Rounds)}},
		{Name: "secure-noise", Value: &wire.Param_Flag{Flag: true}}}
	for _, k := range sortedKeys(c.Options) {
		ps = append(ps, num("option."+k, c.Options[k]))
	}
	return ps
}

// Run drives the remaining rounds: it opens each in the round log,
// announces it to the shuffler (retrying until acknowledged), and waits for
// its batch. It returns the run's summary when the last round finished.
func (a *Analyzer) Run(ctx context.Context) (round.Summary, error) {
	start := time.Now()
	for {
		a.mu.Lock()
		t := a.finished + 1
		pending := a.pending
		a.mu.Unlock()
		if t > int64(a.st.Config.Rounds) {
			break
		}
		if pending != t {
			if err := a.cfg.DB.OpenRound(t); err != nil && !errors.Is(err, store.ErrRoundExists) {
				return a.summary(start), err
			}
			a.mu.Lock()
			a.pending = t
			a.mu.Unlock()
		}
		// The models are read under the lock: a batch saved before a
		// restart may be released while the round is re-announced.
		a.mu.Lock()
		a.announced = time.Now()
		ann, err := a.announcement(t, time.Now().Add(a.cfg.RoundTimeout))
		a.mu.Unlock()
		if err != nil {
			return a.summary(start), err
		}
		for attempt := 0; ; attempt++ {
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := a.cfg.Shuffler.Announce(actx, &wire.AnnounceRequest{Announcement: ann})
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return a.summary(start), ctx.Err()
			}
			if attempt%20 == 0 {
				a.logf("analyzer: announcing round %d: %v", t, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return a.summary(start), ctx.Err()
			case r := <-a.done:
				if r >= t {
					break wait
				}
			}
		}
	}
	return a.summary(start), nil
}

func (a *Analyzer) summary(start time.Time) round.Summary {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sum
	s.Dim, s.Plan = len(a.w), a.st.Plan
	s.Workers = a.cfg.Workers
	// The test set holds one copy per rotation group ("rotated"); the
	// summary counts the dataset's samples, as the engine's does.
	s.TrainSamples, s.TestSamples = len(a.st.Train.Y), len(a.st.Test.Y)/max(1, a.st.TestGroups)
	s.Seconds = time.Since(start).Seconds()
	return s
}

// SubmitBatch implements wire.AnalyzerServer: the shuffler's batch for the
// pending round. Every message is opened (bad ones dropped and counted by
// reason), the role absorbs the batch and releases the round, and the new
// checkpoint, accountant and round-log entry are committed in one
// transaction before the acknowledgement. A batch for a round already
// released is acknowledged with already_released and changes nothing.
// A sharded round's manifest and parts are held until all arrived, then
// processed as one batch (submitPart).
func (a *Analyzer) SubmitBatch(stream grpc.ClientStreamingServer[wire.BatchChunk, wire.BatchResponse]) error {
	h, ms, err := wire.ReceiveBatch(stream)
	if err != nil {
		return err
	}
	var resp *wire.BatchResponse
	if h.Shards > 0 {
		resp, err = a.submitPart(stream.Context(), h, ms) // a sharded round's piece
	} else {
		resp, err = a.batchCtx(stream.Context(), h, ms)
	}
	if err != nil {
		return err
	}
	return stream.SendAndClose(resp)
}

// batch is batchCtx without a deadline.
func (a *Analyzer) batch(h *wire.BatchHeader, ms []*wire.SealedMessage) (*wire.BatchResponse, error) {
	return a.batchCtx(context.Background(), h, ms)
}

// batchCtx processes one assembled batch: it admits the batch's round,
// opens the sealed messages, lets the analyzer machine decide and close
// the round, and persists its decision before the acknowledgement. Opening
// on the openers stops when ctx ends (the shuffler gave up the forward; it
// forwards again, and the opening resumes from the results stored).
func (a *Analyzer) batchCtx(ctx context.Context, h *wire.BatchHeader, ms []*wire.SealedMessage) (*wire.BatchResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := h.Round
	if resp, err := a.admit(h); resp != nil || err != nil {
		return resp, err
	}
	// The round's facts (true population and sample, reports, budgets)
	// are checked before anything is opened.
	facts, err := a.st.Facts(h)
	if err != nil {
		return nil, wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, "header", t, "%v", err)
	}
	start := time.Now()
	b, counts, resp, err := a.openBatch(ctx, h, ms, facts.Reporters)
	if err != nil {
		return nil, err
	}
	rd, err := a.decide(int(t), facts, b)
	if err != nil {
		return nil, err
	}
	res := round.RoundResult{Round: int(t), Participants: facts.Reporters, Reports: int64(facts.Reporters), Dummies: int64(h.Counts.Dummies)}
	if err := a.persist(rd, counts, &res); err != nil {
		return nil, err
	}
	a.purgeOpening(t)
	a.finished, a.pending = t, 0
	// Seconds is the round's latency (announcement to release); Analyze
	// the batch's processing (opening, estimate, checkpoint).
	res.Timing.Analyze = time.Since(start).Seconds()
	res.Seconds = time.Since(a.announced).Seconds()
	a.finishResult(&res)
	select {
	case a.done <- t:
	default:
		<-a.done
		a.done <- t
	}
	return resp, nil
}

// admit checks that a batch belongs to this run's pending round. A batch
// for a round already released is acknowledged with already_released (a
// non-nil response) and changes nothing.
func (a *Analyzer) admit(h *wire.BatchHeader) (*wire.BatchResponse, error) {
	t := h.Round
	if h.RunId != a.st.RunID {
		return nil, wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, "header.run_id", t, "batch of run %q, this analyzer runs %q", h.RunId, a.st.RunID)
	}
	if t <= a.finished {
		if e, err := a.cfg.DB.Round(t); err == nil && e.Status == store.RoundReleased {
			return &wire.BatchResponse{Round: t, AlreadyReleased: true}, nil
		}
		return nil, wire.Errorf(codes.FailedPrecondition, wire.Reason_REASON_ROUND_CLOSED, "header.round", t, "round %d is finished", t)
	}
	if t != a.pending {
		return nil, wire.Errorf(codes.NotFound, wire.Reason_REASON_UNKNOWN_ROUND, "header.round", t, "round %d was not announced (pending: %d)", t, a.pending)
	}
	return nil, nil
}

// openBatch opens every message of the batch (bad ones dropped and counted
// by reason) into the role's batch, on the openers if the analyzer has
// them, and returns the round's counts for the round log and the
// response's. Either way the batch holds the opened values in batch order,
// so the round's release is the same bit for bit.
func (a *Analyzer) openBatch(ctx context.Context, h *wire.BatchHeader, ms []*wire.SealedMessage, reporters int) (*role.Batch[role.Plain], store.RoundCounts, *wire.BatchResponse, error) {
	t := h.Round
	b := &role.Batch[role.Plain]{Round: int(t), Mode: a.st.Proto.Mode(), Dim: len(a.w), Senders: reporters}
	if b.Mode == protocol.PerCoordinate {
		b.Columns = make([][]role.Plain, len(a.w))
	}
	add := func(l seal.Label, values []float64) {
		switch l.Kind {
		case seal.KindCoord:
			b.Columns[l.Index] = append(b.Columns[l.Index], role.Plain{Value: values[0]})
		case seal.KindMeta:
			b.Meta = append(b.Meta, role.Plain{Value: values[0]})
		case seal.KindReport:
			b.Reports = append(b.Reports, role.Plain{Report: &protocol.Report{Values: values}})
		}
	}
	a.prog.report(Progress{Role: "analyzer", Round: t, Stage: StageOpening, Total: int64(len(ms))})
	var os seal.Stats
	var err error
	if a.openq != nil {
		os, err = a.openRemote(ctx, t, ms, add)
	} else {
		os, err = a.openLocal(t, ms, add)
	}
	if err != nil {
		return nil, store.RoundCounts{}, nil, err
	}
	a.stats = addStats(a.stats, os)
	counts := store.RoundCounts{Received: int64(len(ms)), Accepted: os.Accepted, Dummies: int64(h.Counts.Dummies), Rejected: map[string]int64{}}
	resp := &wire.BatchResponse{Round: t, Accepted: uint64(os.Accepted), Rejected: map[string]uint64{}}
	for _, r := range seal.Reasons() {
		if n := os.Count(r); n > 0 {
			counts.Rejected[r.String()] = n
			resp.Rejected[r.String()] = uint64(n)
		}
	}
	if os.Rejected() > 0 {
		a.logf("analyzer: round %d: %d of %d messages rejected %v", t, os.Rejected(), len(ms), counts.Rejected)
	}
	return b, counts, resp, nil
}

// openLocal opens ms on this process's cores and passes the opened values
// to add in batch order.
func (a *Analyzer) openLocal(t int64, ms []*wire.SealedMessage, add func(seal.Label, []float64)) (seal.Stats, error) {
	opener, err := seal.NewOpener(a.cfg.Key, a.st.RunID, uint64(t), a.st.Spec())
	if err != nil {
		return seal.Stats{}, wire.Errorf(codes.Internal, wire.Reason_REASON_INTERNAL, "", t, "%v", err)
	}
	opening := Progress{Role: "analyzer", Round: t, Stage: StageOpening, Total: int64(len(ms))}
	for _, o := range openAll(opener, ms, func(done int64) {
		p := opening
		p.Done = done
		a.prog.report(p)
	}) {
		if o.err == nil {
			add(o.label, o.values)
		}
	}
	return opener.Stats(), nil
}

// decide hands round t's facts and opened batch to the analyzer machine:
// it voids the round (too few reports, past the run's target, a batch it
// or the registered budgets refuse) or releases it.
func (a *Analyzer) decide(t int, facts RoundFacts, b *role.Batch[role.Plain]) (role.Ready, error) {
	s := a.st.RoundShape(t, facts)
	f := role.Facts{Shape: s, Sampled: facts.Sampled, Reporters: facts.Reporters, Budgets: facts.Budgets, MinReports: a.cfg.MinReports}
	rd, err := a.an.Open(f)
	switch {
	case errors.Is(err, role.ErrOrder):
		return rd, wire.Errorf(codes.Internal, wire.Reason_REASON_INTERNAL, "", int64(t), "%v", err)
	case err != nil:
		return rd, wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, "header.counts.reports", int64(t), "%v", err)
	case !rd.Accepting:
		return rd, nil
	}
	// The opened metadata must be the registered budgets' (a client that
	// encoded with another budget, or a header whose budgets are not the
	// reporters', would make the statement wrong).
	meta := make([]float64, len(b.Meta))
	for i, m := range b.Meta {
		meta[i] = m.Value
	}
	err = a.st.CheckMeta(t, facts.Budgets, meta)
	if err == nil {
		err = a.an.Absorb(role.BatchInput(b))
	}
	if err != nil {
		rd, err = a.an.Void(fmt.Sprintf("the batch was refused: %v", err))
	} else {
		rd, err = a.an.Close(streams{a.cfg.TestSeed}.get(rng.LabelAnalyzer, uint64(t)))
	}
	if err != nil {
		return rd, wire.Errorf(codes.Internal, wire.Reason_REASON_INTERNAL, "", int64(t), "%v", err)
	}
	if rd.Dropped > 0 {
		a.logf("analyzer: round %d: %d opened values outside the randomizer's range left out", t, rd.Dropped)
	}
	if rd.Restated != "" {
		a.logf("analyzer: round %d: statement made from the opened counts: %s", t, rd.Restated)
	}
	return rd, nil
}

// persist commits the analyzer's decision: a released round's checkpoint
// (models and accountant) with its round-log entry in one transaction, or
// the void round's entry.
func (a *Analyzer) persist(rd role.Ready, counts store.RoundCounts, res *round.RoundResult) error {
	t := int64(rd.Round)
	if !rd.Released {
		if err := a.cfg.DB.VoidRound(t, counts); err != nil {
			return wire.Errorf(codes.Internal, wire.Reason_REASON_INTERNAL, "", t, "voiding the round: %v", err)
		}
		a.logf("analyzer: round %d void: %s", t, rd.Why)
		a.prog.report(Progress{Role: "analyzer", Round: t, Stage: StageVoid})
		res.Participants = 0
		res.Privacy.Bound = "no release (" + rd.Why + ")"
		return nil
	}
	mb, err := packModels(rd.Checkpoint.Models)
	if err != nil {
		return wire.Errorf(codes.Internal, wire.Reason_REASON_INTERNAL, "", t, "%v", err)
	}
	aj := json.RawMessage("null")
	if acct := rd.Checkpoint.Accountant; acct != nil {
		if aj, err = json.Marshal(acct); err != nil {
			return wire.Errorf(codes.Internal, wire.Reason_REASON_INTERNAL, "", t, "%v", err)
		}
	}
	if err := a.cfg.DB.ReleaseRound(store.Checkpoint{Round: t, Model: mb, Accountant: aj}, counts); err != nil {
		// The model in memory moved on but nothing is durable: this
		// process must not continue (a restart resumes the checkpoint).
		a.logf("analyzer: round %d: committing the release: %v", t, err)
		return wire.Errorf(codes.Internal, wire.Reason_REASON_INTERNAL, "", t, "%v", err)
	}
	a.released++
	a.prog.report(Progress{Role: "analyzer", Round: t, Stage: StageReleased})
	res.Privacy = rd.Privacy
	a.clusterResult(res)
	return nil
}

// newRole builds the analyzer role on the model a.w and, for a clustered
// protocol, the other k−1 models hs (which it then owns and updates).
func (a *Analyzer) newRole(hs [][]float64) (*role.Analyzer, error) {
	return role.NewAnalyzer(role.AnalyzerConfig{Protocol: a.st.Proto, Model: a.w, Hypotheses: hs, ServerLR: a.st.ServerLR,
		Accountant: a.acct, TargetEpsilon: a.st.Config.TargetEpsilon})
}

// Models returns copies of the analyzer's k models (models[0] is Model()).
func (a *Analyzer) Models() [][]float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out [][]float64
	for _, m := range a.an.Models() {
		out = append(out, append([]float64(nil), m...))
	}
	return out
}

// announcedModels are the models of an announcement: the global model
// ("global"), or a clustered protocol's k hypotheses ("hypothesis-0" ...),
// in the analyzer's order, which is the order a client chooses among.
func announcedModels(ms [][]float64) ([]*wire.Model, error) {
	out := make([]*wire.Model, len(ms))
	for h, m := range ms {
		w, err := wire.PackFloat64s(m)
		if err != nil {
			return nil, err
		}
		name := "global"
		if len(ms) > 1 {
			name = fmt.Sprintf("hypothesis-%d", h)
		}
		out[h] = &wire.Model{Name: name, Dimension: uint32(len(m)), Weights: w}
	}
	return out, nil
}

// packModels encodes a checkpoint's models: the k models' parameters
// concatenated (k·d values; k = 1 is the one global model, the format of
// a non-clustered checkpoint).
func packModels(ms [][]float64) ([]byte, error) {
	all := make([]float64, 0, len(ms)*len(ms[0]))
	for _, m := range ms {
		all = append(all, m...)
	}
	return wire.PackFloat64s(all)
}

// unpackModels decodes packModels' encoding of k models of dimension d; a
// checkpoint of another k or d is an error wrapping checks.ErrInvalid.
func unpackModels(b []byte, k, d int) ([][]float64, error) {
	if len(b) != 8*k*d {
		return nil, checks.Invalidf("checkpoint of %d bytes, want %d models of %d parameters (%d bytes)", len(b), k, d, 8*k*d)
	}
	all, err := wire.UnpackFloat64s(nil, b, k*d)
	if err != nil {
		return nil, err
	}
	ms := make([][]float64, k)
	for h := range ms {
		ms[h] = all[h*d : (h+1)*d : (h+1)*d]
	}
	return ms, nil
}

// clusterResult fills a released round's per-model record of a clustered
// protocol: how many released vectors the k-means put in each model's
// cluster. The clients' choices are private (Chosen stays 0: the analyzer
// never learns them).
func (a *Analyzer) clusterResult(res *round.RoundResult) {
	if a.st.Clustered() == nil {
		return
	}
	sizes := a.an.ClusterSizes()
	res.Hypotheses = make([]round.Hypothesis, a.st.K)
	for h := range res.Hypotheses {
		if h < len(sizes) {
			res.Hypotheses[h].Size = sizes[h]
		}
	}
}

// evaluateClustered evaluates every model on every test group and sets the
// round's accuracy and loss to the average over groups of the group's best
// model (round.BestPerGroup), as the engine's evaluation of a clustered
// protocol does. Each released model's MaxLeakage is the analyzer's bound
// on the leakage of the clients in its cluster (dleak).
func (a *Analyzer) evaluateClustered(res *round.RoundResult, workers int, dleak float64) error {
	g := a.st.TestGroups
	n := len(a.st.Test.Y) / g
	f := a.st.Test.Features
	if res.Hypotheses == nil {
		res.Hypotheses = make([]round.Hypothesis, a.st.K)
	}
	for h, w := range a.an.Models() {
		hy := &res.Hypotheses[h]
		hy.Accuracy, hy.Loss = make([]float64, g), make([]float64, g)
		for i := 0; i < g; i++ {
			ex := fl.Examples{X: a.st.Test.X[i*n*f : (i+1)*n*f], Y: a.st.Test.Y[i*n : (i+1)*n], Features: f}
			acc, loss, err := fl.Evaluate(a.st.Model, w, ex, workers)
			if err != nil {
				return err
			}
			hy.Accuracy[i], hy.Loss[i] = acc, loss
		}
		if hy.Size > 0 {
			hy.MaxLeakage = dleak
		}
	}
	res.TestAccuracy, res.TestLoss = 0, 0
	for i, best := range round.BestPerGroup(res.Hypotheses) {
		res.TestAccuracy += res.Hypotheses[best].Accuracy[i] / float64(g)
		res.TestLoss += res.Hypotheses[best].Loss[i] / float64(g)
	}
	return nil
}

// maxDLeak bounds every client's cumulative d-privacy leakage after the
// released rounds: the analyzer does not see the clients' ledgers, so it
// states the most any client can have composed — one level per released
// round, and no more than its cap allows (a client declines a release
// past ClientCap).
func (a *Analyzer) maxDLeak() float64 {
	l := float64(a.released) * a.st.DLevel
	if c := a.st.Config.ClientCap; c > 0 {
		l = math.Min(l, math.Floor(c/a.st.DLevel*(1+1e-9))*a.st.DLevel)
	}
	return l
}

// finishResult evaluates the model and completes the round's record.
func (a *Analyzer) finishResult(res *round.RoundResult) {
	t0 := time.Now()
	workers := a.cfg.Workers
	if workers <= 0 {
		workers = 1
	}
	if a.st.Clustered() != nil {
		var dleak float64
		if a.st.DLevel > 0 {
			dleak = a.maxDLeak()
			res.DPrivacy = &round.DPrivacyRound{Level: a.st.DLevel, MaxCumulative: dleak, MedianCumulative: dleak}
		}
		if err := a.evaluateClustered(res, workers, dleak); err != nil {
			a.logf("analyzer: round %d: evaluation: %v", res.Round, err)
		}
	} else {
		acc, loss, err := fl.Evaluate(a.st.Model, a.an.Model(), a.st.Test, workers)
		if err != nil {
			a.logf("analyzer: round %d: evaluation: %v", res.Round, err)
		}
		res.TestAccuracy, res.TestLoss = acc, loss
	}
	res.Timing.Evaluate = time.Since(t0).Seconds()
	if a.acct != nil {
		sp := a.acct.Spent()
		res.Privacy.Private = true
		res.Privacy.CumulativeEpsilon, res.Privacy.CumulativeDelta, res.Privacy.CumulativeMethod = sp.Epsilon, sp.Delta, sp.Method
		res.Privacy.CumulativeApproximate = sp.Approximate
	} else {
		res.Privacy.CumulativeEpsilon = math.Inf(1)
	}
	// The analyzer does not see the clients' ledgers: the most any client
	// can have spent is the run's largest budget per released round.
	res.MaxClientEpsilon = math.Inf(1)
	if a.st.Charges {
		res.MaxClientEpsilon = float64(a.released) * a.st.MaxEpsilon()
	}
	s := &a.sum
	s.Rounds = res.Round
	s.FinalAccuracy, s.FinalLoss = res.TestAccuracy, res.TestLoss
	s.BestAccuracy = math.Max(s.BestAccuracy, res.TestAccuracy)
	s.Privacy, s.MaxClientEpsilon = res.Privacy, res.MaxClientEpsilon
	if a.cfg.Observe != nil {
		a.cfg.Observe(*res)
	}
}

// opened is one message after opening.
type opened struct {
	label  seal.Label
	values []float64
	err    error
}

// openStep is how many messages a worker opens between two progress
// reports.
const openStep = 1024

// openAll opens the messages on all cores, keeping their order, and calls
// progress with the number opened so far (from the workers, every openStep
// messages of each, and len(ms) at the end).
func openAll(o *seal.Opener, ms []*wire.SealedMessage, progress func(done int64)) []opened {
	out := make([]opened, len(ms))
	workers := max(1, min(len(ms)/64, goMaxProcs()))
	var done atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := 0
			for i := w; i < len(ms); i += workers {
				l, v, err := o.Open(ms[i].Ciphertext)
				out[i] = opened{l, v, err}
				if k++; k == openStep {
					progress(done.Add(int64(k)))
					k = 0
				}
			}
			done.Add(int64(k))
		}()
	}
	wg.Wait()
	progress(done.Load())
	return out
}

func addStats(a, b seal.Stats) seal.Stats {
	a.Accepted += b.Accepted
	a.Malformed += b.Malformed
	a.Suite += b.Suite
	a.Round += b.Round
	a.Label += b.Label
	a.Length += b.Length
	a.Replay += b.Replay
	a.Auth += b.Auth
	a.NonFinite += b.NonFinite
	a.Range += b.Range
	return a
}
