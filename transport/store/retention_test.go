package store

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// sealedLike returns n distinct pseudo-random "ciphertexts" of 300 bytes
// for round r (long enough to span database pages and to be found by a
// byte scan).
func sealedLike(r int64, client string, n int) []SealedMessage {
	ms := make([]SealedMessage, n)
	for i := range ms {
		var b []byte
		for k := 0; len(b) < 300; k++ {
			h := sha256.Sum256(fmt.Appendf(nil, "retention/%d/%s/%d/%d", r, client, i, k))
			b = append(b, h[:]...)
		}
		ms[i] = SealedMessage{Label: uint32(i), Sealed: b[:300]}
	}
	return ms
}

// fileHolds reports whether the database file or its write-ahead log
// contains any 32-byte window of a message (the start of each).
func fileHolds(t *testing.T, db *DB, ms []SealedMessage) bool {
	t.Helper()
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(db.path + suffix)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if bytes.Contains(b, m.Sealed[:32]) || bytes.Contains(b, m.Sealed[150:182]) {
				return true
			}
		}
	}
	return false
}

// TestRetention: the shuffler's stored ciphertexts are deleted with the
// status change that ends their use, in the same transaction: the reports'
// messages when the round is shuffled or voided, the saved batch when it is
// forwarded; the round's counts, nonces and digests stay (the durable replay
// checks), and nothing is left in the database file or its log.
func TestRetention(t *testing.T) {
	cases := []struct {
		name string
		void bool
	}{{"forwarded", false}, {"void", true}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := openTemp(t)
			if err := db.OpenInboxRound(1, []byte("announcement")); err != nil {
				t.Fatal(err)
			}
			var all []SealedMessage
			for i := 0; i < 3; i++ {
				client := fmt.Sprint("c", i)
				ms := sealedLike(1, client, 4)
				all = append(all, ms...)
				if err := db.Accept(Report{Round: 1, Client: client, Nonce: bytes.Repeat([]byte{byte(i + 1)}, 16), Messages: ms}); err != nil {
					t.Fatal(err)
				}
			}
			dummy := sealedLike(1, "dummy", 1)
			all = append(all, dummy...)
			if !fileHolds(t, db, all[:1]) {
				t.Fatal("the scan does not find an accepted message: it cannot detect anything")
			}
			if c.void {
				if err := db.VoidInboxRound(1); err != nil {
					t.Fatal(err)
				}
			} else {
				batch := append(append([]SealedMessage(nil), all[4:]...), all[:4]...)
				if err := db.SaveBatch(1, []byte("header"), batch); err != nil {
					t.Fatal(err)
				}
				// Shuffled: the reports' messages are gone, the batch is
				// whole.
				if _, err := db.RoundReports(1); !errors.Is(err, ErrExpired) {
					t.Fatalf("RoundReports of a shuffled round: %v, want ErrExpired", err)
				}
				b, err := db.Batch(1)
				if err != nil || len(b.Messages) != len(batch) {
					t.Fatalf("Batch of a shuffled round: %d messages, %v", len(b.Messages), err)
				}
				if err := db.MarkForwarded(1); err != nil {
					t.Fatal(err)
				}
				if _, err := db.Batch(1); !errors.Is(err, ErrExpired) {
					t.Fatalf("Batch of a forwarded round: %v, want ErrExpired", err)
				}
			}
			if _, err := db.RoundReports(1); !errors.Is(err, ErrExpired) {
				t.Fatalf("RoundReports after %s: %v, want ErrExpired", c.name, err)
			}
			r, err := db.InboxRound(1)
			if err != nil || r.Reports != 3 || r.Messages != 12 {
				t.Fatalf("round counts after expiry: %+v, %v (want 3 reports, 12 messages)", r, err)
			}
			if fileHolds(t, db, all) {
				t.Fatalf("the database file or its log still holds a sealed message of the %s round", c.name)
			}
			// The replay checks outlive the messages.
			if err := db.OpenInboxRound(2, nil); err != nil {
				t.Fatal(err)
			}
			replay := Report{Round: 2, Client: "c9", Nonce: bytes.Repeat([]byte{1}, 16), Messages: sealedLike(2, "c9", 1)}
			if err := db.Accept(replay); !errors.Is(err, ErrReplay) {
				t.Errorf("a request nonce of the expired round: %v, want ErrReplay", err)
			}
			replay = Report{Round: 2, Client: "c9", Nonce: bytes.Repeat([]byte{9}, 16), Messages: sealedLike(1, "c0", 4)}
			if err := db.Accept(replay); !errors.Is(err, ErrReplay) {
				t.Errorf("the sealed messages of an expired report: %v, want ErrReplay", err)
			}
			// A late report for the closed round is refused.
			late := Report{Round: 1, Client: "c7", Nonce: bytes.Repeat([]byte{7}, 16), Messages: sealedLike(1, "c7", 1)}
			if err := db.Accept(late); !errors.Is(err, ErrRoundClosed) {
				t.Errorf("a report for the %s round: %v, want ErrRoundClosed", c.name, err)
			}
		})
	}
}

// TestRetentionAcrossReopen: after a restart (close and reopen), a
// forwarded round has no ciphertext to forward again, and a shuffled round
// still has its whole batch (it is forwarded again as saved, never
// re-shuffled: its reports' messages are gone).
func TestRetentionAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for r := int64(1); r <= 2; r++ {
		if err := db.OpenInboxRound(r, nil); err != nil {
			t.Fatal(err)
		}
		ms := sealedLike(r, "c", 2)
		if err := db.Accept(Report{Round: r, Client: "c", Nonce: bytes.Repeat([]byte{byte(r)}, 16), Messages: ms}); err != nil {
			t.Fatal(err)
		}
		if err := db.SaveBatch(r, []byte("h"), ms); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.MarkForwarded(1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Batch(1); !errors.Is(err, ErrExpired) {
		t.Errorf("forwarded round 1 after reopening: %v, want ErrExpired", err)
	}
	b, err := db.Batch(2)
	if err != nil || len(b.Messages) != 2 || !bytes.Equal(b.Messages[1].Sealed, sealedLike(2, "c", 2)[1].Sealed) {
		t.Errorf("shuffled round 2 after reopening: %d messages, %v; want its saved batch", len(b.Messages), err)
	}
	if _, err := db.RoundReports(2); !errors.Is(err, ErrExpired) {
		t.Errorf("reports of shuffled round 2: %v, want ErrExpired (nothing to shuffle again)", err)
	}
	if err := db.SaveBatch(2, []byte("h"), sealedLike(2, "fresh", 2)); !errors.Is(err, ErrBatchSaved) {
		t.Errorf("a second shuffle of round 2: %v, want ErrBatchSaved", err)
	}
	if err := db.OpenInboxRound(1, nil); !errors.Is(err, ErrRoundExists) {
		t.Errorf("reopening forwarded round 1: %v, want ErrRoundExists", err)
	}
}
