// Package roletest runs scripted interaction tests of a deployment's three
// roles, in the way etcd raft's rafttest runs testdata/*.txt: a script is
// a list of commands (run, register, pull, encode, submit, report, crash,
// restart, close), each followed by the output it must print, and `go test
// ./roletest -rewrite` writes the outputs the scripts get into them.
//
// The harness plays the clients (signing, encoding through role.Client,
// sealing to the analyzer) and builds the shuffler and the analyzer of
// package deploy from their SQLite databases, in test mode (every random
// draw from the run's seed), so that outputs are deterministic. A Driver
// is the transport between them: InProcess calls the services' methods,
// GRPC serves them over TLS on loopback. Every script runs on both and
// must print the same output on each.
//
// Commands (cN is client N; arguments in brackets are optional):
//
//	run [proto=P] [clients=N] [rounds=R] [min=M] [timeout=D] [epsilon=E] [target=T] [seed=S]
//	register cN              declare the client to the shuffler
//	pull cN                  wait for the next round's task
//	encode cN [round=T]      ledger check and charge, encode, seal
//	submit cN [replay|reseal|forged|malformed]
//	report cA-cB             pull, encode and submit for clients A..B
//	crash shuffler|analyzer  stop it, losing everything but its database
//	restart shuffler|analyzer
//	close round=T            wait for the analyzer's release or void of T
package roletest
