//go:build !purego

package fl

import "golang.org/x/sys/cpu"

// Kernel levels, from portable Go to AVX-512.
const (
	levelGo = iota
	levelAVX2
	levelAVX512
)

// bestLevel is the fastest kernel level the CPU supports.
var bestLevel = func() int {
	switch {
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return levelAVX512
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return levelAVX2
	}
	return levelGo
}()

// level selects the kernels; it is a variable so that tests can compare all
// available levels on the same machine.
var level = bestLevel

//go:noescape
func gatherAxpyAVX2(dst, w []float32, ld int, idx []int32, val []float32)

//go:noescape
func scatterAxpyAVX2(w []float32, ld int, idx []int32, val []float32, alpha float32, x []float32)

//go:noescape
func gatherAxpyAVX512(dst, w []float32, ld int, idx []int32, val []float32)

//go:noescape
func scatterAxpyAVX512(w []float32, ld int, idx []int32, val []float32, alpha float32, x []float32)

//go:noescape
func sparsifyAVX512(idx []int32, val []float32, x []float32, positive bool) int

//go:noescape
func proxAVX2(w, g []float32, c float32)

//go:noescape
func cvt64to32AVX2(dst []float32, src []float64) bool

//go:noescape
func deltaAVX2(dst []float64, a, b []float32) bool

func gatherAxpy(dst, w []float32, ld int, idx []int32, val []float32) {
	switch level {
	case levelAVX512:
		gatherAxpyAVX512(dst, w, ld, idx, val)
	case levelAVX2:
		gatherAxpyAVX2(dst, w, ld, idx, val)
	default:
		gatherAxpyGo(dst, w, ld, idx, val)
	}
}

func scatterAxpy(w []float32, ld int, idx []int32, val []float32, alpha float32, x []float32) {
	switch level {
	case levelAVX512:
		scatterAxpyAVX512(w, ld, idx, val, alpha, x)
	case levelAVX2:
		scatterAxpyAVX2(w, ld, idx, val, alpha, x)
	default:
		scatterAxpyGo(w, ld, idx, val, alpha, x)
	}
}

// cvt64to32 sets dst[i] = float32(src[i]) for i < len(src) and reports
// whether every result is finite. It panics if dst is shorter than src.
func cvt64to32(dst []float32, src []float64) bool {
	dst = dst[:len(src)]
	if level >= levelAVX2 {
		return cvt64to32AVX2(dst, src)
	}
	return cvt64to32Go(dst, src)
}

// delta64 sets dst[i] = float64(a[i]) − float64(b[i]) (or float64(a[i]) if b
// is nil) for i < len(a) and reports whether every result is finite. It
// panics if dst or a non-nil b is shorter than a.
func delta64(dst []float64, a, b []float32) bool {
	dst = dst[:len(a)]
	if b != nil {
		b = b[:len(a)]
	}
	if level >= levelAVX2 {
		return deltaAVX2(dst, a, b)
	}
	return delta64Go(dst, a, b)
}

// sparsify writes the indices and values of the non-zero entries of x (with
// positive, of the entries that are not ≤ 0, which fuses a ReLU) to the front
// of idx and val and returns how many there are. It panics if idx or val is
// shorter than x.
func sparsify(idx []int32, val []float32, x []float32, positive bool) int {
	idx = idx[:len(x)]
	val = val[:len(x)]
	if level >= levelAVX512 {
		return sparsifyAVX512(idx, val, x, positive)
	}
	return sparsifyGo(idx, val, x, positive)
}

// proxStep computes w[i] += c·(g[i] − w[i]), the FedProx pull toward the
// global model. It panics if g is shorter than w.
func proxStep(w, g []float32, c float32) {
	g = g[:len(w)]
	if level >= levelAVX2 {
		proxAVX2(w, g, c)
		return
	}
	proxStepGo(w, g, c)
}
