package deploy

import (
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
)

// TestCountRacingRetry: two attempts of one client's submission race; the
// retry finds the report stored and counts it first, then the attempt that
// stored it reaches the round machine. Both are acknowledged and the report
// is counted once (the first attempt got an Internal error, and the
// shuffler logged "stored report refused by the role", in the 1,000-client
// deploy-local run).
func TestCountRacingRetry(t *testing.T) {
	p, err := protocol.New("ss-simple", protocol.Params{Clip: 1, Delta: 1e-6, Epsilon: 8, Rounds: 1, SampleRate: 1,
		Extra: map[string]float64{"randomizer": 1}})
	if err != nil {
		t.Fatal(err)
	}
	live, err := role.NewShuffler[[]byte](p, protocol.Shape{Round: 1, Dim: 2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := &Shuffler{st: &Setup{}, logf: t.Logf, now: time.Now, stats: ShufflerStats{Rejected: map[string]int64{}}}
	cur := &sround{t: 1, live: live, expected: 2}
	msgs := []role.Message[[]byte]{{Label: 0, Payload: []byte{1}}, {Label: 1, Payload: []byte{2}}}
	for _, retry := range []bool{true, false} {
		resp, err := s.count(cur, "client-000001", msgs, 2, retry)
		if err != nil {
			t.Fatalf("retry %v: %v", retry, err)
		}
		if resp.StoredMessages != 2 {
			t.Fatalf("retry %v: %d messages acknowledged, want 2", retry, resp.StoredMessages)
		}
	}
	if live.Senders() != 1 || len(cur.reporters) != 1 || s.Stats().Accepted != 1 {
		t.Fatalf("senders %d, reporters %v, accepted %d; want the report counted once", live.Senders(), cur.reporters, s.Stats().Accepted)
	}
}
