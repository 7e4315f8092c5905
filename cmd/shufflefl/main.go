// Command shufflefl runs differentially private federated learning in the
// shuffle model: simulations (`shufflefl run`) and privacy accounting
// (`shufflefl bound`).
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `shufflefl: differentially private federated learning in the shuffle model

Usage:
  shufflefl run   [flags]              train a model with simulated clients (Encode -> Shuffle -> Analyze)
  shufflefl bound SUBCOMMAND [flags]   compute privacy amplification bounds and composition
  shufflefl experiment NAME [flags]    reproduce a paper's comparison (flame, apes, eapes)
  shufflefl help  [COMMAND]            show help for a command

Run 'shufflefl COMMAND --help' for the flags of a command.
`

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// realMain dispatches a subcommand and returns the process exit status: 0 on
// success, 2 on a usage or invalid-input error, 1 on an internal failure.
func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return runRun(args[1:], stdout, stderr)
	case "experiment":
		return runExperiment(args[1:], stdout, stderr)
	case "bound":
		return runBound(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			return realMain([]string{args[1], "--help"}, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "shufflefl: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
