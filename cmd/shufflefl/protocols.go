package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/protocol"
)

const protocolsUsage = `Usage: shufflefl protocols [NAME]

Without NAME, lists the protocols of 'shufflefl run --protocol NAME': what
each does, the paper it implements, the privacy budgets it takes and the
names of its options. With NAME, describes that protocol and every option it
accepts: meaning, default and valid values.

Options are given to run as --option NAME=VALUE (repeatable), or in a
--config file as "option: {NAME: VALUE}"; a protocol rejects any option it
does not list. 'shufflefl run --protocol NAME --help' appends the same
options to the flags of run. Output goes to stdout.

Exit status: 0 success, 2 unknown protocol or bad arguments.

Examples:
  shufflefl protocols
  shufflefl protocols ss-topk
`

// runProtocols implements `shufflefl protocols [NAME]`.
func runProtocols(args []string, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "shufflefl protocols: %s\n", strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", "; "))
		return 2
	}
	for _, a := range args {
		switch {
		case a == "-h" || a == "-help" || a == "--help":
			fmt.Fprint(stdout, protocolsUsage)
			return 0
		case strings.HasPrefix(a, "-"):
			return fail("flag provided but not defined: %s (see shufflefl protocols --help)", a)
		}
	}
	switch len(args) {
	case 0:
		round.WriteProtocols(stdout)
		return 0
	case 1:
		info, err := protocol.Describe(args[0])
		if err != nil {
			return fail("%s", oneLine(err))
		}
		round.WriteProtocol(stdout, info)
		return 0
	default:
		return fail("expected at most one protocol name, got %d: %s (see shufflefl protocols --help)", len(args), strings.Join(args, " "))
	}
}
