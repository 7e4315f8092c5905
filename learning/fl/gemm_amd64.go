//go:build !purego

package fl

//go:generate go run gen_gemm.go

// convTileAsm runs convTile in assembly if the CPU has AVX-512 or AVX2 (the
// shapes are checked by convTile) and reports whether it did. The AVX2
// tiles are 16 columns by at most 6 rows, so larger tiles are run as several.
func convTileAsm(c, a, b, bias []float32, mr, nv, ns, kl, sa, lda, ldb, ldc, flags int) bool {
	useBias := flags&(tileBias|tileAccum) == tileBias
	switch level {
	case levelAVX512:
		var bp *float32
		if useBias {
			bp = &bias[0]
		}
		convTiles[nv][mr](&c[0], &a[0], &b[0], bp, ns, kl, sa, lda, ldb, ldc, flags)
		return true
	case levelAVX2:
		for s := range nv {
			for r0 := 0; r0 < mr; r0 += 6 {
				var bp *float32
				if useBias {
					bp = &bias[16*s]
				}
				convTilesAVX2[min(6, mr-r0)](&c[r0*ldc+16*s], &a[r0*lda], &b[16*s], bp, ns, kl, sa, lda, ldb, ldc, flags)
			}
		}
		return true
	}
	return false
}

// gradTileAsm runs gradTile in assembly if the CPU has AVX-512 or AVX2.
func gradTileAsm(c, a, d []float32, mr, nv, ny, nx, ay, lda, dy, ldd, ldc int) bool {
	switch level {
	case levelAVX512:
		gradTiles[nv][mr](&c[0], &a[0], &d[0], ny, nx, ay, lda, dy, ldd, ldc)
		return true
	case levelAVX2:
		for s := range nv {
			for r0 := 0; r0 < mr; r0 += 6 {
				gradTilesAVX2[min(6, mr-r0)](&c[r0*ldc+16*s], &a[r0], &d[16*s], ny, nx, ay, lda, dy, ldd, ldc)
			}
		}
		return true
	}
	return false
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

//go:noescape
func scanCellAVX512(pl, dp *float32, arg *uint8, wIdx *int32, wVal *float32, cnt *[4]int, gb *float32)

// scanCell is scanCellGo or its assembly version. It panics on bad shapes
// (arg entries must be < 4, as pool2 writes them).
func scanCell(pl, dp []float32, arg []uint8, wIdx *[4][winCap]int32, wVal *[4][winCap]float32, cnt *[4]int, gb []float32) {
	const C = CNNConv2
	if len(pl) < C || len(dp) < C || len(arg) < C || len(gb) < C {
		panic("fl: scanCell: bad shapes")
	}
	for _, n := range cnt {
		if n < 0 || n > C {
			panic("fl: scanCell: bad counts")
		}
	}
	if level == levelAVX512 {
		scanCellAVX512(&pl[0], &dp[0], &arg[0], &wIdx[0][0], &wVal[0][0], cnt, &gb[0])
		return
	}
	scanCellGo(pl, dp, arg, wIdx, wVal, cnt, gb)
}

// gatherPatch is gatherPatchGo or its assembly version. It panics if an
// index leaves its slice.
func gatherPatch(dst []float32, ds int, w []float32, ld, ws int, idx []int32, val []float32) {
	checkPatch(dst, ds, w, ld, ws, idx, val)
	if len(idx) == 0 {
		return
	}
	switch level {
	case levelAVX512:
		gatherPatchAVX512(&dst[0], ds, &w[0], ld, ws, &idx[0], &val[0], len(idx))
		return
	case levelAVX2:
		for s := range 3 {
			gather96AVX2(&dst[s*ds], &w[s*ws], ld, &idx[0], &val[0], len(idx))
		}
		return
	}
	gatherPatchGo(dst, ds, w, ld, ws, idx, val)
}
