package deploy

import "time"

// Per-report metadata at the shuffler. The inbox keeps each accepted
// report's client id, request nonce, digest and arrival time as its replay
// checks. A round that is forwarded or void needs them no longer (the store
// refuses any report for a round that is not open, and a message sealed
// for it is refused in every other round), and once the signed requests'
// timestamp window has passed since its close, every request signed before
// it fails the timestamp check too. PruneMetadata deletes them then
// (store.DB.PruneReportMetadata); the client entry points run it at most
// once per window (Heartbeat, every few seconds per client).

// PruneMetadata deletes the per-report metadata of every round forwarded
// or voided more than the timestamp window ago and returns how many
// reports it deleted.
func (s *Shuffler) PruneMetadata() (int, error) {
	return s.cfg.DB.PruneReportMetadata(s.now().Add(-s.cfg.Verifier.Skew))
}

// PruneClosed deletes the metadata of every report of a closed round,
// without waiting out the timestamp window: for a shuffler that stops
// serving after the run's last round (no request can arrive any more, and
// one replayed to a restarted shuffler is refused for its closed round
// before its nonce or digest is looked at).
func (s *Shuffler) PruneClosed() (int, error) {
	return s.cfg.DB.PruneReportMetadata(s.now().Add(time.Nanosecond))
}

// maybePrune runs PruneMetadata if it has not run within the timestamp
// window, logging what it deleted.
func (s *Shuffler) maybePrune() {
	now := s.now().UnixNano()
	last := s.pruned.Load()
	if now-last < int64(s.cfg.Verifier.Skew) || !s.pruned.CompareAndSwap(last, now) {
		return
	}
	start := time.Now()
	n, err := s.PruneMetadata()
	switch {
	case err != nil:
		s.logf("shuffler: pruning report metadata: %v", err)
	case n > 0:
		s.logf("shuffler: deleted the metadata of %d reports of closed rounds (%v)", n, time.Since(start).Round(time.Millisecond))
	}
}
