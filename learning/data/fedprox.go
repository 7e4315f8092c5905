package data

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
)

// Shape of FedProx's Synthetic(alpha, beta).
const (
	FedproxFeatures = 60
	FedproxClasses  = 10
	// setFedprox labels the streams of SyntheticFedProx.
	setFedprox uint64 = 4
)

// fedproxSizes returns the number of samples of every device of
// Synthetic(alpha, beta) for the given seed: floor(exp(4 + 2z)) + 50 with
// z standard normal, a LogNormal(4, 2) draw plus 50 (see SyntheticFedProx),
// from the stream rng.Stream(seed, labelData, setFedprox, 0), device 0
// first.
func fedproxSizes(seed uint64, devices int) []int {
	r := rng.Stream(seed, labelData, setFedprox, 0)
	n := make([]int, devices)
	for k := range n {
		v := math.Exp(4 + 2*r.NormFloat64())
		n[k] = int(min(v, 1<<40)) + 50
	}
	return n
}

// SyntheticFedProx generates FedProx's Synthetic(alpha, beta) (Li, Sahu,
// Zaheer, Sanjabi, Talwalkar and Smith, "Federated Optimization in
// Heterogeneous Networks", MLSys 2020, Section 5.1 and the appendix's
// description of the data sets): for
// each device k, samples (x, y) with x ∈ R^60 and
//
//	y = argmax softmax(W_k x + b_k),  W_k ∈ R^{10×60}, b_k ∈ R^10,
//	W_k, b_k elementwise ~ N(u_k, 1),  u_k ~ N(0, alpha),
//	x ~ N(v_k, Σ),  Σ diagonal with Σ_jj = j^{−1.2} (j = 1..60),
//	v_k elementwise ~ N(B_k, 1),  B_k ~ N(0, beta).
//
// alpha controls how much the local models differ and beta how much the
// local data do. The paper's 30 devices are devices = 30 (Load's
// default). Three points the paper leaves to its code (the authors'
// generator, data/synthetic_1_1/generate_synthetic.py of
// github.com/litian96/FedProx), which this follows:
//
//   - N(0, alpha) and N(0, beta) are read as standard deviations alpha and
//     beta (numpy.random.normal(0, alpha)), not variances. The two
//     readings agree only for alpha, beta in {0, 1}: the paper's
//     Synthetic(0, 0) and Synthetic(1, 1) are the same under both, and
//     Synthetic(0.5, 0.5) here is the code's (variance 0.25).
//   - "The number of samples on each device follows a power law" is
//     realised as floor(LogNormal(4, 2)) + 50 samples (heavy-tailed: the
//     median device has about 104, the mean about 453).
//   - Each device's samples are split 90/10: its first floor(0.9·n_k)
//     samples are training data, the rest test data (the code shuffles
//     first, which does not change the distribution of i.i.d. samples).
//
// The training set's Client is the device (ClientNames f_00000, ...),
// the natural partition; the test set pools every device's test samples.
// Ties in the argmax go to the lowest class. Device k's parameters and
// samples come from the stream rng.Stream(seed, labelData, setFedprox, 1,
// k), its size from fedproxSizes, so a device's data do not depend on the
// number of devices. Parameters are not checked (Load checks them).
func SyntheticFedProx(seed uint64, alpha, beta float64, devices int) Split {
	sizes := fedproxSizes(seed, devices)
	total, ntrain := 0, 0
	for _, n := range sizes {
		total += n
		ntrain += n * 9 / 10
	}
	const f, c = FedproxFeatures, FedproxClasses
	names := make([]string, devices)
	for k := range names {
		names[k] = fmt.Sprintf("f_%05d", k)
	}
	train := &Dataset{Name: "synthetic-fedprox", X: make([]float32, 0, ntrain*f), Y: make([]uint8, 0, ntrain),
		Features: f, Classes: c, Client: make([]int32, 0, ntrain), ClientNames: names}
	test := &Dataset{Name: "synthetic-fedprox", X: make([]float32, 0, (total-ntrain)*f), Y: make([]uint8, 0, total-ntrain),
		Features: f, Classes: c}
	sd := make([]float64, f)
	for j := range sd {
		sd[j] = math.Sqrt(math.Pow(float64(j+1), -1.2))
	}
	v := make([]float64, f)
	w := make([]float64, f*c) // w[j*c+k]: weight of feature j for class k
	b := make([]float64, c)
	x := make([]float64, f)
	for k, n := range sizes {
		r := rng.Stream(seed, labelData, setFedprox, 1, uint64(k))
		u := alpha * r.NormFloat64()
		bk := beta * r.NormFloat64()
		for j := range v {
			v[j] = bk + r.NormFloat64()
		}
		for i := range w {
			w[i] = u + r.NormFloat64()
		}
		for i := range b {
			b[i] = u + r.NormFloat64()
		}
		keep := n * 9 / 10
		for s := range n {
			for j := range x {
				x[j] = v[j] + sd[j]*r.NormFloat64()
			}
			y := argmaxLogits(x, w, b)
			ds := test
			if s < keep {
				ds = train
				ds.Client = append(ds.Client, int32(k))
			}
			for _, xj := range x {
				ds.X = append(ds.X, float32(xj))
			}
			ds.Y = append(ds.Y, uint8(y))
		}
	}
	return Split{Train: train, Test: test}
}

// argmaxLogits returns the class with the largest logit x·W[:, k] + b[k]
// (the argmax of the softmax), the lowest on ties.
func argmaxLogits(x, w, b []float64) int {
	c := len(b)
	best, arg := math.Inf(-1), 0
	for k := range c {
		z := b[k]
		for j, xj := range x {
			z += xj * w[j*c+k]
		}
		if z > best {
			best, arg = z, k
		}
	}
	return arg
}

func loadFedprox(o Options) (Split, error) {
	alpha, beta := DefaultFedprox, DefaultFedprox
	if o.FedproxAlpha != nil {
		alpha = *o.FedproxAlpha
	}
	if o.FedproxBeta != nil {
		beta = *o.FedproxBeta
	}
	if err := checks.NonNegative("fedprox-alpha", alpha); err != nil {
		return Split{}, err
	}
	if err := checks.NonNegative("fedprox-beta", beta); err != nil {
		return Split{}, err
	}
	devices, err := orDefault("fedprox devices", o.FedproxDevices, DefaultFedproxDevices)
	if err != nil {
		return Split{}, err
	}
	if devices > 1<<20 {
		return Split{}, checks.Invalidf("fedprox-devices %d: at most %d devices", devices, 1<<20)
	}
	total := 0
	for _, n := range fedproxSizes(o.Seed, devices) {
		total += n
		if total > maxValues/FedproxFeatures {
			return Split{}, checks.Invalidf("synthetic-fedprox: %d devices hold more than %d samples (seed %d): use fewer devices", devices, maxValues/FedproxFeatures, o.Seed)
		}
	}
	return SyntheticFedProx(o.Seed, alpha, beta, devices), nil
}
