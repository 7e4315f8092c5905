package sim

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

// Thresholds of the pre-flight's warnings.
const (
	// amplificationFloor: a shuffle whose round central epsilon is at least
	// this fraction of the local epsilon it shuffles barely amplifies.
	amplificationFloor = 0.9
	// noiseMargin: the noise warning fires when the noise exceeds this
	// many times the clip's signal bound (see noiseWarning).
	noiseMargin = 10
)

// Warnings returns the pre-flight's warnings: settings that are valid, and
// that the run will carry out, but that a new user would not want. Each is
// one sentence, to be shown on one line.
func (e *Engine) Warnings() []string { return e.warnings }

// warn computes Warnings from the pre-flight's results: priv is round 1's
// statement (after calibration) and noiseRMS the trial round's noise.
func (e *Engine) warn(priv protocol.Privacy) {
	cfg := e.cfg
	var ws []string
	if priv.Private && cfg.Delta > 1/float64(cfg.Clients) {
		ws = append(ws, fmt.Sprintf("delta %g is larger than 1/N = %.3g for N = %d clients: a mechanism that publishes some client's data outright with probability delta meets such a guarantee; choose --delta well below 1/N",
			cfg.Delta, 1/float64(cfg.Clients), cfg.Clients))
	}
	if w := e.amplificationWarning(priv); w != "" {
		ws = append(ws, w)
	}
	if w := e.noiseWarning(); w != "" {
		ws = append(ws, w)
	}
	e.warnings = ws
}

// amplificationWarning says when a shuffle protocol's round central
// epsilon is nearly its local epsilon: too few reporters for the shuffle
// to hide a report among them. The comparison is per coordinate when the
// protocol states both figures per coordinate, else user level.
func (e *Engine) amplificationWarning(priv protocol.Privacy) string {
	if !priv.Private || e.proto.Mode() == protocol.NoShuffle {
		return ""
	}
	local, central, level := priv.LocalEpsilon.Max, priv.CentralEpsilon, "for a client's whole update"
	if c, l := priv.CentralCoordEpsilon, priv.LocalCoordEpsilon.Max; e.proto.Mode() == protocol.PerCoordinate && isPositiveFinite(c) && isPositiveFinite(l) {
		local, central, level = l, c, "per coordinate"
	}
	if !isPositiveFinite(local) || !isPositiveFinite(central) || central < amplificationFloor*local {
		return ""
	}
	// The round's own figure is loose where the run's accountant is not
	// (SS-Double's random allocation): no warning when the PLD of the
	// round's allocation components amplifies.
	if ul := priv.LocalEpsilon.Max; hasAlloc(priv.Components) && isPositiveFinite(ul) && priv.CentralDelta > 0 {
		if pe, err := account.PLDEpsilon(priv.Components, priv.CentralDelta); err == nil && pe < amplificationFloor*ul {
			return ""
		}
	}
	n := e.perRound
	if parts := e.participants(1); !e.poisson && parts.Len() > 0 {
		n = parts.Len()
	}
	advice := "more clients per round (--clients, --clients-per-round) are needed for the shuffle to help"
	if nc, ok := e.proto.(interface{ NoShuffleCredit() bool }); ok && nc.NoShuffleCredit() {
		advice = e.proto.Name() + "'s rigorous statement takes no shuffle credit, whatever the number of clients"
	}
	return fmt.Sprintf("the shuffle of %d reports per round barely amplifies: round 1's central epsilon %s is %.4g, %.0f%% of the local %.4g; %s",
		n, level, central, 100*central/local, local, advice)
}

// hasAlloc says whether some component is a random-allocation round,
// whose amplification the round's own figure does not show.
func hasAlloc(cs []account.Component) bool {
	for _, c := range cs {
		if c.Kind == account.KindAlloc {
			return true
		}
	}
	return false
}

// noiseWarning says when the noise the analyzer's estimate carries makes
// learning hopeless. Every client's update is clipped at C per coordinate,
// so over T rounds a coordinate's mean updates add up to at most C·T,
// while independent noise of root mean square sigma per round adds up to
// sigma·√T: when sigma > C·√T the noise on each parameter exceeds the
// largest signal the clip allows, even if every client pushed it to its
// bound every round. sigma is measured, not derived: the trial round's
// estimate of an all-zero round (noiseRMS). Signal and noise are in the
// same units (the update, before the server learning rate), so neither
// learning rate enters.
//
// A model's outputs sum many parameters, whose signals add coherently and
// whose noise does not, so a per-parameter ratio somewhat above 1 still
// learns (ss-simple on fashion-mnist-sample, 5 clients, 2 rounds: ratio
// 1.4, accuracy 51%). The warning fires above noiseMargin = 10, where every
// run measured (TestNoiseWarningPredictsChance and the runs quoted in
// docs/OUTPUTS.md) ended within a few points of chance.
func (e *Engine) noiseWarning() string {
	T := float64(e.cfg.Rounds)
	bound := e.cfg.Clip * math.Sqrt(T)
	if e.noiseRMS <= noiseMargin*bound {
		return ""
	}
	return fmt.Sprintf("the noise will swamp the model: each round's estimate of the mean update carries noise of %.3g per coordinate (root mean square), %.3g times clip·√T = %.3g, the largest signal T = %d rounds of updates clipped at %g can carry; expect accuracy near chance: raise the local budgets (--epsilon, --target-epsilon) or the clients per round",
		e.noiseRMS, e.noiseRMS/bound, bound, e.cfg.Rounds, e.cfg.Clip)
}

// isPositiveFinite reports whether v is in (0, +Inf).
func isPositiveFinite(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }
