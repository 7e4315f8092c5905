// Package runtime is the simulation driver of shufflefl: it samples each
// round's clients, runs their local training and encoding on parallel,
// deterministic workers, moves reports through the shuffler and analyzer
// machines of package role (streaming or faithful collection), and
// evaluates the model. It performs no disk or network I/O (datasets are
// handed in, results go to an observer). A deployment (package deploy)
// drives the same role machines over the network; what both drivers share
// is package round.
package sim
