package audit

import (
	"math"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/learning/fl"
)

// inputGrad writes into dx the gradient of the softmax cross-entropy of
// one example (x, y) at parameters w with respect to the input x. It
// supports the fully connected models of package fl: one layer (logreg)
// or two with a ReLU between them (mlp).
func inputGrad(fcs []FCLayer, w, x []float64, y int, dx []float64) {
	// Forward through the layers, keeping pre-activations.
	acts := [][]float64{x}
	pre := [][]float64{}
	a := x
	for li, l := range fcs {
		in, out := l.In(), l.Out()
		z := make([]float64, out)
		copy(z, w[l.Bias.Offset:l.Bias.Offset+out])
		W := w[l.Weight.Offset : l.Weight.Offset+in*out]
		for k, ak := range a {
			if ak == 0 {
				continue
			}
			row := W[k*out : (k+1)*out]
			for c := range z {
				z[c] += ak * row[c]
			}
		}
		pre = append(pre, z)
		if li < len(fcs)-1 {
			h := make([]float64, out)
			for j, v := range z {
				h[j] = max(v, 0)
			}
			a = h
			acts = append(acts, h)
		}
	}
	// Softmax gradient at the output.
	z := pre[len(pre)-1]
	zmax := math.Inf(-1)
	for _, v := range z {
		zmax = max(zmax, v)
	}
	var s float64
	for _, v := range z {
		s += math.Exp(v - zmax)
	}
	d := make([]float64, len(z))
	for c, v := range z {
		d[c] = math.Exp(v-zmax) / s
	}
	d[y]--
	for li := len(fcs) - 1; li >= 0; li-- {
		l := fcs[li]
		in, out := l.In(), l.Out()
		W := w[l.Weight.Offset : l.Weight.Offset+in*out]
		prev := make([]float64, in)
		for k := range prev {
			row := W[k*out : (k+1)*out]
			var t float64
			for c, dc := range d {
				t += row[c] * dc
			}
			prev[k] = t
		}
		if li > 0 {
			for k := range prev {
				if pre[li-1][k] <= 0 {
					prev[k] = 0
				}
			}
		}
		d = prev
	}
	copy(dx, d)
}

// DLGConfig configures the optimisation attack.
type DLGConfig struct {
	Steps int     // Adam steps (300 if 0)
	LR    float64 // Adam step size (0.05 if 0)
}

// Optimize is the optimisation attack in the spirit of DLG (Zhu et al.
// 2019) and Inverting Gradients (Geiping et al. 2020): starting from a
// uniform random dummy input in [0, 1], it minimises the cosine distance
// between the dummy's parameter gradient and the observed update (read as
// -update, a model delta of one SGD step) by Adam with projection onto
// [0, 1], the label fixed by RecoverLabel (iDLG). The input gradient of
// the matching loss is J^T v, with J the Jacobian of the parameter
// gradient in x and v the loss's gradient in parameter space; it is
// computed as the directional derivative of the input gradient along v
// in weight space, by a central difference (one forward-backward pass at
// w ± h·v̂ each). It applies to models whose input gradient this package
// computes (logreg, mlp); others are an error naming the model.
func Optimize(r *rand.Rand, m fl.Model, w, update []float64, label int, cfg DLGConfig) ([]float64, error) {
	fcs := FCLayers(m)
	if m.Name() != fl.LogReg && m.Name() != fl.MLP {
		return nil, checks.Invalidf("the optimisation (DLG) attack needs the input gradient of model %s, which audit computes only for logreg and mlp", m.Name())
	}
	if cfg.Steps == 0 {
		cfg.Steps = 300
	}
	if cfg.LR == 0 {
		cfg.LR = 0.05
	}
	d, nf := m.Dim(), m.Features()
	obs := make([]float64, d)
	var on float64
	for i, v := range update {
		obs[i] = -v
		on += v * v
	}
	on = math.Sqrt(on)
	if !(on > 0) {
		return nil, checks.Invalidf("the observed update is zero: nothing to invert")
	}
	x := make([]float64, nf)
	for i := range x {
		x[i] = r.Float64()
	}
	x32 := make([]float32, nf)
	ex := fl.Examples{X: x32, Y: []uint8{uint8(label)}, Features: nf}
	idx := []int{0}
	g := make([]float64, d)
	v := make([]float64, d)
	wp := make([]float64, d)
	wm := make([]float64, d)
	gp := make([]float64, nf)
	gm := make([]float64, nf)
	mo := make([]float64, nf)
	ve := make([]float64, nf)
	const b1, b2, eps = 0.9, 0.999, 1e-8
	for step := 1; step <= cfg.Steps; step++ {
		for i, xi := range x {
			x32[i] = float32(xi)
		}
		m.Gradient(g, w, ex, idx)
		var gn, dot float64
		for i := range g {
			gn += g[i] * g[i]
			dot += g[i] * obs[i]
		}
		gn = math.Sqrt(gn)
		if !(gn > 0) {
			break
		}
		// L = 1 - dot/(gn·on); dL/dg = -(obs/(gn·on) - dot·g/(gn³·on)).
		var vn float64
		for i := range v {
			v[i] = -(obs[i]/(gn*on) - dot*g[i]/(gn*gn*gn*on))
			vn += v[i] * v[i]
		}
		vn = math.Sqrt(vn)
		if !(vn > 0) {
			break
		}
		h := 1e-3
		for i := range w {
			u := v[i] / vn
			wp[i] = w[i] + h*u
			wm[i] = w[i] - h*u
		}
		inputGrad(fcs, wp, x, label, gp)
		inputGrad(fcs, wm, x, label, gm)
		bc1 := 1 - math.Pow(b1, float64(step))
		bc2 := 1 - math.Pow(b2, float64(step))
		for i := range x {
			gr := vn * (gp[i] - gm[i]) / (2 * h)
			mo[i] = b1*mo[i] + (1-b1)*gr
			ve[i] = b2*ve[i] + (1-b2)*gr*gr
			x[i] -= cfg.LR * (mo[i] / bc1) / (math.Sqrt(ve[i]/bc2) + eps)
			x[i] = min(1, max(0, x[i]))
		}
	}
	return x, nil
}
