package main

import (
	"fmt"
	"io"

	"github.com/shufflefl/shufflefl/research/audit"
	"github.com/shufflefl/shufflefl/research/bound"
)

func init() { auditCommands["accountant"] = runAuditAccountant }

// exitViolation is the exit status of `audit accountant` when a statement
// is below a lower bound.
const exitViolation = 3

func runAuditAccountant(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("accountant", audit.AccountantHelp, stdout, stderr)
	dir := c.fs.String("run", "", "the --out directory of a finished shufflefl run")
	if code, ok := c.parse(args); !ok {
		return code
	}
	rep, err := audit.AccountantStudy(*dir, audit.CommandLine("accountant", args))
	if err != nil {
		return c.fail(err)
	}
	if code := c.emit(rep.Markdown(), rep, nil); code != 0 {
		return code
	}
	for _, ch := range rep.Checks {
		if ch.Error != "" {
			c.warn("after round %d: %s not computed: %s", ch.Round, ch.Bound, ch.Error)
		}
	}
	if rep.Violations == 0 {
		return 0
	}
	for _, ch := range rep.Checks {
		if ch.Violation {
			fmt.Fprintf(stderr, "shufflefl audit accountant: VIOLATION: after round %d the run states epsilon %s at delta %s, below the lower bound %s (%s)\n",
				ch.Round, bound.Figure(ch.Claimed, 6), bound.Figure(ch.Delta, 3), bound.Figure(ch.Lower, 6), ch.Bound)
		}
	}
	return exitViolation
}
