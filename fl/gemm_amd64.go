//go:build !purego

package fl

//go:generate go run gen_gemm.go

// convTileAsm runs convTile in assembly if the CPU has AVX-512 (the shapes
// are checked by convTile) and reports whether it did.
func convTileAsm(c, a, b, bias []float32, mr, nv, ns, kl, sa, lda, ldb, ldc, flags int) bool {
	if level != levelAVX512 {
		return false
	}
	var bp *float32
	if flags&(tileBias|tileAccum) == tileBias {
		bp = &bias[0]
	}
	convTiles[nv][mr](&c[0], &a[0], &b[0], bp, ns, kl, sa, lda, ldb, ldc, flags)
	return true
}

// gradTileAsm runs gradTile in assembly if the CPU has AVX-512.
func gradTileAsm(c, a, d []float32, mr, nv, ny, nx, ay, lda, dy, ldd, ldc int) bool {
	if level != levelAVX512 {
		return false
	}
	gradTiles[nv][mr](&c[0], &a[0], &d[0], ny, nx, ay, lda, dy, ldd, ldc)
	return true
}

// gather96Asm runs gatherRows96 in assembly if the CPU has AVX-512.
func gather96Asm(dst, w []float32, ld int, idx []int32, val []float32) bool {
	if level != levelAVX512 {
		return false
	}
	if len(idx) > 0 {
		gather96AVX512(&dst[0], &w[0], ld, &idx[0], &val[0], len(idx))
	}
	return true
}

//go:noescape
func pool2AVX512(dst *float32, arg *uint8, r0, r1 *float32, n int)

//go:noescape
func reluMaskAVX512(d, a, sum *float32, n int)

// pool2 is pool2Go or its assembly version. It panics on bad shapes.
func pool2(dst []float32, arg []uint8, r0, r1 []float32) {
	n := len(dst) / CNNConv2
	if len(dst) != n*CNNConv2 || len(arg) < len(dst) || len(r0) < 2*len(dst) || len(r1) < 2*len(dst) {
		panic("fl: pool2: bad shapes")
	}
	if level == levelAVX512 {
		if n > 0 {
			pool2AVX512(&dst[0], &arg[0], &r0[0], &r1[0], n)
		}
		return
	}
	pool2Go(dst, arg, r0, r1)
}

// reluMask is reluMaskGo or its assembly version. It panics on bad shapes.
func reluMask(d, a, sum []float32) {
	n := len(d) / CNNConv1
	if len(d) != n*CNNConv1 || len(a) < len(d) || len(sum) < CNNConv1 {
		panic("fl: reluMask: bad shapes")
	}
	if level == levelAVX512 {
		if n > 0 {
			reluMaskAVX512(&d[0], &a[0], &sum[0], n)
		}
		return
	}
	reluMaskGo(d, a, sum)
}
