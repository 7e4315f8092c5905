package wire

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// PackFloat64s encodes xs as little-endian IEEE-754 float64s, 8 bytes each:
// the encoding of Model.weights. It returns an error wrapping
// checks.ErrInvalid if a value is NaN or infinite (a receiver would refuse
// it).
func PackFloat64s(xs []float64) ([]byte, error) {
	b := make([]byte, 8*len(xs))
	for i, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("wire: pack: %w", checks.Invalidf("value %d is %v, want a finite number", i, x))
		}
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b, nil
}

// UnpackFloat64s decodes PackFloat64s' encoding of exactly dim values into
// dst (grown if needed, so pass nil to allocate) and returns it. It rejects,
// with errors wrapping checks.ErrInvalid, a length other than 8*dim and any
// NaN or infinite value.
func UnpackFloat64s(dst []float64, b []byte, dim int) ([]float64, error) {
	if dim < 0 || dim > MaxDimension {
		return nil, fmt.Errorf("wire: unpack: %w", checks.Invalidf("dimension must be in [0, %d], got %d", MaxDimension, dim))
	}
	if len(b) != 8*dim {
		return nil, fmt.Errorf("wire: unpack: %w", checks.Invalidf("%d bytes for dimension %d, want %d", len(b), dim, 8*dim))
	}
	if cap(dst) < dim {
		dst = make([]float64, dim)
	}
	dst = dst[:dim]
	for i := range dst {
		x := math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("wire: unpack: %w", checks.Invalidf("value %d is %v, want a finite number", i, x))
		}
		dst[i] = x
	}
	return dst, nil
}

// Float64s returns the model's weights as float64s (validated as by
// UnpackFloat64s).
func (x *Model) Float64s() ([]float64, error) {
	return UnpackFloat64s(nil, x.GetWeights(), int(x.GetDimension()))
}

// NewModel returns a Model named name holding weights.
func NewModel(name string, weights []float64) (*Model, error) {
	if len(weights) == 0 || len(weights) > MaxDimension {
		return nil, fmt.Errorf("wire: new model: %w", checks.Invalidf("dimension must be in [1, %d], got %d", MaxDimension, len(weights)))
	}
	b, err := PackFloat64s(weights)
	if err != nil {
		return nil, err
	}
	return &Model{Name: name, Dimension: uint32(len(weights)), Weights: b}, nil
}
