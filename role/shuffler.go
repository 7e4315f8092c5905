package role

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/protocol"
)

// Public labels of messages that do not belong to one coordinate.
const (
	// MetaLabel marks a metadata value (APES's epsilon), shuffled apart
	// from the values.
	MetaLabel int32 = -1
	// ReportLabel marks a whole report (whole-report and unshuffled
	// protocols).
	ReportLabel int32 = -2
)

// MaxMeta is the number of metadata values one submission may carry: every
// protocol of package protocol sends at most one (APES's epsilon_i), and a
// sender that sent more would weigh the analyzer's epsilon multiset.
const MaxMeta = 1

// Message is one unit the shuffler handles: a public label (a coordinate
// index, MetaLabel or ReportLabel) and a payload the shuffler never reads.
// In a deployment the payload is a ciphertext sealed to the analyzer (the
// label is bound into its associated data); in a simulation it is Plain.
type Message[P any] struct {
	Label   int32
	Payload P
}

// Plain is a payload in the clear, as a simulation passes it and as the
// analyzer holds it after opening a sealed one: a single value (coordinate
// and metadata messages) or a whole report (ReportLabel).
type Plain struct {
	Value  float64
	Report *protocol.Report
}

// Batch is what the shuffler forwards to the analyzer for one round:
// identities stripped, padded with the protocol's dummies, permuted. It
// carries no sender, and within each group the order is uniformly random
// (per-coordinate and whole-report modes) or the arrival order (no
// shuffle).
type Batch[P any] struct {
	Round int
	Mode  protocol.ShuffleMode
	Dim   int
	// Senders is the number of real submissions (the analyzer's accountant
	// needs the number of reporters; it learns no more about them).
	Senders int
	// Columns[j] holds the payloads labelled j, real and dummy
	// (per-coordinate mode).
	Columns [][]P
	// Reports holds whole reports and any dummies (other modes).
	Reports []P
	// Meta holds the metadata payloads.
	Meta []P
}

type roundState uint8

const (
	stateOpen roundState = iota
	stateClosed
	stateVoid
)

// Shuffler is the shuffler's side of one round: it accepts one submission
// per sender, checks the public labels, and when the round closes with
// enough senders it pads with the protocol's dummies and permutes. It is
// generic in the payload, which it never reads.
//
// A Shuffler serves one round and is not safe for concurrent use.
type Shuffler[P any] struct {
	proto    protocol.Padder
	s        protocol.Shape
	mode     protocol.ShuffleMode
	min      int
	state    roundState
	senders  map[string]struct{}
	nsend    int              // senders (Accept's, or CloseCounts' vouched number)
	counts   []int64          // real values per coordinate (per-coordinate mode)
	stamp    []int32          // duplicate-label detection: attempt number per coordinate
	seen     []int32          // values of the current attempt per coordinate
	perCoord int32            // values a submission may carry per coordinate
	layout   *protocol.Layout // a complete report's labels (nil: unchecked)
	attempt  int32            // submissions checked so far (accepted or not)
	reports  int64            // whole reports accepted (kept or counted)
	counted  bool             // a submission was counted without its payloads
	batch    Batch[P]
}

// NewShuffler opens round s.Round of protocol p. min is the minimum number
// of senders for the round to be released (0 releases even an empty round:
// central DP under Poisson sampling adds its noise whoever takes part). s.Participants may
// be 0: it is then set to the number of senders when the round closes.
func NewShuffler[P any](p protocol.Padder, s protocol.Shape, min int) (*Shuffler[P], error) {
	if err := checks.IntAtLeast("round", s.Round, 1); err != nil {
		return nil, err
	}
	if err := checks.IntAtLeast("dimension", s.Dim, 1); err != nil {
		return nil, err
	}
	if err := checks.IntAtLeast("minimum reports", min, 0); err != nil {
		return nil, err
	}
	mode := p.Mode()
	sh := &Shuffler[P]{proto: p, s: s, mode: mode, min: min, senders: map[string]struct{}{}}
	sh.batch = Batch[P]{Round: s.Round, Mode: mode, Dim: s.Dim}
	if mode == protocol.PerCoordinate {
		sh.counts = make([]int64, s.Dim)
		sh.stamp = make([]int32, s.Dim)
		sh.seen = make([]int32, s.Dim)
		sh.batch.Columns = make([][]P, s.Dim)
		sh.perCoord = 1
		if mv, ok := p.(protocol.MultiValued); ok && mv.ValuesPerCoordinate() > 1 {
			sh.perCoord = int32(mv.ValuesPerCoordinate())
		}
	}
	if l, ok := p.(protocol.Laid); ok {
		lay, err := l.Layout(layoutShape(s))
		if err != nil {
			return nil, fmt.Errorf("shuffler: round %d: the layout of a complete report: %w", s.Round, err)
		}
		if mode == protocol.PerCoordinate && (lay.PerCoord < 1 || int32(lay.PerCoord) > sh.perCoord || lay.Coords < 1 || lay.Coords > s.Dim) {
			return nil, fmt.Errorf("shuffler: round %d: layout %+v does not fit dimension %d with %d values per coordinate: %w", s.Round, lay, s.Dim, sh.perCoord, ErrOrder)
		}
		sh.layout = &lay
	}
	return sh, nil
}

// layoutShape is the shape a complete report's layout is computed for:
// the round's, with the planned participants when the driver leaves them
// to be counted at Close (the clients encoded for the same plan).
func layoutShape(s protocol.Shape) protocol.Shape {
	if s.Participants == 0 {
		s.Participants = s.Sampled
		if s.Participants == 0 {
			s.Participants = s.Population
		}
	}
	return s
}

// Layout returns the layout every accepted submission has (false when the
// protocol declares none and only the label rules are checked).
func (sh *Shuffler[P]) Layout() (protocol.Layout, bool) {
	if sh.layout == nil {
		return protocol.Layout{}, false
	}
	return *sh.layout, true
}

// Senders returns the number of submissions accepted so far.
func (sh *Shuffler[P]) Senders() int { return sh.nsend }

// Ack is the shuffler's answer to a submission: the round's count of
// senders after it, and whether it was a retry of a submission the round
// already held (nothing changed).
type Ack struct {
	Round     int
	Senders   int
	Duplicate bool
}

// Check checks a submission's labels against the open round without
// accepting anything: what a driver does before it persists the
// submission (Accept then cannot refuse it but as a duplicate). Labels must
// be coordinates of the model (each at most once, or as many times as a
// protocol.MultiValued protocol allows) or MetaLabel (at most MaxMeta) in
// per-coordinate mode, and exactly one ReportLabel plus at most MaxMeta
// metadata otherwise.
func (sh *Shuffler[P]) Check(msgs []Message[P]) error {
	if sh.state != stateOpen {
		return fmt.Errorf("shuffler: round %d: %w", sh.s.Round, ErrClosed)
	}
	if err := sh.check(msgs); err != nil {
		return fmt.Errorf("shuffler: round %d: %w", sh.s.Round, err)
	}
	return nil
}

// Accept takes one sender's submission for the round. The whole
// submission is checked (Check) before any of it is kept. A second
// submission from a sender is ErrDuplicateSender, one after the round
// closed ErrClosed.
func (sh *Shuffler[P]) Accept(sender string, msgs []Message[P]) (Ack, error) {
	return sh.accept(sender, msgs, true)
}

// Count is Accept for a driver that keeps the payloads itself (a
// deployment's shuffler spilling a large round to disk): the submission is
// checked and counted exactly as by Accept, and none of its payloads is
// kept. A round that counted a submission can only be closed with
// ClosePadding (Close is ErrOrder).
func (sh *Shuffler[P]) Count(sender string, msgs []Message[P]) (Ack, error) {
	return sh.accept(sender, msgs, false)
}

// accept is Accept (keep) or Count.
func (sh *Shuffler[P]) accept(sender string, msgs []Message[P], keep bool) (Ack, error) {
	if sh.state == stateOpen {
		if _, dup := sh.senders[sender]; dup {
			return Ack{}, fmt.Errorf("shuffler: round %d: %w", sh.s.Round, ErrDuplicateSender)
		}
	}
	if err := sh.Check(msgs); err != nil {
		return Ack{}, err
	}
	sh.senders[sender] = struct{}{}
	sh.nsend++
	sh.counted = sh.counted || !keep
	for _, m := range msgs {
		switch {
		case m.Label == MetaLabel:
			if keep {
				sh.batch.Meta = append(sh.batch.Meta, m.Payload)
			}
		case m.Label == ReportLabel:
			sh.reports++
			if keep {
				sh.batch.Reports = append(sh.batch.Reports, m.Payload)
			}
		default:
			if keep {
				sh.batch.Columns[m.Label] = append(sh.batch.Columns[m.Label], m.Payload)
			}
			sh.counts[m.Label]++
		}
	}
	return Ack{Round: sh.s.Round, Senders: sh.nsend}, nil
}

// Resubmit is Accept for a retry of a submission the driver has already
// persisted (an earlier attempt may or may not have reached the round): a
// sender the round already holds is acknowledged as a Duplicate, changing
// nothing.
func (sh *Shuffler[P]) Resubmit(sender string, msgs []Message[P]) (Ack, error) {
	if _, dup := sh.senders[sender]; dup && sh.state == stateOpen {
		return Ack{Round: sh.s.Round, Senders: sh.nsend, Duplicate: true}, nil
	}
	return sh.Accept(sender, msgs)
}

// check validates the labels of one submission without keeping anything:
// each label valid for the mode, no coordinate more often than allowed,
// and, when the protocol declares its Layout, exactly the labels of a
// complete report (a partial report would leave coordinates with fewer
// values than the round's statement counts).
func (sh *Shuffler[P]) check(msgs []Message[P]) error {
	sh.attempt++
	stamp := sh.attempt
	var meta, reports, coords int
	for i, m := range msgs {
		switch {
		case m.Label == MetaLabel:
			meta++
		case m.Label == ReportLabel && sh.mode != protocol.PerCoordinate:
			reports++
		case m.Label >= 0 && int(m.Label) < sh.s.Dim && sh.mode == protocol.PerCoordinate:
			if sh.stamp[m.Label] != stamp {
				sh.stamp[m.Label], sh.seen[m.Label] = stamp, 0
				coords++
			}
			if sh.seen[m.Label]++; sh.seen[m.Label] > sh.perCoord {
				return fmt.Errorf("%w: message %d repeats coordinate %d (at most %d values each)", ErrBadMessage, i, m.Label, sh.perCoord)
			}
		default:
			return fmt.Errorf("%w: message %d has label %d, not valid for a %s protocol of dimension %d", ErrBadMessage, i, m.Label, sh.mode, sh.s.Dim)
		}
	}
	if meta > MaxMeta {
		return fmt.Errorf("%w: %d metadata values, at most %d", ErrBadMessage, meta, MaxMeta)
	}
	if sh.mode != protocol.PerCoordinate && reports != 1 {
		return fmt.Errorf("%w: %d whole reports in one submission, want 1", ErrBadMessage, reports)
	}
	if sh.mode == protocol.PerCoordinate && len(msgs) == meta {
		return fmt.Errorf("%w: a submission without values", ErrBadMessage)
	}
	if l := sh.layout; l != nil {
		if meta != l.Meta {
			return fmt.Errorf("%w: incomplete report: %d metadata values, a complete report has %d", ErrBadMessage, meta, l.Meta)
		}
		// Every coordinate was seen at most PerCoord times, so exactly
		// Coords·PerCoord values over Coords coordinates means each holds
		// exactly PerCoord.
		if values := len(msgs) - meta; sh.mode == protocol.PerCoordinate && (coords != l.Coords || values != l.Coords*l.PerCoord) {
			return fmt.Errorf("%w: incomplete report: %d values over %d coordinates, a complete report labels %d coordinates with %d value(s) each", ErrBadMessage, values, coords, l.Coords, l.PerCoord)
		}
	}
	return nil
}

// Close ends the round. With fewer senders than the minimum the round is
// void, nothing is released and the error wraps ErrTooFew. Otherwise the
// protocol's padding is drawn from pad (dummy turns each dummy value into
// a payload — a deployment's shuffler seals it to the analyzer, so it is
// indistinguishable from a real one), every group is permuted with perm,
// and the batch is returned. A second Close is ErrClosed.
//
// In whole-report modes the shuffler cannot see which coordinates a report
// covers; it counts every report for every coordinate (the papers'
// whole-report protocols send dense reports and pad nothing).
func (sh *Shuffler[P]) Close(pad, perm *rand.Rand, dummy func(coord int, v float64) (P, error)) (*Batch[P], error) {
	if sh.counted {
		return nil, fmt.Errorf("shuffler: round %d: %w: Close after Count (ClosePadding)", sh.s.Round, ErrOrder)
	}
	if err := sh.close(); err != nil {
		return nil, err
	}
	counts := sh.padCounts()
	var derr error
	emit := func(j int, v float64) {
		if derr != nil {
			return
		}
		if j < 0 || j >= sh.s.Dim {
			derr = fmt.Errorf("dummy for coordinate %d outside [0, %d)", j, sh.s.Dim)
			return
		}
		p, err := dummy(j, v)
		if err != nil {
			derr = err
			return
		}
		if sh.mode == protocol.PerCoordinate {
			sh.batch.Columns[j] = append(sh.batch.Columns[j], p)
		} else {
			sh.batch.Reports = append(sh.batch.Reports, p)
		}
	}
	if err := sh.proto.Pad(pad, sh.s, counts, emit); err != nil {
		return nil, fmt.Errorf("shuffler: round %d: padding: %w", sh.s.Round, err)
	}
	if derr != nil {
		return nil, fmt.Errorf("shuffler: round %d: padding: %w", sh.s.Round, derr)
	}
	b := &sh.batch
	switch sh.mode {
	case protocol.PerCoordinate:
		for _, col := range b.Columns {
			perm.Shuffle(len(col), func(x, y int) { col[x], col[y] = col[y], col[x] })
		}
	case protocol.WholeReport:
		perm.Shuffle(len(b.Reports), func(x, y int) { b.Reports[x], b.Reports[y] = b.Reports[y], b.Reports[x] })
	}
	if sh.mode != protocol.NoShuffle {
		perm.Shuffle(len(b.Meta), func(x, y int) { b.Meta[x], b.Meta[y] = b.Meta[y], b.Meta[x] })
	}
	b.Senders = sh.nsend
	return b, nil
}

// PadCounts returns a copy of the per-coordinate counts the round's
// padding is drawn on (every submission accepted or counted so far; in
// whole-report modes each report counts for every coordinate): what a
// driver that splits the padding over several shufflers sends each (see
// package role/shard).
func (sh *Shuffler[P]) PadCounts() []int64 { return slices.Clone(sh.padCounts()) }

// padCounts returns the per-coordinate counts the padding is drawn on; in
// whole-report modes every report counts for every coordinate.
func (sh *Shuffler[P]) padCounts() []int64 {
	if sh.counts != nil {
		return sh.counts
	}
	counts := make([]int64, sh.s.Dim)
	for j := range counts {
		counts[j] = sh.reports
	}
	return counts
}

// ClosePadding is Close for a driver that permutes the payloads itself
// (Count): the round is closed as by Close (void below the minimum,
// ErrTooFew) and the payloads Accept kept are dropped; the returned pad
// draws the protocol's padding from r on the counts of every submission
// accepted or counted and hands each dummy value to emit. pad uses nothing
// of the machine, so the driver may call it (once) without the lock it
// holds around the machine. Nothing is permuted: the driver must permute
// every group uniformly (package role/shard's two-stage shuffle is one
// way) before anything reaches the analyzer.
func (sh *Shuffler[P]) ClosePadding() (pad func(r *rand.Rand, emit func(coord int, v float64)) error, err error) {
	if err := sh.close(); err != nil {
		return nil, err
	}
	counts, s, p := slices.Clone(sh.padCounts()), sh.s, sh.proto
	sh.batch = Batch[P]{Round: s.Round, Mode: sh.mode, Dim: s.Dim, Senders: sh.nsend}
	return func(r *rand.Rand, emit func(coord int, v float64)) error {
		if err := p.Pad(r, s, counts, emit); err != nil {
			return fmt.Errorf("shuffler: round %d: padding: %w", s.Round, err)
		}
		return nil
	}, nil
}

// Dummies returns the number of dummies the protocol's padding draws
// with r if the round closed now with the submissions so far (a dry run
// that changes nothing: a driver sizing the round's batch draws it with a
// generator of its own).
func (sh *Shuffler[P]) Dummies(r *rand.Rand) (int64, error) {
	s := sh.s
	if s.Participants == 0 {
		s.Participants = sh.nsend
	}
	var n int64
	if err := sh.proto.Pad(r, s, slices.Clone(sh.padCounts()), func(int, float64) { n++ }); err != nil {
		return 0, fmt.Errorf("shuffler: round %d: padding: %w", s.Round, err)
	}
	return n, nil
}

// CloseCounts is Close for a simulation that streams reports straight into
// the analyzer's aggregate instead of materialising the batch (the
// aggregate does not depend on the order of reports, so the permutation
// changes nothing the analyzer computes): the driver vouches that senders
// distinct submissions were made and gives their per-coordinate counts,
// and the shuffler draws the protocol's padding from pad into emit. The
// minimum and the round's state are enforced as in Close. The shuffler must
// not have accepted any submission itself.
func (sh *Shuffler[P]) CloseCounts(pad *rand.Rand, senders int, counts []int64, emit func(coord int, v float64)) error {
	if sh.nsend != 0 {
		return fmt.Errorf("shuffler: round %d: %w: CloseCounts after Accept", sh.s.Round, ErrOrder)
	}
	if senders < 0 {
		return fmt.Errorf("shuffler: round %d: %d senders: %w", sh.s.Round, senders, checks.ErrInvalid)
	}
	if len(counts) != sh.s.Dim {
		return fmt.Errorf("shuffler: round %d: %d counts for dimension %d: %w", sh.s.Round, len(counts), sh.s.Dim, checks.ErrInvalid)
	}
	sh.nsend = senders
	if err := sh.close(); err != nil {
		return err
	}
	if err := sh.proto.Pad(pad, sh.s, counts, emit); err != nil {
		return fmt.Errorf("shuffler: round %d: padding: %w", sh.s.Round, err)
	}
	return nil
}

// close moves the round out of the open state, voiding it below the
// minimum.
func (sh *Shuffler[P]) close() error {
	if sh.state != stateOpen {
		return fmt.Errorf("shuffler: round %d: %w", sh.s.Round, ErrClosed)
	}
	n := sh.nsend
	if n < sh.min {
		sh.state = stateVoid
		sh.batch = Batch[P]{}
		sh.senders = nil
		return fmt.Errorf("shuffler: round %d: %d of at least %d senders: %w", sh.s.Round, n, sh.min, ErrTooFew)
	}
	sh.state = stateClosed
	if sh.s.Participants == 0 {
		sh.s.Participants = n
	}
	return nil
}
