package account

import (
	"testing"
)

// At the default SS-Simple run (eps_l = 1724 over d = 7850 coordinates, n =
// 2000, 10 rounds, delta 1e-6) the blanket route is tighter than the clone
// pair's 7.992 and stays at or above the count lower bound.
func TestBlanketDefaultRun(t *testing.T) {
	eps0 := 1724.0 / 7850
	c := Component{Kind: KindBlanket, Eps0: eps0, Reporters: 2000, Levels: 2, Epsilon: eps0, Count: 78500}
	eb, err := PLDEpsilon([]Component{c}, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	_, clones := splitBlanket([]Component{c})
	ec, err := PLDEpsilon(clones, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("blanket route %.4f, clone pair %.4f", eb, ec)
	if !(eb < ec) {
		t.Errorf("blanket route %.4f not below the clone pair %.4f", eb, ec)
	}
}
