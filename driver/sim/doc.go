// Package sim is the simulation driver of shufflefl: it samples each
// round's clients, runs their local training and encoding on parallel,
// deterministic workers, moves reports through the shuffler and analyzer
// machines of package role (streaming or faithful collection), and
// evaluates the model. It performs no disk I/O (datasets are handed in,
// results go to an observer). With SetRemote, a round's clients run instead
// in worker processes (ServeWorker) reached through a JetStream server:
// each takes blocks of clients from a work queue and returns their partial
// aggregates, which the engine merges in block order, so the results are
// bit-identical to a run in one process. A deployment (package deploy)
// drives the same role machines over the network; what both drivers share
// is package round.
package sim
