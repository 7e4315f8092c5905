package deploy

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// BenchmarkSplitMixClient is one deployed split-mix client's round at the
// frontier's settings (Fashion-MNIST logistic regression, d = 7,850;
// 1,000 clients Poisson-sampled at q = 0.1; cumulative epsilon 2 at delta
// 1e-6 over 30 rounds; the secure sampler; so K = 173 and m = 27): Encode
// (clip, round, Skellam share, m shares per coordinate), sealing its m·d
// shares into the SubmitReport body exactly as Client.sealReport does
// (X25519), and the analyzer opening them one by one on one core. It
// reports the messages and bytes per client and the seconds of each step;
// the shuffler's dummies cost what a client's shares cost to seal (one
// sealed coordinate message each). Wall and process CPU seconds (the
// machine may be shared). Run with -benchtime 1x.
func BenchmarkSplitMixClient(b *testing.B) {
	const d = 7850
	p, err := protocol.New("split-mix", protocol.Params{Clip: 1, Epsilon: 2, Delta: 1e-6, Rounds: 30, SampleRate: 0.1,
		Population: 1000, Layers: []int{d}, Secure: true})
	if err != nil {
		b.Fatal(err)
	}
	sm := p.(protocol.SplitMix)
	key, err := seal.GenerateKey(seal.X25519)
	if err != nil {
		b.Fatal(err)
	}
	sealer, err := seal.NewSealer(key.Public(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	st := &Setup{Proto: p, RunID: "bench"}
	c := &Client{st: st, sealer: sealer}
	r := rand.New(rand.NewPCG(1, 2))
	update := make([]float64, d)
	shape := protocol.Shape{Round: 1, Dim: d, Population: 1000, Participants: 100}
	for b.Loop() {
		for j := range update {
			update[j] = r.NormFloat64() * 0.01
		}
		var rep protocol.Report
		t0 := time.Now()
		if err := p.Encode(r, shape, update, protocol.Budget{}, &rep); err != nil {
			b.Fatal(err)
		}
		enc := time.Since(t0)
		t0, c0 := time.Now(), cpuSeconds()
		body, err := c.sealReport(1, &rep)
		if err != nil {
			b.Fatal(err)
		}
		sealed, sealCPU := time.Since(t0), cpuSeconds()-c0
		req := &wire.SubmitReportRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			b.Fatal(err)
		}
		spec := seal.Spec{Mode: seal.PerCoordinate, Dim: d, Values: seal.Range{Lo: 0, Hi: float64(sm.Modulus() - 1)}, Integers: true}
		o, err := seal.NewOpener(key, "bench", 1, spec)
		if err != nil {
			b.Fatal(err)
		}
		t0, c0 = time.Now(), cpuSeconds()
		for _, m := range req.Messages {
			if _, _, err := o.Open(m.Ciphertext); err != nil {
				b.Fatal(err)
			}
		}
		opened, openCPU := time.Since(t0), cpuSeconds()-c0
		n := float64(len(req.Messages))
		b.ReportMetric(n, "msgs/client")
		b.ReportMetric(float64(len(body)), "B/client")
		b.ReportMetric(enc.Seconds(), "encode-s")
		b.ReportMetric(sealed.Seconds(), "seal-s")
		b.ReportMetric(opened.Seconds(), "open-s")
		b.ReportMetric(sealed.Seconds()/n*1e6, "seal-us/msg")
		b.ReportMetric(opened.Seconds()/n*1e6, "open-us/msg")
		b.ReportMetric(sealCPU, "seal-cpu-s")
		b.ReportMetric(openCPU, "open-cpu-s")
		b.ReportMetric(float64(sm.Slots()), "K")
		b.ReportMetric(float64(sm.Shares()), "m")
	}
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
