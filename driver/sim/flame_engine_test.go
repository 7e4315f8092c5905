package sim

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/protocol"
)

// TestFlameFaithfulEqualsStreaming trains with each FLAME protocol twice
// from the same seed — once with the faithful shuffler (every report kept,
// padded and permuted per dimension) and once streaming reports into the
// aggregate — and checks that both give the same model up to floating-point
// summation order, the same privacy statement, and a finite accuracy.
func TestFlameFaithfulEqualsStreaming(t *testing.T) {
	split := loadSample(t)
	for _, tc := range []struct {
		proto string
		opts  map[string]float64
	}{
		{"ss-simple", nil},
		{"ss-double", map[string]float64{"k": 785, "np": 16}},
		{"ss-topk", map[string]float64{"k": 157, "nu": 5}},
		{"ss-double", map[string]float64{"randomizer": 1}},
	} {
		t.Run(tc.proto, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Protocol = tc.proto
			cfg.Options = tc.opts
			cfg.Epsilon = 500
			cfg.Rounds = 2
			cfg.LocalEpochs = 1
			rs, rf := streamingMatchesFaithful(t, cfg, split)
			for i := range rs {
				if !reflect.DeepEqual(rs[i].Privacy, rf[i].Privacy) {
					t.Fatalf("round %d privacy differs:\n%+v\n%+v", i+1, rs[i].Privacy, rf[i].Privacy)
				}
				if math.IsNaN(rs[i].TestAccuracy) || math.Abs(rs[i].TestAccuracy-rf[i].TestAccuracy) > 0.01 {
					t.Fatalf("round %d accuracy %v vs %v", i+1, rs[i].TestAccuracy, rf[i].TestAccuracy)
				}
				p := rs[i].Privacy
				// Unamplified SS-Topk with R_{gamma,b} is not eps_l-DP (a
				// dimension leaving the top k swaps a report for a
				// blanket draw; protocol.TestTopkFallbackRGammaB), but
				// at most 2 eps_l.
				limit := cfg.Epsilon
				if tc.proto == "ss-topk" {
					limit = 2 * cfg.Epsilon
				}
				if !p.Private || !strings.Contains(p.Bound, tc.proto) || p.CentralEpsilon > limit {
					t.Fatalf("round %d privacy statement %+v", i+1, p)
				}
			}
			// Padding: each of the d dimensions reaches the same size n_p.
			if tc.proto != "ss-simple" {
				if tot := rs[0].Dummies; tot <= 0 || rs[0].Reports != int64(cfg.ClientsPerRound) {
					t.Fatalf("round 1: %d reports, %d dummies", rs[0].Reports, tot)
				}
			}
		})
	}
}

// TestFlameEngineRejects checks that the engine refuses, before training,
// FLAME parameters the protocol cannot honour.
func TestFlameEngineRejects(t *testing.T) {
	split := loadSample(t)
	for _, tc := range []struct {
		proto string
		opts  map[string]float64
		want  string
	}{
		{"ss-double", map[string]float64{"k": 8000}, "exceeds the dimension d = 7850"},
		{"ss-topk", map[string]float64{"np": 10}, "smaller than the 20 participants"},
		{"ss-topk", map[string]float64{"nu": 60}, "outside [1, 1/beta]"},
	} {
		cfg := smallConfig()
		cfg.Protocol = tc.proto
		cfg.Options = tc.opts
		_, err := New(cfg, split, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !IsUsageError(err) {
			t.Errorf("%s %v: error %v, want a usage error containing %q", tc.proto, tc.opts, err, tc.want)
		}
	}
	// Personalized budgets are not FLAME's model.
	cfg := smallConfig()
	cfg.Protocol = "ss-simple"
	budgets := make([]protocol.Budget, cfg.Clients)
	for i := range budgets {
		budgets[i] = protocol.Budget{Epsilon: 1 + float64(i)}
	}
	if _, err := New(cfg, split, budgets); err == nil || !strings.Contains(err.Error(), "one public local budget") {
		t.Errorf("personalized budgets: %v", err)
	}
}
