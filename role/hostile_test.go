package role

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

// hostileProto builds protocol name at dimension d for n reporters.
func hostileProto(t *testing.T, name string, d, n int, extra map[string]float64) protocol.Protocol {
	t.Helper()
	p, err := protocol.New(name, protocol.Params{Clip: 0.1, Epsilon: 2 * float64(d), Delta: 1e-6, Rounds: 1, SampleRate: 1,
		Population: n, Layers: []int{d}, Extra: extra})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// honest returns one honest client's messages for p in round s.
func honest(t *testing.T, p protocol.Protocol, s protocol.Shape, b protocol.Budget, seed uint64) []Message[Plain] {
	t.Helper()
	var rep protocol.Report
	if err := p.Encode(rng.Stream(seed), s, make([]float64, s.Dim), b, &rep); err != nil {
		t.Fatal(err)
	}
	return Messages(p.Mode(), &rep, nil)
}

// TestPartialReportRefused: the shuffler refuses, as a malformed message,
// every submission whose labels are not a complete report of the
// protocol's shape — the attack of a client that sends half of an
// ss-simple report so that half the coordinates are shuffled among fewer
// values than the statement counts — and accepts the complete one. It
// checks the shuffler alone: the analyzer's own defence (the statement
// from the opened counts, TestStatementFromOpenedCounts) plays no part.
func TestPartialReportRefused(t *testing.T) {
	const d, n = 40, 6
	s := protocol.Shape{Round: 1, Dim: d, Population: n, Participants: n}
	b := protocol.Budget{Epsilon: 2 * d}
	cases := []struct {
		name  string
		extra map[string]float64
		cut   func(m []Message[Plain]) []Message[Plain]
	}{
		{"ss-simple", nil, func(m []Message[Plain]) []Message[Plain] { return m[:d/2] }},
		{"ss-simple", nil, func(m []Message[Plain]) []Message[Plain] { return m[1:] }},
		{"ss-double", map[string]float64{"k": 4}, func(m []Message[Plain]) []Message[Plain] { return m[:3] }},
		{"ss-topk", map[string]float64{"k": 2}, func(m []Message[Plain]) []Message[Plain] { return m[:len(m)-1] }},
		{"apes", nil, func(m []Message[Plain]) []Message[Plain] { return m[:d] }},                 // no epsilon
		{"apes", nil, func(m []Message[Plain]) []Message[Plain] { return append(m[:5:5], m[d]) }}, // 5 values and the epsilon
		{"s-apes", nil, func(m []Message[Plain]) []Message[Plain] { return m[d/2:] }},
		{"unis", nil, func(m []Message[Plain]) []Message[Plain] { return m[:d-1] }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := hostileProto(t, c.name, d, n, c.extra)
			sh, err := NewShuffler[Plain](p, s, 1)
			if err != nil {
				t.Fatal(err)
			}
			good := honest(t, p, s, b, 1)
			bad := c.cut(append([]Message[Plain](nil), good...))
			_, err = sh.Accept("hostile", bad)
			if !errors.Is(err, ErrBadMessage) || !strings.Contains(err.Error(), "incomplete report") {
				t.Fatalf("a submission of %d of %d messages: %v, want an incomplete-report ErrBadMessage", len(bad), len(good), err)
			}
			if sh.Senders() != 0 {
				t.Fatalf("the refused submission was counted: %d senders", sh.Senders())
			}
			if _, err := sh.Accept("honest", good); err != nil {
				t.Fatalf("the complete report: %v", err)
			}
		})
	}
	t.Run("split-mix", func(t *testing.T) {
		const dim = 3
		p, err := protocol.New("split-mix", protocol.Params{Clip: 1, Epsilon: 2, Delta: 1e-5, Rounds: 1, SampleRate: 1, Population: 19,
			Layers: []int{dim}, Extra: map[string]float64{"slots": 19, "bits": 16}})
		if err != nil {
			t.Fatal(err)
		}
		s := protocol.Shape{Round: 1, Dim: dim, Population: 19, Participants: 19}
		sh, err := NewShuffler[Plain](p, s, 0)
		if err != nil {
			t.Fatal(err)
		}
		good := honest(t, p, s, protocol.Budget{}, 2)
		for _, bad := range [][]Message[Plain]{good[1:], good[:len(good)/dim]} {
			if _, err := sh.Accept("hostile", bad); !errors.Is(err, ErrBadMessage) {
				t.Fatalf("%d of %d shares: %v", len(bad), len(good), err)
			}
		}
		if _, err := sh.Accept("honest", good); err != nil {
			t.Fatal(err)
		}
	})
}

// openBatch opens round 1 of p on facts of n reporters with budget b,
// absorbs the batch and closes it.
func openBatch(t *testing.T, p protocol.Protocol, s protocol.Shape, n int, budgets []protocol.Budget, b *Batch[Plain]) (opened, closed Ready) {
	t.Helper()
	acct, err := account.NewAccountant(1e-6)
	if err != nil {
		t.Fatal(err)
	}
	an, err := NewAnalyzer(AnalyzerConfig{Protocol: p, Model: make([]float64, s.Dim), ServerLR: 1, Accountant: acct})
	if err != nil {
		t.Fatal(err)
	}
	opened, err = an.Open(Facts{Shape: s, Sampled: n, Reporters: n, Budgets: budgets, MinReports: 1})
	if err != nil || !opened.Accepting {
		t.Fatalf("open: %+v, %v", opened, err)
	}
	if err := an.Absorb(BatchInput(b)); err != nil {
		t.Fatal(err)
	}
	closed, err = an.Close(rng.Stream(9))
	if err != nil {
		t.Fatal(err)
	}
	return opened, closed
}

// columns builds a per-coordinate batch in which coordinate j holds
// count(j) copies of value v.
func columns(s protocol.Shape, senders int, count func(j int) int, v float64) *Batch[Plain] {
	b := &Batch[Plain]{Round: s.Round, Mode: protocol.PerCoordinate, Dim: s.Dim, Senders: senders, Columns: make([][]Plain, s.Dim)}
	for j := range b.Columns {
		for range count(j) {
			b.Columns[j] = append(b.Columns[j], Plain{Value: v})
		}
	}
	return b
}

// TestStatementFromOpenedCounts: the analyzer states a round from what it
// really opened, never from the header's or the driver's reporter count.
// The shuffler is bypassed (the batch is built by hand, as a shuffler
// that let a partial report through would forward it), so only the
// analyzer's defence stands between a short coordinate and an inflated
// statement.
func TestStatementFromOpenedCounts(t *testing.T) {
	const d, n = 20, 400
	uniform := func(n int, eps float64) []protocol.Budget {
		bs := make([]protocol.Budget, n)
		for i := range bs {
			bs[i] = protocol.Budget{Epsilon: eps}
		}
		return bs
	}
	s := protocol.Shape{Round: 1, Dim: d, Population: n, Participants: n}
	account1 := func(p protocol.Protocol, s protocol.Shape, bs []protocol.Budget) protocol.Privacy {
		t.Helper()
		priv, err := p.Account(s, bs)
		if err != nil {
			t.Fatal(err)
		}
		return priv
	}

	t.Run("ss-simple, half the coordinates one value short", func(t *testing.T) {
		p := hostileProto(t, "ss-simple", d, n, nil)
		bs := uniform(n, 2*d)
		// n senders in the header; coordinates d/2.. hold n-1 values
		// (a client sent the first half of its report).
		b := columns(s, n, func(j int) int { return n - btoi(j >= d/2) }, 1)
		opened, closed := openBatch(t, p, s, n, bs, b)
		short := s
		short.Participants = n - 1
		want := account1(p, short, bs[:n-1])
		if !closed.Released || closed.Restated == "" {
			t.Fatalf("round %+v: want released and restated", closed)
		}
		if closed.Privacy.CentralEpsilon != want.CentralEpsilon || closed.Statement.Reporters != n-1 {
			t.Fatalf("statement %v for %d reporters, want %v for %d (Open said %v)", closed.Privacy.CentralEpsilon, closed.Statement.Reporters,
				want.CentralEpsilon, n-1, opened.Privacy.CentralEpsilon)
		}
		if !(closed.Privacy.CentralEpsilon > opened.Privacy.CentralEpsilon) {
			t.Fatalf("fewer values per coordinate should weaken the statement: %v after %v", closed.Privacy.CentralEpsilon, opened.Privacy.CentralEpsilon)
		}
	})

	t.Run("ss-simple, complete batch", func(t *testing.T) {
		p := hostileProto(t, "ss-simple", d, n, nil)
		bs := uniform(n, 2*d)
		opened, closed := openBatch(t, p, s, n, bs, columns(s, n, func(int) int { return n }, 1))
		if closed.Restated != "" || closed.Privacy.CentralEpsilon != opened.Privacy.CentralEpsilon {
			t.Fatalf("a complete batch was restated: %q, %v after %v", closed.Restated, closed.Privacy.CentralEpsilon, opened.Privacy.CentralEpsilon)
		}
	})

	t.Run("ss-simple, values outside the randomizer's range", func(t *testing.T) {
		p := hostileProto(t, "ss-simple", d, n, nil) // R_{gamma,b}: integers in {0, ..., b}
		bs := uniform(n, 2*d)
		b := columns(s, n, func(int) int { return n }, 1)
		b.Columns[3][0].Value = 7.5 // not an output of R_{gamma,b}
		b.Columns[4][0].Value = -1
		_, closed := openBatch(t, p, s, n, bs, b)
		if closed.Dropped != 2 || closed.Statement.Reporters != n-1 || !closed.Released {
			t.Fatalf("dropped %d, stated for %d reporters (%q): want 2 dropped, %d reporters", closed.Dropped, closed.Statement.Reporters, closed.Restated, n-1)
		}
	})

	t.Run("apes, personal budgets, a short coordinate", func(t *testing.T) {
		p := hostileProto(t, "apes", d, n, nil)
		bs := uniform(n, 2*d)
		bs[0].Epsilon = d // budgets differ: whose values are missing is unknown
		b := columns(s, n, func(j int) int { return n - btoi(j == 7) }, 0)
		for _, bb := range bs {
			b.Meta = append(b.Meta, Plain{Value: bb.Epsilon / d})
		}
		_, closed := openBatch(t, p, s, n, bs, b)
		if closed.Released || closed.Void != Refused {
			t.Fatalf("round %+v: want void (refused)", closed)
		}
	})

	t.Run("apes, a value outside [-C, C]", func(t *testing.T) {
		p := hostileProto(t, "apes", d, n, nil)
		bs := uniform(n, 2*d)
		b := columns(s, n, func(int) int { return n }, 0.05)
		b.Columns[0][5].Value = 1e6
		for range n {
			b.Meta = append(b.Meta, Plain{Value: 2})
		}
		_, closed := openBatch(t, p, s, n, bs, b)
		if closed.Dropped != 1 || closed.Statement.Reporters != n-1 {
			t.Fatalf("dropped %d, %d reporters: want 1 and %d", closed.Dropped, closed.Statement.Reporters, n-1)
		}
	})

	t.Run("ss-double, a coordinate below its padding", func(t *testing.T) {
		const n = 6000
		s := protocol.Shape{Round: 1, Dim: d, Population: n, Participants: n}
		p, err := protocol.New("ss-double", protocol.Params{Clip: 0.1, Epsilon: 4, Delta: 1e-6, Rounds: 1, SampleRate: 1,
			Population: n, Layers: []int{d}, Extra: map[string]float64{"k": 2}})
		if err != nil {
			t.Fatal(err)
		}
		sd := p.(protocol.SSDouble)
		_, np, err := sd.Plan(s)
		if err != nil {
			t.Fatal(err)
		}
		bs := uniform(n, 4)
		b := columns(s, n, func(j int) int { return np - np/2*btoi(j == 0) }, 1)
		opened, closed := openBatch(t, p, s, n, bs, b)
		want, err := sd.AccountShort(s, bs, int64(np-np/2))
		if err != nil {
			t.Fatal(err)
		}
		if closed.Restated == "" || closed.Privacy.CentralEpsilon != want.CentralEpsilon || !(want.CentralEpsilon > opened.Privacy.CentralEpsilon) {
			t.Fatalf("restated %q: %v (Open %v), want %v", closed.Restated, closed.Privacy.CentralEpsilon, opened.Privacy.CentralEpsilon, want.CentralEpsilon)
		}
	})

	t.Run("e-apes, a whole report of the wrong length", func(t *testing.T) {
		const m = 50
		p := hostileProto(t, "e-apes", d, m, nil)
		s := protocol.Shape{Round: 1, Dim: d, Population: m, Participants: m}
		bs := make([]protocol.Budget, m)
		for i := range bs {
			bs[i] = protocol.Budget{Epsilon: 1, Delta: 1e-7}
		}
		b := &Batch[Plain]{Round: 1, Mode: protocol.WholeReport, Dim: d, Senders: m}
		for i := range m {
			vals := make([]float64, d)
			rep := &protocol.Report{Values: vals}
			if i == 0 {
				rep = &protocol.Report{Coords: []int32{0}, Values: []float64{0.1}} // one coordinate
			}
			b.Reports = append(b.Reports, Plain{Report: rep})
		}
		_, closed := openBatch(t, p, s, m, bs, b)
		if closed.Dropped != 1 || closed.Statement.Reporters != m-1 || !closed.Released {
			t.Fatalf("dropped %d, %d reporters (%q): want 1 and %d", closed.Dropped, closed.Statement.Reporters, closed.Restated, m-1)
		}
	})

	t.Run("too few values left for the minimum", func(t *testing.T) {
		p := hostileProto(t, "ss-simple", d, n, nil)
		b := columns(s, n, func(j int) int { return btoi(j != 0) * n }, 1)
		_, closed := openBatch(t, p, s, n, uniform(n, 2*d), b)
		if closed.Void != TooFew || math.IsNaN(closed.Privacy.CentralEpsilon) {
			t.Fatalf("a coordinate with no value: %+v, want void (too few)", closed)
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
