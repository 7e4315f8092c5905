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
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasPOPCNT:
		return levelAVX512
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasPOPCNT:
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
func sparsify8AVX2(idx []int32, val []float32, x []float32, positive bool) int

// compressLUT[m] lists the positions of the set bits of m in increasing
// order (padded with zeros): the permutation that packs the lanes selected
// by an 8-lane comparison mask m to the front. Read by sparsify8AVX2.
var compressLUT = func() (t [256][8]int32) {
	for m := range t {
		n := 0
		for b := range 8 {
			if m&(1<<b) != 0 {
				t[m][n] = int32(b)
				n++
			}
		}
	}
	return t
}()

//go:noescape
func dense10FwdAVX512(part, w, x []float32)

//go:noescape
func dense10BackAVX512(w, x []float32, rows []int, t []float32)

//go:noescape
func proxAVX2(w, g []float32, c float32)

//go:noescape
func cvt64to32AVX2(dst []float32, src []float64) bool

//go:noescape
func deltaAVX2(dst []float64, a, b []float32) bool

// gatherAxpy is gatherAxpyGo or its assembly version. The assembly trusts
// the row indices (they come from this package's own compression of the
// input), so only the cheap shape checks are made here; they panic.
func gatherAxpy(dst, w []float32, ld int, idx []int32, val []float32) {
	if len(val) < len(idx) || len(dst) > ld {
		panic("fl: gatherAxpy: bad shapes")
	}
	switch level {
	case levelAVX512:
		gatherAxpyAVX512(dst, w, ld, idx, val)
	case levelAVX2:
		gatherAxpyAVX2(dst, w, ld, idx, val)
	default:
		gatherAxpyGo(dst, w, ld, idx, val)
	}
}

// scatterAxpy is scatterAxpyGo or its assembly version; see gatherAxpy.
func scatterAxpy(w []float32, ld int, idx []int32, val []float32, alpha float32, x []float32) {
	if len(val) < len(idx) || len(x) > ld {
		panic("fl: scatterAxpy: bad shapes")
	}
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
	switch level {
	case levelAVX512:
		return sparsifyAVX512(idx, val, x, positive)
	case levelAVX2:
		n := sparsify8AVX2(idx, val, x, positive)
		m := len(x) &^ 7
		k := sparsifyGo(idx[n:], val[n:], x[m:], positive)
		for j := range k {
			idx[n+j] += int32(m)
		}
		return n + k
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

// useDense10 reports whether logistic regression with the given shape uses
// the dense 10-class kernels (dense10Fwd, dense10Back) instead of the sparse
// gather and scatter. With AVX-512 they handle eight rows of W (80 floats) per
// step without per-pixel work; they need exactly 10 classes and a multiple of
// 8 features, the setting of every experiment on 28×28 images.
func useDense10(features, classes int) bool {
	return level == levelAVX512 && classes == 10 && features%8 == 0
}

// dense10Fwd is dense10FwdGo or its assembly version. It panics on bad shapes.
func dense10Fwd(part, w, x []float32) {
	if len(part) < 80 || len(x)%8 != 0 || len(w) < len(x)*10 {
		panic("fl: dense10Fwd: bad shapes")
	}
	if level == levelAVX512 {
		dense10FwdAVX512(part, w, x)
		return
	}
	dense10FwdGo(part, w, x)
}

// dense10Back is dense10BackGo or its assembly version. It panics on bad
// shapes, including a row offset that leaves x.
func dense10Back(w, x []float32, rows []int, t []float32) {
	if len(w)%80 != 0 || len(t) < 80*len(rows) {
		panic("fl: dense10Back: bad shapes")
	}
	in := len(w) / 10
	for _, off := range rows {
		if off < 0 || off+in > len(x) {
			panic("fl: dense10Back: row outside x")
		}
	}
	if level == levelAVX512 {
		dense10BackAVX512(w, x, rows, t)
		return
	}
	dense10BackGo(w, x, rows, t)
}
