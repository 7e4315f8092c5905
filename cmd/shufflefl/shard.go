package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/deploy"
	"github.com/shufflefl/shufflefl/driver/round"
)

const shardUsage = `Usage: shufflefl shuffler-shard --nats URL --shard-key FILE --index S --shards N --certs DIR --analyzer ADDR --db FILE [run flags]

One shard of a sharded shuffle (docs/DEPLOYMENT.md, "Shuffler shards"): the
shuffler that clients report to ('shufflefl shuffler --shuffler-shards N')
routes every closed round's sealed messages over a NATS JetStream queue to N
shards, by coordinate range for per-coordinate protocols and to a shard drawn
uniformly for whole reports. Shard S stores its chunks in its own database,
pads its coordinates with the protocol's dummies (sealed to the analyzer),
shuffles its part on disk, saves it and forwards it to the analyzer as part S
of N; the analyzer releases the round once every part is in. The queue is
sealed with the shard key (AES-256-GCM) that the shuffler and its shards
share ('shufflefl certs' writes shard.key): whoever runs the NATS server sees
ciphertexts and sizes only. The shard uses the shuffler's credentials in
--certs (its certificate for the analyzer's mutual TLS, the analyzer's HPKE
public key) and takes the run's settings like every role (the flags of
'shufflefl run', or --config); give it the same ones. After a crash it resumes
from --db: a part saved and not acknowledged is forwarded as saved, and the
queue delivers again whatever it did not acknowledge.

It exits 0 once the analyzer acknowledged its part of the run's last round
(--serve keeps it). Exit status: 0 success, 2 bad arguments, 1 failure.

Shard flags:
`

// shardOpts are the flags of 'shufflefl shuffler-shard' besides the
// deployment's and the run's.
type shardOpts struct {
	key           string
	index, shards int
	testSeed      uint64
	testMode      bool
}

func newShardFlags(o *shardOpts) *flag.FlagSet {
	fs := flag.NewFlagSet("shuffler-shard", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.key, "shard-key", o.key, "the shard key `file` the shuffler and its shards share ('shufflefl certs' writes shard.key; required)")
	fs.IntVar(&o.index, "index", o.index, "this shard's index `S`, 1..--shards (required)")
	fs.IntVar(&o.shards, "shards", o.shards, "the number of shards `N` the shuffler splits its rounds over (its --shuffler-shards; required)")
	fs.Func("test-seed", "TEST MODE: draw the padding and the shuffle from the simulation's streams of `SEED` (deploy-local --seed passes it); anyone who knows the seed can undo the shuffle", func(v string) error {
		_, err := fmt.Sscan(v, &o.testSeed)
		o.testMode = err == nil
		return err
	})
	return fs
}

// splitShardArgs separates the shard's own flags from the deployment's
// and the run's.
func splitShardArgs(args []string) (own, rest []string) {
	fs := newShardFlags(&shardOpts{})
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		if k := strings.IndexByte(name, '='); k >= 0 {
			name = name[:k]
		}
		if !strings.HasPrefix(a, "-") || fs.Lookup(name) == nil {
			rest = append(rest, a)
			continue
		}
		own = append(own, a)
		if !strings.Contains(a, "=") && i+1 < len(args) {
			i++
			own = append(own, args[i])
		}
	}
	return own, rest
}

// printShardHelp writes the shard's help: its flags, the deployment flags
// it reads (described for a shard) and a pointer to run's.
func printShardHelp(w io.Writer) {
	fmt.Fprint(w, shardUsage)
	printFlags(w, newShardFlags(&shardOpts{}))
	fmt.Fprintln(w, "\nDeployment flags:")
	dfs := flag.NewFlagSet("shuffler-shard", flag.ContinueOnError)
	dfs.String("certs", "", "`directory` written by 'shufflefl certs': the shard uses the shuffler's credentials (required)")
	dfs.String("analyzer", "", "the analyzer's `address` (required)")
	dfs.String("db", "", "SQLite `file` of the shard's state (created if absent; resumed if present; required)")
	dfs.String("nats", "", "`URL` of the NATS JetStream server of the shard queue (required)")
	dfs.String("run-id", "shufflefl-run", "the run's `id`, bound into every sealed message (all roles must agree)")
	dfs.Int64("shuffle-memory", 0, "memory budget in `bytes` of the disk shuffle (0: 1 GiB): a spill file holds about a quarter of it")
	dfs.Bool("serve", false, "keep serving after the run's last round (default: exit 0 once the analyzer acknowledged it)")
	dfs.Bool("allow-remote", false, "allow an analyzer address other than 127.0.0.1 and [::1]")
	for _, n := range []string{"certs", "analyzer", "db", "nats", "run-id", "shuffle-memory", "serve", "allow-remote"} {
		printFlag(w, dfs.Lookup(n))
	}
	fmt.Fprintln(w, "\nRun flags: those of 'shufflefl run --help'.")
}

// parseShard resolves the shard's flags, the deployment's and the run's.
func parseShard(args []string, stdout io.Writer) (round.Config, deploy.ShardServiceOptions, error) {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			printShardHelp(stdout)
			return round.Config{}, deploy.ShardServiceOptions{}, flag.ErrHelp
		}
	}
	own, rest := splitShardArgs(args)
	var so shardOpts
	if err := newShardFlags(&so).Parse(own); err != nil {
		return round.Config{}, deploy.ShardServiceOptions{}, checks.Invalidf("%s (run 'shufflefl shuffler-shard --help' for the flags)", flagError(err))
	}
	cfg, ex, o, err := resolveDeploy("shuffler-shard", rest, stdout)
	if err != nil {
		return cfg, deploy.ShardServiceOptions{}, err
	}
	if ex.progress == "none" {
		o.ProgressEvery = -1 // no progress lines in the log
	}
	switch {
	case o.NATS == "":
		err = checks.Invalidf("--nats URL is required (the JetStream server of the shard queue)")
	case so.key == "":
		err = checks.Invalidf("--shard-key FILE is required")
	case so.shards < 1:
		err = checks.Invalidf("--shards %d: want the number of shards, at least 1", so.shards)
	case so.index < 1 || so.index > so.shards:
		err = checks.Invalidf("--index %d: want a shard in 1..%d (--shards)", so.index, so.shards)
	default:
		err = need("shuffler-shard", "certs", o.Certs, "analyzer", o.Analyzer, "db", o.DB)
	}
	if err == nil {
		_, err = deploy.ReadShardKey(so.key)
		if err != nil {
			err = checks.Invalidf("--shard-key: %v", err)
		}
	}
	sso := deploy.ShardServiceOptions{ServiceOptions: o.ServiceOptions, Index: so.index, Shards: so.shards}
	sso.ShardKey = so.key
	if so.testMode {
		sso.TestSeed = &so.testSeed
	}
	return cfg, sso, err
}

// runShufflerShard is 'shufflefl shuffler-shard'.
func runShufflerShard(args []string, stdout, stderr io.Writer) int {
	const cmd = "shuffler-shard"
	cfg, o, err := parseShard(args, stdout)
	if err != nil {
		return deployExit(cmd, stderr, err)
	}
	o.Log = log.New(stderr, "", log.LstdFlags|log.Lmicroseconds)
	if o.TestSeed != nil {
		fmt.Fprintf(stderr, "shufflefl %s: TEST MODE (--test-seed %d): the padding and the shuffle are predictable from the seed\n", cmd, *o.TestSeed)
	}
	ctx, cancel := signalContext()
	defer cancel()
	stats, err := deploy.ServeShuffleShard(ctx, cfg, o)
	if err != nil {
		return deployExit(cmd, stderr, err)
	}
	fmt.Fprintf(stdout, "shuffler-shard %d/%d: stopped; %d rounds forwarded, %d messages%s\n", o.Index, o.Shards, stats.Forwarded, stats.Messages, cpuTime())
	return 0
}
