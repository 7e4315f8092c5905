package bound_test

import (
	"errors"
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
	"github.com/shufflefl/shufflefl/research/bound"
)

// TestComputeMatchesAmplify: the named bounds are amplify's and account's
// figures, with the method's name and the approximation label.
func TestComputeMatchesAmplify(t *testing.T) {
	clones, _ := amplify.ClonesNumerical(1, 10000, 1e-8)
	erl, _ := amplify.Erlingsson(0.5, 10000, 1e-6)
	tests := []struct {
		name   string
		set    func(p *bound.Params)
		bound  string
		eps    float64
		approx bool
	}{
		{"clones", func(p *bound.Params) { p.Eps0, p.N, p.Delta = 1, 10000, 1e-8 }, "clones-numerical", clones, false},
		{"erlingsson", func(p *bound.Params) { p.Eps0, p.N, p.Delta = 0.5, 10000, 1e-6 }, "erlingsson", erl, false},
		{"eapes", func(p *bound.Params) { p.EpsDist, p.N, p.Delta = "uniform2", 1000, 1e-5 }, "eapes-gdp", -1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := bound.Defaults(tc.name)
			if !ok {
				t.Fatalf("no command %s", tc.name)
			}
			tc.set(&p)
			r, err := bound.Compute(tc.name, &p)
			if err != nil {
				t.Fatal(err)
			}
			if r.Bound.Name != tc.bound || r.Bound.Approximation != tc.approx || bound.Rigorous(r.Bound) == tc.approx {
				t.Errorf("got %s (approximation %v), want %s (%v)", r.Bound.Name, r.Bound.Approximation, tc.bound, tc.approx)
			}
			if tc.eps >= 0 && r.Bound.Epsilon != tc.eps {
				t.Errorf("epsilon %v, want %v", r.Bound.Epsilon, tc.eps)
			}
		})
	}
}

// TestComputeRounds: E-APES composes as mu sqrt(rounds) (account.GDPCompose),
// the rigorous bounds by the named composition.
func TestComputeRounds(t *testing.T) {
	p, _ := bound.Defaults("eapes")
	p.EpsDist, p.N, p.Delta, p.Rounds = "uniform2", 1000, 1e-5, 9
	r, err := bound.Compute("eapes", &p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Extra["mu_total"].(float64), account.GDPCompose(r.Extra["mu"].(float64), 9); got != want {
		t.Errorf("mu_total %v, want %v", got, want)
	}
	p, _ = bound.Defaults("clones")
	p.Rounds, p.Composition = 10, "basic"
	p.Given["composition"] = true
	r, err = bound.Compute("clones", &p)
	if err != nil {
		t.Fatal(err)
	}
	if per := r.Extra["per_round_epsilon"].(float64); r.Bound.Epsilon != 10*per || r.Extra["composition"] != "basic" {
		t.Errorf("10 rounds of %v by basic: %v (%v)", per, r.Bound.Epsilon, r.Extra["composition"])
	}
}

// TestComputeRejects: an unknown command or a bad parameter is an
// invalid-parameter error, before any computation.
func TestComputeRejects(t *testing.T) {
	p, _ := bound.Defaults("clones")
	for _, tc := range []struct {
		name string
		set  func(p *bound.Params)
	}{
		{"nonsense", func(*bound.Params) {}},
		{"clones", func(p *bound.Params) { p.Eps0 = -1 }},
		{"clones", func(p *bound.Params) { p.Rounds = 0 }},
		{"clones", func(p *bound.Params) { p.Form = "bogus" }},
		{"eapes", func(p *bound.Params) { p.Given["target-epsilon"], p.TargetEpsilon = true, 1 }},
	} {
		q := p
		q.Given = map[string]bool{}
		tc.set(&q)
		if _, err := bound.Compute(tc.name, &q); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s %+v: err %v, want invalid parameter", tc.name, q, err)
		}
	}
}

// TestComputeAlias: compose's deprecated Method is resolved into Composition.
func TestComputeAlias(t *testing.T) {
	p, _ := bound.Defaults("compose")
	p.Eps0, p.Rounds, p.Method = 0.1, 10, "basic"
	p.Given["method"] = true
	r, err := bound.Compute("compose", &p)
	if err != nil {
		t.Fatal(err)
	}
	if p.Composition != "basic" || r.Bound.Name != "compose-basic" {
		t.Errorf("composition %q, bound %s", p.Composition, r.Bound.Name)
	}
}

// TestCommands: every command is found, lists its parameters, and has a
// flag name for each.
func TestCommands(t *testing.T) {
	names := bound.Commands()
	if len(names) != 15 {
		t.Errorf("%d commands: %v", len(names), names)
	}
	for _, n := range names {
		c, ok := bound.Lookup(n)
		if !ok || c.Summary == "" || len(c.Params) == 0 {
			t.Errorf("%s: %+v", n, c)
		}
		for _, f := range c.Params {
			if bound.FlagName(f) == "" {
				t.Errorf("%s: parameter %s has no flag", n, f)
			}
		}
	}
}

// TestFigure: large figures are written out, small ones keep %g's form.
func TestFigure(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		prec int
		want string
	}{
		{20000, 3, "20000"}, {23549.7, 4, "23550"}, {1e6, -1, "1000000"}, {1e-5, 3, "1e-05"},
		{0.5, 4, "0.5"}, {1e20, 4, "1e+20"}, {math.Inf(1), 4, "+Inf"}, {-12345, 2, "-12000"},
	} {
		if got := bound.Figure(tc.v, tc.prec); got != tc.want {
			t.Errorf("Figure(%v, %d) = %s, want %s", tc.v, tc.prec, got, tc.want)
		}
	}
	if got := bound.EpsUp(1234567.1); got != "1234570" {
		t.Errorf("EpsUp(1234567.1) = %s, want 1234570", got)
	}
}
