//go:build !amd64 || purego

package fl

// Without the amd64 assembly the tiles run the portable loops.

func convTileAsm(c, a, b, bias []float32, mr, nv, ns, kl, sa, lda, ldb, ldc, flags int) bool {
	return false
}

func gradTileAsm(c, a, d []float32, mr, nv, ny, nx, ay, lda, dy, ldd, ldc int) bool {
	return false
}

func pool2(dst []float32, arg []uint8, r0, r1 []float32) { pool2Go(dst, arg, r0, r1) }

func reluMask(d, a, sum []float32) { reluMaskGo(d, a, sum) }

func scanCell(pl, dp []float32, arg []uint8, wIdx *[4][winCap]int32, wVal *[4][winCap]float32, cnt *[4]int, gb []float32) {
	scanCellGo(pl, dp, arg, wIdx, wVal, cnt, gb)
}

func gatherPatch(dst []float32, ds int, w []float32, ld, ws int, idx []int32, val []float32) {
	checkPatch(dst, ds, w, ld, ws, idx, val)
	gatherPatchGo(dst, ds, w, ld, ws, idx, val)
}
