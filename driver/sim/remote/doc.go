// Package remote runs a simulation's clients on worker processes reached
// through a JetStream server (package transport/jetstream): the
// coordinator's engine (Attach, a sim.Runner) publishes each block of a
// round's participants as a task on a work queue, any worker (ServeWorker)
// builds the run's engine from the settings the coordinator published,
// computes the block's partial aggregate with a sim.BlockWorker and
// publishes it, and the coordinator merges the results in block order. A
// task's clients and a result's aggregate travel bit for bit (every
// float64 as its 64 bits), so a run is bit-identical whatever the number
// of workers, local or remote. driver/sim does not import this package:
// the drivers that wire workers (driver/rundir, cmd/shufflefl) do.
package remote
