package account

import (
	"sync"

	"github.com/shufflefl/shufflefl/privacy/pld"
)

// clonePairMemoSize is how many clone pairs clonePairs keeps, and
// clonePairMemoBins the largest one it keeps (grid points of a direction;
// PLDEpsilon's grids have at most about 2^18, 2 MB).
const (
	clonePairMemoSize = 8
	clonePairMemoBins = 1 << 20
)

// clonePairKey identifies a clone pair: pld.ShuffleClones(eps0, n, o) is a
// deterministic function of it.
type clonePairKey struct {
	eps0 float64
	n    int
	o    pld.Options
}

// pairMemo keeps the clone pairs (pld.ShuffleClones) last built for
// PLDEpsilon, most recently used last. A target calibration's bisection
// ends by evaluating its scale again (the final check, then the run's
// plan), and every round's accounting composes the same pairs on the same
// probe grid as the round before; at 10^6 reporters and eps0 = 1 one pair
// is 1.2e8 outcomes. A PLD is immutable, so the same value serves every
// caller; the figures are those of a fresh build.
type pairMemo struct {
	mu   sync.Mutex
	keys []clonePairKey
	vals []*pld.PLD
}

// clonePairs is the package's memo of clone pairs.
var clonePairs pairMemo

// get returns pld.ShuffleClones(eps0, n, o), from the memo when it holds it.
func (m *pairMemo) get(eps0 float64, n int, o pld.Options) (*pld.PLD, error) {
	k := clonePairKey{eps0, n, o}
	m.mu.Lock()
	for i, ki := range m.keys {
		if ki == k {
			p := m.vals[i]
			m.touch(i)
			m.mu.Unlock()
			return p, nil
		}
	}
	m.mu.Unlock()
	p, err := pld.ShuffleClones(eps0, n, o)
	if err != nil {
		return nil, err
	}
	if rb, ab := p.Bins(); max(rb, ab) > clonePairMemoBins {
		return p, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, ki := range m.keys {
		if ki == k { // built meanwhile by another caller
			m.touch(i)
			return p, nil
		}
	}
	if n := len(m.keys); n == clonePairMemoSize {
		// the least recently used goes
		m.touch(0)
		m.keys[n-1], m.vals[n-1] = k, p
		return p, nil
	}
	m.keys, m.vals = append(m.keys, k), append(m.vals, p)
	return p, nil
}

// touch moves entry i to the end (most recently used); m.mu is held.
func (m *pairMemo) touch(i int) {
	k, p := m.keys[i], m.vals[i]
	copy(m.keys[i:], m.keys[i+1:])
	copy(m.vals[i:], m.vals[i+1:])
	m.keys[len(m.keys)-1], m.vals[len(m.vals)-1] = k, p
}
