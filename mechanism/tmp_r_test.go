package mechanism
import ("math/rand/v2";"shufflefl/rng")
func newR() *rand.Rand { return rng.NewSeeded(1) }
