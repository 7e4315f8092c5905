package audit

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/rundir"
	"github.com/shufflefl/shufflefl/driver/sim/metrics"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
	"github.com/shufflefl/shufflefl/protocol"
)

// RunSummary is the part of a run's summary.json the accountant audit reads.
type RunSummary struct {
	Dim               int      `json:"dim"`
	Clients           int      `json:"clients"`
	CumulativeEpsilon *float64 `json:"cumulative_epsilon"`
	CumulativeDelta   float64  `json:"cumulative_delta"`
}

// deref returns *p, or NaN for nil (a figure the run did not state).
func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// flameRandomizer returns a FLAME run's local randomizer from its options
// (nil for the other protocols): randomizer=1 is Laplace on [0, 1], 0 (the
// default) R_{gamma,b} with option levels b (default from the protocol's
// documentation).
func flameRandomizer(cfg round.Config) (*amplify.Randomizer, error) {
	switch cfg.Protocol {
	case "ss-simple", "ss-double", "ss-topk":
	default:
		return nil, nil
	}
	if cfg.Options["randomizer"] == 1 {
		return &amplify.Randomizer{Mech: amplify.Laplace}, nil
	}
	levels, ok := cfg.Options["levels"]
	if !ok {
		info, err := protocol.Describe(cfg.Protocol)
		if err != nil {
			return nil, err
		}
		for _, o := range info.Options {
			if o.Name == "levels" {
				v, err := strconv.Atoi(strings.Fields(o.Default)[0])
				if err != nil {
					return nil, fmt.Errorf("the default of option levels (%q): %w", o.Default, err)
				}
				levels = float64(v)
			}
		}
	}
	if levels < 2 {
		return nil, checks.Invalidf("option levels of %s: %v, want >= 2", cfg.Protocol, levels)
	}
	return &amplify.Randomizer{Mech: amplify.RGammaB, K: int(levels)}, nil
}

// sparsePlan fills in a sparse FLAME round's k and n_p as the run's
// protocol resolves them for the round's shape (options or defaults).
func sparsePlan(cfg round.Config, dim int, r *RunRound) error {
	if cfg.Protocol != "ss-double" && cfg.Protocol != "ss-topk" {
		return nil
	}
	p, err := protocol.New(cfg.Protocol, protocol.Params{Clip: cfg.Clip, Delta: cfg.Delta, Epsilon: r.LocalEps, Rounds: cfg.Rounds,
		SampleRate: 1, Extra: cfg.Options})
	if err != nil {
		return err
	}
	s := protocol.Shape{Round: r.Round, Dim: dim, Population: cfg.Clients, Participants: r.Participants}
	switch p := p.(type) {
	case protocol.SSDouble:
		r.K, r.NP, err = p.Plan(s)
	case protocol.SSTopk:
		r.K, r.NP, _, _, err = p.Plan(s)
	default:
		err = fmt.Errorf("protocol %s is not a sparse FLAME protocol", cfg.Protocol)
	}
	return err
}

// sampleRate is the run's sampling rate, as the run built its protocol:
// clients per round over clients (1 without sampling).
func sampleRate(cfg round.Config) float64 {
	if cfg.ClientsPerRound <= 0 || cfg.ClientsPerRound >= cfg.Clients {
		return 1
	}
	return float64(cfg.ClientsPerRound) / float64(cfg.Clients)
}

// Facts turns a finished run (its configuration, summary and per-round
// records) into the facts CheckAccountant needs: each round's cumulative
// statement (the summary's final one if smaller) and, for the FLAME
// protocols, the randomizer and the sparse rounds' k and n_p.
func Facts(cfg round.Config, sum RunSummary, recs []metrics.Record) (RunFacts, error) {
	f := RunFacts{Protocol: cfg.Protocol, Dim: sum.Dim, Clients: sum.Clients,
		Sampled: cfg.ClientsPerRound > 0 && cfg.ClientsPerRound < cfg.Clients,
		Params: &protocol.Params{Clip: cfg.Clip, Delta: cfg.Delta, Rounds: cfg.Rounds, SampleRate: sampleRate(cfg), Extra: cfg.Options,
			Secure: cfg.SecureNoise, Population: cfg.Clients, Layers: []int{sum.Dim}},
		RoundDelta: account.RoundDelta(cfg.Delta, cfg.Rounds), CentralTarget: round.CentralTarget(cfg.Protocol)}
	if f.CentralTarget {
		f.Params.Epsilon = cfg.TargetEpsilon
	}
	var err error
	if f.Randomizer, err = flameRandomizer(cfg); err != nil {
		return f, err
	}
	for i, r := range recs {
		rr := RunRound{Round: r.Round, Participants: r.Participants, Claimed: math.NaN(), Delta: r.CumulativeDelta,
			Approximate: r.CumulativeApproximate || r.Approximate,
			LocalEps:    deref(r.LocalEpsilonMax), LocalEpsMin: deref(r.LocalEpsilonMin), LocalCoordEps: deref(r.LocalCoordEpsilonMax)}
		if r.CumulativeEpsilon != nil {
			rr.Claimed = *r.CumulativeEpsilon
		}
		if i == len(recs)-1 && sum.CumulativeEpsilon != nil && sum.CumulativeDelta == rr.Delta {
			// The summary's final statement is what a reader quotes:
			// check the smaller of the two if they differ.
			rr.Claimed = math.Min(rr.Claimed, *sum.CumulativeEpsilon)
		}
		if err := sparsePlan(cfg, f.Dim, &rr); err != nil {
			return f, fmt.Errorf("round %d: %w", r.Round, err)
		}
		f.Rounds = append(f.Rounds, rr)
	}
	return f, nil
}

// ReadRun reads a finished run's directory (its config.yaml, summary.json
// and metrics.jsonl; package rundir) into the facts CheckAccountant needs.
func ReadRun(dir string) (RunFacts, error) {
	var f RunFacts
	cfg := round.DefaultConfig()
	own, _, err := rundir.ReadConfig(filepath.Join(dir, "config.yaml"), &cfg)
	if err != nil {
		return f, fmt.Errorf("run %s: %w", dir, err)
	}
	if len(own.Options) > 0 {
		if cfg.Options, err = round.ParseOptions(own.Options); err != nil {
			return f, fmt.Errorf("run %s: %w", dir, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return f, checks.Invalidf("run %s: %v (only a finished run can be audited)", dir, err)
	}
	var sum RunSummary
	if err := json.Unmarshal(b, &sum); err != nil {
		return f, rundir.BadFile(filepath.Join(dir, "summary.json"), fmt.Errorf("not valid JSON (%v): the file is truncated or corrupt", err))
	}
	recs, err := rundir.ReadRecords(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		return f, fmt.Errorf("run %s: %w", dir, err)
	}
	if len(recs) == 0 {
		return f, checks.Invalidf("run %s: metrics.jsonl has no rounds", dir)
	}
	if sum.Dim < 1 || sum.Clients < 1 {
		return f, checks.Invalidf("run %s: summary.json states dimension %d and %d clients", dir, sum.Dim, sum.Clients)
	}
	if f, err = Facts(cfg, sum, recs); err != nil {
		return f, fmt.Errorf("run %s: %w", dir, err)
	}
	return f, nil
}
