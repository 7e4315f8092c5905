package wire

import (
	"errors"
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// TestBudgetFieldsValidate: the rules for a client's registered budget
// (RegisterRequest.epsilon, delta), a batch's sample (BatchCounts.population,
// sampled) and its reporters' budgets (BatchHeader.reporter_epsilons,
// reporter_deltas). Each invalid case names the field its error must name.
func TestBudgetFieldsValidate(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	reg := func(eps, delta float64) Message {
		return &RegisterRequest{Auth: validAuth(), PublicKey: []byte("k"), KeyAlgorithm: "ed25519", Epsilon: eps, Delta: delta}
	}
	counts := func(reports, population, sampled uint32) Message {
		return &BatchCounts{Reports: reports, Messages: 10, Population: population, Sampled: sampled}
	}
	header := func(eps, del []float64) Message {
		h := validBatchHeader() // 2 reports
		h.ReporterEpsilons, h.ReporterDeltas = eps, del
		return h
	}
	cases := []struct {
		name  string
		m     Message
		field string // "" when valid
	}{
		{"register: uniform budget", reg(0, 0), ""},
		{"register: own epsilon", reg(0.5, 0), ""},
		{"register: own epsilon and delta", reg(2, 1e-6), ""},
		{"register: negative epsilon", reg(-1, 0), "epsilon"},
		{"register: NaN epsilon", reg(nan, 0), "epsilon"},
		{"register: infinite epsilon", reg(inf, 0), "epsilon"},
		{"register: delta 1", reg(1, 1), "delta"},
		{"register: negative delta", reg(1, -1e-9), "delta"},
		{"register: NaN delta", reg(1, nan), "delta"},
		{"register: delta without epsilon", reg(0, 1e-6), "delta"},

		{"counts: no sample", counts(2, 0, 0), ""},
		{"counts: sample", counts(2, 100, 5), ""},
		{"counts: everyone sampled", counts(2, 5, 5), ""},
		{"counts: sampled above population", counts(2, 5, 6), "sampled"},
		{"counts: sampled without population", counts(0, 0, 3), "sampled"},
		{"counts: population without sample", counts(0, 100, 0), "sampled"},
		{"counts: more reports than sampled", counts(4, 100, 3), "reports"},

		{"header: uniform budgets", header(nil, nil), ""},
		{"header: one epsilon per report", header([]float64{0.5, 2}, nil), ""},
		{"header: epsilons and deltas", header([]float64{0.5, 0.5}, []float64{0, 1e-6}), ""},
		{"header: too few epsilons", header([]float64{1}, nil), "reporter_epsilons"},
		{"header: too many epsilons", header([]float64{1, 1, 1}, nil), "reporter_epsilons"},
		{"header: unsorted epsilons", header([]float64{2, 1}, nil), "reporter_epsilons[1]"},
		{"header: zero epsilon", header([]float64{0, 1}, nil), "reporter_epsilons[0]"},
		{"header: NaN epsilon", header([]float64{1, nan}, nil), "reporter_epsilons[1]"},
		{"header: infinite epsilon", header([]float64{1, inf}, nil), "reporter_epsilons[1]"},
		{"header: deltas without epsilons", header(nil, []float64{0, 0}), "reporter_deltas"},
		{"header: fewer deltas than epsilons", header([]float64{1, 2}, []float64{0}), "reporter_deltas"},
		{"header: delta 1", header([]float64{1, 2}, []float64{0, 1}), "reporter_deltas[1]"},
		{"header: negative delta", header([]float64{1, 2}, []float64{-1e-9, 0}), "reporter_deltas[0]"},
		{"header: unsorted deltas", header([]float64{1, 2}, []float64{1e-6, 0}), "reporter_deltas[1]"},
		{"header: bad counts first", &BatchHeader{Round: 1, RunId: "r", Counts: &BatchCounts{Reports: 1, Messages: 1, Population: 1, Sampled: 2}, ReporterEpsilons: []float64{1}}, "counts.sampled"},
	}
	for _, c := range cases {
		err := c.m.(interface{ Validate() error }).Validate()
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: %v, want valid", c.name, err)
			}
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) || !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: %v, want a FieldError wrapping checks.ErrInvalid", c.name, err)
			continue
		}
		if fe.Field != c.field {
			t.Errorf("%s: error names field %q, want %q (%v)", c.name, fe.Field, c.field, err)
		}
	}
}
