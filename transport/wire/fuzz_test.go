package wire

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/transport/pki"
)

// Fuzz tests of every decoder path: Unmarshal (size check, proto.Unmarshal,
// Validate) on arbitrary bytes, for every message type. The seed corpus is
// one valid message of the type, its truncations and single-byte flips, so
// the default "go test" runs the seeds only; run one target with e.g.
//
//	go test -run '^$' -fuzz '^FuzzSubmitReportRequest$' -fuzztime 30s ./wire
//
// Properties: no panic; a refusal wraps checks.ErrInvalid; an accepted
// message re-encodes to bytes that decode, validate and compare equal; the
// helpers downstream of Validate (Float64s, SigningBytes, BatchAssembler)
// accept what Validate accepted.

func fuzzSeeds(f *testing.F, typ string) {
	for _, m := range validSeeds(f) {
		if string(m.ProtoReflect().Descriptor().Name()) != typ {
			continue
		}
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		for _, i := range []int{0, len(b) / 3, len(b) - 1} {
			if i >= 0 && i < len(b) {
				c := append([]byte(nil), b...)
				c[i] ^= 0x5a
				f.Add(c)
			}
		}
	}
	f.Add([]byte{})
}

func fuzzCheck(t *testing.T, b []byte, m Message) {
	err := Unmarshal(b, m)
	if err != nil {
		if !errors.Is(err, checks.ErrInvalid) {
			t.Fatalf("refusal does not wrap checks.ErrInvalid: %v", err)
		}
		return
	}
	again, err := proto.Marshal(m)
	if err != nil {
		t.Fatalf("re-encoding a valid message: %v", err)
	}
	n := m.ProtoReflect().New().Interface().(Message)
	if err := Unmarshal(again, n); err != nil {
		t.Fatalf("re-encoded valid message refused: %v", err)
	}
	if !proto.Equal(m, n) {
		t.Fatal("re-encoded message differs")
	}
	downstream(t, m)
}

// downstream runs the helpers that consume validated messages.
func downstream(t *testing.T, m Message) {
	var models []*Model
	switch x := m.(type) {
	case *Model:
		models = []*Model{x}
	case *RoundAnnouncement:
		models = x.Models
	case *PullTaskResponse:
		models = x.GetTask().GetModels()
	case *AnnounceRequest:
		models = x.Announcement.Models
	case *BatchChunk:
		if x.Header != nil {
			var a BatchAssembler
			if err := a.Add(x); err != nil && uint64(len(x.Messages)) <= x.Header.Counts.Messages {
				t.Fatalf("assembler refused a valid first chunk: %v", err)
			}
		}
	}
	for i, mo := range models {
		if w, err := mo.Float64s(); err != nil || len(w) != int(mo.Dimension) {
			t.Fatalf("model %d valid but Float64s: %v", i, err)
		}
	}
	if a, ok := m.(AuthRequest); ok {
		// The signed encoding takes pki's 16-byte nonces; any other
		// length is refused, never a panic.
		_, err := SigningBytes("/shufflefl.wire.v1.Shuffler/X", a)
		if len(a.GetAuth().GetNonce()) == pki.NonceSize && err != nil {
			t.Fatalf("SigningBytes of a valid request: %v", err)
		}
		if err != nil && !errors.Is(err, checks.ErrInvalid) {
			t.Fatalf("SigningBytes error does not wrap checks.ErrInvalid: %v", err)
		}
	}
}

func FuzzRequestAuth(f *testing.F) {
	fuzzSeeds(f, "RequestAuth")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(RequestAuth)) })
}

func FuzzParam(f *testing.F) {
	fuzzSeeds(f, "Param")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(Param)) })
}

func FuzzModel(f *testing.F) {
	fuzzSeeds(f, "Model")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(Model)) })
}

func FuzzRoundAnnouncement(f *testing.F) {
	fuzzSeeds(f, "RoundAnnouncement")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(RoundAnnouncement)) })
}

func FuzzSealedMessage(f *testing.F) {
	fuzzSeeds(f, "SealedMessage")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(SealedMessage)) })
}

func FuzzErrorDetail(f *testing.F) {
	fuzzSeeds(f, "ErrorDetail")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(ErrorDetail)) })
}

func FuzzRegisterRequest(f *testing.F) {
	fuzzSeeds(f, "RegisterRequest")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(RegisterRequest)) })
}

func FuzzRegisterResponse(f *testing.F) {
	fuzzSeeds(f, "RegisterResponse")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(RegisterResponse)) })
}

func FuzzHeartbeatRequest(f *testing.F) {
	fuzzSeeds(f, "HeartbeatRequest")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(HeartbeatRequest)) })
}

func FuzzHeartbeatResponse(f *testing.F) {
	fuzzSeeds(f, "HeartbeatResponse")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(HeartbeatResponse)) })
}

func FuzzPullTaskRequest(f *testing.F) {
	fuzzSeeds(f, "PullTaskRequest")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(PullTaskRequest)) })
}

func FuzzPullTaskResponse(f *testing.F) {
	fuzzSeeds(f, "PullTaskResponse")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(PullTaskResponse)) })
}

func FuzzSubmitReportRequest(f *testing.F) {
	fuzzSeeds(f, "SubmitReportRequest")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(SubmitReportRequest)) })
}

func FuzzSubmitReportResponse(f *testing.F) {
	fuzzSeeds(f, "SubmitReportResponse")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(SubmitReportResponse)) })
}

func FuzzAnnounceRequest(f *testing.F) {
	fuzzSeeds(f, "AnnounceRequest")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(AnnounceRequest)) })
}

func FuzzAnnounceResponse(f *testing.F) {
	fuzzSeeds(f, "AnnounceResponse")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(AnnounceResponse)) })
}

func FuzzBatchCounts(f *testing.F) {
	fuzzSeeds(f, "BatchCounts")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(BatchCounts)) })
}

func FuzzBatchHeader(f *testing.F) {
	fuzzSeeds(f, "BatchHeader")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(BatchHeader)) })
}

func FuzzBatchChunk(f *testing.F) {
	fuzzSeeds(f, "BatchChunk")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(BatchChunk)) })
}

func FuzzBatchResponse(f *testing.F) {
	fuzzSeeds(f, "BatchResponse")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, new(BatchResponse)) })
}
