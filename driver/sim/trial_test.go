package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
)

// extremeConfig is smallConfig for one round of protocol proto with one
// setting pushed to an extreme value.
func extremeConfig(proto string, opts map[string]float64, key string, v float64) round.Config {
	cfg := smallConfig()
	cfg.Protocol, cfg.Options, cfg.Rounds, cfg.LocalEpochs = proto, opts, 1, 1
	if proto == "dp-central" {
		cfg.TargetEpsilon = 5
	}
	switch key {
	case "epsilon":
		cfg.Epsilon = v
	case "clip":
		cfg.Clip = v
	case "lr":
		cfg.LR = v
	case "server-lr":
		cfg.ServerLR = v
	case "target-epsilon":
		cfg.TargetEpsilon = v
	default:
		panic("extremeConfig: unknown key " + key)
	}
	return cfg
}

// TestPreflightCatchesRoundOneFailures: parameters that pass every
// protocol's Check and Account but failed in round 1, after the plan was
// printed and the outputs were started (a noise scale the samplers cannot
// represent, noise or an update that takes the model out of float32 range,
// a learning rate that makes local training diverge), now fail in New with
// a usage error naming the cause.
func TestPreflightCatchesRoundOneFailures(t *testing.T) {
	split := loadSample(t)
	for _, tc := range []struct {
		proto string
		opts  map[string]float64
		key   string
		value float64
		want  string
	}{
		{"ldp-laplace", nil, "epsilon", 1e300, "laplace scale"},
		{"ldp-laplace", nil, "epsilon", 1e-300, "laplace scale"},
		{"ldp-gaussian", nil, "epsilon", 1e-300, "noise alone"},
		{"e-apes", nil, "epsilon", 1e-300, "noise alone"},
		{"ss-simple", nil, "epsilon", 1e-30, "too small"},
		{"ss-simple", nil, "clip", 1e300, "noise alone"},
		{"ss-double", map[string]float64{"k": 157, "np": 20}, "clip", 1e300, "noise alone"},
		{"ss-topk", map[string]float64{"k": 157, "np": 40}, "clip", 1e300, "noise alone"},
		{"s-apes", nil, "epsilon", 1e30, "calibration is not finite"},
		{"apes", nil, "server-lr", 1e300, "server-lr"},
		{"nonprivate", nil, "server-lr", 1e300, "server-lr"},
		{"nonprivate", nil, "lr", 1e300, "diverged"},
		{"ifca-dp", nil, "lr", 1e300, "diverged"},
	} {
		t.Run(fmt.Sprintf("%s %s=%g", tc.proto, tc.key, tc.value), func(t *testing.T) {
			_, err := New(extremeConfig(tc.proto, tc.opts, tc.key, tc.value), split, nil)
			if err == nil || !IsUsageError(err) || !strings.Contains(err.Error(), "pre-flight") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v; want a pre-flight usage error containing %q", err, tc.want)
			}
		})
	}
}

// TestPreflightOrRoundOne: for every protocol and every extreme value of
// the parameters that shape its noise and its steps, either New refuses
// the run with a usage error or round 1 runs: nothing the pre-flight
// passes fails later.
func TestPreflightOrRoundOne(t *testing.T) {
	split := loadSample(t)
	protos := slices.Clone(privateProtocols)
	protos = append(protos, struct {
		name string
		opts map[string]float64
	}{"nonprivate", nil}, struct {
		name string
		opts map[string]float64
	}{"ifca-dp", nil})
	extremes := []struct {
		key    string
		values []float64
	}{
		{"epsilon", []float64{1e-300, 1e-30, 1e30, 1e300, 1e308}},
		{"clip", []float64{1e-300, 1e300}},
		{"lr", []float64{1e300}},
		{"server-lr", []float64{1e300}},
		{"target-epsilon", []float64{1e-300, 1e300}},
	}
	for _, p := range protos {
		for _, x := range extremes {
			for _, v := range x.values {
				cfg := extremeConfig(p.name, p.opts, x.key, v)
				e, err := New(cfg, split, nil)
				if err != nil {
					if !IsUsageError(err) {
						t.Errorf("%s %s=%g: New: %v, not a usage error", p.name, x.key, v, err)
					}
					continue
				}
				if _, err := e.Step(); err != nil {
					t.Errorf("%s %s=%g: passed the pre-flight, then round 1 failed: %v", p.name, x.key, v, err)
				}
			}
		}
	}
}
