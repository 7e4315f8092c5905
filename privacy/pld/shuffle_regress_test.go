package pld

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"testing"

	"github.com/shufflefl/shufflefl/internal/longtest"
)

// pldDigest returns an FNV-1a digest of every stored value of both
// directions of p (offsets, pmf, +Inf atoms, error terms and the Chernoff
// certificate, as float64 bits) and of its interval and relation.
func pldDigest(p *PLD) string {
	f := fnv.New64a()
	var b [8]byte
	put := func(u uint64) {
		binary.LittleEndian.PutUint64(b[:], u)
		f.Write(b[:])
	}
	putF := func(x float64) { put(math.Float64bits(x)) }
	putF(p.h)
	if p.subst {
		put(1)
	}
	for _, d := range []*dir{&p.rem, &p.add} {
		put(uint64(int64(d.off)))
		put(uint64(len(d.pmf)))
		for _, v := range d.pmf {
			putF(v)
		}
		for _, v := range []float64{d.inf, d.rho, d.err, d.cinf} {
			putF(v)
		}
		for _, v := range d.logm {
			putF(v)
		}
	}
	return fmt.Sprintf("%016x", f.Sum64())
}

// cloneRegressPoint is one clone-pair PLD whose every value is pinned: the
// digest of the whole PLD, its epsilon at delta and its delta at epsAt, as
// float64 bits, computed by the code before the clone pair was made faster
// (commit 1 of branch h-pld).
type cloneRegressPoint struct {
	eps0     float64
	n        int
	interval float64 // 0: DefaultInterval
	delta    float64
	epsAt    float64
	long     bool // behind longtest (seconds to build)
	digest   string
	eps, del uint64
}

// cloneRegressPoints: eps0 from 1e-6 to 40, n from 2 to 10^6; the
// intervals are those the callers use (the default, eps0/2^14 of
// account.PLDEpsilon's probe, and finer grids).
var cloneRegressPoints = []cloneRegressPoint{
	{eps0: 1, n: 2, delta: 1e-6, epsAt: 0.5, digest: "02a42baaac522df6", eps: 0x3feffffc7c190aee, del: 0x3fce0bedbed4f870},
	{eps0: 0.5, n: 10, delta: 1e-3, epsAt: 0.1, digest: "8bbcd5c78e985c5a", eps: 0x3fdd492b7e513d7f, del: 0x3fa536fd6e3148b4},
	{eps0: 1e-6, n: 100, interval: 1e-8, delta: 1e-12, epsAt: 1e-7, digest: "7a3b76842c65e6de", eps: 0x3e9a0590bb10fc3d, del: 0x3e41b7edd9bff167},
	{eps0: 0.01, n: 1000, interval: 2e-5, delta: 1e-6, epsAt: 0.001, digest: "b80df7cb197f06ad", eps: 0x3f487dac7fb2e9d3, del: 0x3e73139edca57bce},
	{eps0: 0.1455, n: 1000, interval: 0.1455 / (1 << 14), delta: 1e-6, epsAt: 0.02, digest: "955b5f05db0bf91c", eps: 0x3f901048394dbe43, del: 0x3e5e1cd7e267adcd},
	{eps0: 40, n: 1000, delta: 1e-9, epsAt: 30, digest: "32aa48dd8e3fd57a", eps: 0x4043fffffffdda44, del: 0x3fefffa0ca1c3964},
	{eps0: 1, n: 10000, delta: 1e-6, epsAt: 0.05, digest: "920f7b6b67ba08a6", eps: 0x3fab23855c922ad1, del: 0x3ec1f5067bc68578},
	{eps0: 20, n: 10000, delta: 1e-6, epsAt: 5, digest: "ec4fd95835440d96", eps: 0x4033ffffef38fc83, del: 0x3fefffe9be65cb83},
	{eps0: 0.5, n: 100000, delta: 1e-9, epsAt: 0.01, digest: "cc074339ccdc1792", eps: 0x3f829aaceeb296e2, del: 0x3dd94cc70d703f62},
	{eps0: 2.379409587299091, n: 100000, interval: 2.379409587299091 / (1 << 14), delta: 1e-6, epsAt: 0.05, digest: "e4dc64862e6521b5", eps: 0x3faf07bbd0938c8d, del: 0x3ee460fa1d396d90},
	{eps0: 3.5, n: 1000000, interval: 3.5 / (1 << 14), delta: 1e-6, epsAt: 0.05, digest: "766a96e7ba8f15e5", eps: 0x3fa2ccc48835c6ed, del: 0x3e32df606893a682},
	{eps0: 6, n: 1000000, delta: 1e-10, epsAt: 0.1, digest: "d4648ba82981d126", eps: 0x3fcc9b336d87b11e, del: 0x3f16256babefed40},
	{eps0: 1, n: 1000000, interval: 1.0 / (1 << 17), delta: 1e-6, epsAt: 0.005, long: true, digest: "a11972a229b4f59e", eps: 0x3f71c114ac9beadb, del: 0x3e8c045fceca94cb},
	{eps0: 2.4, n: 1000000, interval: 2.4 / (1 << 14), delta: 1e-6, epsAt: 0.02, long: true, digest: "3d932b0837d4dc28", eps: 0x3f9231756e2b5975, del: 0x3e8be62995d80f85},
}

// checkBits reports whether the test may compare float64 bits: Go may fuse
// x*y+z into one rounding on architectures with FMA instructions other
// than amd64, which changes the last bits of the figures.
func checkBits(t *testing.T) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("bit-exact figures are pinned on amd64 (GOARCH %s may fuse multiply-adds)", runtime.GOARCH)
	}
}

// TestShuffleClonesRegression: ShuffleClones gives, bit for bit, the PLD,
// epsilons and deltas of the code before it was optimised.
func TestShuffleClonesRegression(t *testing.T) {
	checkBits(t)
	for _, c := range cloneRegressPoints {
		name := fmt.Sprintf("eps0=%g/n=%d", c.eps0, c.n)
		t.Run(name, func(t *testing.T) {
			if c.long {
				longtest.Skip(t)
			}
			p, err := ShuffleClones(c.eps0, c.n, Options{Interval: c.interval})
			if err != nil {
				t.Fatal(err)
			}
			e, err := p.Epsilon(c.delta)
			if err != nil {
				t.Fatal(err)
			}
			d := p.Delta(c.epsAt)
			got := fmt.Sprintf("digest: %q, eps: %#x, del: %#x", pldDigest(p), math.Float64bits(e), math.Float64bits(d))
			want := fmt.Sprintf("digest: %q, eps: %#x, del: %#x", c.digest, c.eps, c.del)
			if got != want {
				t.Errorf("got  %s (epsilon %v at %v, delta %v at %v)\nwant %s", got, e, c.delta, d, c.epsAt, want)
			}
		})
	}
}

// TestShuffleClonesHeteroRegression: the same for the Poisson-binomial
// clone count (which shares clonesDir), and for a self-composition of the
// clone pair.
func TestShuffleClonesHeteroRegression(t *testing.T) {
	checkBits(t)
	probs := make([]float64, 3000)
	for i := range probs {
		probs[i] = math.Exp(-0.2 - 2*float64(i)/float64(len(probs)))
	}
	h, err := ShuffleClonesHetero(probs, 0.7, Options{Interval: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	u, err := ShuffleClones(0.1455, 1000, Options{Interval: 0.1455 / (1 << 14)})
	if err != nil {
		t.Fatal(err)
	}
	k, err := u.SelfCompose(7850)
	if err != nil {
		t.Fatal(err)
	}
	ke, err := k.Epsilon(1e-6)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, got, want string
	}{
		{"hetero digest", pldDigest(h), "48be5f0cd9fa73cd"},
		{"hetero delta(0.05)", fmt.Sprintf("%#x", math.Float64bits(h.Delta(0.05))), "0x3f0c337d5fb0cdbb"},
		{"7850-fold epsilon(1e-6)", fmt.Sprintf("%#x", math.Float64bits(ke)), "0x3fff2ab35654a238"},
		{"7850-fold digest", pldDigest(k), "c14375c39a33ffdc"},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, c.got, c.want)
		}
	}
}

// TestShuffleClonesWorkers: the clone pair's PLD is the same, bit for bit,
// whatever the number of goroutines evaluating its rows (GOMAXPROCS 1 takes
// the sequential path; 2, 3 and 7 the ordered parallel one, with more
// workers than some chunks).
func TestShuffleClonesWorkers(t *testing.T) {
	checkBits(t)
	c := cloneRegressPoints[6] // eps0 = 1, n = 10^4: 36 chunks of rows
	if c.eps0 != 1 || c.n != 10000 {
		t.Fatalf("point 6 is eps0 = %v, n = %d", c.eps0, c.n)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 3, 7} {
		runtime.GOMAXPROCS(procs)
		p, err := ShuffleClones(c.eps0, c.n, Options{Interval: c.interval})
		if err != nil {
			t.Fatal(err)
		}
		if got := pldDigest(p); got != c.digest {
			t.Errorf("GOMAXPROCS %d: digest %s, want %s", procs, got, c.digest)
		}
	}
}
