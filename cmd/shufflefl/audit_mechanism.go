package main

import (
	"fmt"
	"io"
	"strings"

	"shufflefl/audit"
)

func init() { auditCommands["mechanism"] = runAuditMechanism }

func runAuditMechanism(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("mechanism", fmt.Sprintf(audit.MechanismHelp, strings.Join(audit.MechanismNames(), ", ")), stdout, stderr)
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
	rep := audit.MechanismReport{Command: audit.CommandLine("mechanism", args)}
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
