package main

import (
	"os"
	"runtime/debug"

	"github.com/shufflefl/shufflefl/driver/deploy"
)

// clientBaseLimit is the part of a shard client's soft memory limit
// (debug.SetMemoryLimit) that does not grow with its model or shard: the
// Go runtime, gRPC and TLS, SQLite's Go side and one round's sealed
// report. Measured in a logistic-regression client of apes on
// Fashion-MNIST (d = 7,850): the Go heap in use peaks at about 9 MiB while
// the round's report is sealed; the collector runs about 50 times in two
// rounds under this limit, under 1% of the client's CPU.
const clientBaseLimit = 12 << 20

// leanClient runs once a client reading only its shard (--data) has built
// its Setup, before it connects: it sets a soft memory limit (unless
// GOMEMLIMIT is given) of clientBaseLimit plus room for 32 copies of its k
// models and four of its shard, so that the garbage collector returns
// memory instead of letting the heap double, frees the memory the setup
// used, and drops from the process's resident set the pages of the
// executable it has read so far (dropExecutablePages: startup and setup
// code, tables read by package initialisation), which it touches again
// only if it needs them. Only a shard client does this: a process holding
// the whole dataset needs far more than the limit.
func leanClient(st *deploy.Setup) {
	limitClientMemory(st)
	debug.FreeOSMemory()
	dropExecutablePages()
}

// limitClientMemory sets a shard client's soft memory limit, unless
// GOMEMLIMIT is given: clientBaseLimit while its Setup is built (st nil),
// then the room leanClient describes.
func limitClientMemory(st *deploy.Setup) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := int64(clientBaseLimit)
	if st != nil {
		model := int64(8 * st.Dim() * max(st.K, 1))
		shard := int64(5 * len(st.Train.Y) * max(st.Train.Features, 1))
		limit += 32*model + 4*shard
	}
	debug.SetMemoryLimit(limit)
}
