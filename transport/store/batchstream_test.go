package store

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// TestBatchStream: SaveBatchFunc stores what SaveBatch stores (same
// chunks), EachBatchChunk reads back what Batch returns, and
// EachRoundReport what RoundReports returns, over several pages.
func TestBatchStream(t *testing.T) {
	db := openTemp(t)
	const reports = 2*reportPage + 5
	if err := db.OpenInboxRound(1, nil); err != nil {
		t.Fatal(err)
	}
	for i := range reports {
		if err := db.Accept(Report{Round: 1, Client: fmt.Sprintf("client-%d", i), Nonce: []byte(fmt.Sprintf("nonce-%012d", i)), Messages: sealedLike(1, fmt.Sprint(i), 2)}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := db.RoundReports(1)
	if err != nil {
		t.Fatal(err)
	}
	var got []InboxReport
	if err := db.EachRoundReport(1, func(r InboxReport) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != reports || !reflect.DeepEqual(got, want) {
		t.Errorf("EachRoundReport: %d reports, differ from RoundReports' %d", len(got), len(want))
	}
	stop := errors.New("stop")
	if err := db.EachRoundReport(1, func(InboxReport) error { return stop }); err != stop {
		t.Errorf("fn's error: %v", err)
	}
	ms := make([]SealedMessage, 5)
	for i := range ms {
		ms[i] = SealedMessage{Label: uint32(i), Sealed: bytes.Repeat([]byte{byte(i + 1)}, batchChunkBytes/2-16)}
	}
	if err := db.SaveBatchFunc(1, []byte("h"), func(put func(SealedMessage) error) error {
		for _, m := range ms {
			if err := put(m); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.EachRoundReport(1, func(InboxReport) error { return nil }); !errors.Is(err, ErrExpired) {
		t.Errorf("reports of a shuffled round: %v", err)
	}
	b, err := db.Batch(1)
	if err != nil || !reflect.DeepEqual(b.Messages, ms) {
		t.Fatalf("Batch after SaveBatchFunc: %d messages, %v", len(b.Messages), err)
	}
	var streamed []SealedMessage
	chunks := 0
	if err := db.EachBatchChunk(1, func(info BatchInfo, c []SealedMessage) error {
		if string(info.Header) != "h" || info.Messages != 5 || info.Chunks != 3 {
			t.Errorf("info %+v", info)
		}
		chunks++
		streamed = append(streamed, c...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if chunks != 3 || !reflect.DeepEqual(streamed, ms) {
		t.Errorf("EachBatchChunk: %d chunks, %d messages", chunks, len(streamed))
	}
	if err := db.MarkForwarded(1); err != nil {
		t.Fatal(err)
	}
	if err := db.EachBatchChunk(1, func(BatchInfo, []SealedMessage) error { return nil }); !errors.Is(err, ErrExpired) {
		t.Errorf("forwarded batch: %v", err)
	}
	if err := db.EachBatchChunk(7, func(BatchInfo, []SealedMessage) error { return nil }); !errors.Is(err, ErrNoBatch) {
		t.Errorf("no batch: %v", err)
	}
	if err := db.OpenInboxRound(2, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveBatchFunc(2, nil, func(put func(SealedMessage) error) error { return stop }); err != stop && !errors.Is(err, stop) {
		t.Errorf("each's error: %v", err)
	}
	if _, err := db.Batch(2); !errors.Is(err, ErrNoBatch) {
		t.Errorf("a failed SaveBatchFunc left a batch: %v", err)
	}
}
