package deploy

import (
	"sync"
	"sync/atomic"

	"github.com/shufflefl/shufflefl/transport/seal"
)

// dummyBlock is the number of dummies that share one allocation, and the
// unit of work a sealing worker takes.
const dummyBlock = 1 << 12

// dummies collects a round's dummy values as the round machine's padding
// draws them (add, in the padding stream's order, which alone decides the
// values: in test mode the simulation's) and seals them afterwards on every
// core (seal). add hands the machine a slot of the right size that seal
// fills in place, so the permutation the machine applies to the slots is
// the permutation of the sealed dummies. Sealing draws each dummy's HPKE
// encapsulation from crypto/rand, in any mode, so the order in which the
// workers seal changes nothing.
type dummies struct {
	sealer *seal.Sealer
	round  uint64
	size   int // bytes of a sealed coordinate message
	coords []int32
	values []float64
	slots  [][]byte
	block  []byte // the current allocation
}

func newDummies(s *seal.Sealer, round uint64) *dummies {
	return &dummies{sealer: s, round: round, size: seal.MessageSize(s.Suite(), seal.KindCoord, 1)}
}

// add records a dummy for coordinate j with value v and returns its slot.
func (d *dummies) add(j int, v float64) []byte {
	if len(d.block) == 0 {
		d.block = make([]byte, dummyBlock*d.size)
	}
	slot := d.block[:d.size:d.size]
	d.block = d.block[d.size:]
	d.coords = append(d.coords, int32(j))
	d.values = append(d.values, v)
	d.slots = append(d.slots, slot)
	return slot
}

// len returns the number of dummies recorded.
func (d *dummies) len() int { return len(d.coords) }

// seal seals every recorded dummy into its slot with workers goroutines,
// calling progress (if not nil) with the number sealed so far: 0 first,
// then after every block, from the workers.
func (d *dummies) seal(workers int, progress func(done int)) error {
	if progress == nil {
		progress = func(int) {}
	}
	progress(0)
	var next, sealed atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, max(workers, 1))
	for w := range errs {
		wg.Go(func() {
			for {
				lo := int(next.Add(dummyBlock)) - dummyBlock
				if lo >= len(d.coords) {
					return
				}
				hi := min(lo+dummyBlock, len(d.coords))
				for i := lo; i < hi; i++ {
					if err := d.sealOne(i); err != nil {
						errs[w] = err
						return
					}
				}
				progress(int(sealed.Add(int64(hi - lo))))
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// sealOne seals dummy i into its slot.
func (d *dummies) sealOne(i int) error {
	slot := d.slots[i]
	out, err := d.sealer.AppendSeal(slot[:0], d.round, seal.Coord(int(d.coords[i])), []float64{d.values[i]})
	if err != nil {
		return errf("sealing dummy %d: %w", i, err)
	}
	if len(out) != len(slot) || &out[0] != &slot[0] {
		return errf("sealing dummy %d: %d bytes, not in its %d-byte slot", i, len(out), len(slot))
	}
	return nil
}
