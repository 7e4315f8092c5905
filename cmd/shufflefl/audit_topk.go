package main

import (
	"io"

	"github.com/shufflefl/shufflefl/research/audit"
)

func init() { auditCommands["topk"] = runAuditTopk }

func runAuditTopk(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("topk", audit.TopkHelp, stdout, stderr)
	var o audit.TopkOptions
	o.RegisterFlags(c.fs)
	if code, ok := c.parse(args); !ok {
		return code
	}
	rep, err := o.Study(audit.CommandLine("topk", args), c.study())
	if err != nil {
		return c.fail(err)
	}
	return c.emit(rep.Markdown(), rep, nil)
}
