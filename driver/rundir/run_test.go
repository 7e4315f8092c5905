package rundir

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim/metrics"
)

// TestProgress: every mode writes the round's line to run.log; log mode
// shows it too, none shows nothing, bar draws a bar ended by Done.
func TestProgress(t *testing.T) {
	eps := 1.5
	rec := metrics.Record{Round: 1, TestAccuracy: 0.5, TestLoss: 1, CumulativeEpsilon: &eps}
	const line = "round 1/2  acc 0.5000  loss 1.0000  eps 1.5  0.00s\n"
	for _, tt := range []struct {
		mode, want string
	}{{"log", line}, {"none", ""}, {"auto", line}, {"bar", "\r[###############...............] 1/2 acc 0.5000 eps 1.5 eta 0s   \n"}} {
		var term, log bytes.Buffer
		p := NewProgress(tt.mode, &term, &log, 2)
		p.Round(rec)
		p.Done()
		if log.String() != line {
			t.Errorf("%s: run.log got %q, want %q", tt.mode, log.String(), line)
		}
		if term.String() != tt.want {
			t.Errorf("%s: terminal got %q, want %q", tt.mode, term.String(), tt.want)
		}
	}
}

// TestPlanLine: a resumed plan says which rounds are done, an approximate
// one that it is not a proven bound.
func TestPlanLine(t *testing.T) {
	p := round.Plan{Rounds: 3, Epsilon: 8, Delta: 1e-6, Method: "PLD"}
	if got, want := PlanLine(p, ""), "3 rounds spend at most epsilon 8 at delta 1e-06 (PLD)"; got != want {
		t.Errorf("PlanLine = %q, want %q", got, want)
	}
	p.Done, p.Approximate = 1, true
	got := PlanLine(p, "; x")
	for _, s := range []string{"(the 1 done, as they were accounted, and 2 more)", "approximately (not a proven bound)", "; x"} {
		if !strings.Contains(got, s) {
			t.Errorf("PlanLine = %q, lacks %q", got, s)
		}
	}
}
