//go:build !amd64 || purego

package fl

const (
	levelGo = iota
	levelAVX2
	levelAVX512
)

// Without the amd64 assembly only the portable kernels exist.
var (
	bestLevel = levelGo
	level     = levelGo
)

func gatherAxpy(dst, w []float32, ld int, idx []int32, val []float32) {
	gatherAxpyGo(dst, w, ld, idx, val)
}

func scatterAxpy(w []float32, ld int, idx []int32, val []float32, alpha float32, x []float32) {
	scatterAxpyGo(w, ld, idx, val, alpha, x)
}

func cvt64to32(dst []float32, src []float64) bool {
	return cvt64to32Go(dst[:len(src)], src)
}

func delta64(dst []float64, a, b []float32) bool {
	dst = dst[:len(a)]
	if b != nil {
		b = b[:len(a)]
	}
	return delta64Go(dst, a, b)
}

func sparsify(idx []int32, val []float32, x []float32, positive bool) int {
	return sparsifyGo(idx[:len(x)], val[:len(x)], x, positive)
}

func proxStep(w, g []float32, c float32) { proxStepGo(w, g[:len(w)], c) }

// useDense10 is false without the assembly: the sparse kernels are faster in
// plain Go.
func useDense10(features, classes int) bool { return false }

func dense10Fwd(part, w, x []float32) { dense10FwdGo(part, w, x) }

func dense10Back(w, x []float32, rows []int, t []float32) { dense10BackGo(w, x, rows, t) }
