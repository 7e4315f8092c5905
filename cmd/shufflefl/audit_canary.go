package main

import (
	"io"

	"github.com/shufflefl/shufflefl/research/audit"
)

func init() {
	auditCommands["canary"] = runAuditCanary
	auditCommands["one-run"] = runAuditCanary
}

func runAuditCanary(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("canary", audit.CanaryHelp, stdout, stderr)
	var o audit.CanaryOptions
	o.RegisterFlags(c.fs)
	if code, ok := c.parse(args); !ok {
		return code
	}
	rep, err := o.Study(audit.CommandLine("canary", args), c.study())
	if err != nil {
		return c.fail(err)
	}
	return c.emit(rep.Markdown(), rep, nil)
}
