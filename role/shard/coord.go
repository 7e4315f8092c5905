package shard

import (
	"fmt"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
)

// Coord is a per-coordinate round sharded by coordinate range: a front
// that checks each submission exactly as one role.Shuffler does (labels,
// one submission per sender, the minimum) and routes its messages to the
// shard owning each coordinate (the metadata to shard 0), and S shards
// that each pad and permute the columns of their range. The front keeps
// the labels, never a payload.
//
// Padding: each shard runs the protocol's Padder on the round's full
// per-coordinate counts (the front knows them, as one shuffler would) and
// keeps the dummies of its own coordinates. A shard's dummies therefore
// have the Padder's distribution restricted to its range; the shards'
// dummies together have the Padder's distribution when the Padder draws
// distinct coordinates' dummies independently, as every padder of package
// protocol does (FLAME's blanket draws, split-mix's Skellam shares).
//
// A Coord serves one round and is not safe for concurrent use.
type Coord[P any] struct {
	proto  protocol.Padder
	s      protocol.Shape
	min    int
	ranges []Range
	front  *role.Shuffler[struct{}]
	labels []role.Message[struct{}] // reused by Accept
	cols   [][]P
	meta   []P
	counts []int64
	closed bool
}

// NewCoord opens round s.Round of per-coordinate protocol p over the
// shards of ranges (which must cover [0, s.Dim) in order, e.g. Ranges'),
// releasing it with at least min senders, as role.NewShuffler.
func NewCoord[P any](p protocol.Padder, s protocol.Shape, min int, ranges []Range) (*Coord[P], error) {
	if p.Mode() != protocol.PerCoordinate {
		return nil, checks.Invalidf("coordinate sharding needs a per-coordinate protocol, not %s", p.Mode())
	}
	front, err := role.NewShuffler[struct{}](p, s, min)
	if err != nil {
		return nil, err
	}
	if err := checkRanges(ranges, s.Dim); err != nil {
		return nil, err
	}
	return &Coord[P]{proto: p, s: s, min: min, ranges: append([]Range(nil), ranges...), front: front,
		cols: make([][]P, s.Dim), counts: make([]int64, s.Dim)}, nil
}

// Shards returns the number of shards.
func (c *Coord[P]) Shards() int { return len(c.ranges) }

// Shard returns the shard owning coordinate j (MetaLabel: shard 0).
func (c *Coord[P]) Shard(label int32) int {
	if label < 0 {
		return 0
	}
	return owner(c.ranges, int(label))
}

// Senders returns the number of submissions accepted so far.
func (c *Coord[P]) Senders() int { return c.front.Senders() }

// Accept takes one sender's submission as role.Shuffler.Accept does
// (same checks, same errors) and hands each message to its shard.
func (c *Coord[P]) Accept(sender string, msgs []role.Message[P]) (role.Ack, error) {
	c.labels = c.labels[:0]
	for _, m := range msgs {
		c.labels = append(c.labels, role.Message[struct{}]{Label: m.Label})
	}
	ack, err := c.front.Accept(sender, c.labels)
	if err != nil {
		return ack, err
	}
	for _, m := range msgs {
		if m.Label == role.MetaLabel {
			c.meta = append(c.meta, m.Payload)
			continue
		}
		c.cols[m.Label] = append(c.cols[m.Label], m.Payload)
		c.counts[m.Label]++
	}
	return ack, nil
}

// Close ends the round: below the minimum it is void (an error wrapping
// role.ErrTooFew); otherwise shard s draws its padding from pads[s] and
// permutes each of its columns with perms[s] (shard 0 then permutes the
// metadata), and the shards' columns, in coordinate order, form the batch
// one shuffler would release. dummy turns a dummy value into a payload, as
// for role.Shuffler.Close.
func (c *Coord[P]) Close(pads, perms []*rand.Rand, dummy func(coord int, v float64) (P, error)) (*role.Batch[P], error) {
	if c.closed {
		return nil, fmt.Errorf("shard: round %d: %w", c.s.Round, role.ErrClosed)
	}
	if len(pads) != len(c.ranges) || len(perms) != len(c.ranges) {
		return nil, checks.Invalidf("%d padding and %d permutation generators for %d shards", len(pads), len(perms), len(c.ranges))
	}
	c.closed = true
	n := c.front.Senders()
	if n < c.min {
		c.cols, c.meta = nil, nil
		return nil, fmt.Errorf("shard: round %d: %d of at least %d senders: %w", c.s.Round, n, c.min, role.ErrTooFew)
	}
	s := c.s
	if s.Participants == 0 {
		s.Participants = n
	}
	for i, r := range c.ranges {
		if err := c.padShard(pads[i], s, r, dummy); err != nil {
			return nil, fmt.Errorf("shard: round %d: shard %d: padding: %w", s.Round, i, err)
		}
		for j := r.Lo; j < r.Hi; j++ {
			Permute(perms[i], c.cols[j])
		}
	}
	Permute(perms[0], c.meta)
	return &role.Batch[P]{Round: s.Round, Mode: protocol.PerCoordinate, Dim: s.Dim, Senders: n, Columns: c.cols, Meta: c.meta}, nil
}

// padShard draws the protocol's padding on the round's counts with r and
// keeps the dummies of the coordinates in rg.
func (c *Coord[P]) padShard(r *rand.Rand, s protocol.Shape, rg Range, dummy func(int, float64) (P, error)) error {
	var derr error
	emit := func(j int, v float64) {
		if derr != nil || j < rg.Lo || j >= rg.Hi {
			return
		}
		p, err := dummy(j, v)
		if err != nil {
			derr = err
			return
		}
		c.cols[j] = append(c.cols[j], p)
	}
	counts := append([]int64(nil), c.counts...)
	if err := c.proto.Pad(r, s, counts, emit); err != nil {
		return err
	}
	return derr
}
