package main

import (
	"fmt"
	"io"

	"shufflefl/audit"
	"shufflefl/bound"
)

func init() { auditCommands["accountant"] = runAuditAccountant }

// exitViolation is the exit status of `audit accountant` when a statement
// is below a lower bound.
const exitViolation = 3

const auditAccountantUsage = `Usage: shufflefl audit accountant --run DIR [flags]

Recomputes a finished run's privacy statements against independent LOWER
bounds: exact figures for neighbouring pairs the statement covers, computed
without the run's accountant. DIR is the --out directory of a shufflefl run
(config.yaml, metrics.jsonl, summary.json). The cumulative statement after
the first and after the last round is checked:

  ldp-laplace, pldp, ldp-min   optimal composition (Kairouz et al.;
                               Murtagh-Vadhan, exact) of the d·t
                               per-coordinate eps_c-DP releases
  apes, unis, ss-simple        shuffled binary randomized response of one
                               coordinate (exact), and the count of ones
                               over all d·t shuffled releases
  ss-simple, ss-double,        the count of values above an optimised
  ss-topk                      threshold over every value of the t rounds,
                               with the run's randomizer (FLAME)

The other protocols (Gaussian noise, d-privacy, no claim, S-APES) and runs
with client sampling or sit-outs are reported as not checked, with the
reason.

Exit status: 0 every statement is at or above its lower bounds (or none
could be checked), 3 some statement is below a lower bound (one line per
violation on stderr), 1 internal failure, 2 bad arguments or an unreadable
run directory.

Examples:
  shufflefl run --protocol ss-double --epsilon 1 --option k=1 --option randomizer=1 --clients 1000 --rounds 1 --delta 1e-6 --out out/ssd
  shufflefl audit accountant --run out/ssd
`

func runAuditAccountant(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("accountant", auditAccountantUsage, stdout, stderr)
	dir := c.fs.String("run", "", "the --out directory of a finished shufflefl run")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if *dir == "" {
		return c.fail(errMissing("--run"))
	}
	facts, err := audit.ReadRun(*dir)
	if err != nil {
		return c.fail(err)
	}
	cs, why, err := audit.CheckAccountant(facts)
	if err != nil {
		return c.fail(err)
	}
	rep := audit.AccountantReport{Command: commandLine("accountant", args), Run: *dir, Protocol: facts.Protocol, Dim: facts.Dim,
		Clients: facts.Clients, Rounds: len(facts.Rounds), Checks: cs, NotChecked: why}
	for _, ch := range cs {
		if ch.Violation {
			rep.Violations++
		}
	}
	if code := c.emit(rep.Markdown(), rep, nil); code != 0 {
		return code
	}
	for _, ch := range cs {
		if ch.Error != "" {
			c.warn("after round %d: %s not computed: %s", ch.Round, ch.Bound, ch.Error)
		}
	}
	if rep.Violations == 0 {
		return 0
	}
	for _, ch := range cs {
		if ch.Violation {
			fmt.Fprintf(stderr, "shufflefl audit accountant: VIOLATION: after round %d the run states epsilon %s at delta %s, below the lower bound %s (%s)\n",
				ch.Round, bound.Figure(ch.Claimed, 6), bound.Figure(ch.Delta, 3), bound.Figure(ch.Lower, 6), ch.Bound)
		}
	}
	return exitViolation
}
