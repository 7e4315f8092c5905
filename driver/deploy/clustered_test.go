package deploy

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// clusteredConfig is a small clustered run: clients on the committed
// Fashion-MNIST sample, rotated partition with 2 groups, logistic
// regression (d = 7,850), every client in every round.
func clusteredConfig(proto string, clients, rounds int, opts map[string]float64) round.Config {
	cfg := round.DefaultConfig()
	cfg.Protocol, cfg.Dataset, cfg.Model, cfg.Clients, cfg.Rounds = proto, "fashion-mnist-sample", "logreg", clients, rounds
	cfg.Partition, cfg.Groups = "rotated", 2
	cfg.LocalEpochs, cfg.Workers, cfg.Seed = 1, 2, 7
	cfg.Options = opts
	cfg.SecureNoise = true
	return cfg
}

// modelsDiff is the largest relative difference between two lists of
// models, and whether the reference moved from its start at all.
func modelsDiff(t *testing.T, got, want, init [][]float64) (worst float64, moved bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d models, want %d", len(got), len(want))
	}
	for h := range want {
		if len(got[h]) != len(want[h]) {
			t.Fatalf("model %d has %d parameters, want %d", h, len(got[h]), len(want[h]))
		}
		for j := range want[h] {
			worst = math.Max(worst, math.Abs(got[h][j]-want[h][j])/math.Max(1, math.Abs(want[h][j])))
			moved = moved || want[h][j] != init[h][j]
		}
	}
	return worst, moved
}

// TestLocalClusteredEqualsSimulation runs ifca-dp (k = 2, nu = 1) and plain
// ifca (k = 2, and the one-model ablation k = 1) on loopback in test mode
// and compares all k final models with the engine's (faithful shuffler)
// for the same seed: every client receives the k models, chooses, trains
// and sanitizes exactly as the engine's client, and the analyzer runs the
// same k-means. Only the order of the released vectors differs (the
// engine's shuffled participant order, the deployment's shuffled arrival
// order), which changes the cluster means' floating-point summation order:
// each parameter must agree to a relative 1e-9 (local training's float32
// kernels can enlarge a last-bit difference of the means). ifca-dp must
// agree exactly: the secure sanitizer snaps every released value to a
// power-of-two grid (mechanism.SanitizeOptions.Secure), so the cluster
// sums are exact in any order.
func TestLocalClusteredEqualsSimulation(t *testing.T) {
	longtest.Skip(t) // 50 clients × 3 rounds of d = 7,850 per protocol
	for _, tc := range []struct {
		name  string
		proto string
		opts  map[string]float64
		tol   float64
	}{
		{"ifca-dp k=2 nu=1", "ifca-dp", map[string]float64{"k": 2, "nu": 1}, 0},
		{"ifca k=2", "ifca", map[string]float64{"k": 2}, 1e-9},
		{"ifca k=1", "ifca", map[string]float64{"k": 1}, 1e-9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := clusteredConfig(tc.proto, 50, 3, tc.opts)
			split := testSplit(t, cfg)
			eng, simRes := simulate(t, cfg, split)
			st, err := NewSetup(cfg, split, "test-"+tc.proto)
			if err != nil {
				t.Fatal(err)
			}
			init := append([][]float64{st.Init}, st.Hypotheses...)
			seed := cfg.Seed
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var got []round.RoundResult
			res, err := RunLocal(ctx, st, LocalOptions{Dir: t.TempDir(), TestSeed: &seed, RoundTimeout: 2 * time.Minute,
				Workers: 1, Observe: func(r round.RoundResult) { got = append(got, r) }, Logf: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != cfg.Rounds {
				t.Fatalf("%d rounds observed, want %d", len(got), cfg.Rounds)
			}
			worst, moved := modelsDiff(t, res.Models, eng.Models(), init)
			if !moved {
				t.Fatal("the simulation's models never moved: the comparison would prove nothing")
			}
			if worst > tc.tol || math.IsNaN(worst) {
				t.Fatalf("largest relative difference from the simulation %.3g > %g", worst, tc.tol)
			}
			for i, r := range got {
				s := simRes[i]
				if len(r.Hypotheses) != len(s.Hypotheses) {
					t.Fatalf("round %d: %d hypotheses recorded, the engine %d", r.Round, len(r.Hypotheses), len(s.Hypotheses))
				}
				for h := range s.Hypotheses {
					if r.Hypotheses[h].Size != s.Hypotheses[h].Size {
						t.Errorf("round %d: cluster %d has %d vectors, the engine's %d", r.Round, h, r.Hypotheses[h].Size, s.Hypotheses[h].Size)
					}
				}
				if math.Abs(r.TestAccuracy-s.TestAccuracy) > 1e-9 {
					t.Errorf("round %d: test accuracy %v, the engine's %v", r.Round, r.TestAccuracy, s.TestAccuracy)
				}
				if (r.DPrivacy == nil) != (s.DPrivacy == nil) {
					t.Fatalf("round %d: d_privacy %v, the engine's %v", r.Round, r.DPrivacy, s.DPrivacy)
				}
				if s.DPrivacy != nil && *r.DPrivacy != *s.DPrivacy {
					t.Errorf("round %d: d_privacy %+v, the engine's %+v", r.Round, *r.DPrivacy, *s.DPrivacy)
				}
				if r.Privacy.Bound != s.Privacy.Bound {
					t.Errorf("round %d: bound %q, the engine's %q", r.Round, r.Privacy.Bound, s.Privacy.Bound)
				}
			}
			t.Logf("%s: k = %d, d = %d, largest relative difference %.3g; final accuracy %.4f (engine %.4f); opened %+v; shuffler %+v",
				tc.name, st.K, st.Dim(), worst, got[len(got)-1].TestAccuracy, simRes[len(simRes)-1].TestAccuracy, res.Opened, res.Shuffler)
		})
	}
}

// TestClusteredSetupLimits: a clustered run whose k models do not fit one
// announcement is refused with an error naming the limit; the CNN
// (d = 1,199,882 on 28×28 images, 10 classes) fits up to k = 5.
func TestClusteredSetupLimits(t *testing.T) {
	for _, tc := range []struct {
		k  float64
		ok bool
	}{{5, true}, {6, false}} {
		cfg := clusteredConfig("ifca-dp", 10, 1, map[string]float64{"k": tc.k, "nu": 1})
		cfg.Model = "cnn"
		_, err := NewSetup(cfg, testSplit(t, cfg), "limits")
		switch {
		case tc.ok && err != nil:
			t.Errorf("k = %v: %v", tc.k, err)
		case !tc.ok && (err == nil || !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), "wire.MaxModelBytes")):
			t.Errorf("k = %v: error %v, want one wrapping checks.ErrInvalid naming wire.MaxModelBytes", tc.k, err)
		}
	}
}

// TestAnalyzerKeepsSetupHypotheses: the analyzer updates its own copies of
// the k initial models, never the Setup's (a restarted analyzer, or a
// second one on the same Setup, starts from the run's initial models).
func TestAnalyzerKeepsSetupHypotheses(t *testing.T) {
	h := newHarnessConfig(t, ifcaHarnessConfig(2, 1), 1)
	h.waitRound(t, 1)
	h.cancel()
	before := [][]float64{append([]float64(nil), h.st.Init...), append([]float64(nil), h.st.Hypotheses[0]...)}
	s, err := seal.NewSealer(h.creds.HPKEPublic, h.st.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var ms []*wire.SealedMessage
	for _, v := range []float64{0.3, -0.3} {
		vals := make([]float64, h.st.Dim())
		for j := range vals {
			vals[j] = v
		}
		ct, err := s.Seal(1, seal.Report, vals)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, &wire.SealedMessage{Ciphertext: ct})
	}
	if _, err := h.an.batch(&wire.BatchHeader{Round: 1, RunId: h.st.RunID, Counts: &wire.BatchCounts{Reports: 2, Messages: 2}}, ms); err != nil {
		t.Fatal(err)
	}
	after := h.an.Models()
	worst, _ := modelsDiff(t, [][]float64{h.st.Init, h.st.Hypotheses[0]}, before, before)
	if worst != 0 {
		t.Fatalf("the release changed the Setup's initial models (difference %v)", worst)
	}
	if moved, _ := modelsDiff(t, after, before, before); moved == 0 {
		t.Fatal("the release changed no model")
	}
}
