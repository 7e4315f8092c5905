package fl

import (
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// reportCPU reports a metric from thread CPU time, if the platform measures
// it: work per CPU-second if perSecond, else CPU-seconds per unit of work.
func reportCPU(b *testing.B, cpu time.Duration, work float64, unit string, perSecond bool) {
	if cpu <= 0 {
		return
	}
	if perSecond {
		b.ReportMetric(work/cpu.Seconds(), unit)
	} else {
		b.ReportMetric(cpu.Seconds()/work, unit)
	}
}

// parallel runs f(0), …, f(g−1) on g goroutines, each locked to its thread,
// and returns the CPU time the g threads spent in f, summed.
func parallel(g int, f func(i int)) time.Duration {
	var total atomic.Int64
	var wg sync.WaitGroup
	for i := range g {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			t0 := threadCPU()
			f(i)
			total.Add(int64(threadCPU() - t0))
		})
	}
	wg.Wait()
	return time.Duration(total.Load())
}

// The benchmarks train on the first 60,000 Fashion-MNIST training images when
// the Debian package dataset-fashion-mnist is installed (realistic sparsity:
// about half the pixels are 0), and on synthetic 28×28 data otherwise.
const fashionDir = "/usr/share/datasets/fashion-mnist/"

var benchData = sync.OnceValues(func() (Examples, string) {
	if ex, err := readFashion(fashionDir+"train-images-idx3-ubyte.gz", fashionDir+"train-labels-idx1-ubyte.gz"); err == nil {
		return ex, "fashion-mnist"
	}
	return synth(1, 60000, 784, 10), "synthetic"
})

// readFashion reads gzipped IDX image and label files (a minimal reader for
// benchmarks; package data has the real one).
func readFashion(images, labels string) (Examples, error) {
	read := func(name string) ([]byte, error) {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, err
		}
		return io.ReadAll(z)
	}
	img, err := read(images)
	if err != nil {
		return Examples{}, err
	}
	lab, err := read(labels)
	if err != nil {
		return Examples{}, err
	}
	if len(img) < 16 || len(lab) < 8 {
		return Examples{}, fmt.Errorf("short IDX file")
	}
	n := int(binary.BigEndian.Uint32(img[4:]))
	rows, cols := int(binary.BigEndian.Uint32(img[8:])), int(binary.BigEndian.Uint32(img[12:]))
	f := rows * cols
	if len(img) != 16+n*f || len(lab) != 8+n {
		return Examples{}, fmt.Errorf("bad IDX sizes")
	}
	ex := Examples{X: make([]float32, n*f), Y: append([]uint8(nil), lab[8:]...), Features: f}
	for i, p := range img[16:] {
		ex.X[i] = float32(p) / 255
	}
	return ex, nil
}

// BenchmarkLocalUpdateRound is the local-training part of one non-private
// FedAvg round of logistic regression with 10,000 clients holding 6 examples
// each (one local epoch, batch 10, lr 0.1). PyTorch on CPU takes about 1.3 s
// for the whole round. The plain variant runs on one goroutine and also
// reports the thread's CPU time per client; goroutines=2 splits the clients
// between two workers with a Trainer each, as the engine does; fedprox adds a
// proximal term (μ = 0.01).
func BenchmarkLocalUpdateRound(b *testing.B) {
	ex, src := benchData()
	const clients, shard = 10000, 6
	m := mustModel(b, LogReg, ex.Features, 10)
	global := make([]float64, m.Dim())
	m.Init(rand.New(rand.NewPCG(1, 1)), global)
	// clientsFrom runs the local updates of clients lo, lo+step, … < clients.
	clientsFrom := func(tr *Trainer, delta []float64, cfg LocalConfig, lo, step int) error {
		idx := make([]int, shard)
		for c := lo; c < clients; c += step {
			for i := range idx {
				idx[i] = c*shard + i
			}
			r := rand.New(rand.NewPCG(uint64(c), 0))
			if _, err := tr.LocalUpdate(delta, r, global, ex, idx, cfg); err != nil {
				return err
			}
		}
		return nil
	}
	for _, v := range []struct {
		name       string
		mu         float64
		goroutines int
	}{
		{"logreg/clients=10000", 0, 1},
		{"logreg/clients=10000/goroutines=2", 0, 2},
		{"logreg-fedprox/clients=10000", 0.01, 1},
	} {
		cfg := LocalConfig{Epochs: 1, Batch: 10, LR: 0.1, Mu: v.mu}
		b.Run(v.name, func(b *testing.B) {
			b.Logf("data: %s", src)
			trainers := make([]*Trainer, v.goroutines)
			deltas := make([][]float64, v.goroutines)
			for i := range trainers {
				trainers[i] = NewTrainer(m)
				deltas[i] = make([]float64, m.Dim())
			}
			if v.goroutines == 1 {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0 := threadCPU()
				for b.Loop() {
					if err := clientsFrom(trainers[0], deltas[0], cfg, 0, 1); err != nil {
						b.Fatal(err)
					}
				}
				reportCPU(b, threadCPU()-cpu0, float64(b.N*clients)*1e-6, "cpu-µs/client", false)
			} else {
				var cpu time.Duration
				for b.Loop() {
					cpu += parallel(v.goroutines, func(i int) {
						if err := clientsFrom(trainers[i], deltas[i], cfg, i, v.goroutines); err != nil {
							b.Error(err)
						}
					})
				}
				reportCPU(b, cpu, float64(b.N*clients)*1e-6, "cpu-µs/client", false)
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/clients*1e6, "µs/client")
		})
	}
}

// BenchmarkTrain measures local SGD throughput in examples per second: each
// goroutine repeatedly runs one epoch of FedAvg over its own 600-example shard.
// The cnn variants, named model=cnn/batch=B, run on one goroutine only; all
// single-goroutine variants also report examples per second of thread CPU
// time (examples/cpu-s), which a loaded machine does not deflate.
func BenchmarkTrain(b *testing.B) {
	ex, src := benchData()
	const shard = 600
	type variant struct {
		name  string
		model string
		batch int
		g     int
		lr    float64
	}
	var vs []variant
	for _, name := range denseModels {
		for _, batch := range []int{10, 32} {
			for _, g := range []int{1, 2} {
				vs = append(vs, variant{fmt.Sprintf("%s/batch=%d/goroutines=%d", name, batch, g), name, batch, g, 0.05})
			}
		}
	}
	for _, batch := range []int{10, 32} {
		vs = append(vs, variant{fmt.Sprintf("model=cnn/batch=%d", batch), CNN, batch, 1, 0.01})
	}
	for _, v := range vs {
		m := mustModel(b, v.model, ex.Features, 10)
		global := make([]float64, m.Dim())
		m.Init(rand.New(rand.NewPCG(1, 1)), global)
		b.Run(v.name, func(b *testing.B) {
			b.Logf("data: %s", src)
			cfg := LocalConfig{Epochs: 1, Batch: v.batch, LR: v.lr}
			g := v.g
			trainers := make([]*Trainer, g)
			deltas := make([][]float64, g)
			for i := range trainers {
				trainers[i] = NewTrainer(m)
				deltas[i] = make([]float64, m.Dim())
			}
			if g == 1 {
				// One goroutine: train on the benchmark's own thread
				// and also report thread-CPU throughput.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				idx := seq(shard)
				cpu0 := threadCPU()
				for b.Loop() {
					r := rand.New(rand.NewPCG(0, 0))
					if _, err := trainers[0].LocalUpdate(deltas[0], r, global, ex, idx, cfg); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*shard)/b.Elapsed().Seconds(), "examples/s")
				reportCPU(b, threadCPU()-cpu0, float64(b.N*shard), "examples/cpu-s", true)
				return
			}
			var cpu time.Duration
			for b.Loop() {
				cpu += parallel(g, func(i int) {
					idx := seq(shard)
					for j := range idx {
						idx[j] += i * shard
					}
					r := rand.New(rand.NewPCG(uint64(i), 0))
					if _, err := trainers[i].LocalUpdate(deltas[i], r, global, ex, idx, cfg); err != nil {
						b.Error(err)
					}
				})
			}
			b.ReportMetric(float64(b.N*g*shard)/b.Elapsed().Seconds(), "examples/s")
			// Per core: equals the wall figure divided by g on an
			// idle machine with g free cores.
			reportCPU(b, cpu, float64(b.N*g*shard), "examples/cpu-s", true)
		})
	}
}

// BenchmarkEvaluate measures evaluation on 10,000 examples (2,000 for the
// cnn). With one worker it also reports examples per second of thread CPU
// time.
func BenchmarkEvaluate(b *testing.B) {
	ex, _ := benchData()
	for _, name := range Models() {
		n := 10000
		if name == CNN {
			n = 2000
		}
		ex := Examples{X: ex.X[:n*ex.Features], Y: ex.Y[:n], Features: ex.Features}
		m := mustModel(b, name, ex.Features, 10)
		w := make([]float64, m.Dim())
		m.Init(rand.New(rand.NewPCG(1, 1)), w)
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", name, workers), func(b *testing.B) {
				if workers == 1 {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
				}
				cpu0 := threadCPU()
				for b.Loop() {
					if _, _, err := Evaluate(m, w, ex, workers); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*ex.Len())/b.Elapsed().Seconds(), "examples/s")
				if workers == 1 {
					reportCPU(b, threadCPU()-cpu0, float64(b.N*ex.Len()), "examples/cpu-s", true)
				}
			})
		}
	}
}

// BenchmarkKernels measures the SIMD kernels on one real image (its non-zero
// pixels against a weight matrix of 784 rows), at every available level.
func BenchmarkKernels(b *testing.B) {
	ex, _ := benchData()
	x := ex.Row(0)
	idx := make([]int32, len(x))
	val := make([]float32, len(x))
	nnz := sparsify(idx, val, x, false)
	defer func() { level = bestLevel }()
	for l, lname := range []string{"go", "avx2", "avx512"} {
		if l > bestLevel {
			break
		}
		level = l
		b.Run(lname+"/sparsify", func(b *testing.B) {
			for b.Loop() {
				sparsify(idx, val, x, false)
			}
		})
		b.Run(lname+"/dense10/fwd", func(b *testing.B) {
			w := make([]float32, len(x)*10)
			part := make([]float32, 80)
			for b.Loop() {
				dense10Fwd(part, w, x)
			}
		})
		b.Run(lname+"/dense10/back/batch=6", func(b *testing.B) {
			w := make([]float32, len(x)*10)
			rows := []int{0, 784, 1568, 2352, 3136, 3920}
			tile := make([]float32, 6*80)
			for b.Loop() {
				dense10Back(w, ex.X, rows, tile)
			}
		})
		// The cnn's conv2 tile: 6 output pixels × 64 channels over a 3×3×32
		// patch (three runs of 96 inputs), B (73 KB) from L2.
		b.Run(lname+"/cnn-conv2-tile", func(b *testing.B) {
			a := make([]float32, 4*26*32)
			w := make([]float32, 288*64)
			c := make([]float32, 6*64)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			for b.Loop() {
				convTile(c, a, w, nil, 6, 4, 3, 96, 26*32, 32, 64, 64, 0)
			}
			macs := float64(b.N) * 6 * 64 * 288
			b.ReportMetric(macs/b.Elapsed().Seconds()/1e9, "GMAC/s")
			reportCPU(b, threadCPU()-cpu0, macs/1e9, "GMAC/cpu-s", true)
		})
		for _, n := range []int{10, 128} {
			w := make([]float32, len(x)*n)
			dst := make([]float32, n)
			b.Run(fmt.Sprintf("%s/gather/n=%d/nnz=%d", lname, n, nnz), func(b *testing.B) {
				for b.Loop() {
					gatherAxpy(dst, w, n, idx[:nnz], val[:nnz])
				}
			})
			b.Run(fmt.Sprintf("%s/scatter/n=%d/nnz=%d", lname, n, nnz), func(b *testing.B) {
				for b.Loop() {
					scatterAxpy(w, n, idx[:nnz], val[:nnz], 0.5, dst)
				}
			})
		}
	}
}
