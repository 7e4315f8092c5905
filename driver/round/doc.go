// Package round is what the two drivers of a run — the simulation engine
// (package sim) and a deployment (package deploy) — share: the run's
// configuration and its protocol defaults, the pre-flight that builds the
// protocol and calibrates the budgets (Prepare), the round's shape and
// client sample (SampleFixed), the partition of the clients' data, a
// clustered client's choice of model, and the records of a round and a run
// (RoundResult, Summary), and the run command's flags and protocol
// descriptions. It holds no round loop and does no disk or network I/O; the
// round's decisions are the role machines' (package role).
package round
