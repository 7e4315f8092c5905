package protocol_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
)

// TestSplitMixFaithfulShuffle: real shares through the shuffler role
// (Accept checks several values per coordinate, Close pads and permutes
// every coordinate's shares) give a bit-identical estimate to the fast path
// streamed into an aggregate, and the shuffler really permuted the shares.
func TestSplitMixFaithfulShuffle(t *testing.T) {
	const d, slots, n = 16, 19, 10
	build := func(fast float64) protocol.Protocol {
		p, err := protocol.New("split-mix", protocol.Params{Clip: 1, Epsilon: 2, Delta: 1e-5, Rounds: 1, SampleRate: 1, Population: slots,
			Layers: []int{d}, Extra: map[string]float64{"slots": slots, "bits": 20, "scale": 1024, "fast": fast}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	shares, fast := build(0), build(1)
	s := protocol.Shape{Round: 1, Dim: d, Population: slots, Participants: slots}
	updates := make([][]float64, n)
	ur := rng.Stream(4)
	for i := range updates {
		updates[i] = make([]float64, d)
		for j := range updates[i] {
			updates[i][j] = ur.NormFloat64()
		}
	}
	const seed, padLabel, permLabel = 7, 1 << 40, 1<<40 + 1

	// Faithful: shares, messages, the shuffler's Accept and Close.
	sh, err := role.NewShuffler[role.Plain](shares, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	var submitted [][]float64 // coordinate 0's values in submission order
	for i, u := range updates {
		var rep protocol.Report
		if err := shares.Encode(rng.Stream(seed, uint64(i)), s, slices.Clone(u), protocol.Budget{}, &rep); err != nil {
			t.Fatal(err)
		}
		var col []float64
		for k, c := range rep.Coords {
			if c == 0 {
				col = append(col, rep.Values[k])
			}
		}
		submitted = append(submitted, col)
		if _, err := sh.Accept(fmt.Sprint("client", i), role.Messages(shares.Mode(), &rep, nil)); err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
	}
	batch, err := sh.Close(rng.Stream(seed, padLabel), rng.Stream(seed, permLabel), role.PlainDummy(shares.Mode()))
	if err != nil {
		t.Fatal(err)
	}
	aggF := protocol.NewAggregate(d)
	for j, col := range batch.Columns {
		for _, p := range col {
			aggF.Sum[j] += p.Value
			aggF.Count[j]++
		}
	}
	var inOrder []float64
	for _, c := range submitted {
		inOrder = append(inOrder, c...)
	}
	got := make([]float64, len(inOrder))
	for k := range got {
		got[k] = batch.Columns[0][k].Value
	}
	if slices.Equal(got, inOrder) {
		t.Error("coordinate 0's shares reached the analyzer in submission order: nothing was shuffled")
	}

	// Fast path, streamed.
	aggS := protocol.NewAggregate(d)
	for i, u := range updates {
		var rep protocol.Report
		if err := fast.Encode(rng.Stream(seed, uint64(i)), s, slices.Clone(u), protocol.Budget{}, &rep); err != nil {
			t.Fatal(err)
		}
		if err := aggS.AddReport(&rep); err != nil {
			t.Fatal(err)
		}
	}
	if err := fast.Pad(rng.Stream(seed, padLabel), s, slices.Clone(aggS.Count), aggS.AddValue); err != nil {
		t.Fatal(err)
	}

	e1, e2 := make([]float64, d), make([]float64, d)
	if err := shares.(protocol.Estimator).Estimate(rand.New(rand.NewPCG(1, 2)), s, aggF, e1); err != nil {
		t.Fatal(err)
	}
	if err := fast.(protocol.Estimator).Estimate(rand.New(rand.NewPCG(1, 2)), s, aggS, e2); err != nil {
		t.Fatal(err)
	}
	for j := range e1 {
		if math.Float64bits(e1[j]) != math.Float64bits(e2[j]) {
			t.Fatalf("coordinate %d: faithful %v, fast %v", j, e1[j], e2[j])
		}
	}
	if mv := shares.(protocol.MultiValued).ValuesPerCoordinate(); int(aggF.Count[0]) != slots*mv {
		t.Errorf("faithful: %d values per coordinate, want %d", aggF.Count[0], slots*mv)
	}
}

// TestSplitMixShufflerLimit: the shuffler takes up to m values of a
// coordinate from one sender and refuses m + 1.
func TestSplitMixShufflerLimit(t *testing.T) {
	p, err := protocol.New("split-mix", protocol.Params{Clip: 1, Epsilon: 2, Delta: 1e-5, Rounds: 1, SampleRate: 1, Population: 19,
		Layers: []int{2}, Extra: map[string]float64{"slots": 19, "bits": 16}})
	if err != nil {
		t.Fatal(err)
	}
	m := p.(protocol.MultiValued).ValuesPerCoordinate()
	s := protocol.Shape{Round: 1, Dim: 2, Population: 19, Participants: 19}
	sh, err := role.NewShuffler[role.Plain](p, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	msgs := func(k int) []role.Message[role.Plain] { // k values of coordinate 0, m of coordinate 1
		var out []role.Message[role.Plain]
		for range k {
			out = append(out, role.Message[role.Plain]{Label: 0, Payload: role.Plain{Value: 1}})
		}
		for range m {
			out = append(out, role.Message[role.Plain]{Label: 1, Payload: role.Plain{Value: 1}})
		}
		return out
	}
	if _, err := sh.Accept("a", msgs(m)); err != nil {
		t.Errorf("%d values of one coordinate: %v", m, err)
	}
	if _, err := sh.Accept("b", msgs(m+1)); err == nil {
		t.Errorf("%d values of one coordinate accepted", m+1)
	}
	if _, err := sh.Accept("c", msgs(m-1)); err == nil {
		t.Errorf("%d values of one coordinate (an incomplete report) accepted", m-1)
	}
}
