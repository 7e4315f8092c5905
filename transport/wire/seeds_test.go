package wire

import (
	"bytes"
	"math"
	"testing"
)

// Valid messages of every type: the seeds of the fuzz corpora and the
// starting points of the table-driven tests.

func validAuth() *RequestAuth {
	return &RequestAuth{ClientId: "client-0001", TimestampUnixNano: 1_700_000_000_000_000_000,
		Nonce: bytes.Repeat([]byte{7}, 16), Signature: bytes.Repeat([]byte{9}, 64)}
}

func mustModel(t testing.TB, name string, w []float64) *Model {
	m, err := NewModel(name, w)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func validAnnouncement(t testing.TB) *RoundAnnouncement {
	return &RoundAnnouncement{
		Round: 3, RunId: "run-2026-11-24", Protocol: "ss-double",
		Params: []*Param{
			{Name: "epsilon", Value: &Param_Number{Number: 1.5}},
			{Name: "clip", Value: &Param_Number{Number: 0.01}},
			{Name: "dummies", Value: &Param_Integer{Integer: 12}},
			{Name: "mode", Value: &Param_Text{Text: "per-coordinate"}},
			{Name: "secure", Value: &Param_Flag{Flag: true}},
		},
		Models:           []*Model{mustModel(t, "cluster-0", []float64{0.5, -1, 2, 0}), mustModel(t, "cluster-1", []float64{1, 2, 3, 4})},
		DeadlineUnixNano: 1_700_000_060_000_000_000, TtlMillis: 60_000, MinReports: 10, SamplingRate: 0.1,
		AnalyzerPublicKey: bytes.Repeat([]byte{1}, 32), HpkeSuite: "X25519-HKDF-SHA256/HKDF-SHA256/AES-128-GCM",
	}
}

func validMessages(n int) []*SealedMessage {
	ms := make([]*SealedMessage, n)
	for i := range ms {
		ms[i] = &SealedMessage{Label: uint32(i), Ciphertext: bytes.Repeat([]byte{byte(i + 1)}, 48)}
	}
	return ms
}

func validBatchHeader() *BatchHeader {
	return &BatchHeader{Round: 3, RunId: "run-1", Counts: &BatchCounts{Reports: 2, Messages: 5, Dummies: 1,
		Rejected: map[string]uint32{"duplicate": 1}, Population: 10, Sampled: 3},
		ReporterEpsilons: []float64{0.5, 1}, ReporterDeltas: []float64{0, 1e-6}}
}

// validSeeds returns one valid value of every message type.
func validSeeds(t testing.TB) []Message {
	return []Message{
		validAuth(),
		&Param{Name: "x", Value: &Param_Number{Number: math.Pi}},
		mustModel(t, "m", []float64{1, 2, 3}),
		validAnnouncement(t),
		&SealedMessage{Label: 5, Ciphertext: []byte("ct")},
		&ErrorDetail{Reason: Reason_REASON_REPLAY, Field: "auth.nonce", Message: "nonce reused", Round: 3},
		&RegisterRequest{Auth: validAuth(), PublicKey: bytes.Repeat([]byte{2}, 32), KeyAlgorithm: "ed25519", Epsilon: 2, Delta: 1e-6},
		&RegisterResponse{ClientId: "client-0001", HeartbeatIntervalMillis: 5000},
		&HeartbeatRequest{Auth: validAuth()},
		&HeartbeatResponse{HeartbeatIntervalMillis: 5000, CurrentRound: -1},
		&PullTaskRequest{Auth: validAuth(), AfterRound: -1},
		&PullTaskResponse{Task: validAnnouncement(t), RetryAfterMillis: 100},
		&SubmitReportRequest{Auth: validAuth(), Round: 3, Messages: validMessages(4)},
		&SubmitReportResponse{Round: 3, StoredMessages: 4},
		&AnnounceRequest{Announcement: validAnnouncement(t)},
		&AnnounceResponse{Round: 3, RegisteredClients: 50},
		validBatchHeader().Counts,
		validBatchHeader(),
		&BatchChunk{Header: validBatchHeader(), Messages: validMessages(2)},
		&BatchResponse{Round: 3, Accepted: 4, Rejected: map[string]uint64{"nan": 1}},
	}
}
