package fl

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernels compares the kernels of every level with the portable ones on
// random sparse inputs of awkward sizes.
func TestKernels(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		randv := func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(2*r.Float64() - 1)
			}
			return v
		}
		for _, n := range []int{1, 2, 7, 8, 9, 10, 15, 16, 17, 63, 64, 65, 72, 127, 128, 130, 200, 300} {
			for _, nnz := range []int{0, 1, 5, 40} {
				ld := n + r.IntN(3)
				rows := 50
				w := randv(rows * ld)
				idx := make([]int32, nnz)
				for j := range idx {
					idx[j] = int32(r.IntN(rows))
				}
				val := randv(nnz)
				x := randv(n)
				alpha := float32(-0.37)

				dst0 := randv(n)
				dst1 := append([]float32(nil), dst0...)
				gatherAxpyGo(dst0, w, ld, idx, val)
				gatherAxpy(dst1, w, ld, idx, val)
				if e := maxDiff32(dst0, dst1); e > 1e-5 {
					t.Errorf("gatherAxpy n=%d nnz=%d: differs from Go by %v", n, nnz, e)
				}

				w0 := append([]float32(nil), w...)
				w1 := append([]float32(nil), w...)
				scatterAxpyGo(w0, ld, idx, val, alpha, x)
				scatterAxpy(w1, ld, idx, val, alpha, x)
				if e := maxDiff32(w0, w1); e > 1e-5 {
					t.Errorf("scatterAxpy n=%d nnz=%d: differs from Go by %v", n, nnz, e)
				}
				// Columns n..ld-1 of each row must be untouched.
				for k := range rows {
					for c := n; c < ld; c++ {
						if w1[k*ld+c] != w[k*ld+c] {
							t.Fatalf("scatterAxpy n=%d ld=%d wrote outside the first n columns", n, ld)
						}
					}
				}
			}
		}
	})
}

// TestConversions checks the float64↔float32 conversions, exactly, and their
// finiteness flags with a bad value at every position of short vectors.
func TestConversions(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		for _, n := range []int{0, 1, 3, 4, 7, 8, 15, 16, 17, 33, 7850} {
			src := make([]float64, n)
			for i := range src {
				src[i] = 10 * (2*r.Float64() - 1)
			}
			f32 := make([]float32, n+1)
			if i := toFloat32(f32, src); i != -1 {
				t.Fatalf("n=%d: toFloat32 reports index %d of a finite vector", n, i)
			}
			g32 := make([]float32, n)
			for i := range src {
				if f32[i] != float32(src[i]) {
					t.Fatalf("n=%d: toFloat32[%d] = %v, want %v", n, i, f32[i], float32(src[i]))
				}
				g32[i] = float32(r.Float64())
			}
			d := make([]float64, n)
			if i := delta(d, f32[:n], g32); i != -1 {
				t.Fatalf("n=%d: delta reports index %d", n, i)
			}
			for i := range d {
				if d[i] != float64(f32[i])-float64(g32[i]) {
					t.Fatalf("n=%d: delta[%d] = %v", n, i, d[i])
				}
			}
			if i := widen(d, g32); i != -1 {
				t.Fatalf("n=%d: widen reports index %d", n, i)
			}
			for i := range d {
				if d[i] != float64(g32[i]) {
					t.Fatalf("n=%d: widen[%d] = %v", n, i, d[i])
				}
			}
			if n > 40 {
				continue
			}
			for bad := range n {
				for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e39} {
					s := append([]float64(nil), src...)
					s[bad] = v
					if i := toFloat32(f32, s); i != bad {
						t.Errorf("n=%d: toFloat32 with %v at %d reports %d", n, v, bad, i)
					}
					a := append([]float32(nil), f32[:n]...)
					a[bad] = float32(v)
					if i := delta(d, a, g32); i != bad {
						t.Errorf("n=%d: delta with %v at %d reports %d", n, v, bad, i)
					}
					if i := widen(d, a); i != bad {
						t.Errorf("n=%d: widen with %v at %d reports %d", n, v, bad, i)
					}
				}
			}
		}
	})
}

func maxDiff32(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}

func TestSparsify(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, n := range []int{0, 1, 5, 15, 16, 17, 31, 32, 33, 100, 784} {
			for _, density := range []float64{0, 0.3, 1} {
				x := make([]float32, n)
				for i := range x {
					if r.Float64() < density {
						x[i] = float32(2*r.Float64()-1) + 0.01
					}
				}
				if n > 3 {
					x[1] = float32(math.Copysign(0, -1)) // −0 is zero
					x[2] = float32(math.NaN())           // NaN is not
				}
				for _, positive := range []bool{false, true} {
					var wantIdx []int32
					var wantVal []float32
					for i, v := range x {
						if (!positive && v != 0) || (positive && !(v <= 0)) {
							wantIdx = append(wantIdx, int32(i))
							wantVal = append(wantVal, v)
						}
					}
					idx := make([]int32, n)
					val := make([]float32, n)
					got := sparsify(idx, val, x, positive)
					if got != len(wantIdx) {
						t.Fatalf("n=%d density %v positive %v: %d entries, want %d", n, density, positive, got, len(wantIdx))
					}
					for j := range got {
						if idx[j] != wantIdx[j] || math.Float32bits(val[j]) != math.Float32bits(wantVal[j]) {
							t.Fatalf("n=%d density %v positive %v: entry %d = (%d, %v), want (%d, %v)", n, density, positive, j, idx[j], val[j], wantIdx[j], wantVal[j])
						}
					}
				}
			}
		}
	})
}

func TestProxStep(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		for _, n := range []int{0, 1, 7, 31, 32, 33, 100} {
			w := make([]float32, n)
			g := make([]float32, n+3)
			for i := range w {
				w[i] = float32(r.NormFloat64())
				g[i] = float32(r.NormFloat64())
			}
			want := append([]float32(nil), w...)
			proxStepGo(want, g, 0.3)
			proxStep(w, g, 0.3)
			if e := maxDiff32(w, want); e > 1e-6 {
				t.Errorf("n=%d: proxStep differs from Go by %v", n, e)
			}
		}
	})
}

// TestDense10 compares the dense 10-class kernels with their Go references
// and with a direct computation of the logits and of W += Σ_b x_b ⊗ δ_b.
func TestDense10(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 10))
		randv := func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				if r.IntN(3) > 0 {
					v[i] = float32(2*r.Float64() - 1)
				}
			}
			return v
		}
		for _, in := range []int{8, 16, 40, 784} {
			const B = 5
			x := randv(B*in + 3)
			w := randv(in * 10)
			part := make([]float32, 80)
			for b := range B {
				xb := x[b*in : (b+1)*in]
				dense10Fwd(part, w, xb)
				for c := range 10 {
					var got, want float64
					for r := range 8 {
						got += float64(part[10*r+c])
					}
					for k := range in {
						want += float64(xb[k]) * float64(w[k*10+c])
					}
					if math.Abs(got-want) > 1e-4 {
						t.Fatalf("in=%d: logit %d = %v, want %v", in, c, got, want)
					}
				}
			}
			rows := []int{0, 2 * in, in + 3, 4 * in, in}
			d := randv(B * 10)
			tile := make([]float32, B*80)
			for b := range B {
				for e := range 80 {
					tile[b*80+e] = d[b*10+e%10]
				}
			}
			w0 := append([]float32(nil), w...)
			dense10Back(w, x, rows, tile)
			for k := range in {
				for c := range 10 {
					want := float64(w0[k*10+c])
					for b, off := range rows {
						want += float64(x[off+k]) * float64(d[b*10+c])
					}
					if math.Abs(float64(w[k*10+c])-want) > 1e-4 {
						t.Fatalf("in=%d: W[%d,%d] = %v, want %v", in, k, c, w[k*10+c], want)
					}
				}
			}
		}
	})
}
