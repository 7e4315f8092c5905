package sim

import (
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

// TestAPESFamilyLearns runs a few rounds of every APES-family protocol on
// the committed Fashion-MNIST sample (logistic regression, 50 clients, all
// taking part) and checks that each learns: the test accuracy after 4
// rounds is well above the 10% of a constant classifier, and the round
// carries a privacy statement. The APES protocols use APES Table 2's
// Uniform2 per-dimension budgets. E-APES's budgets cover the whole update
// (Gaussian noise over all 7,850 coordinates), so Uniform2's 0.05–1 would
// drown 50 clients' signal; it runs at eps_i = 20–60 (delta 1e-5).
func TestAPESFamilyLearns(t *testing.T) {
	split := loadSample(t)
	for _, tc := range []struct {
		proto   string
		options map[string]float64
		minAcc  float64
	}{
		{"apes", nil, 0.45},
		{"s-apes", map[string]float64{"b": 1570}, 0.3},
		{"unis", nil, 0.3},
		{"pldp", nil, 0.3},
		{"e-apes", nil, 0.3},
	} {
		t.Run(tc.proto, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Protocol = tc.proto
			cfg.ClientsPerRound = 0
			cfg.Rounds = 4
			cfg.EpsDist = "uniform2"
			cfg.EpsScale = 7850 // APES Table 2 is per coordinate
			cfg.Options = tc.options
			cfg.Delta = 1e-5
			var budgets []protocol.Budget
			if tc.proto == "e-apes" {
				for i := 0; i < cfg.Clients; i++ {
					budgets = append(budgets, protocol.Budget{Epsilon: 20 + float64(i%5)*10, Delta: account.RoundDelta(cfg.Delta, cfg.Rounds)})
				}
			}
			e, err := New(cfg, split, budgets)
			if err != nil {
				t.Fatal(err)
			}
			var res []round.RoundResult
			if _, err := e.Run(func(r round.RoundResult) { res = append(res, r) }); err != nil {
				t.Fatal(err)
			}
			last := res[len(res)-1]
			t.Logf("%s: accuracy %.3f after %d rounds; privacy %+v", tc.proto, last.TestAccuracy, len(res), last.Privacy)
			if last.TestAccuracy < tc.minAcc {
				t.Errorf("%s reached only %.3f test accuracy", tc.proto, last.TestAccuracy)
			}
			p := last.Privacy
			// The run's accountant may compose the rounds' releases (the
			// clone pairs, the Gaussian premise) more tightly than a
			// round's own statement, so the cumulative figure is compared
			// with the first round's cumulative figure, not CentralEpsilon.
			if !p.Private || !(p.CumulativeEpsilon >= res[0].Privacy.CumulativeEpsilon) || p.Bound == "" {
				t.Errorf("privacy statement %+v", p)
			}
		})
	}
}

// TestAPESStreamingMatchesFaithful: for the APES-family protocols the
// streaming path (aggregate without materialising the shuffled batch) and
// the faithful shuffler (permute every column and the epsilon list) give
// the same model for a seed, up to floating-point summation order.
func TestAPESStreamingMatchesFaithful(t *testing.T) {
	split := loadSample(t)
	for _, tc := range []struct {
		proto   string
		options map[string]float64
	}{{"apes", nil}, {"s-apes", map[string]float64{"b": 100}}, {"e-apes", nil}, {"unis", nil}} {
		t.Run(tc.proto, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Protocol = tc.proto
			cfg.EpsDist = "uniform2"
			cfg.EpsScale = 7850
			cfg.Options = tc.options
			cfg.Rounds = 2
			streamingMatchesFaithful(t, cfg, split)
		})
	}
}

// TestAPESEngineBadInput: the engine surfaces the protocols' constraint
// errors before training.
func TestAPESEngineBadInput(t *testing.T) {
	split := loadSample(t)
	for _, tc := range []struct {
		proto   string
		options map[string]float64
		want    string
	}{
		{"s-apes", map[string]float64{"b": 1e6}, "exceeds the dimension"},
		{"ldp-min", map[string]float64{"min-epsilon": 0.9}, "min-epsilon"},
	} {
		cfg := smallConfig()
		cfg.Protocol = tc.proto
		cfg.EpsDist = "uniform2"
		cfg.Options = tc.options
		if _, err := New(cfg, split, nil); err == nil || !strings.Contains(err.Error(), tc.want) || !IsUsageError(err) {
			t.Errorf("%s %v: error %v, want a usage error containing %q", tc.proto, tc.options, err, tc.want)
		}
	}
}

// BenchmarkAPESRound measures one full engine round of the APES-family
// protocols at APES's scale: n = 10,000 clients (all taking part) of 6
// Fashion-MNIST samples, logistic regression (d = 7,850), one local epoch,
// Uniform2 per-dimension budgets; streaming aggregation on all cores. The
// reported shares split the round into local training, noise (Encode),
// the shuffler, the analyzer (APES calibration) and accounting (EoN).
func BenchmarkAPESRound(b *testing.B) {
	for _, tc := range []struct {
		proto   string
		options map[string]float64
	}{{"apes", nil}, {"s-apes", nil}, {"unis", nil}} {
		b.Run(tc.proto+"/clients=10000,m=6,d=7850", func(b *testing.B) {
			split := fashion(b)
			cfg := round.DefaultConfig()
			cfg.Protocol = tc.proto
			cfg.Options = tc.options
			cfg.Clients = 10000
			cfg.SamplesPerClient = 6
			cfg.LocalEpochs = 1
			cfg.EpsDist = "uniform2"
			cfg.Delta = 1e-8
			cfg.Rounds = b.N + 1
			e, err := New(cfg, split, nil)
			if err != nil {
				b.Fatal(err)
			}
			var tm round.Timing
			var total float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := e.Step()
				if err != nil {
					b.Fatal(err)
				}
				total += r.Seconds
				tm.Train += r.Timing.Train
				tm.Encode += r.Timing.Encode
				tm.Clients += r.Timing.Clients
				tm.Shuffle += r.Timing.Shuffle
				tm.Analyze += r.Timing.Analyze
				tm.Evaluate += r.Timing.Evaluate
				tm.Accounting += r.Timing.Accounting
			}
			n := float64(b.N)
			b.ReportMetric(tm.Clients/n, "clients-s/round")
			b.ReportMetric(tm.Train/(tm.Train+tm.Encode), "train-cpu-share")
			b.ReportMetric(tm.Encode/(tm.Train+tm.Encode), "noise-cpu-share")
			b.ReportMetric(tm.Shuffle/n, "shuffle-s/round")
			b.ReportMetric(tm.Analyze/n, "analyze-s/round")
			b.ReportMetric(tm.Evaluate/n, "eval-s/round")
			b.ReportMetric(tm.Accounting/n, "account-s/round")
		})
	}
}
