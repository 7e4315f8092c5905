package main

import (
	"io"

	"github.com/shufflefl/shufflefl/research/audit"
)

func init() { auditCommands["inversion"] = runAuditInversion }

func runAuditInversion(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("inversion", audit.InversionHelp, stdout, stderr)
	var o audit.InversionOptions
	o.RegisterFlags(c.fs)
	if code, ok := c.parse(args); !ok {
		return code
	}
	rep, images, err := o.Study(audit.CommandLine("inversion", args), c.study())
	if err != nil {
		return c.fail(err)
	}
	return c.emit(rep.Markdown(), rep, images)
}
