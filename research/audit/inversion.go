package audit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
)

// FCLayer is a fully connected layer of a model's flat parameter vector:
// its weight block, stored input-major ([in, out]: the weights leaving
// input k are contiguous, as fl.Model.Layers documents), and its bias
// block [out].
type FCLayer struct {
	Weight, Bias fl.Layer
}

// In is the layer's input width.
func (l FCLayer) In() int { return l.Weight.Shape[0] }

// Out is the layer's output width.
func (l FCLayer) Out() int { return l.Weight.Shape[1] }

// FCLayers returns the fully connected layers of m in order: every
// "X.weight" of shape [in, out] followed by "X.bias" of shape [out].
// Convolutions (4-d weights) are skipped, so a CNN yields its classifier
// layers (fc1 of the "cnn" model takes the 9,216 flattened convolution
// features).
func FCLayers(m fl.Model) []FCLayer {
	ls := m.Layers()
	var out []FCLayer
	for i := 0; i+1 < len(ls); i++ {
		w, b := ls[i], ls[i+1]
		if len(w.Shape) == 2 && len(b.Shape) == 1 && b.Shape[0] == w.Shape[1] &&
			strings.HasSuffix(w.Name, ".weight") && strings.HasSuffix(b.Name, ".bias") &&
			strings.TrimSuffix(w.Name, ".weight") == strings.TrimSuffix(b.Name, ".bias") {
			out = append(out, FCLayer{w, b})
		}
	}
	return out
}

// InputLayer returns the fully connected layer that takes the model's
// input directly, the layer whose input the analytic attack reconstructs
// as an image. A model whose first fully connected layer takes other
// features (a CNN's classifier) is an error naming that layer: the
// attack then recovers those features (InvertFC on FCLayers(m)[0]), not
// the image.
func InputLayer(m fl.Model) (FCLayer, error) {
	fcs := FCLayers(m)
	if len(fcs) == 0 {
		return FCLayer{}, checks.Invalidf("model %s has no fully connected layer: the analytic inversion does not apply", m.Name())
	}
	if fcs[0].In() != m.Features() || fcs[0].Weight.Offset != 0 {
		return FCLayer{}, checks.Invalidf("analytic image inversion does not apply to model %s: its first fully connected layer %s %v takes %d intermediate features, not the %d input pixels (the attack would recover those features, not the image)",
			m.Name(), fcs[0].Weight.Name, fcs[0].Weight.Shape, fcs[0].In(), m.Features())
	}
	return fcs[0], nil
}

// InvertFC reconstructs the input of a fully connected layer from one
// example's gradient (or model delta of one SGD step, any scale, either
// sign) of that layer: gW[k][c] = x_k·g_c and gb[c] = g_c, so
// x_k = gW[k][c]/gb[c] for any c with gb[c] != 0. With noise, the
// least-squares estimate over all c is used:
//
//	x_k = sum_c gW[k][c]·gb[c] / sum_c gb[c]^2,
//
// exact when the update is the noiseless gradient of one example (Phong et
// al. 2017; Geiping et al. 2020, Proposition 1). For a batch of several
// examples it returns a mixture weighted by their bias gradients.
func InvertFC(update []float64, l FCLayer) ([]float64, error) {
	in, out := l.In(), l.Out()
	if l.Weight.Offset+in*out > len(update) || l.Bias.Offset+out > len(update) {
		return nil, checks.Invalidf("update of length %d does not hold layer %s", len(update), l.Weight.Name)
	}
	gW := update[l.Weight.Offset : l.Weight.Offset+in*out]
	gb := update[l.Bias.Offset : l.Bias.Offset+out]
	var den float64
	for _, g := range gb {
		den += g * g
	}
	if !(den > 0) || math.IsInf(den, 0) {
		return nil, checks.Invalidf("the bias gradient of %s is zero or not finite: nothing to invert", l.Bias.Name)
	}
	x := make([]float64, in)
	for k := range x {
		row := gW[k*out : (k+1)*out]
		var s float64
		for c, g := range gb {
			s += row[c] * g
		}
		x[k] = s / den
	}
	return x, nil
}

// RecoverLabel returns the label of a single example from the model delta
// of one SGD step (delta = -lr·gradient) of the last layer's bias: the
// softmax cross-entropy gradient p - onehot(y) is negative only at y, so
// the delta is positive only there (Zhao et al. 2020, iDLG). With noise it
// returns the largest entry.
func RecoverLabel(update []float64, m fl.Model) (int, error) {
	fcs := FCLayers(m)
	if len(fcs) == 0 {
		return 0, checks.Invalidf("model %s has no fully connected output layer: label recovery does not apply", m.Name())
	}
	b := fcs[len(fcs)-1].Bias
	gb := update[b.Offset : b.Offset+b.Len]
	best := 0
	for c, v := range gb {
		if v > gb[best] {
			best = c
		}
	}
	return best, nil
}

// Sanitizer perturbs a client's update before release, given the model's
// layers and a noise multiplier nu (nu = 0: no noise). It lets the
// inversion study swap in the group-privacy paper's SanitizeUpdate.
type Sanitizer func(r *rand.Rand, update []float64, layers []fl.Layer, nu float64) error

// EuclideanPerLayer is the group-privacy paper's SanitizeUpdate applied per
// layer, as in its Figure 5 experiment (mechanism.SanitizeUpdateLayers):
// every layer of n parameters gets Euclidean-Laplace noise with rate
// epsilon = n/(nu·||layer||), so the layer is n/nu-indistinguishable within
// its own norm and the expected noise norm is nu·||layer||. update is the
// client's change to the model (the hypothesis is the origin); a layer
// that did not change is sanitized at a negligible radius (1e-12) rather
// than refused. nu = 0 leaves the update as it is.
func EuclideanPerLayer(r *rand.Rand, update []float64, layers []fl.Layer, nu float64) error {
	if nu == 0 {
		return nil
	}
	ls := make([]mechanism.Layer, len(layers))
	for i, l := range layers {
		ls[i] = mechanism.Layer{Offset: l.Offset, Len: l.Len}
	}
	origin := make([]float64, len(update))
	if _, err := mechanism.SanitizeUpdateLayers(r, update, origin, nu, ls, mechanism.SanitizeOptions{MinRadius: 1e-12}); err != nil {
		return fmt.Errorf("per-layer sanitization: %w", err)
	}
	return nil
}

// Quality compares a reconstruction with the truth (both in [0, 1], the
// range of the datasets' pixels).
type Quality struct {
	MSE  float64 `json:"mse"`
	PSNR float64 `json:"psnr_db"` // 10 log10(1/MSE); +Inf written as 999 for a perfect match
	SSIM float64 `json:"ssim"`
}

// Measure returns MSE, PSNR and SSIM of rec against truth, images of
// rows×cols (SSIM: Wang et al. 2004 with 7×7 uniform windows, K1 = 0.01,
// K2 = 0.03, data range 1, as scikit-image's default). rec is clamped to
// [0, 1] first, as an attacker displaying it would.
func Measure(truth []float32, rec []float64, rows, cols int) Quality {
	n := len(truth)
	r := make([]float64, n)
	t := make([]float64, n)
	var mse float64
	for i := range r {
		r[i] = min(1, max(0, rec[i]))
		if math.IsNaN(rec[i]) {
			r[i] = 0
		}
		t[i] = float64(truth[i])
		d := r[i] - t[i]
		mse += d * d
	}
	mse /= float64(n)
	q := Quality{MSE: mse, PSNR: 999}
	if mse > 0 {
		q.PSNR = math.Min(999, 10*math.Log10(1/mse))
	}
	q.SSIM = ssim(t, r, rows, cols)
	return q
}

func ssim(a, b []float64, rows, cols int) float64 {
	const w = 7
	c1, c2 := 0.01*0.01, 0.03*0.03
	if rows < w || cols < w {
		return math.NaN()
	}
	np := float64(w * w)
	var total float64
	var count int
	for i := 0; i+w <= rows; i++ {
		for j := 0; j+w <= cols; j++ {
			var ma, mb, saa, sbb, sab float64
			for u := 0; u < w; u++ {
				for v := 0; v < w; v++ {
					x, y := a[(i+u)*cols+j+v], b[(i+u)*cols+j+v]
					ma += x
					mb += y
					saa += x * x
					sbb += y * y
					sab += x * y
				}
			}
			ma /= np
			mb /= np
			cov := np / (np - 1)
			va := (saa/np - ma*ma) * cov
			vb := (sbb/np - mb*mb) * cov
			vab := (sab/np - ma*mb) * cov
			total += ((2*ma*mb + c1) * (2*vab + c2)) / ((ma*ma + mb*mb + c1) * (va + vb + c2))
			count++
		}
	}
	return total / float64(count)
}
