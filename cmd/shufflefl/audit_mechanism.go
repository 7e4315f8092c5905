package main

import (
	"fmt"
	"io"
	"strings"

	"shufflefl/audit"
)

func init() { auditCommands["mechanism"] = runAuditMechanism }

const auditMechanismUsage = `Usage: shufflefl audit mechanism --mechanism NAME --epsilon E [--delta D] [--miscalibrate F] --trials T [flags]

The distinguishing game of one local randomizer of package mechanism: T
draws on each of two inputs at the mechanism's full sensitivity, the first
half choosing a threshold test on the output, the second half measuring it;
Clopper-Pearson bounds at --confidence give
eps_lower = log((TPR_lo - delta)/FPR_hi). eps_lower above the claimed
epsilon means the mechanism is NOT (epsilon, delta)-DP (exit status 0; the
report says VIOLATION). --miscalibrate F builds the noise F times too small,
a negative control the audit must catch. Trials run in parallel and stream
into histograms: memory does not grow with T.

Mechanisms: ` + "%s" + ` (or "all").

Examples:
  shufflefl audit mechanism --mechanism laplace --epsilon 1 --trials 1000000
  shufflefl audit mechanism --mechanism gaussian --epsilon 1 --delta 1e-5 --miscalibrate 2 --trials 1000000 --json
  shufflefl audit mechanism --mechanism all --epsilon 2 --trials 1000000 --out out/audit-mech
`

func runAuditMechanism(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("mechanism", fmt.Sprintf(auditMechanismUsage, strings.Join(audit.MechanismNames(), ", ")), stdout, stderr)
	name := c.fs.String("mechanism", "", "randomizer to audit (see above), or all")
	eps := c.fs.Float64("epsilon", 0, "claimed epsilon of one release")
	delta := c.fs.Float64("delta", 1e-5, "claimed delta (approximate mechanisms only)")
	mis := c.fs.Float64("miscalibrate", 1, "make the noise this many times too small (negative control)")
	trials := c.fs.Int64("trials", 1_000_000, "draws per input (half choose the test, half measure it)")
	conf := c.fs.Float64("confidence", 0.95, "confidence of the lower bound")
	if code, ok := c.parse(args); !ok {
		return code
	}
	names := []string{*name}
	if *name == "all" {
		names = audit.MechanismNames()
	}
	if *name == "" {
		return c.fail(fmt.Errorf("%w", errMissing("--mechanism")))
	}
	ctx, stop := c.context()
	defer stop()
	rep := audit.MechanismReport{Command: commandLine("mechanism", args)}
	for _, n := range names {
		m, err := audit.MechanismFor(n, *eps, *delta, *mis)
		if err != nil {
			return c.fail(err)
		}
		res, err := audit.MechanismGame(ctx, m, *mis, audit.GameConfig{Trials: *trials, Confidence: *conf, Seed: c.common.seed,
			Workers: c.common.workers, Progress: c.progress(n + " trials")})
		if err != nil {
			return c.fail(err)
		}
		rep.Results = append(rep.Results, res)
	}
	return c.emit(rep.Markdown(), rep, nil)
}
