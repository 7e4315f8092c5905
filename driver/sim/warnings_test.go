package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/longtest"
)

// TestWarnings: each warning fires on the setting it describes and on no
// other: delta above 1/N, a shuffle with too few reporters to amplify
// (per coordinate for per-coordinate shuffles, user level for whole
// reports), and none for a sensible run or a protocol that does not
// shuffle.
func TestWarnings(t *testing.T) {
	split := loadSample(t)
	for _, tc := range []struct {
		name  string
		edit  func(*round.Config)
		wants []string
	}{
		{"sensible ss-simple", func(c *round.Config) { c.Epsilon = 2000 }, nil},
		{"delta above 1/N", func(c *round.Config) { c.Epsilon, c.Delta = 2000, 0.05 }, []string{"delta 0.05 is larger than 1/N = 0.005"}},
		{"ss-simple, 5 clients", func(c *round.Config) { c.Epsilon, c.Clients, c.SamplesPerClient = 2000, 5, 40 }, []string{"shuffle of 5 reports per round barely amplifies", "per coordinate"}},
		{"apes, 5 clients", func(c *round.Config) { c.Protocol, c.Epsilon, c.Clients, c.SamplesPerClient = "apes", 3925, 5, 40 }, []string{"shuffle of 5 reports per round barely amplifies"}},
		{"e-apes, 5 clients", func(c *round.Config) { c.Protocol, c.Epsilon, c.Clients, c.SamplesPerClient = "e-apes", 200, 5, 40 }, []string{"barely amplifies", "for a client's whole update"}},
		{"ldp-laplace does not shuffle", func(c *round.Config) {
			c.Protocol, c.Epsilon, c.Clients, c.SamplesPerClient = "ldp-laplace", 5000, 5, 40
		}, nil},
		{"nonprivate, delta irrelevant", func(c *round.Config) { c.Protocol, c.Delta = "nonprivate", 0.5 }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Protocol, cfg.Rounds, cfg.LocalEpochs = "ss-simple", 2, 1
			cfg.Clients, cfg.ClientsPerRound = 200, 0
			tc.edit(&cfg)
			e, err := New(cfg, split, nil)
			if err != nil {
				t.Fatal(err)
			}
			ws := e.Warnings()
			if len(tc.wants) == 0 {
				if len(ws) != 0 {
					t.Fatalf("warnings %q, want none", ws)
				}
				return
			}
			if len(ws) != 1 {
				t.Fatalf("warnings %q, want one", ws)
			}
			for _, want := range tc.wants {
				if !strings.Contains(ws[0], want) {
					t.Errorf("warning %q does not say %q", ws[0], want)
				}
			}
			if strings.Contains(ws[0], "\n") {
				t.Errorf("warning %q is not one line", ws[0])
			}
		})
	}
}

// TestNoiseWarningPredictsChance: the noise warning fires on the runs that
// end near chance (10% on fashion-mnist-sample's 10 classes) and not on
// runs that learn. Every run here is run to its end, so the prediction is
// checked against what happened.
func TestNoiseWarningPredictsChance(t *testing.T) {
	split := loadSample(t)
	for _, tc := range []struct {
		proto   string
		epsilon float64
		warn    bool
	}{
		{"ss-simple", 5, true},
		{"ss-simple", 50, true},
		{"ldp-laplace", 10, true},
		{"ss-double", 5, true},
		{"ss-simple", 5000, false},
		{"ldp-laplace", 10000, false},
		{"e-apes", 100, false},
	} {
		if !longtest.Enabled() && tc.proto != "ss-simple" {
			continue
		}
		cfg := smallConfig()
		cfg.Protocol, cfg.Epsilon, cfg.TargetEpsilon = tc.proto, tc.epsilon, 0
		cfg.Clients, cfg.ClientsPerRound, cfg.Rounds = 200, 0, 5
		e, err := New(cfg, split, nil)
		if err != nil {
			t.Fatal(err)
		}
		warned := false
		for _, w := range e.Warnings() {
			warned = warned || strings.Contains(w, "noise will swamp")
		}
		sum, err := e.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s epsilon %g: noise %.3g per coordinate, %.3g times clip·√T; warned %v; accuracy %.3f", tc.proto, tc.epsilon,
			e.noiseRMS, e.noiseRMS/(cfg.Clip*math.Sqrt(float64(cfg.Rounds))), warned, sum.FinalAccuracy)
		if warned != tc.warn {
			t.Errorf("%s epsilon %g: warned %v, want %v (accuracy %.3f)", tc.proto, tc.epsilon, warned, tc.warn, sum.FinalAccuracy)
		}
		if warned && sum.FinalAccuracy > 0.2 || !warned && tc.warn == false && sum.FinalAccuracy < 0.3 {
			t.Errorf("%s epsilon %g: warned %v but accuracy %.3f", tc.proto, tc.epsilon, warned, sum.FinalAccuracy)
		}
	}
}
