package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/deploy"
	"github.com/shufflefl/shufflefl/driver/rundir"
)

// partitionHelp is 'shufflefl partition --help' before the run flags.
const partitionHelp = `Usage:
  shufflefl partition --out DIR [run flags or --config FILE]

Loads the run's dataset once, splits its training set over the clients exactly
as 'shufflefl run' and the deployment's roles do (the same shards for the same
seed, dataset, clients, partition and its parameters), and writes one file per
client, DIR/client-NNNNNN.shard (named as 'shufflefl certs' names the
clients), and DIR/manifest.json: the settings the shards were cut for and
their digest, the number of clients, the features and classes, and every
shard's size and SHA-256. 'shufflefl client --data DIR/client-NNNNNN.shard'
then reads only its shard, never the dataset, and refuses a shard cut for
other settings. The shard format is described in docs/DEPLOYMENT.md.

Give it the flags (or the --config file) the roles are given; the deployment
flags in a --config file are ignored. DIR must be empty or absent unless
--overwrite is given.

Exit status: 0 success, 2 bad arguments, 1 failure.
`

// runPartition implements 'shufflefl partition'.
func runPartition(args []string, stdout, stderr io.Writer) int {
	if slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "--help" || a == "-help" }) {
		fmt.Fprint(stdout, partitionHelp)
		fmt.Fprintln(stdout, "\nRun flags: those of 'shufflefl run --help'.")
		return 0
	}
	cfg, ex, _, err := resolveDeploy("partition", args, io.Discard)
	if err == nil {
		err = rundir.Check(cfg.Out, ex.overwrite)
	}
	if err != nil {
		return deployExit("partition", stderr, err)
	}
	split, err := cfg.LoadData()
	if err != nil {
		return deployExit("partition", stderr, err)
	}
	m, err := deploy.WritePartition(cfg, split, cfg.Out)
	if err != nil {
		return deployExit("partition", stderr, err)
	}
	lo, hi := m.Shards[0].Examples, m.Shards[0].Examples
	for _, s := range m.Shards {
		lo, hi = min(lo, s.Examples), max(hi, s.Examples)
	}
	fmt.Fprintf(stdout, "partition: %d shards of %s (%s partition, seed %d; %d features, %d classes), %s examples each, in %s; settings digest %.16s…\n",
		m.Clients, cfg.Dataset, cfg.Partition, cfg.Seed, m.Features, m.Classes, span(lo, hi), cfg.Out, m.SettingsDigest)
	return 0
}

// span formats lo..hi, or lo when they are equal.
func span(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

// checkRoleDataFlags refuses --data for a role other than a client and
// --shards for a command other than deploy-local ('partition' ignores
// both, so that the roles' --config file serves it too).
func checkRoleDataFlags(cmd string, o deployOpts) error {
	var bad []string
	if cmd == "partition" {
		return nil
	}
	if o.Data != "" && cmd != "client" {
		bad = append(bad, "--data (a client's shard file) is a client's flag")
	}
	if o.shards != "" && cmd != "deploy-local" {
		bad = append(bad, "--shards (a directory of shard files) is deploy-local's flag")
	}
	if len(bad) > 0 {
		return checks.Invalidf("%s", strings.Join(bad, "; "))
	}
	return nil
}
