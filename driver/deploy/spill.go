package deploy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
	"github.com/shufflefl/shufflefl/role/shard"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// A round too large for memory is shuffled on disk (docs/DEPLOYMENT.md,
// "Spilling a large round to disk"). While a round's sealed bytes stay
// within ShufflerConfig.ShuffleMemory, the round machine keeps the
// payloads and the round closes in memory as it always did (in test mode
// bit-identical to the simulation). Past the budget, the machine only
// counts the submissions (role.Shuffler.Count; the inbox holds them), and
// at the close the shuffler runs the two-stage shuffle of package
// role/shard on disk: every message (the reports read back from the
// inbox a page at a time, the dummies sealed a block at a time as the
// padding draws them) goes to one of B spill files chosen uniformly and
// independently (shard.Scatter's rule), then each file in turn is read,
// permuted uniformly (shard.Permute) and streamed into the saved batch
// (store.DB.SaveBatchFunc), which is durable before the first forward
// attempt, exactly as in memory; the forward streams the saved batch from
// the database. Each group's order (a coordinate's values, the reports,
// the metadata) is then a uniform permutation, the statement's
// assumption; its realisation is not the in-memory path's.

// defaultShuffleMemory is ShufflerConfig.ShuffleMemory's default.
const defaultShuffleMemory = 1 << 30

// Spill files: at most maxSpillFiles, each about a quarter of the budget
// so that one file, read and permuted, stays well inside it.
const (
	minSpillFiles  = 2
	maxSpillFiles  = 256
	spillBufBytes  = 32 << 10
	spillSealBatch = 16 * dummyBlock // dummies sealed at once (all cores)
)

// shuffleMemory returns the round memory budget in bytes.
func (s *Shuffler) shuffleMemory() int64 {
	if s.cfg.ShuffleMemory > 0 {
		return s.cfg.ShuffleMemory
	}
	return defaultShuffleMemory
}

// spillRoot returns the directory of the rounds' spill files.
func (s *Shuffler) spillRoot() string {
	if s.cfg.SpillDir != "" {
		return s.cfg.SpillDir
	}
	return filepath.Join(filepath.Dir(s.cfg.DB.Path()), "spill")
}

// addReport adds a stored report's messages to the round machine (the
// caller holds sr.mu): kept in memory while the round's sealed bytes stay
// within the budget, counted only (role.Shuffler.Count) past it or at a
// sharded front. A sender
// the round already holds is acknowledged as a duplicate (Resubmit).
func (s *Shuffler) addReport(sr *sround, id string, msgs []role.Message[[]byte], size int64) (role.Ack, error) {
	switch {
	case sr.spilling:
	case s.cfg.Shards > 0:
		// A sharded front routes the round from the inbox (shardfront.go):
		// it never holds the payloads.
		sr.spilling = true
	case sr.bytes+size > s.shuffleMemory():
		sr.spilling = true
		s.logf("shuffler: round %d: over %d bytes of sealed messages: the rest of the round is kept on disk only, and it is shuffled on disk", sr.t, s.shuffleMemory())
	}
	var ack role.Ack
	var err error
	if sr.spilling {
		ack, err = sr.live.Count(id, msgs)
		if errors.Is(err, role.ErrDuplicateSender) {
			return role.Ack{Round: int(sr.t), Senders: sr.live.Senders(), Duplicate: true}, nil
		}
	} else {
		ack, err = sr.live.Resubmit(id, msgs)
	}
	if err == nil && !ack.Duplicate {
		sr.bytes += size
	}
	return ack, err
}

// spills says whether round sr (closing; the caller holds sr.mu) is
// shuffled on disk: it went over the budget while receiving, or its
// sealed bytes with the dummies its padding will draw (counted with a
// generator of the shuffler's own, so the round's streams are untouched)
// are over it.
func (s *Shuffler) spills(sr *sround) bool {
	if sr.spilling {
		return true
	}
	if s.st.Proto.Mode() != protocol.PerCoordinate {
		return false
	}
	nd, err := sr.live.Dummies(rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		return false // Close reports it
	}
	return sr.bytes+nd*int64(seal.MessageSize(s.sealer.Suite(), seal.KindCoord, 1)) > s.shuffleMemory()
}

// closeSpilled is closeAndForward for a round shuffled on disk.
func (s *Shuffler) closeSpilled(sr *sround) {
	t := sr.t
	gen := streams{s.cfg.TestSeed}
	padRand, perm := gen.get(rng.LabelShuffle, uint64(t), 0), gen.get(rng.LabelShuffle, uint64(t), 1)
	sr.mu.Lock()
	senders, reporters, real := sr.live.Senders(), slices.Clone(sr.reporters), sr.bytes
	nd, _ := sr.live.Dummies(rand.New(rand.NewPCG(1, 2)))
	pad, err := sr.live.ClosePadding()
	sr.mu.Unlock()
	h := s.batchHeader(sr)
	if errors.Is(err, role.ErrTooFew) {
		s.voidRound(sr, h, senders)
		return
	}
	dsize := int64(seal.MessageSize(s.sealer.Suite(), seal.KindCoord, 1))
	sp, err := newSpill(filepath.Join(s.spillRoot(), "round-"+strconv.FormatInt(t, 10)), spillFiles(real+nd*dsize, s.shuffleMemory()), perm)
	if err == nil {
		defer sp.remove()
		err = s.scatter(sr, sp, pad, padRand)
	}
	if err != nil {
		s.logf("shuffler: round %d: shuffling on disk: %v", t, err)
		return
	}
	h.Counts.Reports, h.Counts.Messages, h.Counts.Dummies = uint32(senders), uint64(sp.n), uint64(sp.dummies)
	h.ReporterEpsilons, h.ReporterDeltas = s.reporterBudgets(reporters)
	s.spillHook("scattered")
	hb, err := proto.Marshal(h)
	if err == nil {
		err = s.cfg.DB.SaveBatchFunc(t, hb, func(put func(store.SealedMessage) error) error { return sp.gather(perm, put) })
	}
	if err != nil {
		// As in memory: never forward a shuffle that is not durable.
		s.logf("shuffler: round %d: saving the shuffled batch: %v", t, err)
		return
	}
	s.logf("shuffler: round %d: shuffled on disk: %d messages (%d dummies) through %d spill files", t, sp.n, sp.dummies, len(sp.paths))
	s.spillHook("saved")
	s.forwardStored(h)
}

// spillHook calls the test hook at a stage of the disk shuffle.
func (s *Shuffler) spillHook(stage string) {
	if s.onSpill != nil {
		s.onSpill(stage)
	}
}

// scatter sends the round's stored reports, then its dummies as the
// padding draws them (sealed a block at a time on every core), to the
// spill files.
func (s *Shuffler) scatter(sr *sround, sp *spill, pad func(*rand.Rand, func(int, float64)) error, padRand *rand.Rand) error {
	t := sr.t
	err := s.cfg.DB.EachRoundReport(t, func(rep store.InboxReport) error {
		msgs, err := s.parse(t, toWire(rep.Messages))
		if err != nil {
			return fmt.Errorf("stored report of %s: %w", rep.Client, err)
		}
		for _, m := range msgs {
			if err := sp.add(groupLabel(m.Label), m.Payload); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	shuffling := Progress{Role: "shuffler", Round: t, Stage: StageShuffling, Reports: int64(sr.live.Senders())}
	dum := newDummies(s.sealer, uint64(t))
	var derr error
	flush := func() {
		if derr != nil || dum.len() == 0 {
			return
		}
		if derr = dum.seal(goMaxProcs(), nil); derr != nil {
			return
		}
		for i, slot := range dum.slots {
			if derr = sp.add(uint32(dum.coords[i]), slot); derr != nil {
				return
			}
		}
		sp.dummies += int64(dum.len())
		shuffling.Done, shuffling.Total = sp.dummies, sp.dummies
		s.prog.report(shuffling)
		dum = newDummies(s.sealer, uint64(t))
	}
	err = pad(padRand, func(j int, v float64) {
		if s.st.Proto.Mode() != protocol.PerCoordinate {
			derr = errf("dummy reports of whole-report protocols are not supported")
		}
		if derr == nil {
			dum.add(j, v)
		}
		if dum.len() >= spillSealBatch {
			flush()
		}
	})
	flush()
	return errors.Join(err, derr, sp.finish())
}

// groupLabel is a message's wire label in the batch: its coordinate, or 0
// for a whole report or a metadata value (batchMessages' rule).
func groupLabel(l int32) uint32 {
	if l >= 0 {
		return uint32(l)
	}
	return 0
}

// spillFiles is the number of spill files for a round of total bytes
// under budget: files of about a quarter of the budget, at least
// minSpillFiles and at most maxSpillFiles.
func spillFiles(total, budget int64) int {
	per := max(budget/4, 1)
	return int(min(max((total+per-1)/per, minSpillFiles), maxSpillFiles))
}

// spill is the two-stage shuffle's state on disk: the spill files, each
// (uvarint label, uvarint length, bytes)*.
type spill struct {
	dir     string
	paths   []string
	files   []*os.File
	bufs    []*bufio.Writer
	pick    *rand.Rand
	n       int64 // messages scattered
	dummies int64 // of which dummies
	rec     []byte
}

// newSpill makes dir afresh (a crashed shuffler's files are discarded)
// with files spill files; pick chooses each message's file.
func newSpill(dir string, files int, pick *rand.Rand) (*spill, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	sp := &spill{dir: dir, pick: pick}
	for b := range files {
		p := filepath.Join(dir, fmt.Sprintf("%03d.spill", b))
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			sp.remove()
			return nil, err
		}
		sp.paths, sp.files, sp.bufs = append(sp.paths, p), append(sp.files, f), append(sp.bufs, bufio.NewWriterSize(f, spillBufBytes))
	}
	return sp, nil
}

// add appends a message to a spill file chosen uniformly and
// independently of everything else (shard.Scatter's rule).
func (sp *spill) add(label uint32, p []byte) error {
	b := sp.pick.IntN(len(sp.bufs))
	sp.rec = binary.AppendUvarint(sp.rec[:0], uint64(label))
	sp.rec = binary.AppendUvarint(sp.rec, uint64(len(p)))
	if _, err := sp.bufs[b].Write(sp.rec); err != nil {
		return err
	}
	_, err := sp.bufs[b].Write(p)
	sp.n++
	return err
}

// finish flushes and closes the spill files.
func (sp *spill) finish() error {
	var errs []error
	for i, f := range sp.files {
		errs = append(errs, sp.bufs[i].Flush(), f.Close())
	}
	sp.files = nil
	return errors.Join(errs...)
}

// gather is the second stage: each spill file in turn is read, its
// messages permuted uniformly with perm, and handed to put in that order;
// the file is deleted once read.
func (sp *spill) gather(perm *rand.Rand, put func(store.SealedMessage) error) error {
	for _, p := range sp.paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var ms []store.SealedMessage
		for len(b) > 0 {
			label, k := binary.Uvarint(b)
			if k <= 0 {
				return fmt.Errorf("spill file %s: corrupt label", p)
			}
			l, k2 := binary.Uvarint(b[k:])
			if k2 <= 0 || l > uint64(len(b)-k-k2) {
				return fmt.Errorf("spill file %s: corrupt length", p)
			}
			b = b[k+k2:]
			ms = append(ms, store.SealedMessage{Label: uint32(label), Sealed: b[:l:l]})
			b = b[l:]
		}
		shard.Permute(perm, ms)
		for _, m := range ms {
			if err := put(m); err != nil {
				return err
			}
		}
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes the spill directory.
func (sp *spill) remove() {
	for _, f := range sp.files {
		f.Close()
	}
	_ = os.RemoveAll(sp.dir)
}

// batchSource is a batch as one forward attempt sends it: each calls send
// with its chunks in order (the first carries the header).
type batchSource struct {
	messages int64
	bytes    *int64 // ciphertext bytes (for a stored batch, known once sent)
	chunks   int    // the number of chunks (for a stored batch, an estimate for the progress)
	each     func(send func(*wire.BatchChunk) error) error
	// acked, if set, runs once the analyzer answered, before the round is
	// marked forwarded (a sharded round's manifest is saved then); an
	// error is retried as a failed attempt.
	acked func() error
}

// memorySource is a batch held in memory, chunked by ChunkBatchBytes.
func memorySource(h *wire.BatchHeader, ms []*wire.SealedMessage) (batchSource, error) {
	chunks, err := wire.ChunkBatchBytes(h, ms, forwardChunkMessages, forwardChunkBytes)
	if err != nil {
		return batchSource{}, err
	}
	var size int64
	for _, m := range ms {
		size += int64(len(m.Ciphertext))
	}
	src := batchSource{messages: int64(len(ms)), bytes: &size, chunks: len(chunks), each: func(send func(*wire.BatchChunk) error) error {
		for _, c := range chunks {
			if err := send(c); err != nil {
				return err
			}
		}
		return nil
	}}
	return src, nil
}

// storedSource is round h.Round's saved batch, read from the inbox a
// stored chunk at a time and sent in the chunks ChunkBatchBytes would
// make of it (the same greedy rule over the same sequence).
func (s *Shuffler) storedSource(h *wire.BatchHeader) batchSource {
	n := int64(h.Counts.GetMessages())
	src := batchSource{messages: n, bytes: new(int64), chunks: int(max((n+forwardChunkMessages-1)/forwardChunkMessages, 1))}
	src.each = func(send func(*wire.BatchChunk) error) error {
		cur, size := &wire.BatchChunk{Header: h}, 0
		var bytes int64
		err := s.cfg.DB.EachBatchChunk(h.Round, func(_ store.BatchInfo, ms []store.SealedMessage) error {
			for _, m := range ms {
				k := len(m.Sealed)
				if len(cur.Messages) == forwardChunkMessages || (len(cur.Messages) > 0 && size+k > forwardChunkBytes) {
					if err := send(cur); err != nil {
						return err
					}
					cur, size = &wire.BatchChunk{}, 0
				}
				cur.Messages = append(cur.Messages, &wire.SealedMessage{Label: m.Label, Ciphertext: m.Sealed})
				size += k
				bytes += int64(k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		*src.bytes = bytes
		return send(cur)
	}
	return src
}

// forwardStored forwards round h.Round's saved batch from the inbox,
// retrying until the analyzer acknowledges (forwardAttempts).
func (s *Shuffler) forwardStored(h *wire.BatchHeader) {
	s.forwardAttempts(h, s.storedSource(h), false)
}

// dummySpill seals a round's dummies a block of spillSealBatch at a time
// (on every core) as the padding draws them and scatters each block into
// a spill, as Shuffler.scatter does: a driver hands it the dummies it
// keeps (add) and flushes the last block. The first error stops it.
type dummySpill struct {
	sealer *seal.Sealer
	round  uint64
	sp     *spill
	dum    *dummies
	err    error
	// sealed, if set, is called with the dummies scattered so far after
	// each block.
	sealed func(n int64)
}

func newDummySpill(sealer *seal.Sealer, round uint64, sp *spill, sealed func(int64)) *dummySpill {
	return &dummySpill{sealer: sealer, round: round, sp: sp, dum: newDummies(sealer, round), sealed: sealed}
}

// add records a dummy for coordinate j with value v, flushing a full
// block.
func (d *dummySpill) add(j int, v float64) {
	if d.err != nil {
		return
	}
	d.dum.add(j, v)
	if d.dum.len() >= spillSealBatch {
		d.flush()
	}
}

// flush seals the recorded dummies and scatters them; it returns the
// first error so far.
func (d *dummySpill) flush() error {
	if d.err != nil || d.dum.len() == 0 {
		return d.err
	}
	if d.err = d.dum.seal(goMaxProcs(), nil); d.err != nil {
		return d.err
	}
	for i, slot := range d.dum.slots {
		if d.err = d.sp.add(uint32(d.dum.coords[i]), slot); d.err != nil {
			return d.err
		}
	}
	d.sp.dummies += int64(d.dum.len())
	if d.sealed != nil {
		d.sealed(d.sp.dummies)
	}
	d.dum = newDummies(d.sealer, d.round)
	return nil
}
