package account

import (
	"fmt"
	"math"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/pld"
)

// KindBlanket is a Component kind: one column of FLAME's SS-Simple, the
// shuffle of Reporters reports of one local randomizer at local epsilon
// Eps0 on [0, 1], R_{gamma,b} (Levels = b >= 2) or Laplace with scale
// 1/Eps0 (Levels 0), whose others' reports decompose as gamma blanket +
// (1-gamma) LO_i (Balle et al. 2019; Su, Cheng and Wang 2025).
//
// Routes. Every such column is an Eps0-LDP shuffle, dominated by FMT's
// clone pair (KindShuffle with the same Eps0 and Reporters: the clone
// route). The blanket route: for R_{gamma,b}, the substitution pair of
// pld.ShuffleBlanketRR (proof in privacy/pld/blanket.go); for Laplace, the
// column as a one-of-one random allocation (KindAlloc with Dim = K = 1,
// Slots and Fail from pld.BlanketSlots at gamma = e^{-Eps0/2}), whose
// add/remove pairs against the reference "the user's value is a blanket
// draw" are composed and chained to substitution (kind_alloc.go; the
// alloc.go argument with the others' blanket draws as the dummies).
// PLDEpsilon computes both routes, each as it stands, and returns the
// smaller epsilon. Epsilon and Delta are, as for every component, a valid
// statement of the release.
const KindBlanket = "blanket"

// blanketPair is the blanket pair of a component, memoised.
func blanketPair(c Component, o pld.Options) (*pld.PLD, error) {
	if c.Levels == 0 {
		return nil, checks.Invalidf("a Laplace blanket column has no substitution pair of its own (its blanket route is the chained allocation)")
	}
	key := blanketPairKey{c.Eps0, c.Levels, c.Reporters, o}
	blanketPairs.mu.Lock()
	for i, k := range blanketPairs.keys {
		if k == key {
			p := blanketPairs.vals[i]
			blanketPairs.mu.Unlock()
			return p, nil
		}
	}
	blanketPairs.mu.Unlock()
	p, err := pld.ShuffleBlanketRR(c.Eps0, c.Levels, c.Reporters, o)
	if err != nil {
		return nil, err
	}
	blanketPairs.mu.Lock()
	defer blanketPairs.mu.Unlock()
	if len(blanketPairs.keys) == blanketPairMemoSize {
		blanketPairs.keys, blanketPairs.vals = blanketPairs.keys[1:], blanketPairs.vals[1:]
	}
	blanketPairs.keys = append(blanketPairs.keys, key)
	blanketPairs.vals = append(blanketPairs.vals, p)
	return p, nil
}

type blanketPairKey struct {
	eps0      float64
	levels, n int
	o         pld.Options
}

const blanketPairMemoSize = 16

var blanketPairs struct {
	mu   sync.Mutex
	keys []blanketPairKey
	vals []*pld.PLD
}

func init() {
	registerKind(KindBlanket, componentKind{
		lossBound: func(c Component) float64 { return c.Eps0 },
		pair:      blanketPair,
		validate: func(c Component) string {
			switch {
			case !(c.Eps0 > 0 && c.Eps0 <= 40) || math.IsInf(c.Eps0, 0):
				return fmt.Sprintf("blanket component needs eps0 in (0, 40], got %v", c.Eps0)
			case c.Levels != 0 && (c.Levels < 2 || c.Levels > 1<<20):
				return fmt.Sprintf("blanket component needs levels 0 (Laplace) or b of R_{gamma,b} in [2, 2^20], got %d", c.Levels)
			case c.Reporters < 1 || c.Reporters > 1<<30:
				return fmt.Sprintf("blanket component needs reporters in [1, 2^30], got %d", c.Reporters)
			}
			return ""
		},
	})
}

// splitBlanket reports whether cs holds blanket components and returns cs
// with each replaced by its clone-pair component (KindShuffle, same Eps0,
// Reporters and Count), which dominates the same column.
func splitBlanket(cs []Component) (any bool, clones []Component) {
	for _, c := range cs {
		if c.Kind == KindBlanket {
			any = true
			c.Kind, c.Levels = KindShuffle, 0
		}
		clones = append(clones, c)
	}
	return any, clones
}

// blanketRoute returns cs with every Laplace blanket component replaced by
// its one-of-one allocation (KindAlloc, Dim = K = 1, Slots and Fail of
// pld.BlanketSlots at gamma = e^{-Eps0/2}); R_{gamma,b} blanket
// components stay (their pair is pld.ShuffleBlanketRR).
func blanketRoute(cs []Component) ([]Component, error) {
	out := make([]Component, 0, len(cs))
	for _, c := range cs {
		if c.Kind == KindBlanket && c.Levels == 0 {
			slots, fail, err := pld.BlanketSlots(c.Reporters, math.Exp(-c.Eps0/2))
			if err != nil {
				return nil, err
			}
			c = Component{Kind: KindAlloc, Eps0: c.Eps0, Levels: 0, Dim: 1, K: 1, Slots: slots, Reporters: c.Reporters, Fail: fail, Epsilon: c.Epsilon, Delta: c.Delta, Count: c.Count}
		}
		out = append(out, c)
	}
	return out, nil
}
