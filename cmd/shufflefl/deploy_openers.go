package main

import "github.com/shufflefl/shufflefl/checks"

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
	return nil
}
