package deploy

import (
	"fmt"
	"sync"
	"time"
)

// Stage is a step of a round as the services report it (Progress).
type Stage string

// The stages of a round, in order: the shuffler receives the reports,
// (a sharded front: routes the messages to its shards,) shuffles (pads and
// seals the dummies) and forwards the batch in chunks; the analyzer opens
// the messages and releases or voids the round.
const (
	StageReceiving  Stage = "receiving"
	StageRouting    Stage = "routing"
	StageShuffling  Stage = "shuffling"
	StageForwarding Stage = "forwarding"
	StageOpening    Stage = "opening"
	StageReleased   Stage = "released"
	StageVoid       Stage = "void"
)

// Progress is what a service is doing in a round: Done of Total units of
// the stage (reports received of expected, dummies sealed, chunks sent,
// messages opened; both zero for released and void).
type Progress struct {
	Role    string // "shuffler" or "analyzer"
	Round   int64
	Stage   Stage
	Done    int64
	Total   int64
	Reports int64 // shuffling: the round's reports
}

// Percent returns Done as a percentage of Total (100 when Total is 0).
func (p Progress) Percent() float64 {
	if p.Total <= 0 {
		return 100
	}
	return 100 * float64(p.Done) / float64(p.Total)
}

// String returns the event as one line, e.g. "round 2: shuffler:
// receiving 12/20 reports (60%)".
func (p Progress) String() string {
	head := fmt.Sprintf("round %d: %s: %s", p.Round, p.Role, p.Stage)
	switch p.Stage {
	case StageReceiving:
		return fmt.Sprintf("%s %d/%d reports (%.0f%%)", head, p.Done, p.Total, p.Percent())
	case StageRouting:
		return fmt.Sprintf("%s %d reports, %d/%d messages to the shards (%.0f%%)", head, p.Reports, p.Done, p.Total, p.Percent())
	case StageShuffling:
		return fmt.Sprintf("%s %d reports, %d/%d dummies sealed (%.0f%%)", head, p.Reports, p.Done, p.Total, p.Percent())
	case StageForwarding:
		return fmt.Sprintf("%s %d/%d chunks (%.0f%%)", head, p.Done, p.Total, p.Percent())
	case StageOpening:
		return fmt.Sprintf("%s %d/%d messages (%.0f%%)", head, p.Done, p.Total, p.Percent())
	}
	return head
}

// defaultProgressEvery is the shortest interval between two events of a
// stage that are neither its first nor its last.
const defaultProgressEvery = 250 * time.Millisecond

// meter rate-limits a service's progress events and hands them to the
// observer. Within a stage it passes the first event, the last (Done ==
// Total), and otherwise at most one event per interval, and never one
// whose Done is below the last passed (concurrent reporters may race). The
// meter's own delivery lock serializes the observer's calls, so an
// observer sees the events in order and must not report progress itself;
// the shuffler holds none of its locks when it reports, the analyzer its
// batch lock (AnalyzerConfig.Progress). A nil meter does nothing.
type meter struct {
	f     func(Progress)
	every time.Duration
	now   func() time.Time

	deliver sync.Mutex // serializes the observer's calls
	mu      sync.Mutex // guards the fields below
	last    Progress
	at      time.Time
	started bool
}

// newMeter returns the meter of observer f (nil if f is nil) passing at
// most one intermediate event per every (defaultProgressEvery if zero).
func newMeter(f func(Progress), every time.Duration) *meter {
	if f == nil {
		return nil
	}
	if every <= 0 {
		every = defaultProgressEvery
	}
	return &meter{f: f, every: every, now: time.Now}
}

// report passes p to the observer if the rate limit allows it.
func (m *meter) report(p Progress) {
	if m == nil {
		return
	}
	m.deliver.Lock()
	defer m.deliver.Unlock()
	if m.pass(p) {
		m.f(p)
	}
}

// pass decides whether p is shown, and records it if so.
func (m *meter) pass(p Progress) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	same := m.started && m.last.Round == p.Round && m.last.Stage == p.Stage
	switch {
	case !same:
	case p.Done < m.last.Done, p.Done == m.last.Done && p.Total == m.last.Total:
		return false // stale, or nothing new
	case p.Done >= p.Total:
	case now.Sub(m.at) < m.every:
		return false
	}
	m.last, m.at, m.started = p, now, true
	return true
}
