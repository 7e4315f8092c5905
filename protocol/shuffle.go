package protocol

import (
	"fmt"
	"math/rand/v2"
)

// Shuffled is the shuffler's output for one round, as the analyzer receives
// it: identities stripped, padded, permuted.
type Shuffled struct {
	Mode ShuffleMode
	Dim  int
	// Columns[j] holds every value for coordinate j — real and dummy — in a
	// uniformly random order (PerCoordinate mode).
	Columns [][]float64
	// Reports holds whole reports in a uniformly random order (WholeReport
	// mode), or in arrival order (NoShuffle). Dummies appear as one-value
	// sparse reports.
	Reports []Report
	// Meta is the metadata multiset in a uniformly random order.
	Meta []float64
}

// Shuffle is the faithful shuffler: it counts the real reports per coordinate,
// asks the protocol for padding (drawn from pad), and permutes (with perm)
// according to the protocol's ShuffleMode. It does not modify reports.
//
// The padding stream is separate from the permutation stream so that the
// streaming path of a simulation, which calls Pad with the same stream on the
// same counts, adds exactly the same dummies.
func Shuffle(pad, perm *rand.Rand, p Protocol, s Shape, reports []Report) (*Shuffled, error) {
	d := s.Dim
	counts := make([]int64, d)
	for i := range reports {
		rep := &reports[i]
		if rep.Coords == nil {
			if len(rep.Values) != d {
				return nil, fmt.Errorf("shuffle: report %d has %d values, want %d", i, len(rep.Values), d)
			}
			for j := range counts {
				counts[j]++
			}
			continue
		}
		if len(rep.Coords) != len(rep.Values) {
			return nil, fmt.Errorf("shuffle: report %d has %d coordinates and %d values", i, len(rep.Coords), len(rep.Values))
		}
		for _, c := range rep.Coords {
			if c < 0 || int(c) >= d {
				return nil, fmt.Errorf("shuffle: report %d has coordinate %d outside [0, %d)", i, c, d)
			}
			counts[c]++
		}
	}
	out := &Shuffled{Mode: p.Mode(), Dim: d}
	for i := range reports {
		out.Meta = append(out.Meta, reports[i].Meta...)
	}
	switch out.Mode {
	case PerCoordinate:
		out.Columns = make([][]float64, d)
		for j := range out.Columns {
			out.Columns[j] = make([]float64, 0, counts[j])
		}
		for i := range reports {
			rep := &reports[i]
			if rep.Coords == nil {
				for j, v := range rep.Values {
					out.Columns[j] = append(out.Columns[j], v)
				}
			} else {
				for k, c := range rep.Coords {
					out.Columns[c] = append(out.Columns[c], rep.Values[k])
				}
			}
		}
		if err := p.Pad(pad, s, counts, func(j int, v float64) {
			out.Columns[j] = append(out.Columns[j], v)
		}); err != nil {
			return nil, fmt.Errorf("shuffle: padding: %w", err)
		}
		for _, col := range out.Columns {
			perm.Shuffle(len(col), func(a, b int) { col[a], col[b] = col[b], col[a] })
		}
	default:
		out.Reports = make([]Report, 0, len(reports))
		for i := range reports {
			rep := reports[i]
			rep.Meta = nil // metadata travels separately
			out.Reports = append(out.Reports, rep)
		}
		if err := p.Pad(pad, s, counts, func(j int, v float64) {
			out.Reports = append(out.Reports, Report{Coords: []int32{int32(j)}, Values: []float64{v}})
		}); err != nil {
			return nil, fmt.Errorf("shuffle: padding: %w", err)
		}
		if out.Mode == WholeReport {
			perm.Shuffle(len(out.Reports), func(a, b int) { out.Reports[a], out.Reports[b] = out.Reports[b], out.Reports[a] })
		}
	}
	if out.Mode != NoShuffle {
		perm.Shuffle(len(out.Meta), func(a, b int) { out.Meta[a], out.Meta[b] = out.Meta[b], out.Meta[a] })
	}
	return out, nil
}

// Aggregate folds the shuffled batch into a new Aggregate, as the analyzer
// does after decrypting. Real reports and dummies are indistinguishable here;
// Reports counts whole reports received and Dummies is left zero.
func (sh *Shuffled) Aggregate() (*Aggregate, error) {
	agg := NewAggregate(sh.Dim)
	if sh.Columns != nil {
		for j, col := range sh.Columns {
			for _, v := range col {
				agg.Sum[j] += v
			}
			agg.Count[j] += int64(len(col))
		}
	}
	for i := range sh.Reports {
		if err := agg.AddReport(&sh.Reports[i]); err != nil {
			return nil, fmt.Errorf("analyzer: shuffled report %d: %w", i, err)
		}
	}
	agg.Meta = append(agg.Meta, sh.Meta...)
	return agg, nil
}
