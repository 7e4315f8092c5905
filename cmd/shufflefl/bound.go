package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"shufflefl/bound"
	"shufflefl/checks"
)

const boundUsage = `shufflefl bound: privacy amplification by shuffling, subsampling and composition

Usage:
  shufflefl bound SUBCOMMAND [flags]

Uniform local epsilon (eps0 per report, n reports):
  erlingsson    Erlingsson et al. 2019 closed form
  blanket       Balle et al. 2019 privacy blanket (numerical Bennett/Hoeffding; closed form for R_{gamma,b})
  clones        Feldman-McMillan-Talwar 2022 (numerical, exact; or closed form)
  best          the tightest valid rigorous bound, named (uniform, or personalized with --eps-file/--eps-dist)

Personalized local epsilons (--eps-file FILE or --eps-dist NAME --n N --seed S):
  unis          APES Eq. (2) baseline (FMT at max eps_i)
  eon           APES Echo of Neighbors (Theorem 4 closed form, or numerical with exact clone counts)
  eapes         E-APES mu-GDP (an APPROXIMATION, labelled as such)

Protocols and tools:
  flame-simple  FLAME Theorem 1 (SS-Simple)
  flame-double  SS-Double with dummy padding (sound; --flame-theorem: FLAME Theorems 3-4, not an upper bound)
  flame-topk    FLAME Theorem 5 / Proposition 2 (nu-index privacy of SS-Topk)
  sapes         S-APES Proposition 1 (user level after b-of-d sparsification)
  subsample     amplification by subsampling (without replacement or Poisson)
  compose       composition over rounds (basic, advanced, rdp, pld, best)
  sgm           the Poisson-subsampled Gaussian mechanism (DP-SGD, DP-FedAvg) over T steps (rdp or pld)

Common flags: --json (one JSON object), --compare (every applicable bound side by side),
--target-epsilon (the inverse question), --rounds R with --composition basic|advanced|rdp|pld|best
(compose the per-round guarantee; default best, which names the winner).
Every numeric flag is checked before any computation: NaN, infinities and
out-of-range values are rejected (exit status 2, one line on stderr).
Run 'shufflefl bound SUBCOMMAND --help' for all flags and examples.

Examples:
  shufflefl bound clones --eps0 4 --n 100000 --delta 1e-6
  shufflefl bound best --compare --eps0 1 --n 10000 --delta 1e-8
  shufflefl bound flame-double --eps-l 78.5 --n 1000 --k 157 --np 333
`

// runBound implements `shufflefl bound SUBCOMMAND [flags]`. It returns the
// process exit status: 0 on success (and for --help, which prints to stdout),
// 2 on a usage or invalid-parameter error (one line on stderr), 1 on an
// internal failure.
//
// Every flag is validated (by bound.Compute) before any computation, which
// lives in package bound; this function parses flags and prints.
func runBound(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, boundUsage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, boundUsage)
		return 0
	}
	name := args[0]
	cmd, ok := bound.Lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "shufflefl bound: unknown subcommand %q (run 'shufflefl bound --help' for the list)\n", name)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "shufflefl bound %s: %v\n", name, err)
		if errors.Is(err, checks.ErrInvalid) {
			return 2
		}
		return 1
	}
	fs := flag.NewFlagSet("shufflefl bound "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported on one line below
	var p bound.Params
	bound.Register(fs, name, &p)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintf(stdout, "Usage: shufflefl bound %s [flags]\n\n%s\n\nFlags:\n", name, cmd.Summary)
			printFlags(stdout, fs)
			fmt.Fprintf(stdout, "\nExamples:\n")
			for _, ex := range boundExamples[name] {
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
	p.Given = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { p.Given[f.Name] = true })
	out, err := bound.Compute(name, &p)
	if err != nil {
		return fail(err)
	}
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Usage, "DEPRECATED") && !p.Given[f.Name] {
			return
		}
		if g, ok := f.Value.(flag.Getter); ok {
			out.Inputs[f.Name] = g.Get()
		}
	})
	jsonOut := fs.Lookup("json").Value.(flag.Getter).Get().(bool)
	if err := printBound(stdout, jsonOut, out); err != nil {
		fmt.Fprintf(stderr, "shufflefl bound %s: %v\n", name, err)
		return 1
	}
	return 0
}
