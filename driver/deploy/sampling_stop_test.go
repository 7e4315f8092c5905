package deploy

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// TestUnsampledClientStopsAfterLastRound: a client left out of the run's
// last round's sample is told so when it pulls (REASON_NOT_SAMPLED with
// the round) and its Run returns nil instead of pulling forever.
func TestUnsampledClientStopsAfterLastRound(t *testing.T) {
	cfg := testConfig("ss-simple", 10, 1)
	cfg.ClientsPerRound = 3
	// The round opens once 9 clients registered (clients 1..9, by hand) and
	// samples among them: client 0, which registers later through Run, is
	// outside the sample for certain.
	h := newSampledHarness(t, cfg, 1, 9, 20*time.Second)
	for i := 1; i < 10; i++ {
		if err := h.register(t, i, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := DialShuffler(h.creds, h.pub)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	db, err := store.Open(filepath.Join(t.TempDir(), "client.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, err := NewClient(ClientConfig{Setup: h.st, Index: 0, Signer: h.signer(t, 0), AnalyzerKey: h.creds.HPKEPublic, DB: db,
		Shuffler: wire.NewShufflerClient(conn), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if sample := h.currentSample(t, 1); len(sample) != 3 || sample[ClientID(0)] {
		t.Fatalf("sample %v: want 3 of clients 1..9", sample)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatalf("an unsampled client's Run after the last round: %v (want nil, before the timeout)", err)
	}
}
