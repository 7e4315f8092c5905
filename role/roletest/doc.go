// Package roletest holds the scripted interaction tests of a deployment's
// three roles, in the way etcd raft's rafttest holds its testdata/*.txt: a
// script is a list of commands (run, register, pull, encode, submit,
// report, crash, restart, close), each followed by the output it must
// print. This package parses and formats scripts (Parse, ParseFile,
// Script.Format) and imports nothing above package role; the harness that
// runs testdata/*.txt against the deployment's services, in process and
// over gRPC, is driver/deploy/deploytest (`go test
// ./driver/deploy/deploytest -rewrite` writes the outputs the scripts get
// into them).
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
