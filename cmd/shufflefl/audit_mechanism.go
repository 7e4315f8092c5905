package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/shufflefl/shufflefl/research/audit"
)

func init() { auditCommands["mechanism"] = runAuditMechanism }

func runAuditMechanism(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("mechanism", fmt.Sprintf(audit.MechanismHelp, strings.Join(audit.MechanismNames(), ", ")), stdout, stderr)
	var o audit.MechanismOptions
	o.RegisterFlags(c.fs)
	if code, ok := c.parse(args); !ok {
		return code
	}
	ctx, stop := c.context()
	defer stop()
	rep, err := o.Study(ctx, audit.CommandLine("mechanism", args), c.study())
	if err != nil {
		return c.fail(err)
	}
	return c.emit(rep.Markdown(), rep, nil)
}
