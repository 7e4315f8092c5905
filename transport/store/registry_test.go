package store

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// TestRegisterClient: a registration is recorded once with its budget; the
// same budget again is accepted, another refused, bad input refused.
func TestRegisterClient(t *testing.T) {
	db := openTemp(t)
	if _, err := db.RegisterClient(Registration{Client: "b", Epsilon: 2, Delta: 1e-6}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		r    Registration
		want error
	}{
		{"same again", Registration{Client: "b", Epsilon: 2, Delta: 1e-6}, nil},
		{"another budget", Registration{Client: "b", Epsilon: 3, Delta: 1e-6}, ErrBudgetChanged},
		{"second client", Registration{Client: "a", Epsilon: 1, Delta: 0}, nil},
		{"no id", Registration{Epsilon: 1}, checks.ErrInvalid},
		{"newline in id", Registration{Client: "x\ny", Epsilon: 1}, checks.ErrInvalid},
		{"zero epsilon", Registration{Client: "c", Epsilon: 0}, checks.ErrInvalid},
		{"infinite epsilon", Registration{Client: "c", Epsilon: math.Inf(1)}, checks.ErrInvalid},
		{"NaN epsilon", Registration{Client: "c", Epsilon: math.NaN()}, checks.ErrInvalid},
		{"delta 1", Registration{Client: "c", Epsilon: 1, Delta: 1}, checks.ErrInvalid},
	} {
		_, err := db.RegisterClient(c.r)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	regs, err := db.Registrations()
	if err != nil {
		t.Fatal(err)
	}
	want := []Registration{{"a", 1, 0}, {"b", 2, 1e-6}}
	if !slices.Equal(regs, want) {
		t.Fatalf("registrations %v, want %v", regs, want)
	}
}

// TestSampledInboxRound: a sampled round and its sample are stored
// together; a round opened twice, or a sample larger than its population,
// is refused; a round without a sample has none.
func TestSampledInboxRound(t *testing.T) {
	db := openTemp(t)
	s := Sample{Population: 5, Clients: []string{"c1", "c4"}}
	if err := db.OpenSampledInboxRound(1, []byte("ann"), s); err != nil {
		t.Fatal(err)
	}
	got, err := db.InboxSample(1)
	if err != nil || got.Population != 5 || !slices.Equal(got.Clients, s.Clients) {
		t.Fatalf("sample %+v, %v; want %+v", got, err, s)
	}
	if err := db.OpenSampledInboxRound(1, nil, s); !errors.Is(err, ErrRoundExists) {
		t.Fatalf("second open: %v", err)
	}
	if err := db.OpenSampledInboxRound(2, nil, Sample{Population: 1, Clients: []string{"a", "b"}}); !errors.Is(err, checks.ErrInvalid) {
		t.Fatalf("sample above the population: %v", err)
	}
	if _, err := db.InboxRound(2); !errors.Is(err, ErrUnknownRound) {
		t.Fatalf("a refused sampled round was opened: %v", err)
	}
	if err := db.OpenInboxRound(3, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.InboxSample(3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("round without a sample: %v", err)
	}
}

// BenchmarkRegisterClient: one new client's durable registration (one
// fsynced transaction), what a shuffler pays per client once per run.
func BenchmarkRegisterClient(b *testing.B) {
	db := openTemp(b)
	for i := 0; b.Loop(); i++ {
		if _, err := db.RegisterClient(Registration{Client: fmt.Sprintf("client-%06d", i+1), Epsilon: 1, Delta: 1e-6}); err != nil {
			b.Fatal(err)
		}
	}
}
