package sim

import (
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/protocol"
)

// Hooks let an auditor observe and steer a simulated run without changing
// the protocol code: inject a canary client, read one client's report as the
// analyzer receives it, and redraw only the mechanisms' randomness across
// trials while client sampling, data partition and local training stay
// fixed. A zero Hooks changes nothing, and results are then bit-identical to
// a run without hooks.
//
// Update and Report run on the engine's worker goroutines, concurrently for
// different clients: they must be safe for concurrent use and must not keep
// the slices they are handed.
type Hooks struct {
	// Update, if set, is called with client c's local update in round t
	// (after local training, before clipping and randomization) and may
	// overwrite it in place: a canary client with a chosen update. To inject
	// a canary dataset, compute its update with fl.Trainer and copy it here.
	Update func(round, client int, update []float64)
	// Report, if set, is called with client c's encoded report of round t:
	// exactly what the client hands to the shuffler (and, for per-coordinate
	// shuffling, what the analyzer receives detached from its identity).
	Report func(round, client int, rep *protocol.Report)
	// NoiseSalt, if non-zero, re-keys every randomized privacy mechanism of
	// the run — the clients' local randomizers, the shuffler's padding and
	// permutation and the analyzer's central noise — while sampling,
	// partition, initialisation and local training keep their streams. Two
	// runs with different salts are two independent trials of the
	// mechanisms on the same inputs.
	NoiseSalt uint64
}

// SetHooks installs h; call it before the first round.
func (e *Engine) SetHooks(h Hooks) { e.hooks = h }

// mechStream is the generator of a privacy mechanism's randomness for the
// given purpose label (LabelNoise, LabelShuffle, LabelAnalyzer) and indices,
// re-keyed by the hooks' NoiseSalt when it is set.
func (e *Engine) mechStream(label uint64, idx ...uint64) *rand.Rand {
	labels := append([]uint64{label}, idx...)
	if e.hooks.NoiseSalt != 0 {
		labels = append(labels, 0x5a17_0000_0000_0000, e.hooks.NoiseSalt)
	}
	return rng.Stream(e.cfg.Seed, labels...)
}
