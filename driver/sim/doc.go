// Package sim is the simulation driver of shufflefl: it samples each
// round's clients, runs their local training and encoding on parallel,
// deterministic workers, moves reports through the shuffler and analyzer
// machines of package role (streaming or faithful collection), and
// evaluates the model. It performs no disk I/O (datasets are handed in,
// results go to an observer) and no network I/O: with SetRunner, a round's
// clients run instead on a Runner that hands back the blocks' partial
// aggregates (BlockWorker computes them), which the engine merges in block
// order, so the results are bit-identical to a run in one process. Package
// driver/sim/remote is such a Runner: worker processes reached through a
// JetStream server, which driver/sim does not import. A deployment (package deploy)
// drives the same role machines over the network; what both drivers share
// is package round.
package sim
