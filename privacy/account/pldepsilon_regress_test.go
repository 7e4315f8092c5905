package account

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/shufflefl/shufflefl/internal/longtest"
)

// TestPLDEpsilonRegression pins, as float64 bits, the epsilons PLDEpsilon
// gave before the clone pair's PLD was made faster (commit 1 of branch
// h-pld): the shuffle components of ss-simple's calibration (d = 7,850
// per-coordinate shuffles of n reports at the eps0 the bisection visits),
// single applications (whose pair is rebuilt on a grid finer than the
// probe) and a mix with a generic (eps, delta) component.
func TestPLDEpsilonRegression(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("bit-exact figures are pinned on amd64 (GOARCH %s may fuse multiply-adds)", runtime.GOARCH)
	}
	shuffle := func(eps0 float64, n, count int) Component {
		return Component{Kind: KindShuffle, Eps0: eps0, Reporters: n, Epsilon: eps0, Count: count}
	}
	for _, c := range []struct {
		cs    []Component
		delta float64
		long  bool
		want  uint64
	}{
		{[]Component{shuffle(0.1455, 1000, 39250)}, 1e-6, false, 0x40131413e7235b51},
		{[]Component{shuffle(1, 10000, 1)}, 1e-6, false, 0x3fab238358bfe7a2},
		{[]Component{shuffle(0.5, 30000, 10)}, 1e-9, false, 0x3face3ac18c0b4df},
		{[]Component{shuffle(0.7133563948321944, 100000, 7850)}, 1e-6, false, 0x3ff2bd23b527c466},
		{[]Component{shuffle(2.379409587299091, 100000, 7850)}, 1e-6, false, 0x401ff29ac9bbdef4},
		{[]Component{shuffle(3.5, 1000000, 7850)}, 1e-6, false, 0x4012a939ae67c368},
		{[]Component{shuffle(0.05, 5000, 7850), {Epsilon: 0.5, Delta: 1e-8, Count: 3}}, 1e-6, false, 0x3ffba5fe86609910},
		{[]Component{shuffle(1, 1000000, 7850)}, 1e-6, true, 0x3fe182bf8eaaacaf},
		{[]Component{shuffle(1.6, 1000000, 7850)}, 1e-6, true, 0x3ff1d8152b3110ec},
	} {
		name := fmt.Sprintf("eps0=%g/n=%d/k=%d", c.cs[0].Eps0, c.cs[0].Reporters, c.cs[0].Count)
		t.Run(name, func(t *testing.T) {
			if c.long {
				longtest.Skip(t)
			}
			got, err := PLDEpsilon(c.cs, c.delta)
			if err != nil {
				t.Fatal(err)
			}
			if math.Float64bits(got) != c.want {
				t.Errorf("epsilon %v (%#x), want %v (%#x)", got, math.Float64bits(got), math.Float64frombits(c.want), c.want)
			}
		})
	}
}
