package main

import (
	"io"

	"github.com/shufflefl/shufflefl/research/audit"
)

func init() { auditCommands["mia"] = runAuditMIA }

func runAuditMIA(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("mia", audit.MIAHelp, stdout, stderr)
	var o audit.MIAOptions
	o.RegisterFlags(c.fs)
	if code, ok := c.parse(args); !ok {
		return code
	}
	rep, err := o.Study(audit.CommandLine("mia", args), c.study())
	if err != nil {
		return c.fail(err)
	}
	return c.emit(rep.Markdown(), rep, nil)
}
