package deploy

import (
	"runtime"
	"time"

	"github.com/shufflefl/shufflefl/protocol"
)

// Costs behind DefaultRoundTimeout, measured on this project's 2-core
// machine: sealing, storing and opening one message (an HPKE seal at the
// client, the shuffler's stored copy, the analyzer's open) takes about
// 300 µs of CPU in all; local training about 10 ns per sample, parameter
// and epoch.
const (
	messageCost = 300 * time.Microsecond
	trainCost   = 10 * time.Nanosecond
	// minRoundTimeout is the least default: a round always gets a minute.
	minRoundTimeout = time.Minute
)

// RoundMessages estimates the sealed messages of one round of st: each of
// the round's reporters' messages (its layout), and for a padded protocol
// every coordinate filled to what its statement counts.
func RoundMessages(st *Setup) int64 {
	s := st.Shape(1)
	per := int64(s.Dim)
	if l, ok := st.Proto.(protocol.Laid); ok {
		if lay, err := l.Layout(s); err == nil {
			per = int64(lay.Coords*lay.PerCoord + lay.Meta)
			if st.Proto.Mode() != protocol.PerCoordinate {
				per = int64(1 + lay.Meta)
			}
		}
	}
	m := per * int64(s.Participants)
	if c, ok := st.Proto.(protocol.Counted); ok {
		if cs, err := c.Counts(s); err == nil && st.Proto.Mode() == protocol.PerCoordinate {
			m = max(m, cs.PerColumn*int64(s.Dim))
		}
	}
	return m
}

// DefaultRoundTimeout is the round deadline when none is given: a minute
// plus twice the CPU time the round's work needs on this machine's cores —
// every client's local training and every message sealed, stored and
// opened (RoundMessages) — so that a round on a small machine is not
// voided because its clients could not finish in time.
func DefaultRoundTimeout(st *Setup) time.Duration {
	s := st.Shape(1)
	samples := float64(len(st.Train.Y)) / float64(max(st.Config.Clients, 1)) * float64(s.Participants)
	epochs := float64(max(st.Config.LocalEpochs, 1))
	train := time.Duration(samples * epochs * float64(s.Dim) * float64(trainCost))
	work := train + time.Duration(RoundMessages(st))*messageCost
	cores := time.Duration(max(runtime.NumCPU(), 1))
	return (minRoundTimeout + 2*work/cores).Round(time.Second)
}
