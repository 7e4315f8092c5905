package deploy

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// TestShufflerDeletesForwardedCiphertexts: once the analyzer acknowledged a
// round's batch, the shuffler's database (file and write-ahead log) holds
// no ciphertext of that round: neither the clients' reports nor the
// shuffled batch with its dummies.
func TestShufflerDeletesForwardedCiphertexts(t *testing.T) {
	h := newHarness(t, "ss-double", 4, 2, 1)
	h.waitRound(t, 1)
	var sent [][]byte
	for i := 0; i < 4; i++ {
		ms := sealedReport(t, h, 1, 0.01)
		for _, m := range ms {
			sent = append(sent, m.Ciphertext)
		}
		if _, err := h.submit(t, i, 1, ms); err != nil {
			t.Fatal(err)
		}
	}
	h.waitFinished(t, 1)
	waitInboxStatus(t, h, 1, store.InboxForwarded)
	if _, err := h.sdb.Batch(1); !errors.Is(err, store.ErrExpired) {
		t.Fatalf("batch of the forwarded round: %v, want ErrExpired", err)
	}
	if _, err := h.sdb.RoundReports(1); !errors.Is(err, store.ErrExpired) {
		t.Fatalf("reports of the forwarded round: %v, want ErrExpired", err)
	}
	file := shufflerDBBytes(t, h)
	// Each sealed message has its own encapsulated key (bytes 21 to 53 of
	// the format): a fragment no other message shares.
	for i, ct := range sent {
		if bytes.Contains(file, ct[21:53]) {
			t.Fatalf("the shuffler's database still holds client message %d of the forwarded round", i)
		}
	}
	// The round is closed to late reports.
	wantRoundClosed(t, h, 4, 1, "forwarded")
}

// TestShufflerDeletesVoidRoundCiphertexts: a round below its minimum at the
// deadline is void; the shuffler's database then holds no ciphertext of
// its reports, and a report for it (late, or for the past deadline) is
// refused as closed.
func TestShufflerDeletesVoidRoundCiphertexts(t *testing.T) {
	h := newHarnessTimeout(t, testConfig("ss-double", 4, 2), 2, 2*time.Second)
	h.waitRound(t, 1)
	ms := sealedReport(t, h, 1, 0.01)
	if _, err := h.submit(t, 0, 1, ms); err != nil {
		t.Fatal(err)
	}
	waitInboxStatus(t, h, 1, store.InboxVoid)
	if _, err := h.sdb.RoundReports(1); !errors.Is(err, store.ErrExpired) {
		t.Fatalf("reports of the void round: %v, want ErrExpired", err)
	}
	file := shufflerDBBytes(t, h)
	for i, m := range ms {
		if bytes.Contains(file, m.Ciphertext[21:53]) {
			t.Fatalf("the shuffler's database still holds message %d of the void round's report", i)
		}
	}
	wantRoundClosed(t, h, 1, 1, "void")
}

// waitInboxStatus waits (up to 30 s) until the shuffler's inbox has round
// in status.
func waitInboxStatus(t *testing.T, h *harness, round int64, status store.InboxStatus) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := h.sdb.InboxRound(round)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("round %d is %s, never %s", round, r.Status, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// shufflerDBBytes returns the bytes of the shuffler's database file and
// its write-ahead log.
func shufflerDBBytes(t *testing.T, h *harness) []byte {
	t.Helper()
	var file []byte
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(h.sdb.Path() + suffix)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		file = append(file, b...)
	}
	return file
}

// wantRoundClosed checks that client i's report for round is refused as
// closed (what names the round's state in the message).
func wantRoundClosed(t *testing.T, h *harness, i int, round int64, what string) {
	t.Helper()
	if _, err := h.submit(t, i, round, sealedReport(t, h, round, 0.01)); err == nil {
		t.Fatalf("a report for the %s round was accepted", what)
	} else if d, ok := wire.DetailOf(err); !ok || d.Reason != wire.Reason_REASON_ROUND_CLOSED {
		t.Fatalf("a report for the %s round: %v, want ROUND_CLOSED", what, err)
	}
}
