package mechanism

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
)

// ForEachClient calls work(i, r_i) for every client i in [0, n), spread over
// workers goroutines (GOMAXPROCS if workers <= 0), where r_i = newRand(i).
// Because each client gets its own generator, derived from its index (for
// simulation, func(i int) *rand.Rand { return rng.Stream(seed, rng.LabelNoise,
// round, uint64(i)) }), the result does not depend on scheduling. For
// deployment pass func(int) *rand.Rand { return rng.NewCrypto() }. work must
// only touch client i's data. ForEachClient returns when all calls are done.
func ForEachClient(n, workers int, newRand func(i int) *rand.Rand, work func(i int, r *rand.Rand)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			work(i, newRand(i))
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				work(i, newRand(i))
			}
		})
	}
	wg.Wait()
}
