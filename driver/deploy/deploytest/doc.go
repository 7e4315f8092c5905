// Package deploytest runs the role scripts of package roletest
// (role/roletest/testdata/*.txt) against the deployment's services, in the
// way etcd raft's rafttest runs its testdata: each script is parsed by
// roletest.ParseFile, and `go test ./driver/deploy/deploytest -rewrite`
// writes the outputs the scripts get into them.
//
// The harness plays the clients (signing, encoding through role.Client,
// sealing to the analyzer) and builds the shuffler and the analyzer of
// package deploy from their SQLite databases, in test mode (every random
// draw from the run's seed), so that outputs are deterministic. A Driver
// is the transport between them: InProcess calls the services' methods,
// GRPC serves them over TLS on loopback. Every script runs on both and
// must print the same output on each.
//
// The scripts' commands are listed in package roletest.
package deploytest
