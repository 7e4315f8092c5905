package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestPruneReportMetadata: the reports of a forwarded and of a void round
// are deleted once they closed before the cut-off, with their client ids,
// nonces and digests gone from the file and the log; an open round's
// reports and a round closed after the cut-off keep theirs; and a report
// for a pruned round is still refused (ErrRoundClosed).
func TestPruneReportMetadata(t *testing.T) {
	db := openTemp(t)
	nonce := func(r int64, i int) []byte { return bytes.Repeat([]byte{byte(16*r) + byte(i) + 1}, 16) }
	for r := int64(1); r <= 3; r++ {
		if err := db.OpenInboxRound(r, []byte("announcement")); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if err := db.Accept(Report{Round: r, Client: fmt.Sprintf("client-r%d-%d", r, i), Nonce: nonce(r, i), Messages: sealedLike(r, fmt.Sprint(i), 2)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.SaveBatch(1, []byte("header"), sealedLike(1, "batch", 4)); err != nil {
		t.Fatal(err)
	}
	if err := db.MarkForwarded(1); err != nil {
		t.Fatal(err)
	}
	if err := db.VoidInboxRound(2); err != nil {
		t.Fatal(err)
	}
	if n, err := db.PruneReportMetadata(time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("pruning rounds closed an hour ago deleted %d reports, %v; want 0", n, err)
	}
	n, err := db.PruneReportMetadata(time.Now().Add(time.Second))
	if err != nil || n != 4 {
		t.Fatalf("pruned %d reports, %v; want the 4 of rounds 1 and 2", n, err)
	}
	reports := map[int64]int64{}
	rs, err := db.InboxRounds()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		reports[r.Round] = r.Reports
	}
	if reports[1] != 0 || reports[2] != 0 || reports[3] != 2 {
		t.Fatalf("reports per round after pruning: %v, want 0, 0, 2", reports)
	}
	for r := int64(1); r <= 2; r++ {
		for i := range 2 {
			if fileHoldsBytes(t, db, []byte(fmt.Sprintf("client-r%d-%d", r, i))) || fileHoldsBytes(t, db, nonce(r, i)) {
				t.Fatalf("round %d client %d: its id or nonce is still on disk", r, i)
			}
		}
	}
	if !fileHoldsBytes(t, db, []byte("client-r3-0")) {
		t.Fatal("the open round's client id is not found: the scan cannot detect anything")
	}
	err = db.Accept(Report{Round: 1, Client: "client-r1-0", Nonce: nonce(1, 0), Messages: sealedLike(1, "0", 2)})
	if !errors.Is(err, ErrRoundClosed) {
		t.Fatalf("a report for a pruned round: %v, want ErrRoundClosed", err)
	}
}

// fileHoldsBytes reports whether the database file or its write-ahead log
// contains b.
func fileHoldsBytes(t *testing.T, db *DB, b []byte) bool {
	t.Helper()
	for _, suffix := range []string{"", "-wal"} {
		f, err := os.ReadFile(db.path + suffix)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(f, b) {
			return true
		}
	}
	return false
}
