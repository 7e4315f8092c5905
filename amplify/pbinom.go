package amplify

import "math"

// pbFloorFor returns the mass below which tail entries of partial
// Poisson-binomial convolutions are dropped when the result feeds a delta of
// about target: every dropped mass is added to Lost (so the result stays a
// guaranteed upper bound for expectations of functions with values in
// [0, 1]), and the total dropped over all ~n/32 tree nodes stays below about
// 1e-5 target.
func pbFloorFor(target float64, n int) float64 {
	f := 1e-6 * target / float64(n+1)
	return math.Min(math.Max(f, 1e-30), 1e-20)
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
	out := make([]float64, len(a.P)+len(b.P)-1)
	for i, x := range a.P {
		if x == 0 {
			continue
		}
		bp := b.P
		o := out[i : i+len(bp)]
		o = o[:len(bp)]
		for j, y := range bp {
			o[j] += x * y
		}
	}
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
