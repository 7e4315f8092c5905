package protocol

import (
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// Aggregate is everything an analyzer learns from a round: per-coordinate sums
// and counts of the reported values (real and dummy alike, which the analyzer
// cannot tell apart) and the separately shuffled metadata. It is independent
// of the order in which reports arrive, which is what lets a simulation stream
// reports into it instead of materialising the shuffled batch.
type Aggregate struct {
	// Sum[j] is the sum of all values reported for coordinate j.
	Sum []float64
	// Count[j] is the number of values reported for coordinate j.
	Count []int64
	// Meta is the multiset of metadata values (e.g. APES's epsilons). Its
	// order carries no information and analyzers must not depend on it.
	Meta []float64
	// Reports is the number of reports absorbed with AddReport.
	Reports int64
	// Dummies is the number of single values absorbed with AddValue (the
	// shuffler's padding). The analyzer of a deployment cannot observe this
	// split; simulations record it for diagnostics only.
	Dummies int64
	// Vectors holds a copy of every dense report's values when the
	// aggregate keeps vectors (KeepVectors): the accumulator of whole-report
	// protocols whose analyzer needs each released vector, not only their
	// sum (IFCA's k-means). Their order is the order of absorption — block
	// order in a simulation, which does not depend on the number of workers,
	// and the shuffled order in a deployment — and carries no identity.
	// Memory: 8·d bytes per report.
	Vectors [][]float64
	keep    bool
}

// KeepVectors makes the aggregate keep a copy of every dense report it
// absorbs (see Vectors).
func (a *Aggregate) KeepVectors() { a.keep = true }

// KeepsVectors reports whether the aggregate keeps vectors.
func (a *Aggregate) KeepsVectors() bool { return a.keep }

// NewAggregate returns an empty aggregate for dimension dim.
func NewAggregate(dim int) *Aggregate {
	return &Aggregate{Sum: make([]float64, dim), Count: make([]int64, dim)}
}

// Dim is the model dimension of the aggregate.
func (a *Aggregate) Dim() int { return len(a.Sum) }

// Reset empties the aggregate, keeping its buffers.
func (a *Aggregate) Reset() {
	clear(a.Sum)
	clear(a.Count)
	a.Meta = a.Meta[:0]
	a.Reports, a.Dummies = 0, 0
	a.Vectors = nil
}

// AddReport absorbs one report. It rejects malformed reports — wrong length,
// coordinates out of range, non-finite values — without changing the
// aggregate, so a bad report from the network cannot corrupt a round.
func (a *Aggregate) AddReport(rep *Report) error {
	if err := a.checkReport(rep); err != nil {
		return err
	}
	if a.keep && rep.Coords == nil {
		a.Vectors = append(a.Vectors, append([]float64(nil), rep.Values...))
	}
	if rep.Coords == nil {
		for j, v := range rep.Values {
			a.Sum[j] += v
		}
		for j := range rep.Values {
			a.Count[j]++
		}
	} else {
		for i, c := range rep.Coords {
			a.Sum[c] += rep.Values[i]
			a.Count[c]++
		}
	}
	a.Meta = append(a.Meta, rep.Meta...)
	a.Reports++
	return nil
}

// CheckReport reports whether AddReport would accept rep, changing nothing.
func (a *Aggregate) CheckReport(rep *Report) error { return a.checkReport(rep) }

func (a *Aggregate) checkReport(rep *Report) error {
	d := len(a.Sum)
	if rep.Coords == nil {
		if len(rep.Values) != d {
			return checks.Invalidf("dense report has %d values, want dimension %d", len(rep.Values), d)
		}
	} else {
		if len(rep.Coords) != len(rep.Values) {
			return checks.Invalidf("sparse report has %d coordinates but %d values", len(rep.Coords), len(rep.Values))
		}
		for i, c := range rep.Coords {
			if c < 0 || int(c) >= d {
				return checks.Invalidf("report coordinate %d at position %d is outside [0, %d)", c, i, d)
			}
		}
	}
	for i, v := range rep.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return checks.Invalidf("report value at position %d is not finite (%v)", i, v)
		}
	}
	for i, v := range rep.Meta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return checks.Invalidf("report metadata at position %d is not finite (%v)", i, v)
		}
	}
	return nil
}

// AddValue absorbs one value for coordinate j (a shuffler dummy). It panics
// if j is out of range: dummies come from trusted protocol code.
func (a *Aggregate) AddValue(j int, v float64) {
	a.Sum[j] += v
	a.Count[j]++
	a.Dummies++
}

// Merge adds b into a. Both must have the same dimension.
func (a *Aggregate) Merge(b *Aggregate) error {
	if len(a.Sum) != len(b.Sum) {
		return checks.Invalidf("cannot merge aggregates of dimensions %d and %d", len(a.Sum), len(b.Sum))
	}
	for j, v := range b.Sum {
		a.Sum[j] += v
	}
	for j, c := range b.Count {
		a.Count[j] += c
	}
	a.Meta = append(a.Meta, b.Meta...)
	a.Reports += b.Reports
	a.Dummies += b.Dummies
	a.Vectors = append(a.Vectors, b.Vectors...)
	return nil
}
