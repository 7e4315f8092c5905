package audit

import (
	"errors"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// TestTrainConfig: a study's training run takes its settings, the target
// only for an add/remove protocol and ldp-min's minimum from the epsilon.
func TestTrainConfig(t *testing.T) {
	o := TrainOptions{Model: "mlp", Dataset: "fashion-mnist-sample", Clients: 20, Samples: 10, Rounds: 3, Epochs: 2, LR: 0.5, Clip: 0.1,
		Epsilon: 2, Target: 8, Delta: 1e-5}
	c := Common{Seed: 7, Workers: 1}
	for _, tt := range []struct {
		protocol string
		target   float64
		minEps   float64
	}{{" nonprivate", 0, 0}, {"dp-central", 8, 0}, {"ldp-min", 0, 2}} {
		cfg := o.config(tt.protocol, c)
		if cfg.Protocol != strings.TrimSpace(tt.protocol) || cfg.Clients != 20 || cfg.SamplesPerClient != 10 || cfg.Rounds != 3 ||
			cfg.LocalEpochs != 2 || cfg.LR != 0.5 || cfg.Epsilon != 2 || cfg.Seed != 7 || cfg.Workers != 1 || cfg.Out != "" {
			t.Errorf("%q: config %+v", tt.protocol, cfg)
		}
		if cfg.TargetEpsilon != tt.target {
			t.Errorf("%q: target %v, want %v", tt.protocol, cfg.TargetEpsilon, tt.target)
		}
		if got := cfg.Options["min-epsilon"]; got != tt.minEps {
			t.Errorf("%q: min-epsilon %v, want %v", tt.protocol, got, tt.minEps)
		}
	}
}

// TestStudyInvalid: bad settings are invalid input, found before training.
func TestStudyInvalid(t *testing.T) {
	if _, err := (CanaryOptions{TrainOptions: TrainOptions{Clients: 10}, Canaries: 20}).Study("", Common{}); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("canaries > clients: %v", err)
	}
	if _, err := ParseFloats("--nu", "1,x"); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("ParseFloats: %v", err)
	}
	if v, err := ParseFloats("--nu", " 1, ,2.5"); err != nil || len(v) != 2 || v[1] != 2.5 {
		t.Errorf("ParseFloats = %v, %v", v, err)
	}
}
