package mechanism

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// FWHT applies the unnormalized Walsh–Hadamard transform to x in place
// (O(n log n) additions); len(x) must be a power of two. Applied twice it
// multiplies x by len(x).
func FWHT(x []float64) {
	n := len(x)
	if n&(n-1) != 0 {
		panic(fmt.Sprintf("mechanism.FWHT: length %d is not a power of two", n))
	}
	for h := 1; h < n; h <<= 1 {
		for i := 0; i < n; i += h << 1 {
			a, b := x[i:i+h], x[i+h:i+2*h]
			for j := range a {
				u, v := a[j], b[j]
				a[j], b[j] = u+v, u-v
			}
		}
	}
}

// Rotation is a random orthogonal map of R^d built from randomized
// Hadamard transforms, as used before quantization by the distributed
// discrete Gaussian (Kairouz, Liu, Steinke, ICML 2021) to spread a vector's
// mass evenly over the coordinates. DDG pads d to the next power of two; a
// Rotation instead stays in R^d (so the messages keep the model's
// coordinates): with p the largest power of two <= d it applies
// H_p·D_1 / sqrt(p) to the first p coordinates and then, if p < d,
// H_p·D_2 / sqrt(p) to the last p (p >= d/2, so the two windows cover all
// coordinates and overlap on 2p - d). D_1, D_2 are diagonal matrices of
// independent random signs. Each step is orthogonal, so the map preserves
// L2 norms (up to float64 rounding, a relative O(log2(p)·2^-53)).
type Rotation struct {
	d, p  int
	signs [][]float64 // one sign vector per window
}

// NewRotation draws the random signs of a rotation of R^d from r.
func NewRotation(d int, r *rand.Rand) (*Rotation, error) {
	if d < 1 {
		return nil, fmt.Errorf("mechanism: rotation of dimension %d", d)
	}
	p := 1 << (bits.Len(uint(d)) - 1)
	windows := 1
	if p < d {
		windows = 2
	}
	rt := &Rotation{d: d, p: p, signs: make([][]float64, windows)}
	for w := range rt.signs {
		s := make([]float64, p)
		for i := range s {
			s[i] = 1
			if r.Uint64()&1 == 1 {
				s[i] = -1
			}
		}
		rt.signs[w] = s
	}
	return rt, nil
}

// Dim is d.
func (rt *Rotation) Dim() int { return rt.d }

// Window is p, the size of the Hadamard blocks.
func (rt *Rotation) Window() int { return rt.p }

// window returns the slice of x that window w transforms.
func (rt *Rotation) window(x []float64, w int) []float64 {
	if w == 0 {
		return x[:rt.p]
	}
	return x[rt.d-rt.p:]
}

// Apply rotates x (length d) in place.
func (rt *Rotation) Apply(x []float64) {
	rt.check(x)
	scale := 1 / math.Sqrt(float64(rt.p))
	for w, s := range rt.signs {
		v := rt.window(x, w)
		for i := range v {
			v[i] *= s[i]
		}
		FWHT(v)
		for i := range v {
			v[i] *= scale
		}
	}
}

// Invert applies the inverse rotation to x (length d) in place:
// Invert(Apply(x)) = x up to rounding.
func (rt *Rotation) Invert(x []float64) {
	rt.check(x)
	scale := 1 / math.Sqrt(float64(rt.p))
	for w := len(rt.signs) - 1; w >= 0; w-- {
		v, s := rt.window(x, w), rt.signs[w]
		FWHT(v)
		for i := range v {
			v[i] *= scale * s[i]
		}
	}
}

func (rt *Rotation) check(x []float64) {
	if len(x) != rt.d {
		panic(fmt.Sprintf("mechanism.Rotation: vector of length %d, want %d", len(x), rt.d))
	}
}
