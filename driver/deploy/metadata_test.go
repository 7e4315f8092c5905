package deploy

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// TestPruneReportMetadata: once round 1 is forwarded, its reports'
// metadata (client ids, nonces, digests, arrival times) is deleted, and
// nothing it protected is lost: a report for round 1, the same request
// again and round 1's ciphertexts in round 2 are all still refused, and
// round 2 is released. The timestamp window is waited for by moving the
// cut-off, not the clock.
func TestPruneReportMetadata(t *testing.T) {
	h := newHarness(t, "ss-double", 2, 2, 1)
	h.waitRound(t, 1)
	good := sealedReport(t, h, 1, 0.01)
	first := h.signedReq(t, 0, good)
	if _, err := h.cli.SubmitReport(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	if _, err := h.submit(t, 1, 1, sealedReport(t, h, 1, -0.01)); err != nil {
		t.Fatal(err)
	}
	h.waitFinished(t, 1)
	waitInbox(t, h.sdb, 1, store.InboxForwarded)
	if n, err := h.sh.PruneMetadata(); err != nil || n != 0 {
		t.Fatalf("within the timestamp window: pruned %d reports, %v; want 0", n, err)
	}
	n, err := h.sdb.PruneReportMetadata(time.Now().Add(time.Second))
	if err != nil || n != 2 {
		t.Fatalf("pruned %d reports, %v; want round 1's 2", n, err)
	}
	_, err = h.cli.SubmitReport(context.Background(), first)
	wantStatus(t, err, codes.Unauthenticated, wire.Reason_REASON_REPLAY)
	_, err = h.submit(t, 0, 1, good)
	wantStatus(t, err, codes.FailedPrecondition, wire.Reason_REASON_ROUND_CLOSED)
	h.waitRound(t, 2)
	_, err = h.submit(t, 0, 2, good)
	wantStatus(t, err, codes.InvalidArgument, wire.Reason_REASON_REPLAY)
	for i := range 2 {
		if _, err := h.submit(t, i, 2, sealedReport(t, h, 2, 0.01)); err != nil {
			t.Fatal(err)
		}
	}
	h.waitFinished(t, 2)
}

// waitInbox waits until the inbox has round r in status want.
func waitInbox(t *testing.T, db *store.DB, r int64, want store.InboxStatus) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		rs, err := db.InboxRounds()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range rs {
			if x.Round == r && x.Status == want {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("round %d never became %s", r, want)
}
