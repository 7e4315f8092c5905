package protocol

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// layoutCases builds one instance of every registered protocol at a small
// dimension, with the budget its clients encode with.
func layoutCases(t *testing.T, d, n int, secure bool) map[string]struct {
	p Protocol
	b Budget
} {
	t.Helper()
	base := Params{Clip: 1, Epsilon: 8, Delta: 1e-5, Rounds: 2, SampleRate: 1, Population: n, Layers: []int{d}, Secure: secure}
	out := map[string]struct {
		p Protocol
		b Budget
	}{}
	for _, name := range Names() {
		p := base
		b := Budget{Epsilon: 8, Delta: 1e-6}
		switch name {
		case "split-mix":
			p.Population = 40
			p.SampleRate = 0.5
			p.Extra = map[string]float64{"slots": 40, "bits": 20, "scale": 64}
		case "ss-topk":
			p.Extra = map[string]float64{"k": 2}
		case "ss-double":
			p.Extra = map[string]float64{"k": 3}
		case "ifca", "ifca-dp":
			p.Extra = map[string]float64{"k": 2}
		case "dp-central":
			p.Epsilon = 4
		case "ldp-min":
			p.Extra = map[string]float64{"min-epsilon": 8.0 / float64(d)}
		}
		if name == "e-apes" || name == "ldp-gaussian" {
			b.Delta = 1e-4
		}
		pr, err := New(name, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = struct {
			p Protocol
			b Budget
		}{pr, b}
	}
	return out
}

// TestLayoutMatchesEncode: every protocol says the layout its own
// encoder produces — the shuffler's completeness check (role) refuses
// anything else, so a wrong layout would refuse honest clients — and
// every value its encoder emits lies in its Counts' range.
func TestLayoutMatchesEncode(t *testing.T) {
	const d, n = 40, 30
	s := Shape{Round: 1, Dim: d, Population: n, Participants: n}
	r := rand.New(rand.NewPCG(1, 2))
	for _, secure := range []bool{false, true} {
		testLayouts(t, d, n, s, r, secure)
	}
}

func testLayouts(t *testing.T, d, n int, s Shape, r *rand.Rand, secure bool) {
	for name, c := range layoutCases(t, d, n, secure) {
		t.Run(fmt.Sprintf("%s/secure=%v", name, secure), func(t *testing.T) {
			s := s
			if name == "split-mix" {
				s.Population, s.Participants = 40, 20
			}
			l, ok := c.p.(Laid)
			if !ok {
				t.Fatalf("%s has no Layout", name)
			}
			lay, err := l.Layout(s)
			if err != nil {
				t.Fatal(err)
			}
			for trial := 0; trial < 5; trial++ {
				u := make([]float64, d)
				for j := range u {
					u[j] = r.NormFloat64() * 3
				}
				var rep Report
				var err error
				if cl, ok := c.p.(Clustered); ok {
					err = cl.EncodeModel(r, s, make([]float64, d), u, c.b, &rep)
				} else {
					err = c.p.Encode(r, s, u, c.b, &rep)
				}
				if err != nil {
					t.Fatal(err)
				}
				coords := map[int32]int{}
				if rep.Coords == nil {
					for j := range rep.Values {
						coords[int32(j)]++
					}
				} else {
					for _, j := range rep.Coords {
						coords[j]++
					}
				}
				if len(coords) != lay.Coords || len(rep.Meta) != lay.Meta {
					t.Fatalf("report labels %d coordinates and %d metadata, layout says %d and %d", len(coords), len(rep.Meta), lay.Coords, lay.Meta)
				}
				for j, k := range coords {
					if k != lay.PerCoord {
						t.Fatalf("coordinate %d carries %d values, layout says %d", j, k, lay.PerCoord)
					}
				}
				ct, ok := c.p.(Counted)
				if !ok {
					// IFCA's d-privacy is per release: its statement
					// takes no shuffle credit.
					if _, clustered := c.p.(Clustered); c.p.Mode() != NoShuffle && !clustered {
						t.Fatalf("%s is shuffled (%v) but has no Counts", name, c.p.Mode())
					}
					continue
				}
				cs, err := ct.Counts(s)
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range rep.Values {
					if !cs.Values.Contains(v) {
						t.Fatalf("value %d = %v outside the declared range %v", i, v, cs.Values)
					}
				}
				if cs.PerColumn == 0 && cs.Reports == 0 {
					t.Fatalf("Counts %+v rest on nothing", cs)
				}
			}
		})
	}
}

// TestRangeContains: the bounded, integral and unbounded ranges.
func TestRangeContains(t *testing.T) {
	cases := []struct {
		r    Range
		v    float64
		want bool
	}{
		{Unbounded(), 1e300, true},
		{Unbounded(), math.NaN(), false},
		{Unbounded(), math.Inf(1), false},
		{Interval(-1, 1, false), 1, true},
		{Interval(-1, 1, false), 1.0000001, false},
		{Interval(0, 2, true), 2, true},
		{Interval(0, 2, true), 1.5, false},
		{Interval(0, 2, true), -1, false},
		{Range{}, 5, true},
	}
	for _, c := range cases {
		if got := c.r.Contains(c.v); got != c.want {
			t.Errorf("%v contains %v: %v, want %v", c.r, c.v, got, c.want)
		}
	}
}
