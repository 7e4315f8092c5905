package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/research/bound"
)

// runBound implements `shufflefl bound SUBCOMMAND [flags]`. It returns the
// process exit status: 0 on success (and for --help, which prints to stdout),
// 2 on a usage or invalid-parameter error (one line on stderr), 1 on an
// internal failure. Package bound validates every flag before any
// computation, computes and formats the result.
func runBound(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, bound.Help)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, bound.Help)
		return 0
	}
	name := args[0]
	cmd, ok := bound.Lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "shufflefl bound: unknown subcommand %q (run 'shufflefl bound --help' for the list)\n", name)
		return 2
	}
	fs := flag.NewFlagSet("shufflefl bound "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported on one line below
	var p bound.Params
	bound.Register(fs, name, &p)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: shufflefl bound %s [flags]\n\n%s\n\nFlags:\n", name, cmd.Summary)
			printFlags(stdout, fs)
			fmt.Fprintf(stdout, "\nExamples:\n")
			for _, ex := range bound.Examples[name] {
				fmt.Fprintf(stdout, "  shufflefl bound %s %s\n", name, ex)
			}
			return 0
		}
		fmt.Fprintf(stderr, "shufflefl bound %s: %s (run 'shufflefl bound %s --help')\n", name, flagError(err), name)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "shufflefl bound %s: unexpected argument %q\n", name, fs.Arg(0))
		return 2
	}
	p.Given = flagSet(fs)
	out, err := bound.Compute(name, &p)
	if err != nil {
		fmt.Fprintf(stderr, "shufflefl bound %s: %v\n", name, err)
		if errors.Is(err, checks.ErrInvalid) {
			return 2
		}
		return 1
	}
	out.SetInputs(fs, p.Given)
	write := out.WriteText
	if fs.Lookup("json").Value.(flag.Getter).Get().(bool) {
		write = out.WriteJSON
	}
	if err := write(stdout); err != nil {
		fmt.Fprintf(stderr, "shufflefl bound %s: %v\n", name, err)
		return 1
	}
	return 0
}
