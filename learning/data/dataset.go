package data

import "github.com/shufflefl/shufflefl/checks"

// Dataset is a labelled set of examples stored row-major: example i is
// X[i*Features : (i+1)*Features].
//
// A classification set has Classes >= 2 and one label per example in Y. A
// regression set (synthetic-clusters) has Classes == 0, Y == nil and one
// real-valued response per example in Target.
type Dataset struct {
	Name     string
	X        []float32 // Len()*Features values
	Y        []uint8   // class labels in [0, Classes); nil for regression
	Features int
	Classes  int // number of classes; 0 marks a regression set

	// Target holds the responses of a regression set; nil for classification.
	Target []float32
	// Group holds, for each example, the index of the distribution (cluster)
	// that generated it, when the set knows it (synthetic-clusters, or after
	// a rotation recorded by the caller); nil otherwise. It is ground truth
	// for evaluating clustering and must not be shown to the learner.
	Group []uint8
	// Rows and Cols give the image shape when the features are a Rows×Cols
	// image stored row by row (Rows*Cols == Features); both are 0 otherwise.
	Rows, Cols int

	// Client holds, for each example of a set with a natural partition
	// (a CSV client column, an npz client array, LEAF users, FedProx's
	// devices), the index of the client that holds it, in
	// [0, len(ClientNames)); nil otherwise. ClientNames are the clients'
	// original identifiers, in index order (see NaturalClients).
	Client      []int32
	ClientNames []string
	// Labels are the original labels of the classes of a user's file, in
	// class order (class k was labelled Labels[k]); nil for the built-in
	// sets, whose labels are the class indices.
	Labels []string
}

// Len returns the number of examples.
func (d *Dataset) Len() int {
	if d.Features <= 0 {
		return 0
	}
	return len(d.X) / d.Features
}

// Row returns the features of example i. The result aliases d.X (it is not a
// copy) and has capacity Features, so appending to it cannot clobber the next
// row. Row panics if i is out of range, like a slice index.
func (d *Dataset) Row(i int) []float32 {
	f := d.Features
	return d.X[i*f : (i+1)*f : (i+1)*f]
}

// IsRegression reports whether d is a regression set (Classes == 0).
func (d *Dataset) IsRegression() bool { return d.Classes == 0 }

// Subset returns a new Dataset holding copies of the examples idx, in that
// order (an index may repeat). It panics if an index is out of range, like a
// slice index; the partitioners of this package only return valid indices.
func (d *Dataset) Subset(idx []int) *Dataset {
	f := d.Features
	s := &Dataset{
		Name:     d.Name,
		X:        make([]float32, len(idx)*f),
		Features: f,
		Classes:  d.Classes,
		Rows:     d.Rows,
		Cols:     d.Cols,
		Labels:   d.Labels,
	}
	for j, i := range idx {
		copy(s.X[j*f:(j+1)*f], d.X[i*f:(i+1)*f])
	}
	s.Y = pick(d.Y, idx)
	s.Target = pick(d.Target, idx)
	s.Group = pick(d.Group, idx)
	if d.Client != nil {
		s.Client, s.ClientNames = pick(d.Client, idx), d.ClientNames
	}
	return s
}

func pick[T any](v []T, idx []int) []T {
	if v == nil {
		return nil
	}
	out := make([]T, len(idx))
	for j, i := range idx {
		out[j] = v[i]
	}
	return out
}

// ClassCounts returns the number of examples of each class (nil for a
// regression set). Labels outside [0, Classes) are not counted.
func (d *Dataset) ClassCounts() []int {
	if d.Classes <= 0 {
		return nil
	}
	c := make([]int, d.Classes)
	for _, y := range d.Y {
		if int(y) < d.Classes {
			c[y]++
		}
	}
	return c
}

// Validate checks that the fields of d are consistent: X holds a whole
// number of rows, Y (or Target) has one entry per row, labels are below
// Classes, Group has one entry per row if set, and Rows*Cols == Features if
// an image shape is given. The error wraps checks.ErrInvalid.
func (d *Dataset) Validate() error {
	name := d.Name
	if name == "" {
		name = "dataset"
	}
	if d.Features < 1 {
		return checks.Invalidf("%s: Features must be >= 1, got %d", name, d.Features)
	}
	if len(d.X)%d.Features != 0 {
		return checks.Invalidf("%s: len(X) = %d is not a multiple of Features = %d", name, len(d.X), d.Features)
	}
	n := d.Len()
	switch {
	case d.Classes < 0 || d.Classes == 1 || d.Classes > 256:
		return checks.Invalidf("%s: Classes must be 0 (regression) or in [2, 256], got %d", name, d.Classes)
	case d.Classes == 0:
		if len(d.Target) != n || d.Y != nil {
			return checks.Invalidf("%s: regression set needs len(Target) = %d and Y = nil, got %d and %d", name, n, len(d.Target), len(d.Y))
		}
	default:
		if len(d.Y) != n {
			return checks.Invalidf("%s: %d labels for %d examples", name, len(d.Y), n)
		}
		for i, y := range d.Y {
			if int(y) >= d.Classes {
				return checks.Invalidf("%s: label %d of example %d is not below Classes = %d", name, y, i, d.Classes)
			}
		}
	}
	if d.Group != nil && len(d.Group) != n {
		return checks.Invalidf("%s: %d group entries for %d examples", name, len(d.Group), n)
	}
	if d.Client != nil {
		if len(d.Client) != n {
			return checks.Invalidf("%s: %d client entries for %d examples", name, len(d.Client), n)
		}
		for i, c := range d.Client {
			if c < 0 || int(c) >= len(d.ClientNames) {
				return checks.Invalidf("%s: client %d of example %d is not below the %d client names", name, c, i, len(d.ClientNames))
			}
		}
	}
	if (d.Rows != 0 || d.Cols != 0) && d.Rows*d.Cols != d.Features {
		return checks.Invalidf("%s: image shape %dx%d does not match Features = %d", name, d.Rows, d.Cols, d.Features)
	}
	return nil
}

// Split is a dataset's training and held-out test sets.
type Split struct{ Train, Test *Dataset }
