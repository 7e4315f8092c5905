package account

import (
	"fmt"
	"math"
	"sync"

	"github.com/shufflefl/shufflefl/privacy/pld"
)

// KindAlloc is a Component kind: one round of a protocol in which a user
// reports K of Dim coordinates chosen uniformly without replacement, each
// randomized at local epsilon Eps0 by a blanket randomizer (Levels 0:
// Laplace on [0, 1]; Levels b >= 2: R_{gamma,b}), every coordinate
// shuffled with dummy padding and holding at least Slots blanket values
// except with probability Fail (FLAME's SS-Double; amplify.SSDoubleAlloc
// plans Slots and Fail). Reporters is the padded size n_p of a coordinate.
//
// Dominating pairs. For add/remove against the reference "the user's
// slots hold dummies", pld.SparseShuffleAllocation(Eps0, Levels, Dim, K,
// Slots) composed with the pair (0, Fail) (amplify.SSDoubleAlloc gives the
// proof of that step). The run's neighbouring relation is substitution:
// when every pair a PLD composition holds is of this kind, PLDEpsilon
// composes their add/remove PLDs over all rounds (adaptive composition:
// each round's pair is dominated whatever the model, since every input in
// [0, 1] is) and converts with pld.PLD.ChainEpsilon (x -> reference -> x',
// delta_sub(eps1 + eps2) <= delta_rem(eps1) + e^eps1 delta_add(eps2)).
// It also composes the substitution pairs every such round has without
// the allocation — K clone pairs of FMT for (Eps0, Reporters) and (0,
// Fail) — and returns the smaller epsilon; in a composition with other
// kinds only those substitution pairs are used. Epsilon and Delta are, as
// for every component, a valid (substitution) statement of the round.
const KindAlloc = "alloc"

// allocScale is the grid scale of an allocation round: the per-round loss
// spread is about sqrt(K) times log(r_max)/sqrt((Dim/K) Slots) (r_max the
// largest likelihood ratio of the base pair), bounded by K log(r_max). It
// only sizes the PLD grid (PLDEpsilon's probe and floor).
func allocScale(c Component) float64 {
	l1 := c.Eps0 / 2
	if c.Levels != 0 {
		b := float64(c.Levels)
		l1 = math.Log((b + 1) / (1 + b*math.Exp(-c.Eps0)))
	}
	T := float64(c.Dim/c.K) * float64(c.Slots)
	k := float64(c.K)
	return math.Min(k*l1, 20*math.Sqrt(k)*l1/math.Sqrt(T))
}

// allocPair is the add/remove pair of one allocation round, memoised (a
// run's accountant asks for the same pairs on the same grids again and
// again; a PLD is immutable).
func allocPair(c Component, o pld.Options) (*pld.PLD, error) {
	key := allocPairKey{c.Eps0, c.Levels, c.Dim, c.K, c.Slots, c.Fail, o}
	allocPairs.mu.Lock()
	for i, k := range allocPairs.keys {
		if k == key {
			p := allocPairs.vals[i]
			allocPairs.mu.Unlock()
			return p, nil
		}
	}
	allocPairs.mu.Unlock()
	p, err := buildAllocPair(c, o)
	if err != nil {
		return nil, err
	}
	allocPairs.mu.Lock()
	defer allocPairs.mu.Unlock()
	if len(allocPairs.keys) == allocPairMemoSize {
		allocPairs.keys, allocPairs.vals = allocPairs.keys[1:], allocPairs.vals[1:]
	}
	allocPairs.keys = append(allocPairs.keys, key)
	allocPairs.vals = append(allocPairs.vals, p)
	return p, nil
}

// allocPairKey identifies an allocation pair (buildAllocPair is a
// deterministic function of it).
type allocPairKey struct {
	eps0            float64
	levels, d, k, m int
	fail            float64
	o               pld.Options
}

const allocPairMemoSize = 8

var allocPairs struct {
	mu   sync.Mutex
	keys []allocPairKey
	vals []*pld.PLD
}

func buildAllocPair(c Component, o pld.Options) (*pld.PLD, error) {
	p, err := pld.SparseShuffleAllocation(c.Eps0, c.Levels, c.Dim, c.K, c.Slots, o)
	if err != nil {
		return nil, err
	}
	if c.Fail > 0 {
		f, err := failPair(c.Fail, o)
		if err != nil {
			return nil, err
		}
		if p, err = p.Compose(f); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// failPair is the pair of a (0, q) release: loss +Inf with probability q.
func failPair(q float64, o pld.Options) (*pld.PLD, error) {
	return pld.FromPair([]float64{q, 1 - q, 0}, []float64{0, 1 - q, q}, o)
}

// allocFallback returns the substitution components that dominate n
// applications of the allocation component c without its allocation
// credit: K n clone pairs for (Eps0, Reporters) and the failure (0, Fail).
func allocFallback(c Component) []Component {
	out := []Component{{Kind: KindShuffle, Eps0: c.Eps0, Reporters: c.Reporters, Epsilon: c.Eps0, Count: c.K * c.Count}}
	if c.Reporters < 2 {
		out[0] = Component{Epsilon: c.Eps0, Count: c.K * c.Count}
	}
	if c.Fail > 0 {
		out = append(out, Component{Delta: c.Fail, Count: c.Count})
	}
	return out
}

func init() {
	registerKind(KindAlloc, componentKind{
		lossBound: allocScale,
		pair:      allocPair,
		validate: func(c Component) string {
			switch {
			case !(c.Eps0 > 0 && c.Eps0 <= 40):
				return fmt.Sprintf("allocation component needs eps0 in (0, 40], got %v", c.Eps0)
			case c.Levels != 0 && (c.Levels < 2 || c.Levels > 1<<20):
				return fmt.Sprintf("allocation component needs levels 0 (Laplace) or in [2, 2^20], got %d", c.Levels)
			case c.K < 1 || c.Dim < c.K:
				return fmt.Sprintf("allocation component needs 1 <= k <= dim, got k = %d, dim = %d", c.K, c.Dim)
			case c.Slots < 1 || float64(c.Dim/c.K+1)*float64(c.Slots) > 1<<30:
				return fmt.Sprintf("allocation component needs slots >= 1 and (dim/k + 1) slots <= 2^30, got %d", c.Slots)
			case c.Reporters < c.Slots:
				return fmt.Sprintf("allocation component needs reporters (n_p) >= slots, got %d < %d", c.Reporters, c.Slots)
			case !(c.Fail >= 0 && c.Fail < 1):
				return fmt.Sprintf("allocation component needs a failure probability in [0, 1), got %v", c.Fail)
			}
			return ""
		},
	})
}

// splitAlloc reports whether cs holds allocation components, and whether
// all of them are; without returns cs with every allocation component
// replaced by its substitution fallback.
func splitAlloc(cs []Component) (any, all bool, without []Component) {
	all = true
	for _, c := range cs {
		if c.Kind == KindAlloc {
			any = true
			without = append(without, allocFallback(c)...)
		} else {
			all = false
			without = append(without, c)
		}
	}
	return any, all && any, without
}

// chainMemo keeps the last results of the chained allocation route of
// PLDEpsilon (a deterministic function of the components and delta): a
// run asks for the same composition several times per round (its plan,
// the target check, what was spent).
var chainMemo struct {
	mu   sync.Mutex
	keys []string
	vals []float64
}

const chainMemoSize = 32

func chainEpsilonMemo(cs []Component, delta float64) (float64, error) {
	key := fmt.Sprintf("%v|%v", cs, delta)
	chainMemo.mu.Lock()
	for i, k := range chainMemo.keys {
		if k == key {
			v := chainMemo.vals[i]
			chainMemo.mu.Unlock()
			return v, nil
		}
	}
	chainMemo.mu.Unlock()
	e, err := pldEpsilon(cs, delta, true)
	if err != nil {
		return e, err
	}
	chainMemo.mu.Lock()
	defer chainMemo.mu.Unlock()
	if len(chainMemo.keys) == chainMemoSize {
		chainMemo.keys, chainMemo.vals = chainMemo.keys[1:], chainMemo.vals[1:]
	}
	chainMemo.keys = append(chainMemo.keys, key)
	chainMemo.vals = append(chainMemo.vals, e)
	return e, nil
}
