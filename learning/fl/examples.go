package fl

import "github.com/shufflefl/shufflefl/checks"

// Examples is a read-only view of a labelled data set: X holds len(Y) rows of
// Features values each, row-major; Y holds the class labels. It mirrors the
// fields of data.Dataset, so a caller writes
//
//	fl.Examples{X: ds.X, Y: ds.Y, Features: ds.Features}
//
// and passes a client's shard as a list of row indices. Features are expected
// in [0, 1] (the models do not require it, but the learning rates of the
// experiments assume it). fl never modifies X or Y.
type Examples struct {
	X        []float32
	Y        []uint8
	Features int
}

// Len is the number of examples.
func (e Examples) Len() int { return len(e.Y) }

// Row returns the features of example i (a subslice of X, not a copy).
func (e Examples) Row(i int) []float32 { return e.X[i*e.Features : (i+1)*e.Features] }

// check verifies that e has the shape model m expects.
func (e Examples) check(m Model) error {
	if e.Features != m.Features() {
		return checks.Invalidf("examples have %d features, model %s expects %d", e.Features, m.Name(), m.Features())
	}
	if len(e.X) != len(e.Y)*e.Features {
		return checks.Invalidf("examples have %d feature values for %d labels of %d features", len(e.X), len(e.Y), e.Features)
	}
	return nil
}

// checkIndex verifies that idx is non-empty, that every index is a row of e,
// and that the labels of those rows are classes of m.
func (e Examples) checkIndex(m Model, idx []int) error {
	if len(idx) == 0 {
		return checks.Invalidf("client has no examples")
	}
	n := len(e.Y)
	for j, i := range idx {
		if i < 0 || i >= n {
			return checks.Invalidf("example index idx[%d] = %d is outside [0, %d)", j, i, n)
		}
		if int(e.Y[i]) >= m.Classes() {
			return checks.Invalidf("label of example %d is %d, model has %d classes", i, e.Y[i], m.Classes())
		}
	}
	return nil
}
