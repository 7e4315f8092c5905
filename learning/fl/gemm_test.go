package fl

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(2*r.Float64() - 1)
	}
	return v
}

// TestTiles compares every tile shape of every kernel level with the
// portable loops, with strides that make rows overlap, pad or leave gaps, and
// checks that nothing outside the tile is written.
func TestTiles(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		for nv := 1; nv < len(maxTileRows); nv++ {
			for mr := 1; mr <= maxTileRows[nv]; mr++ {
				w := 16 * nv
				ns, kl := 1+r.IntN(3), 1+r.IntN(40)
				lda := r.IntN(50)
				sa := mr*lda + r.IntN(30)
				ldb, ldc := w+r.IntN(20), w+r.IntN(20)
				a := randVec(r, (ns-1)*sa+(mr-1)*lda+kl+r.IntN(3))
				b := randVec(r, (ns*kl-1)*ldb+w+r.IntN(3))
				bias := randVec(r, w)
				c0 := randVec(r, (mr-1)*ldc+w+5)
				for _, flags := range []int{0, tileAccum, tileBias, tileBias | tileReLU, tileAccum | tileReLU} {
					want := append([]float32(nil), c0...)
					got := append([]float32(nil), c0...)
					convTileGo(want, a, b, bias, mr, nv, ns, kl, sa, lda, ldb, ldc, flags)
					convTile(got, a, b, bias, mr, nv, ns, kl, sa, lda, ldb, ldc, flags)
					if e := maxDiff32(got, want); e > 1e-5*float64(ns*kl) {
						t.Errorf("convTile %dx%d flags %d: differs from Go by %v", mr, nv, flags, e)
					}
					for i := range c0 {
						if row, col := i/ldc, i%ldc; (row >= mr || col >= w) && got[i] != c0[i] {
							t.Fatalf("convTile %dx%d wrote outside the tile at %d", mr, nv, i)
						}
					}
				}

				ny, nx := 1+r.IntN(4), 1+r.IntN(9)
				lda = r.IntN(2 * mr)
				ay := nx*lda + r.IntN(5)
				ldd := r.IntN(2 * w)
				dy := nx*ldd + r.IntN(5)
				a = randVec(r, (ny-1)*ay+(nx-1)*lda+mr)
				d := randVec(r, (ny-1)*dy+(nx-1)*ldd+w)
				want := append([]float32(nil), c0...)
				got := append([]float32(nil), c0...)
				gradTileGo(want, a, d, mr, nv, ny, nx, ay, lda, dy, ldd, ldc)
				gradTile(got, a, d, mr, nv, ny, nx, ay, lda, dy, ldd, ldc)
				if e := maxDiff32(got, want); e > 1e-5*float64(ny*nx) {
					t.Errorf("gradTile %dx%d: differs from Go by %v", mr, nv, e)
				}
				for i := range c0 {
					if row, col := i/ldc, i%ldc; (row >= mr || col >= w) && got[i] != c0[i] {
						t.Fatalf("gradTile %dx%d wrote outside the tile at %d", mr, nv, i)
					}
				}
			}
		}
	})
}

// TestTileReLUKeepsNaN checks that the fused ReLU lets NaN through (so that
// divergence is detected) at every level.
func TestTileReLUKeepsNaN(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		a := []float32{1}
		b := make([]float32, 16)
		b[3] = float32(math.NaN())
		b[4] = -1
		b[5] = 2
		c := make([]float32, 16)
		convTile(c, a, b, nil, 1, 1, 1, 1, 0, 0, 16, 16, tileReLU)
		if !math.IsNaN(float64(c[3])) || c[4] != 0 || c[5] != 2 {
			t.Errorf("ReLU of (NaN, −1, 2) = (%v, %v, %v)", c[3], c[4], c[5])
		}
	})
}

// TestTileShapesPanic checks that out-of-range tiles panic instead of
// reading or writing outside their slices.
func TestTileShapesPanic(t *testing.T) {
	for _, f := range []func(){
		func() {
			convTile(make([]float32, 16), make([]float32, 2), make([]float32, 16), nil, 1, 1, 1, 3, 0, 0, 16, 16, 0)
		},
		func() {
			convTile(make([]float32, 15), make([]float32, 1), make([]float32, 16), nil, 1, 1, 1, 1, 0, 0, 16, 16, 0)
		},
		func() {
			convTile(make([]float32, 16), make([]float32, 1), make([]float32, 16), nil, 1, 1, 1, 1, 0, 0, 16, 16, tileBias)
		},
		func() {
			convTile(make([]float32, 400), make([]float32, 400), make([]float32, 400), nil, 7, 4, 1, 1, 0, 0, 64, 64, 0)
		},
		func() {
			gradTile(make([]float32, 16), make([]float32, 1), make([]float32, 16), 2, 1, 1, 1, 0, 0, 0, 0, 16)
		},
		func() { gatherPatch(make([]float32, 96), 0, make([]float32, 100), 32, 0, []int32{1}, []float32{1}) },
		func() { gatherPatch(make([]float32, 96), 1, make([]float32, 200), 32, 0, []int32{1}, []float32{1}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		}()
	}
}

// TestPoolAndMask compares pool2 and reluMask of every level with the
// portable loops, with ties, zeros and NaNs among the inputs.
func TestPoolAndMask(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		pick := func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				switch r.IntN(8) {
				case 0:
					v[i] = 0
				case 1:
					v[i] = 0.5 // ties
				case 2:
					v[i] = float32(math.NaN())
				default:
					v[i] = float32(r.Float64())
				}
			}
			return v
		}
		for _, px := range []int{0, 1, 5, 12} {
			r0, r1 := pick(2*px*CNNConv2), pick(2*px*CNNConv2)
			want, got := make([]float32, px*CNNConv2), make([]float32, px*CNNConv2)
			wantArg, gotArg := make([]uint8, px*CNNConv2), make([]uint8, px*CNNConv2)
			pool2Go(want, wantArg, r0, r1)
			pool2(got, gotArg, r0, r1)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || gotArg[i] != wantArg[i] {
					t.Fatalf("pool2 %d pixels, entry %d: (%v, %d), want (%v, %d)", px, i, got[i], gotArg[i], want[i], wantArg[i])
				}
			}

			d, a := pick(px*2*CNNConv1), pick(px*2*CNNConv1)
			for i := range d {
				if math.IsNaN(float64(d[i])) {
					d[i] = 1
				}
			}
			wantD, gotD := append([]float32(nil), d...), append([]float32(nil), d...)
			wantS, gotS := pick(CNNConv1), pick(CNNConv1)
			for i := range wantS {
				wantS[i] = float32(i)
				gotS[i] = float32(i)
			}
			reluMaskGo(wantD, a, wantS)
			reluMask(gotD, a, gotS)
			if maxDiff32(gotD, wantD) != 0 || maxDiff32(gotS, wantS) != 0 {
				t.Fatalf("reluMask %d pixels differs from Go", 2*px)
			}
		}
	})
}

// TestScanAndPatch compares scanCell and gatherPatch of every level with the
// portable loops.
func TestScanAndPatch(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		for trial := range 20 {
			pl, dp := make([]float32, CNNConv2), make([]float32, CNNConv2)
			arg := make([]uint8, CNNConv2)
			for c := range pl {
				switch r.IntN(4) {
				case 0:
					pl[c] = 0
				case 1:
					pl[c] = float32(math.NaN())
				default:
					pl[c] = float32(r.Float64())
				}
				if r.IntN(5) > 0 {
					dp[c] = float32(2*r.Float64() - 1)
				}
				arg[c] = uint8(r.IntN(4))
				if trial == 0 {
					arg[c] = 2 // one full list
					pl[c] = 1
					dp[c] = 1
				}
			}
			var wantIdx, gotIdx [4][winCap]int32
			var wantVal, gotVal [4][winCap]float32
			wantCnt, gotCnt := [4]int{}, [4]int{}
			wantGb, gotGb := make([]float32, CNNConv2), make([]float32, CNNConv2)
			scanCellGo(pl, dp, arg, &wantIdx, &wantVal, &wantCnt, wantGb)
			scanCell(pl, dp, arg, &gotIdx, &gotVal, &gotCnt, gotGb)
			if gotCnt != wantCnt || maxDiff32(gotGb, wantGb) != 0 {
				t.Fatalf("scanCell: counts %v, want %v (or gb differs)", gotCnt, wantCnt)
			}
			for a := range 4 {
				for j := range wantCnt[a] {
					if gotIdx[a][j] != wantIdx[a][j] || gotVal[a][j] != wantVal[a][j] {
						t.Fatalf("scanCell list %d entry %d: (%d, %v), want (%d, %v)", a, j, gotIdx[a][j], gotVal[a][j], wantIdx[a][j], wantVal[a][j])
					}
				}
			}
		}
		for _, nnz := range []int{0, 1, 2, 9, 64} {
			const rows, ld, ws, ds = 40, 32, 300, 150
			w := randVec(r, rows*ld+2*ws+96)
			idx := make([]int32, nnz)
			for j := range idx {
				idx[j] = int32(r.IntN(rows))
			}
			val := randVec(r, nnz)
			d0 := randVec(r, 2*ds+100)
			want, got := append([]float32(nil), d0...), append([]float32(nil), d0...)
			gatherPatchGo(want, ds, w, ld, ws, idx, val)
			gatherPatch(got, ds, w, ld, ws, idx, val)
			if e := maxDiff32(got, want); e > 1e-5*float64(1+nnz) {
				t.Errorf("gatherPatch nnz=%d: differs from Go by %v", nnz, e)
			}
			for i := range d0 {
				if s, n := i/ds, i%ds; (s > 2 || n >= 96) && got[i] != d0[i] {
					t.Fatalf("gatherPatch wrote outside its rows at %d", i)
				}
			}
		}
	})
}
