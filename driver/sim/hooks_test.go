package sim

import (
	"slices"
	"sync"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/protocol"
)

// runHooked runs cfg with hooks h and returns the rounds and final weights.
func runHooked(t *testing.T, cfg round.Config, h Hooks) ([]round.RoundResult, []float64) {
	t.Helper()
	e, err := New(cfg, loadSample(t), nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.SetHooks(h)
	var out []round.RoundResult
	if _, err := e.Run(func(r round.RoundResult) { out = append(out, r) }); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out, slices.Clone(e.Weights())
}

func TestHooks(t *testing.T) {
	cfg := smallConfig()
	cfg.Protocol = "ldp-laplace"
	cfg.Epsilon = 50
	cfg.Rounds = 2
	base, wBase := runHooked(t, cfg, Hooks{})

	t.Run("observers change nothing", func(t *testing.T) {
		var mu sync.Mutex
		seen := map[[2]int]int{}
		got, w := runHooked(t, cfg, Hooks{
			Update: func(round, client int, u []float64) {},
			Report: func(round, client int, rep *protocol.Report) {
				mu.Lock()
				seen[[2]int{round, client}] = len(rep.Values)
				mu.Unlock()
			},
		})
		sameTrajectory(t, base, got)
		if !slices.Equal(w, wBase) {
			t.Fatal("observing hooks changed the model")
		}
		if len(seen) != cfg.Rounds*cfg.ClientsPerRound {
			t.Fatalf("Report hook saw %d reports, want %d", len(seen), cfg.Rounds*cfg.ClientsPerRound)
		}
		for k, n := range seen {
			if n != len(wBase) {
				t.Fatalf("report of %v has %d values, want %d", k, n, len(wBase))
			}
		}
	})

	t.Run("canary update reaches the report", func(t *testing.T) {
		// A canary client whose update is +C on every coordinate: its
		// clipped input is C everywhere, so its Laplace report averages C.
		canary := -1
		var mu sync.Mutex
		var mean float64
		_, _ = runHooked(t, cfg, Hooks{
			Update: func(round, client int, u []float64) {
				mu.Lock()
				defer mu.Unlock()
				if canary < 0 {
					canary = client
				}
				if client == canary {
					for i := range u {
						u[i] = 1
					}
				}
			},
			Report: func(round, client int, rep *protocol.Report) {
				mu.Lock()
				defer mu.Unlock()
				if client == canary && round == 1 {
					for _, v := range rep.Values {
						mean += v / float64(len(rep.Values))
					}
				}
			},
		})
		// Noise per coordinate has scale 2C·d/eps = 2·0.1·7850/50 = 31.4;
		// the mean of 7,850 draws has standard deviation 31.4·√2/√7850 ≈ 0.5.
		if mean < cfg.Clip-3 || mean > cfg.Clip+3 {
			t.Fatalf("canary report mean %v, want about %v", mean, cfg.Clip)
		}
	})

	t.Run("salt redraws only the mechanisms", func(t *testing.T) {
		var mu sync.Mutex
		upd := func(dst map[[2]int]float64) func(int, int, []float64) {
			return func(round, client int, u []float64) {
				mu.Lock()
				dst[[2]int{round, client}] = u[0] + u[100] + u[7849]
				mu.Unlock()
			}
		}
		a, b := map[[2]int]float64{}, map[[2]int]float64{}
		r1, w1 := runHooked(t, cfg, Hooks{Update: upd(a), NoiseSalt: 1})
		_, w2 := runHooked(t, cfg, Hooks{Update: upd(b), NoiseSalt: 2})
		// Round 1's updates come from the same global model, sampling and
		// training streams: identical. The noise differs.
		for k, v := range a {
			if k[0] == 1 && b[k] != v {
				t.Fatalf("round-1 update of client %d changed with the salt", k[1])
			}
		}
		if len(a) != len(b) {
			t.Fatal("the salt changed which clients were sampled")
		}
		if slices.Equal(w1, w2) || slices.Equal(w1, wBase) {
			t.Fatal("the salt did not change the mechanisms' randomness")
		}
		if r1[0].Participants != base[0].Participants {
			t.Fatal("the salt changed the participants")
		}
	})
}
