package amplify

import "math"

// pbFloorFor returns the mass below which tail entries of partial
// Poisson-binomial convolutions are dropped when the result feeds a delta of
// about target. Every dropped mass is added to Lost, so the result stays a
// guaranteed upper bound for expectations of functions with values in
// [0, 1] whatever the floor; the floor only trades tightness for speed. The
// total dropped is about 3e4 floors for n = 1e6 (measured), so
// 1e-3 target/n keeps it near 1e-5 target.
func pbFloorFor(target float64, n int) float64 {
	f := 1e-3 * target / float64(n+1)
	return math.Min(math.Max(f, 1e-30), 1e-16)
}

// poissonBinomial returns the distribution of C = sum_i Bernoulli(q_i),
// computed exactly (no normal or Poisson approximation) by a balanced tree
// of direct convolutions. Entries below floor at the edges of partial
// results are dropped and their mass accumulated in Lost. Cost: about
// n * (window width) operations, where the window is a few hundred standard
// deviations wide in total across levels.
func poissonBinomial(q []float64, floor float64) pmfWindow {
	if len(q) <= 64 {
		p := make([]float64, len(q)+1)
		p[0] = 1
		for i, qi := range q {
			for k := i + 1; k >= 1; k-- {
				p[k] = p[k]*(1-qi) + p[k-1]*qi
			}
			p[0] *= 1 - qi
		}
		return trimWindow(pmfWindow{Lo: 0, P: p}, floor)
	}
	h := len(q) / 2
	var a, b pmfWindow
	if len(q) >= 1<<17 {
		// Large halves run concurrently; the result does not depend on it.
		done := make(chan struct{})
		go func() { a = poissonBinomial(q[:h], floor); close(done) }()
		b = poissonBinomial(q[h:], floor)
		<-done
	} else {
		a = poissonBinomial(q[:h], floor)
		b = poissonBinomial(q[h:], floor)
	}
	out := convolve(a.P, b.P)
	// Mass lost in either factor: P(A or B outside its window) <= La + Lb.
	return trimWindow(pmfWindow{Lo: a.Lo + b.Lo, P: out, Lost: a.Lost + b.Lost}, floor)
}

// trimWindow drops leading and trailing entries below floor, adding their
// mass to Lost.
func trimWindow(w pmfWindow, floor float64) pmfWindow {
	i, j := 0, len(w.P)
	for i < j-1 && w.P[i] < floor {
		w.Lost += w.P[i]
		i++
	}
	for j-1 > i && w.P[j-1] < floor {
		w.Lost += w.P[j-1]
		j--
	}
	return pmfWindow{Lo: w.Lo + i, P: w.P[i:j], Lost: w.Lost}
}

// convolve returns the full convolution of two non-negative sequences,
// computed directly (no FFT, so no cancellation error): out[k] is a dot
// product of a with the reversed b, summed with four accumulators; large
// products split the output range over two goroutines.
func convolve(a, b []float64) []float64 {
	if len(a) < len(b) {
		a, b = b, a
	}
	n := len(a) + len(b) - 1
	out := make([]float64, n)
	rb := make([]float64, len(b))
	for i, v := range b {
		rb[len(b)-1-i] = v
	}
	work := func(lo, hi int) {
		for k := lo; k < hi; k++ {
			// out[k] = sum_j a[k-j] b[j] over valid j; with rb, contiguous.
			i0 := max(0, k-len(b)+1) // first index into a
			i1 := min(k, len(a)-1)   // last index into a
			x := a[i0 : i1+1]
			y := rb[len(b)-1-(k-i0) : len(b)-1-(k-i0)+len(x)]
			var s0, s1, s2, s3 float64
			j := 0
			for ; j+4 <= len(x); j += 4 {
				s0 += x[j] * y[j]
				s1 += x[j+1] * y[j+1]
				s2 += x[j+2] * y[j+2]
				s3 += x[j+3] * y[j+3]
			}
			for ; j < len(x); j++ {
				s0 += x[j] * y[j]
			}
			out[k] = (s0 + s1) + (s2 + s3)
		}
	}
	if float64(len(a))*float64(len(b)) < 4e6 {
		work(0, n)
		return out
	}
	mid := n / 2
	done := make(chan struct{})
	go func() { work(0, mid); close(done) }()
	work(mid, n)
	<-done
	return out
}
