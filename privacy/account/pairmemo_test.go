package account

import (
	"math"
	"sync"
	"testing"

	"github.com/shufflefl/shufflefl/privacy/pld"
)

// TestPairMemo: a repeated clone pair comes from the memo (the same value,
// whose figures are those of a fresh build), the least recently used of
// clonePairMemoSize+1 pairs is the one rebuilt, and concurrent callers get
// the same figures.
func TestPairMemo(t *testing.T) {
	var m pairMemo
	o := pld.Options{Interval: 1e-3}
	eps0 := func(i int) float64 { return 0.5 + 0.1*float64(i) }
	get := func(i int) *pld.PLD {
		t.Helper()
		p, err := m.get(eps0(i), 100, o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := get(0)
	if get(0) != first {
		t.Fatal("a repeated pair was built again")
	}
	fresh, err := pld.ShuffleClones(eps0(0), 100, o)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := first.Delta(0.1), fresh.Delta(0.1); math.Float64bits(a) != math.Float64bits(b) {
		t.Errorf("memo delta %v, fresh build %v", a, b)
	}
	held := make([]*pld.PLD, clonePairMemoSize)
	held[0] = first
	for i := 1; i < clonePairMemoSize; i++ {
		held[i] = get(i)
	}
	get(0)                 // pair 0 becomes the most recently used
	get(clonePairMemoSize) // evicts pair 1, the least recently used
	if get(0) != held[0] {
		t.Error("pair 0, recently used, was evicted")
	}
	if get(1) == held[1] {
		t.Error("pair 1, the least recently used, was kept")
	}
	if len(m.keys) != clonePairMemoSize || len(m.vals) != clonePairMemoSize {
		t.Errorf("memo holds %d keys and %d pairs, want %d", len(m.keys), len(m.vals), clonePairMemoSize)
	}
	if _, err := m.get(math.NaN(), 100, o); err == nil {
		t.Error("eps0 NaN: no error")
	}
	var wg sync.WaitGroup
	ds := make([]float64, 8)
	for g := range ds {
		wg.Go(func() {
			p, err := m.get(eps0(20+g%2), 100, o)
			if err == nil {
				ds[g] = p.Delta(0.1)
			}
		})
	}
	wg.Wait()
	for g := range ds {
		if ds[g] != ds[g%2] || ds[g] == 0 {
			t.Errorf("concurrent caller %d: delta %v, caller %d: %v", g, ds[g], g%2, ds[g%2])
		}
	}
}

// resetClonePairs empties the package's memo of clone pairs (benchmarks).
func resetClonePairs() {
	clonePairs.mu.Lock()
	defer clonePairs.mu.Unlock()
	clonePairs.keys, clonePairs.vals = nil, nil
}
