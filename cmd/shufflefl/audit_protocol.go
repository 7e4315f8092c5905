package main

import (
	"io"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/research/audit"
)

func init() { auditCommands["protocol"] = runAuditProtocol }

func runAuditProtocol(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("protocol", audit.ProtocolHelp, stdout, stderr)
	var cfg audit.ProtocolAuditConfig
	opts := cfg.RegisterFlags(c.fs)
	if code, ok := c.parse(args); !ok {
		return code
	}
	if cfg.Protocol == "" {
		return c.fail(checks.Invalidf("--protocol is required"))
	}
	var err error
	if cfg.Options, err = round.ParseOptions(*opts); err != nil {
		return c.fail(err)
	}
	ctx, stop := c.context()
	defer stop()
	if cfg.Engine {
		if cfg.Split, err = data.Load(cfg.Dataset, data.Options{Seed: c.common.seed}); err != nil {
			return c.fail(err)
		}
	}
	cfg.Seed, cfg.Workers, cfg.Progress = c.common.seed, c.common.workers, c.progress
	cfg.Warn = func(n string, err error) { c.warn("%s skipped: %s", n, oneLine(err)) }
	rep, err := audit.ProtocolAudit(ctx, cfg)
	if err != nil {
		return c.fail(err)
	}
	rep.Command = audit.CommandLine("protocol", args)
	return c.emit(rep.Markdown(), rep, nil)
}
