package fl

// Portable float32 kernels. The amd64 build replaces gatherAxpy and
// scatterAxpy with AVX2/FMA assembly when the CPU has it (vec_amd64.go); these
// Go versions are the fallback and the reference the assembly is tested
// against.
//
// Both kernels are trusted internal code: callers guarantee len(val) ==
// len(idx), n <= ld and 0 <= idx[j]*ld+n <= len(w) for every j, and the
// assembly does not check bounds.

// gatherAxpyGo computes dst[c] += Σ_j val[j]·w[idx[j]·ld + c] for c < len(dst):
// a sparse vector (idx, val) times the rows of a row-major matrix w.
func gatherAxpyGo(dst, w []float32, ld int, idx []int32, val []float32) {
	n := len(dst)
	val = val[:len(idx)]
	for j, k := range idx {
		axpyGo(dst, val[j], w[int(k)*ld:][:n])
	}
}

// scatterAxpyGo computes w[idx[j]·ld + c] += (alpha·val[j])·x[c] for every j
// and c < len(x): a sparse rank-one update of the rows of w.
func scatterAxpyGo(w []float32, ld int, idx []int32, val []float32, alpha float32, x []float32) {
	n := len(x)
	val = val[:len(idx)]
	for j, k := range idx {
		axpyGo(w[int(k)*ld:][:n], alpha*val[j], x)
	}
}

// axpyGo computes y[i] += a·x[i] for i < len(y), unrolled by four; len(x) >=
// len(y).
func axpyGo(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	i := 0
	for ; i+4 <= len(y); i += 4 {
		y4, x4 := y[i:i+4:i+4], x[i:i+4:i+4]
		y4[0] += a * x4[0]
		y4[1] += a * x4[1]
		y4[2] += a * x4[2]
		y4[3] += a * x4[3]
	}
	for ; i < len(y); i++ {
		y[i] += a * x[i]
	}
}

// cvt64to32Go sets dst[i] = float32(src[i]) and reports whether every result
// is finite; len(dst) == len(src).
func cvt64to32Go(dst []float32, src []float64) bool {
	dst = dst[:len(src)]
	var acc float32 // f·0 is +0 for finite f and NaN otherwise
	for i, v := range src {
		f := float32(v)
		dst[i] = f
		acc += f * 0
	}
	return acc == 0
}

// delta64Go sets dst[i] = float64(a[i]) − float64(b[i]), or float64(a[i]) if
// b is nil, and reports whether every result is finite; the slices have equal
// lengths.
func delta64Go(dst []float64, a, b []float32) bool {
	dst = dst[:len(a)]
	var acc float64
	if b == nil {
		for i, v := range a {
			d := float64(v)
			dst[i] = d
			acc += d * 0
		}
		return acc == 0
	}
	b = b[:len(a)]
	for i, v := range a {
		d := float64(v) - float64(b[i])
		dst[i] = d
		acc += d * 0
	}
	return acc == 0
}

// sparsifyGo writes the indices and values of the non-zero entries of x
// (with positive, of the entries that are not ≤ 0: positive or NaN) to the
// front of idx and val and returns how many there are. idx and val must be at
// least as long as x.
func sparsifyGo(idx []int32, val []float32, x []float32, positive bool) int {
	idx = idx[:len(x)]
	val = val[:len(x)]
	n := 0
	for f, v := range x {
		// Unconditional stores and a branch-free count: image rows mix zero
		// and non-zero pixels unpredictably.
		idx[n] = int32(f)
		val[n] = v
		keep := v != 0
		if positive {
			keep = !(v <= 0)
		}
		inc := 0
		if keep {
			inc = 1
		}
		n += inc
	}
	return n
}

// proxStepGo computes w[i] += c·(g[i] − w[i]); len(g) >= len(w).
func proxStepGo(w, g []float32, c float32) {
	g = g[:len(w)]
	for i, v := range w {
		w[i] = v + c*(g[i]-v)
	}
}

// dense10FwdGo computes part[10r+c] = Σ_q x[8q+r]·w[80q+10r+c] for r < 8,
// c < 10: the logits of x under a 10-class W (len(x)·10 floats), split by
// the row of x within blocks of 8; len(x) is a multiple of 8 and len(part) is
// 80. The reference for dense10FwdAVX512.
func dense10FwdGo(part, w, x []float32) {
	part = part[:80]
	clear(part)
	for q := 0; q+8 <= len(x); q += 8 {
		blk := w[q*10 : q*10+80]
		for e := range part {
			part[e] += x[q+e/10] * blk[e]
		}
	}
}

// dense10BackGo computes w[80q+10r+c] += Σ_b x[rows[b]+8q+r]·t[80b+10r+c]:
// W += Σ_b x_b ⊗ δ_b for a 10-class W, with t holding each δ_b tiled eight
// times (80 floats per example). The reference for dense10BackAVX512.
func dense10BackGo(w, x []float32, rows []int, t []float32) {
	for q := 0; q+80 <= len(w); q += 80 {
		blk := w[q : q+80]
		for b, off := range rows {
			xb := x[off+q/10 : off+q/10+8]
			tb := t[b*80 : b*80+80]
			for e := range blk {
				blk[e] += xb[e/10] * tb[e]
			}
		}
	}
}
