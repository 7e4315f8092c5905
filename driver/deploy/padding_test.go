package deploy

import (
	"fmt"
	"testing"

	"github.com/shufflefl/shufflefl/transport/seal"
)

// TestDummiesSealInPlace: whatever the number of workers and however the
// dummies straddle the allocation blocks, every slot the round machine was
// handed ends up holding a message the analyzer opens to the dummy's
// coordinate and value.
func TestDummiesSealInPlace(t *testing.T) {
	key, err := seal.GenerateKey(seal.DefaultSuite)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := seal.NewSealer(key.Public(), "padding-test")
	if err != nil {
		t.Fatal(err)
	}
	const dim = 97
	for _, c := range []struct{ n, workers int }{
		{0, 2}, {1, 1}, {5, 2}, {dummyBlock + 3, 1}, {dummyBlock + 3, 2}, {2*dummyBlock + 1, 3},
	} {
		d := newDummies(sealer, 7)
		slots := make([][]byte, c.n)
		for i := range c.n {
			slots[i] = d.add(i%dim, float64(i))
		}
		if err := d.seal(c.workers, nil); err != nil {
			t.Fatalf("%d dummies, %d workers: %v", c.n, c.workers, err)
		}
		op, err := seal.NewOpener(key, "padding-test", 7, seal.Spec{Mode: seal.PerCoordinate, Dim: dim, Values: seal.AnyFinite})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range slots {
			l, v, err := op.Open(s)
			if err != nil {
				t.Fatalf("%d dummies, %d workers: slot %d: %v", c.n, c.workers, i, err)
			}
			if l != seal.Coord(i%dim) || len(v) != 1 || v[0] != float64(i) {
				t.Fatalf("%d dummies, %d workers: slot %d opened to %v %v, want coordinate %d value %d", c.n, c.workers, i, l, v, i%dim, i)
			}
		}
	}
}

// BenchmarkDummies seals a block of dummies with one worker and with one
// per core, in one run: the padding step's speed-up from parallel sealing.
func BenchmarkDummies(b *testing.B) {
	key, err := seal.GenerateKey(seal.DefaultSuite)
	if err != nil {
		b.Fatal(err)
	}
	sealer, err := seal.NewSealer(key.Public(), "padding-bench")
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, goMaxProcs()} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for range b.N {
				d := newDummies(sealer, 1)
				for i := range dummyBlock {
					d.add(i, 0)
				}
				if err := d.seal(workers, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*dummyBlock)/b.Elapsed().Seconds(), "dummies/s")
		})
	}
}
