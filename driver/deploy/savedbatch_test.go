package deploy

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// TestShufflerForwardsOnlyItsSavedShuffle: a round's shuffled batch is saved
// before it is forwarded, and a shuffler restarted between the two forwards
// the saved batch instead of shuffling the reports again (two shuffles with
// different dummies would let the analyzer tell the dummies apart).
func TestShufflerForwardsOnlyItsSavedShuffle(t *testing.T) {
	h := newHarness(t, "ss-double", 4, 1, 1)
	// The round-7 batch below: sealed messages as a shuffle would hold them
	// (a forwarded round's own batch is deleted once acknowledged, see
	// TestShufflerDeletesForwardedCiphertexts).
	var b store.Batch
	for _, m := range sealedReport(t, h, 7, 0.01) {
		b.Messages = append(b.Messages, store.SealedMessage{Label: m.Label, Sealed: m.Ciphertext})
	}

	// A shuffler that stopped after saving a shuffle and before the
	// analyzer's acknowledgement: round 7 is "shuffled" in its store.
	db, err := store.Open(filepath.Join(t.TempDir(), "shuffler.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ann, err := proto.Marshal(&wire.RoundAnnouncement{Round: 7, RunId: h.st.RunID})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.OpenInboxRound(7, ann); err != nil {
		t.Fatal(err)
	}
	hb, err := proto.Marshal(&wire.BatchHeader{Round: 7, RunId: h.st.RunID, Counts: &wire.BatchCounts{Reports: 1, Messages: uint64(len(b.Messages))}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveBatch(7, hb, b.Messages); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs []string
	// No analyzer listens at this address: the restarted shuffler keeps
	// retrying the saved batch in the background.
	conn, err := DialAnalyzer(h.creds, "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sh, err := NewShuffler(ShufflerConfig{Setup: h.st, DB: db, Registry: h.creds.Registry, AnalyzerKey: h.creds.HPKEPublic,
		Analyzer: wire.NewAnalyzerClient(conn), Logf: func(f string, a ...any) {
			mu.Lock()
			logs = append(logs, f)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	sh.Close()
	mu.Lock()
	joined := strings.Join(logs, "\n")
	mu.Unlock()
	if !strings.Contains(joined, "saved batch") {
		t.Fatalf("the restarted shuffler did not forward its saved batch; it logged:\n%s", joined)
	}
	again, err := db.Batch(7)
	if err != nil || len(again.Messages) != len(b.Messages) {
		t.Fatalf("saved batch after restart: %d messages, %v", len(again.Messages), err)
	}
	for i, m := range again.Messages {
		if !bytes.Equal(m.Sealed, b.Messages[i].Sealed) {
			t.Fatalf("message %d of the saved batch changed: the round was shuffled again", i)
		}
	}
	rs, err := db.InboxRounds()
	if err != nil || len(rs) != 1 || rs[0].Status != store.InboxShuffled {
		t.Fatalf("round 7 after restart: %+v, %v (want still shuffled, awaiting the analyzer)", rs, err)
	}
}
