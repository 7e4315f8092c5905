package mechanism

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
)

// Benchmarks. Run (and record in docs/PERFORMANCE.md, "Local randomizers") with
//
//	go test ./mechanism -run '^$' -bench . -benchmem -count 6 | tee bench.txt
//	benchstat bench.txt
//
// One op is one sample in BenchmarkFloor and BenchmarkSample, one whole
// update in BenchmarkPerturbUpdate, one coordinate in BenchmarkCalibrator.

var sink float64

// cpuClock reports, next to ns/op (wall time), cpu-ns/op: the CPU time of
// the benchmark's own OS thread per op, which stays meaningful on a shared,
// loaded machine. Call it before the b.Loop loop and the returned func after.
func cpuClock(b *testing.B) func() {
	runtime.LockOSThread()
	start := threadCPU()
	return func() {
		b.ReportMetric(float64(threadCPU()-start)/float64(b.N), "cpu-ns/op")
		runtime.UnlockOSThread()
	}
}

var sources = []struct {
	name string
	r    func() *rand.Rand
}{
	{"pcg", func() *rand.Rand { return rng.NewSeeded(1) }},
	{"chacha8", rng.NewCrypto},
	{"cryptorand", rng.NewCryptoDirect},
}

// BenchmarkFloor is the reference cost of one sample: one uniform float64
// and one math.Log with the same generator.
func BenchmarkFloor(b *testing.B) {
	for _, src := range sources {
		b.Run(src.name, func(b *testing.B) {
			r := src.r()
			s := 0.0
			stop := cpuClock(b)
			for b.Loop() {
				s += math.Log(r.Float64())
			}
			stop()
			sink = s
		})
	}
}

func BenchmarkSample(b *testing.B) {
	lap := must(NewLaplace(1, 1))
	slap := must(NewSecureLaplace(1, 1))
	gau := must(NewGaussian(1, 1e-5, 1))
	sgau := must(NewSecureGaussian(1, 1e-5, 1))
	clap := must(NewClipLaplace(1, 2, 1))
	sclap := clap
	sclap.Secure = true
	clapHalf := must(NewClipLaplace(0.5, 2, 1))
	sclapHalf := clapHalf
	sclapHalf.Secure = true
	clap4 := must(NewClipLaplace(4, 2, 1))
	duchi := must(NewDuchi(1))
	pm := must(NewPiecewise(1))
	grr := must(NewGRR(1, 10))
	brr := must(NewBinaryRR(1))
	rr := must(NewRandomizedRounding(1, 10))
	mechs := []struct {
		name string
		f    func(r *rand.Rand, x float64) float64
	}{
		// The floor again, through the same indirect call as the others.
		{"floor", func(r *rand.Rand, _ float64) float64 { return math.Log(r.Float64()) }},
		{"laplace", lap.Randomize},
		{"laplace-secure", slap.Randomize},
		{"gaussian", gau.Randomize},
		{"gaussian-secure", sgau.Randomize},
		{"clip-laplace", clap.Sample},
		{"clip-laplace-secure", sclap.Sample},
		{"clip-laplace-eps0.5", clapHalf.Sample},
		{"clip-laplace-eps0.5-secure", sclapHalf.Sample},
		{"clip-laplace-eps4", clap4.Sample},
		{"duchi", duchi.Randomize},
		{"piecewise", pm.Randomize},
		{"grr-k10", func(r *rand.Rand, x float64) float64 { return float64(grr.Randomize(r, int(x*9))) }},
		{"binary-rr", func(r *rand.Rand, x float64) float64 { return float64(brr.Randomize(r, int(x))) }},
		{"rounding-b10", func(r *rand.Rand, x float64) float64 { return float64(rr.Randomize(r, x)) }},
	}
	for _, m := range mechs {
		for _, src := range sources {
			b.Run(m.name+"/"+src.name, func(b *testing.B) {
				r := src.r()
				s := 0.0
				stop := cpuClock(b)
				for b.Loop() {
					s += m.f(r, 0.5)
				}
				stop()
				sink = s
			})
		}
	}
}

// BenchmarkPerturbUpdate perturbs one model update in place: d = 7,850
// (logistic regression on (Fashion-)MNIST, the APES setting) and d =
// 101,770 (the MNIST MLP of the papers). Clip-Laplace at ε = 1 (the default
// rows; the largest APES Uniform2 budget), ε = 0.5 (its middle) and ε = 4
// (the Laplace-proposal sampler).
func BenchmarkPerturbUpdate(b *testing.B) {
	lap := must(NewLaplace(1, 1))
	slap := must(NewSecureLaplace(1, 1))
	gau := must(NewGaussian(1, 1e-5, 1))
	sgau := must(NewSecureGaussian(1, 1e-5, 1))
	clap := must(NewClipLaplace(1, 2, 1))
	sclap := clap
	sclap.Secure = true
	clapHalf := must(NewClipLaplace(0.5, 2, 1))
	sclapHalf := clapHalf
	sclapHalf.Secure = true
	clap4 := must(NewClipLaplace(4, 2, 1))
	el := must(NewEuclideanLaplace(1, 1))
	duchi := must(NewDuchi(1))
	mechs := []struct {
		name string
		f    func(r *rand.Rand, x []float64)
	}{
		{"laplace", lap.Perturb},
		{"laplace-secure", slap.Perturb},
		{"gaussian", gau.Perturb},
		{"gaussian-secure", sgau.Perturb},
		{"clip-laplace", func(r *rand.Rand, x []float64) { clear(x); _ = clap.Perturb(r, x) }},
		{"clip-laplace-secure", func(r *rand.Rand, x []float64) { clear(x); _ = sclap.Perturb(r, x) }},
		{"clip-laplace-eps0.5", func(r *rand.Rand, x []float64) { clear(x); _ = clapHalf.Perturb(r, x) }},
		{"clip-laplace-eps0.5-secure", func(r *rand.Rand, x []float64) { clear(x); _ = sclapHalf.Perturb(r, x) }},
		{"clip-laplace-eps4", func(r *rand.Rand, x []float64) { clear(x); _ = clap4.Perturb(r, x) }},
		{"euclidean-laplace", el.Perturb},
		{"duchi", func(r *rand.Rand, x []float64) { clear(x); _ = duchi.Perturb(r, x) }},
	}
	for _, d := range []int{7850, 101_770} {
		for _, m := range mechs {
			for _, src := range sources[:2] {
				b.Run(fmt.Sprintf("d=%d/%s/%s", d, m.name, src.name), func(b *testing.B) {
					r := src.r()
					x := make([]float64, d)
					stop := cpuClock(b)
					for b.Loop() {
						m.f(r, x)
					}
					stop()
				})
			}
		}
	}
}

// BenchmarkCalibrator: building the APES calibrator for n = 10,000 clients
// (distinct epsilons, the worst case, and 10 budget levels), and inverting
// d = 7,850 coordinates.
func BenchmarkCalibrator(b *testing.B) {
	distinct := heterogeneousEpsilons(10_000, 1)
	levels := make([]float64, 10_000)
	for i := range levels {
		levels[i] = 0.5 + float64(i%10)*0.75
	}
	for _, c := range []struct {
		name string
		eps  []float64
	}{{"distinct", distinct}, {"levels10", levels}} {
		b.Run("build/n=10000/"+c.name, func(b *testing.B) {
			stop := cpuClock(b)
			for b.Loop() {
				must(NewClipLaplaceCalibrator(c.eps, 2, 1))
			}
			stop()
		})
		cal := must(NewClipLaplaceCalibrator(c.eps, 2, 1))
		avgs := make([]float64, 7850)
		b.Run("invert/d=7850/"+c.name, func(b *testing.B) {
			r := rng.NewSeeded(2)
			stop := cpuClock(b)
			for b.Loop() {
				for i := range avgs {
					avgs[i] = 0.4 * (2*r.Float64() - 1)
				}
				cal.InvertAll(avgs)
			}
			stop()
		})
	}
}
