// Command shufflefl runs differentially private federated learning in the
// shuffle model. Its commands:
//
//   - run: train a model with simulated clients (packages runtime, rundir);
//   - experiment: the papers' comparisons and the privacy-utility frontier;
//   - bound: privacy amplification and composition bounds (package bound);
//   - protocols: the protocols, their options and run defaults (package round);
//   - audit: attacks and privacy audits against the claims (package audit);
//   - certs: a development PKI for a deployment (package pki);
//   - deploy-local, analyzer, shuffler, shuffler-shard, client: a
//     deployment's roles as network services (package deploy);
//   - partition: one shard file per client, for a client that reads only
//     its own data (package deploy);
//   - help and version.
//
// The packages do the work, and most format their own results and help;
// this command parses flags, prints and maps errors to exit statuses.
// 'shufflefl COMMAND --help' lists a command's flags.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

// version is the shufflefl release; config.yaml and `shufflefl version`
// state it with the git commit the binary was built from.
const version = "0.3.0-dev"

const usage = `shufflefl: differentially private federated learning in the shuffle model

Usage:
  shufflefl run   [flags]              train a model with simulated clients (Encode -> Shuffle -> Analyze)
  shufflefl experiment NAME [flags]    reproduce a paper (flame, apes, eapes, dprivacy-*) or draw the frontier
  shufflefl bound SUBCOMMAND [flags]   compute privacy amplification bounds and composition
  shufflefl protocols [NAME]           list the protocols, or one protocol's options and budgets
  shufflefl certs [flags]              make a development CA, TLS, HPKE and client keys for a deployment
  shufflefl audit SUBCOMMAND [flags]   attacks and privacy auditing: eps_lower vs the claim
  shufflefl deploy-local [flags]       run analyzer, shuffler and N clients on 127.0.0.1 (TLS, HPKE, SQLite)
  shufflefl analyzer|shuffler|client [flags]  one role of a deployment as a network service
  shufflefl partition --out DIR [flags]  write one shard file per client for 'client --data'
  shufflefl export --run DIR --format F --out FILE  convert a run's model to safetensors, npz or onnx
  shufflefl worker --nats URL          compute blocks of simulated clients for 'run --nats URL'
  shufflefl opener --nats URL --key F  open the analyzer's batches for 'analyzer --nats URL' (deploy-local --openers N)
  shufflefl shuffler-shard --nats URL --shard-key F --index S --shards N  one shard of a sharded shuffle
  shufflefl help  [COMMAND [SUBCOMMAND]]  show help for a command
  shufflefl version                    print the version and git commit (also --version)

Run 'shufflefl COMMAND --help' for the flags of a command.

Examples:
  shufflefl run                        # private default: ss-simple at cumulative (8, 1e-6)
  shufflefl run --protocol apes --target-epsilon 5 --delta 1e-6 --rounds 10 --out out/apes
  shufflefl experiment flame --dataset mnist-10k --out out/flame
  shufflefl experiment frontier --protocols ss-simple,apes,dp-central --targets 2,8
  shufflefl bound clones --eps0 4 --n 100000 --delta 1e-6
`

func main() {
	if !crashOutput() && os.Getenv(superviseOff) == "" {
		if code, ok := supervise(os.Args[1:]); ok {
			os.Exit(code)
		}
	}
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
		if len(args) > 1 && isDPrivExperiment(args[1]) { // group-privacy paper: own driver
			return runDPrivExperiment(args[1], args[2:], stdout, stderr)
		}
		return runExperiment(args[1:], stdout, stderr)
	case "bound":
		return runBound(args[1:], stdout, stderr)
	case "protocols":
		return runProtocols(args[1:], stdout, stderr)
	case "certs":
		return runCerts(args[1:], stdout, stderr)
	case "audit":
		return runAudit(args[1:], stdout, stderr)
	case "partition":
		return runPartition(args[1:], stdout, stderr)
	case "export":
		return runExport(args[1:], stdout, stderr)
	case "deploy-local":
		return runDeployLocal(args[1:], stdout, stderr)
	case "analyzer", "shuffler", "client":
		return runService(args[0], args[1:], stdout, stderr)
	case "worker":
		return runWorker(args[1:], stdout, stderr)
	case "opener":
		return runOpener(args[1:], stdout, stderr)
	case "shuffler-shard":
		return runShufflerShard(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, versionString())
		return 0
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[1] != "help" {
			// "help bound clones" is "bound clones --help".
			return realMain(append(append([]string{}, args[1:]...), "--help"), stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "shufflefl: unknown command %q (run 'shufflefl help' for the commands)\n", args[0])
		return 2
	}
}

// versionString is "shufflefl VERSION (commit REV)", REV being the git
// commit the binary was built from (with "+modified" when the working tree
// had uncommitted changes), or "unknown" when the build recorded none (go
// test, go run, or a build outside a git checkout).
func versionString() string {
	return fmt.Sprintf("shufflefl %s (commit %s)", version, buildCommit())
}

// buildCommit returns the vcs.revision recorded by the Go toolchain, or
// "unknown".
func buildCommit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, modified := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if modified {
		rev += "+modified"
	}
	return rev
}
