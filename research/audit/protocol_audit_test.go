package audit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim/metrics"
)

// TestProtocolAudit: one protocol is played once and rendered; a bad
// tight-trials count and --miscalibrate with the engine are invalid.
func TestProtocolAudit(t *testing.T) {
	cfg := ProtocolAuditConfig{Protocol: "ldp-laplace", Epsilon: 2, TargetEpsilon: 4, Delta: 1e-5, Clip: 1, Dim: 2, Clients: 10,
		Miscalibrate: 1, Trials: 2000, Confidence: 0.95, Seed: 1}
	rep, err := ProtocolAudit(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Protocol != "ldp-laplace" || rep.Tight != nil {
		t.Fatalf("report %+v", rep)
	}
	if md := rep.Markdown(); !strings.Contains(md, "| ldp-laplace | none |") {
		t.Errorf("markdown:\n%s", md)
	}
	for _, bad := range []func(c *ProtocolAuditConfig){
		func(c *ProtocolAuditConfig) { c.TightTrials = -1 },
		func(c *ProtocolAuditConfig) { c.Engine, c.Miscalibrate = true, 2 },
	} {
		c := cfg
		bad(&c)
		if _, err := ProtocolAudit(context.Background(), c); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%+v: err %v, want invalid", c, err)
		}
	}
}

// TestFacts: a run's records become cumulative statements; the summary's
// final figure is used when smaller.
func TestFacts(t *testing.T) {
	e1, e2, final := 1.0, 2.0, 1.5
	recs := []metrics.Record{{Round: 1, Participants: 10, CumulativeEpsilon: &e1, CumulativeDelta: 1e-6},
		{Round: 2, Participants: 10, CumulativeEpsilon: &e2, CumulativeDelta: 2e-6}}
	cfg := round.DefaultConfig()
	cfg.Protocol = "ldp-laplace"
	f, err := Facts(cfg, RunSummary{Dim: 5, Clients: 10, CumulativeEpsilon: &final, CumulativeDelta: 2e-6}, recs)
	if err != nil {
		t.Fatal(err)
	}
	if f.Dim != 5 || len(f.Rounds) != 2 || f.Rounds[0].Claimed != 1 || f.Rounds[1].Claimed != 1.5 || f.Randomizer != nil {
		t.Errorf("facts %+v", f)
	}
}
