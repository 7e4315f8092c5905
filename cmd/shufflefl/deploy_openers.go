package main

import (
	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// checkOpenerFlags checks the opener flags of deployment command cmd: run's
// --worker-procs (simulation workers) has no meaning for deploy-local or
// the analyzer, whose batches scale out on openers instead; --openers and
// --opener-chunk must not be negative.
func checkOpenerFlags(cmd string, o deployOpts, ex runExtras) error {
	switch {
	case ex.remote.Procs > 0 && (cmd == "deploy-local" || cmd == "analyzer"):
		return checks.Invalidf("--worker-procs starts the simulation workers of 'shufflefl run'; a deployment's analyzer opens its batches on openers: --openers N (deploy-local) or --nats URL with 'shufflefl opener' processes")
	case o.Openers < 0:
		return checks.Invalidf("--openers %d: want 0 or more opener processes", o.Openers)
	case o.OpenerChunk < 0 || o.OpenerChunk > 1<<20:
		return checks.Invalidf("--opener-chunk %d: want a number of messages in [1, 1048576] (0: the default)", o.OpenerChunk)
	case o.Openers > 0 && cmd != "deploy-local":
		return checks.Invalidf("--openers is deploy-local's; %s uses the openers of --nats URL", cmd)
	}
	return checkShardFlags(cmd, o)
}

// checkShardFlags checks --shuffler-shards and --shard-key: a number of
// shards in [0, wire.MaxShards], for the shuffler (which then needs the
// shard queue's server, --nats) or deploy-local only.
func checkShardFlags(cmd string, o deployOpts) error {
	switch {
	case o.ShufflerShards < 0 || o.ShufflerShards > wire.MaxShards:
		return checks.Invalidf("--shuffler-shards %d: want 0 (one shuffler) to %d shards", o.ShufflerShards, wire.MaxShards)
	case o.ShufflerShards > 0 && cmd != "deploy-local" && cmd != "shuffler":
		return checks.Invalidf("--shuffler-shards is the shuffler's (and deploy-local's), not %s's", cmd)
	case o.ShufflerShards > 0 && cmd == "shuffler" && o.NATS == "":
		return checks.Invalidf("--shuffler-shards %d needs the NATS JetStream server of the shard queue: --nats URL (the shards' --nats)", o.ShufflerShards)
	case o.ShardKey != "" && cmd != "shuffler":
		return checks.Invalidf("--shard-key is the shuffler's (deploy-local writes its own)")
	}
	return nil
}
