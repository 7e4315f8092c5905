package mechanism

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFWHTMatchesDefinition: the fast transform equals the O(n^2) sum
// H[i][j] = (-1)^{popcount(i&j)}, and twice it is n times the identity.
func TestFWHTMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 4, 8, 64} {
		x := make([]float64, n)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		y := append([]float64(nil), x...)
		FWHT(y)
		for i := range n {
			want := 0.0
			for j := range n {
				s := 1.0
				for b := i & j; b != 0; b &= b - 1 {
					s = -s
				}
				want += s * x[j]
			}
			if math.Abs(y[i]-want) > 1e-12 {
				t.Fatalf("n=%d: FWHT[%d] = %v, want %v", n, i, y[i], want)
			}
		}
		FWHT(y)
		for i := range y {
			if math.Abs(y[i]/float64(n)-x[i]) > 1e-12 {
				t.Fatalf("n=%d: FWHT twice is not n·identity at %d", n, i)
			}
		}
	}
}

// TestRotationOrthogonal: Invert(Apply(x)) = x within 1e-12, norms are
// preserved, a spike is spread over the window, and different seeds give
// different rotations.
func TestRotationOrthogonal(t *testing.T) {
	for _, d := range []int{1, 2, 3, 7, 64, 100, 4096, 7850} {
		rt, err := NewRotation(d, rand.New(rand.NewPCG(uint64(d), 7)))
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(3, uint64(d)))
		x := make([]float64, d)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		y := append([]float64(nil), x...)
		rt.Apply(y)
		if n0, n1 := norm2(x), norm2(y); math.Abs(n1-n0) > 1e-12*n0 {
			t.Errorf("d=%d: norm %v after rotation, %v before", d, n1, n0)
		}
		rt.Invert(y)
		for i := range x {
			if math.Abs(y[i]-x[i]) > 1e-12 {
				t.Fatalf("d=%d: Invert(Apply(x))[%d] = %v, want %v", d, i, y[i], x[i])
			}
		}
		if d < 64 {
			continue
		}
		spike := make([]float64, d)
		spike[d-1] = 1
		rt.Apply(spike)
		maxAbs := 0.0
		for _, v := range spike {
			maxAbs = math.Max(maxAbs, math.Abs(v))
		}
		if maxAbs > 1/math.Sqrt(float64(rt.Window()))+1e-12 {
			t.Errorf("d=%d: a unit spike keeps a coordinate of %v after rotation, want <= 1/sqrt(%d)", d, maxAbs, rt.Window())
		}
	}
	a, _ := NewRotation(64, rand.New(rand.NewPCG(1, 1)))
	b, _ := NewRotation(64, rand.New(rand.NewPCG(2, 1)))
	x, y := make([]float64, 64), make([]float64, 64)
	for i := range x {
		x[i], y[i] = 1, 1
	}
	a.Apply(x)
	b.Apply(y)
	same := true
	for i := range x {
		same = same && x[i] == y[i]
	}
	if same {
		t.Error("two seeds gave the same rotation")
	}
	if _, err := NewRotation(0, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("dimension 0: want an error")
	}
}

func norm2(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}

// BenchmarkRotation: one op is Apply and Invert of a d = 7,850 vector (two
// FWHT windows of 4,096 each way).
func BenchmarkRotation(b *testing.B) {
	rt, _ := NewRotation(7850, rand.New(rand.NewPCG(1, 1)))
	x := make([]float64, 7850)
	for i := range x {
		x[i] = float64(i%7) - 3
	}
	b.ReportAllocs()
	for b.Loop() {
		rt.Apply(x)
		rt.Invert(x)
	}
}
