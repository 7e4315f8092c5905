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
