package role

import (
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/protocol"
)

// TestShufflerCount: a round whose submissions are partly accepted and
// partly counted (Count) draws, with ClosePadding, exactly the padding
// Close draws on the same stream for the same submissions accepted; it
// cannot be closed with Close; Dummies counts them beforehand; and it is
// void below the minimum.
func TestShufflerCount(t *testing.T) {
	p, err := protocol.New("ss-double", protocol.Params{Clip: 0.1, Delta: 1e-6, Epsilon: 10, Rounds: 1, SampleRate: 1,
		Extra: map[string]float64{"k": 2, "np": 40}})
	if err != nil {
		t.Fatal(err)
	}
	s := protocol.Shape{Round: 1, Dim: 8, Population: 20, Participants: 20}
	all, _ := NewShuffler[Plain](p, s, 1)
	part, _ := NewShuffler[Plain](p, s, 1)
	r := rng.Stream(5)
	for i := range 20 {
		var rep protocol.Report
		if err := p.Encode(r, s, make([]float64, 8), protocol.Budget{Epsilon: 10}, &rep); err != nil {
			t.Fatal(err)
		}
		msgs := Messages(p.Mode(), &rep, nil)
		if _, err := all.Accept(strconv.Itoa(i), msgs); err != nil {
			t.Fatal(err)
		}
		add := part.Accept
		if i >= 5 {
			add = part.Count
		}
		if _, err := add(strconv.Itoa(i), msgs); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := part.Count("3", nil); !errors.Is(err, ErrDuplicateSender) {
		t.Errorf("a counted sender again: %v", err)
	}
	b, err := all.Close(rng.Stream(1), rng.Stream(2), PlainDummy(p.Mode()))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for j, col := range b.Columns {
		want[fmt.Sprint(j)] = len(col)
	}
	if _, err := part.Close(rng.Stream(1), rng.Stream(2), PlainDummy(p.Mode())); !errors.Is(err, ErrOrder) {
		t.Errorf("Close after Count: %v", err)
	}
	got := map[string]int{}
	for j := range part.counts {
		got[fmt.Sprint(j)] = int(part.counts[j])
	}
	nd, err := part.Dummies(rng.Stream(9))
	if err != nil {
		t.Fatal(err)
	}
	pad, err := part.ClosePadding()
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	if err := pad(rng.Stream(1), func(j int, v float64) {
		got[fmt.Sprint(j)]++
		values = append(values, fmt.Sprint(j, v))
	}); err != nil {
		t.Fatal(err)
	}
	if int(nd) != len(values) {
		t.Errorf("Dummies said %d, the padding drew %d", nd, len(values))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("values per coordinate with ClosePadding %v, with Close %v", got, want)
	}
	var refValues []string
	if err := p.Pad(rng.Stream(1), s, all.counts, func(j int, v float64) { refValues = append(refValues, fmt.Sprint(j, v)) }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(values) != fmt.Sprint(refValues) {
		t.Error("ClosePadding drew other dummies than the padding stream gives")
	}
	few, _ := NewShuffler[Plain](p, s, 2)
	if _, err := few.Count("a", Messages(p.Mode(), &protocol.Report{Coords: []int32{1, 2}, Values: []float64{1, 1}}, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := few.ClosePadding(); !errors.Is(err, ErrTooFew) {
		t.Errorf("ClosePadding below the minimum: %v", err)
	}
}
