package sim

import (
	"fmt"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/learning/data"
)

// benchSplit loads the full Fashion-MNIST (Debian package
// dataset-fashion-mnist) once, or skips.
var benchData *data.Split

func fashion(b *testing.B) data.Split {
	b.Helper()
	if benchData == nil {
		s, err := data.Load("fashion-mnist", data.Options{})
		if err != nil {
			b.Skipf("full Fashion-MNIST not available (%v)", err)
		}
		benchData = &s
	}
	return *benchData
}

// BenchmarkRound measures one full round of the engine (sampling, local
// training, encoding, aggregation, padding, analysis, evaluation on the
// 10,000 test images, accounting) with logistic regression (d = 7,850) on
// Fashion-MNIST, using all cores. The "clients=10000,m=6" case is the
// PyTorch comparison of issue 2: one FedAvg round, 10,000 clients of 6
// samples, one local epoch, batch 10, lr 0.1.
func BenchmarkRound(b *testing.B) {
	cases := []struct {
		proto      string
		clients, m int
	}{
		{"nonprivate", 1000, 60},
		{"ldp-laplace", 1000, 60},
		{"nonprivate", 10000, 6},
		{"ldp-laplace", 10000, 6},
		{"apes", 10000, 6},
		{"ss-double", 10000, 6},
	}
	for _, c := range cases {
		b.Run(fmt.Sprintf("%s/clients=%d,m=%d,d=7850", c.proto, c.clients, c.m), func(b *testing.B) {
			split := fashion(b)
			cfg := round.DefaultConfig()
			cfg.Protocol = c.proto
			cfg.Clients = c.clients
			cfg.SamplesPerClient = c.m
			cfg.LocalEpochs = 1
			cfg.Batch = 10
			cfg.LR = 0.1
			cfg.Epsilon = 1000
			switch c.proto {
			case "apes":
				cfg.Epsilon = 0.5 // per dimension
				cfg.Delta = 1e-8
			case "ss-double":
				cfg.Epsilon = 78.5
				cfg.Options = map[string]float64{"k": 157, "np": 3333}
			}
			cfg.Rounds = b.N + 1
			e, err := New(cfg, split, nil)
			if err != nil {
				b.Fatal(err)
			}
			var train, encode, agg, shuffle, analyze, clients, eval float64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := e.Step()
				if err != nil {
					b.Fatal(err)
				}
				train += r.Timing.Train
				encode += r.Timing.Encode
				agg += r.Timing.Aggregate
				shuffle += r.Timing.Shuffle
				analyze += r.Timing.Analyze
				clients += r.Timing.Clients
				eval += r.Timing.Evaluate
			}
			n := float64(b.N)
			b.ReportMetric(clients/n, "clients-s/round")
			b.ReportMetric(eval/n, "eval-s/round")
			cpu := train + encode + agg
			b.ReportMetric(train/cpu, "train-share")
			b.ReportMetric(encode/cpu, "noise-share")
			b.ReportMetric(agg/cpu, "aggregate-share")
			b.ReportMetric(shuffle/n, "shuffle-s/round")
			b.ReportMetric(analyze/n, "analyze-s/round")
		})
	}
}
