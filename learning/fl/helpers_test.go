package fl

import (
	"math/rand/v2"
	"testing"
)

// synth returns a learnable image-like classification problem: each class has
// a random prototype in [0,1]^features with about 60% zero entries, and each
// example is its class prototype plus uniform noise, clipped to [0,1] (zeros
// of the prototype stay zero with probability 0.9, like the background of an
// image).
func synth(seed uint64, n, features, classes int) Examples {
	r := rand.New(rand.NewPCG(seed, 7))
	proto := make([]float32, classes*features)
	for i := range proto {
		if r.Float64() < 0.4 {
			proto[i] = float32(r.Float64())
		}
	}
	ex := Examples{X: make([]float32, n*features), Y: make([]uint8, n), Features: features}
	for i := range n {
		c := r.IntN(classes)
		ex.Y[i] = uint8(c)
		p := proto[c*features : (c+1)*features]
		x := ex.Row(i)
		for f := range x {
			if p[f] == 0 && r.Float64() < 0.9 {
				continue
			}
			v := p[f] + float32(0.6*(r.Float64()-0.5))
			x[f] = min(max(v, 0), 1)
		}
	}
	return ex
}

// denseModels are the models that take any number of features.
var denseModels = []string{LogReg, MLP}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func mustModel(tb interface{ Fatal(...any) }, name string, features, classes int) Model {
	m, err := NewModel(name, features, classes)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// randomParams returns parameters with entries uniform in [-scale, scale].
func randomParams(r *rand.Rand, d int, scale float64) []float64 {
	w := make([]float64, d)
	for i := range w {
		w[i] = scale * (2*r.Float64() - 1)
	}
	return w
}

// withKernels runs f once for every kernel level the CPU supports (portable
// Go, AVX2, AVX-512).
func withKernels(t interface {
	Run(string, func(*testing.T)) bool
}, f func(*testing.T)) {
	defer func() { level = bestLevel }()
	for l, name := range []string{"go", "avx2", "avx512"} {
		if l > bestLevel {
			break
		}
		level = l
		t.Run(name, f)
	}
}
