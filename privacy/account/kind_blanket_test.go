package account

import (
	"errors"
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/pld"
)

// At the default SS-Simple run (eps_l = 1724 over d = 7850 coordinates, n =
// 2000, 10 rounds, delta 1e-6) the blanket route is tighter than the clone
// pair (7.993 here); the protocol package checks the count lower bound.
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

func TestBlanketComponentValidate(t *testing.T) {
	v := componentKinds[KindBlanket].validate
	good := Component{Kind: KindBlanket, Eps0: 0.2, Reporters: 100, Levels: 2, Epsilon: 0.2, Count: 1}
	if why := v(good); why != "" {
		t.Fatalf("valid component refused: %s", why)
	}
	lap := good
	lap.Levels = 0
	if why := v(lap); why != "" {
		t.Fatalf("valid Laplace component refused: %s", why)
	}
	for _, f := range []func(*Component){
		func(c *Component) { c.Eps0 = math.NaN() },
		func(c *Component) { c.Eps0 = 0 },
		func(c *Component) { c.Eps0 = 41 },
		func(c *Component) { c.Levels = 1 },
		func(c *Component) { c.Levels = 1<<20 + 1 },
		func(c *Component) { c.Reporters = 0 },
		func(c *Component) { c.Reporters = 1<<30 + 1 },
	} {
		c := good
		f(&c)
		if why := v(c); why == "" {
			t.Errorf("%+v accepted", c)
		}
	}
	// A Laplace column has no substitution pair of its own; PLDEpsilon
	// still answers (its clone route, and the chained allocation).
	if _, err := blanketPair(lap, pld.Options{Interval: 1e-3}); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("Laplace blanket pair: want an invalid-input error, got %v", err)
	}
	lap.Count = 50
	e, err := PLDEpsilon([]Component{lap}, 1e-6)
	cl := lap
	cl.Kind, cl.Levels = KindShuffle, 0
	ec, errc := PLDEpsilon([]Component{cl}, 1e-6)
	if err != nil || errc != nil || !(e <= ec) {
		t.Errorf("Laplace blanket columns: %v (%v), clone pairs %v (%v)", e, err, ec, errc)
	}
}
