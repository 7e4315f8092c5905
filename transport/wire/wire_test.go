package wire

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/transport/pki"
)

func TestSeedsValid(t *testing.T) {
	for _, m := range validSeeds(t) {
		if err := m.Validate(); err != nil {
			t.Errorf("%T: %v", m, err)
		}
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		n := m.ProtoReflect().New().Interface().(Message)
		if err := Unmarshal(b, n); err != nil {
			t.Errorf("%T round trip: %v", m, err)
		}
		if !proto.Equal(m, n) {
			t.Errorf("%T round trip changed the message", m)
		}
	}
}

// rejectCase is a message Validate must refuse, the field it must name,
// and whether the refusal is ErrTooLarge.
type rejectCase struct {
	name    string
	m       Message
	field   string
	tooBig  bool
	nilsafe bool
}

// rejectHelpers builds invalid messages: a model with an infinite
// weight, an announcement and an auth changed by f.
func rejectHelpers(t *testing.T) (badWeights func() *Model, ann func(func(*RoundAnnouncement)) Message, auth func(func(*RequestAuth)) *RequestAuth) {
	badWeights = func() *Model {
		m := mustModel(t, "m", []float64{1, 2})
		binary.LittleEndian.PutUint64(m.Weights[8:], math.Float64bits(math.Inf(-1)))
		return m
	}
	ann = func(f func(a *RoundAnnouncement)) Message {
		a := validAnnouncement(t)
		f(a)
		return a
	}
	auth = func(f func(a *RequestAuth)) *RequestAuth { a := validAuth(); f(a); return a }
	return badWeights, ann, auth
}

// rejectedParts are invalid auths, parameters, models and announcements.
func rejectedParts(t *testing.T) []rejectCase {
	nan := math.NaN()
	badWeights, ann, auth := rejectHelpers(t)
	big := MaxModelBytes/8/2 + 1
	return []rejectCase{
		{"nil auth", (*RequestAuth)(nil), "(message)", false, true},
		{"empty client id", auth(func(a *RequestAuth) { a.ClientId = "" }), "client_id", false, false},
		{"client id with space", auth(func(a *RequestAuth) { a.ClientId = "a b" }), "client_id", false, false},
		{"client id too long", auth(func(a *RequestAuth) { a.ClientId = strings.Repeat("a", MaxIDBytes+1) }), "client_id", true, false},
		{"zero timestamp", auth(func(a *RequestAuth) { a.TimestampUnixNano = 0 }), "timestamp_unix_nano", false, false},
		{"short nonce", auth(func(a *RequestAuth) { a.Nonce = a.Nonce[:15] }), "nonce", false, false},
		{"long nonce", auth(func(a *RequestAuth) { a.Nonce = make([]byte, 65) }), "nonce", true, false},
		{"no signature", auth(func(a *RequestAuth) { a.Signature = nil }), "signature", false, false},
		{"param without value", &Param{Name: "x"}, "value", false, false},
		{"param NaN", &Param{Name: "x", Value: &Param_Number{Number: nan}}, "number", false, false},
		{"param long text", &Param{Name: "x", Value: &Param_Text{Text: strings.Repeat("é", MaxTextBytes)}}, "text", true, false},
		{"model zero dimension", &Model{Name: "m"}, "dimension", false, false},
		{"model short weights", &Model{Name: "m", Dimension: 3, Weights: make([]byte, 16)}, "weights", false, false},
		{"model infinite weight", badWeights(), "weights", false, false},
		{"model huge dimension", &Model{Dimension: MaxDimension + 1}, "dimension", true, false},
		{"negative round", ann(func(a *RoundAnnouncement) { a.Round = -1 }), "round", false, false},
		{"no run id", ann(func(a *RoundAnnouncement) { a.RunId = "" }), "run_id", false, false},
		{"no protocol", ann(func(a *RoundAnnouncement) { a.Protocol = "" }), "protocol", false, false},
		{"duplicate param", ann(func(a *RoundAnnouncement) { a.Params = append(a.Params, a.Params[0]) }), "params[5].name", false, false},
		{"NaN param", ann(func(a *RoundAnnouncement) { a.Params[1].Value = &Param_Number{Number: nan} }), "params[1].number", false, false},
		{"nil param", ann(func(a *RoundAnnouncement) { a.Params[2] = nil }), "params[2].(message)", false, false},
		{"no models", ann(func(a *RoundAnnouncement) { a.Models = nil }), "models", false, false},
		{"bad model", ann(func(a *RoundAnnouncement) { a.Models[1] = badWeights() }), "models[1].weights", false, false},
		{"duplicate model", ann(func(a *RoundAnnouncement) { a.Models[1].Name = "cluster-0" }), "models[1].name", false, false},
		{"models too large", ann(func(a *RoundAnnouncement) {
			a.Models = []*Model{mustModel(t, "a", make([]float64, big)), mustModel(t, "b", make([]float64, big))}
		}), "models", true, false},
		{"no deadline", ann(func(a *RoundAnnouncement) { a.DeadlineUnixNano = 0 }), "deadline_unix_nano", false, false},
		{"zero ttl", ann(func(a *RoundAnnouncement) { a.TtlMillis = 0 }), "ttl_millis", false, false},
		{"huge ttl", ann(func(a *RoundAnnouncement) { a.TtlMillis = MaxTTLMillis + 1 }), "ttl_millis", true, false},
		{"zero min reports", ann(func(a *RoundAnnouncement) { a.MinReports = 0 }), "min_reports", false, false},
		{"NaN sampling rate", ann(func(a *RoundAnnouncement) { a.SamplingRate = nan }), "sampling_rate", false, false},
		{"sampling rate above 1", ann(func(a *RoundAnnouncement) { a.SamplingRate = 1.5 }), "sampling_rate", false, false},
		{"no analyzer key", ann(func(a *RoundAnnouncement) { a.AnalyzerPublicKey = nil }), "analyzer_public_key", false, false},
		{"no suite", ann(func(a *RoundAnnouncement) { a.HpkeSuite = "" }), "hpke_suite", false, false},
	}
}

// rejectedRequests are invalid messages, requests, answers and batches.
func rejectedRequests(t *testing.T) []rejectCase {
	_, ann, auth := rejectHelpers(t)
	return []rejectCase{
		{"empty ciphertext", &SealedMessage{Label: 1}, "ciphertext", false, false},
		{"huge ciphertext", &SealedMessage{Ciphertext: make([]byte, MaxCiphertextBytes+1)}, "ciphertext", true, false},
		{"unknown reason", &ErrorDetail{Reason: 99}, "reason", false, false},
		{"detail round", &ErrorDetail{Round: -2}, "round", false, false},
		{"register without auth", &RegisterRequest{PublicKey: []byte{1}, KeyAlgorithm: "ed25519"}, "auth", false, false},
		{"register bad nonce", &RegisterRequest{Auth: auth(func(a *RequestAuth) { a.Nonce = nil }), PublicKey: []byte{1}, KeyAlgorithm: "x"}, "auth.nonce", false, false},
		{"register no key", &RegisterRequest{Auth: validAuth(), KeyAlgorithm: "ed25519"}, "public_key", false, false},
		{"register no algorithm", &RegisterRequest{Auth: validAuth(), PublicKey: []byte{1}}, "key_algorithm", false, false},
		{"register response interval", &RegisterResponse{ClientId: "c"}, "heartbeat_interval_millis", false, false},
		{"heartbeat without auth", &HeartbeatRequest{}, "auth", false, false},
		{"heartbeat response round", &HeartbeatResponse{HeartbeatIntervalMillis: 1, CurrentRound: -2}, "current_round", false, false},
		{"pull after round", &PullTaskRequest{Auth: validAuth(), AfterRound: -2}, "after_round", false, false},
		{"pull bad task", &PullTaskResponse{Task: ann(func(a *RoundAnnouncement) { a.TtlMillis = -1 }).(*RoundAnnouncement)}, "task.ttl_millis", false, false},
		{"pull retry", &PullTaskResponse{RetryAfterMillis: -1}, "retry_after_millis", false, false},
		{"submit no messages", &SubmitReportRequest{Auth: validAuth(), Round: 1}, "messages", false, false},
		{"submit nil message", &SubmitReportRequest{Auth: validAuth(), Round: 1, Messages: []*SealedMessage{nil}}, "messages[0].(message)", false, false},
		{"submit empty message", &SubmitReportRequest{Auth: validAuth(), Round: 1, Messages: append(validMessages(2), &SealedMessage{})}, "messages[2].ciphertext", false, false},
		{"submit too many bytes", &SubmitReportRequest{Auth: validAuth(), Round: 1, Messages: []*SealedMessage{
			{Ciphertext: make([]byte, MaxCiphertextBytes)}, {Ciphertext: make([]byte, MaxCiphertextBytes)},
			{Ciphertext: make([]byte, MaxCiphertextBytes)}, {Ciphertext: []byte{1}}}}, "messages", true, false},
		{"submit negative round", &SubmitReportRequest{Auth: validAuth(), Round: -1, Messages: validMessages(1)}, "round", false, false},
		{"announce empty", &AnnounceRequest{}, "announcement", false, false},
		{"counts dummies", &BatchCounts{Messages: 1, Dummies: 2}, "dummies", false, false},
		{"counts reports", &BatchCounts{Reports: 3, Messages: 3, Dummies: 1}, "reports", false, false},
		{"counts reason", &BatchCounts{Rejected: map[string]uint32{"": 1}}, `rejected[""]`, false, false},
		{"header no counts", &BatchHeader{Round: 1, RunId: "r"}, "counts", false, false},
		{"header bad counts", &BatchHeader{Round: 1, RunId: "r", Counts: &BatchCounts{Messages: 1, Dummies: 2}}, "counts.dummies", false, false},
		{"empty chunk", &BatchChunk{}, "messages", false, false},
		{"chunk bad header", &BatchChunk{Header: &BatchHeader{}}, "header.run_id", false, false},
		{"response reason", &BatchResponse{Rejected: map[string]uint64{"a b": 1}}, `rejected["a b"]`, false, false},
	}
}

// TestValidateRejects mutates valid messages one field at a time; each
// must fail with a *FieldError naming the field and wrapping
// checks.ErrInvalid (and ErrTooLarge for size violations).
func TestValidateRejects(t *testing.T) {
	for _, tc := range append(rejectedParts(t), rejectedRequests(t)...) {

		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Validate()
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate = %v, want a *FieldError", err)
			}
			if fe.Field != tc.field {
				t.Errorf("field = %q, want %q (%v)", fe.Field, tc.field, err)
			}
			if !errors.Is(err, checks.ErrInvalid) {
				t.Errorf("%v does not wrap checks.ErrInvalid", err)
			}
			if errors.Is(err, ErrTooLarge) != tc.tooBig {
				t.Errorf("ErrTooLarge = %v, want %v (%v)", !tc.tooBig, tc.tooBig, err)
			}
		})
	}
}

func TestFloat64s(t *testing.T) {
	xs := []float64{0, -0.0, 1.5, -3e300, math.SmallestNonzeroFloat64, math.MaxFloat64}
	b, err := PackFloat64s(xs)
	if err != nil || len(b) != 48 {
		t.Fatalf("Pack = %d bytes, %v", len(b), err)
	}
	got, err := UnpackFloat64s(nil, b, len(xs))
	if err != nil {
		t.Fatal(err)
	}
	for i := range xs {
		if math.Float64bits(got[i]) != math.Float64bits(xs[i]) {
			t.Errorf("value %d: %v != %v", i, got[i], xs[i])
		}
	}
	dst := make([]float64, 0, 10)
	if got, _ := UnpackFloat64s(dst, b, 6); &got[0] != &dst[:1][0] {
		t.Error("Unpack did not reuse dst")
	}
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := PackFloat64s([]float64{1, x}); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("Pack(%v) = %v", x, err)
		}
		bb := binary.LittleEndian.AppendUint64(nil, math.Float64bits(x))
		if _, err := UnpackFloat64s(nil, bb, 1); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("Unpack(%v) = %v", x, err)
		}
		if firstNonFinite(bb) != 0 {
			t.Errorf("firstNonFinite(%v) = %d", x, firstNonFinite(bb))
		}
	}
	for _, tc := range []struct {
		b   []byte
		dim int
	}{{b[:47], 6}, {b, 5}, {b, -1}, {nil, MaxDimension + 1}} {
		if _, err := UnpackFloat64s(nil, tc.b, tc.dim); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("Unpack(%d bytes, %d) = %v", len(tc.b), tc.dim, err)
		}
	}
	if _, err := NewModel("m", nil); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("NewModel(empty) = %v", err)
	}
	m := mustModel(t, "m", xs)
	if w, err := m.Float64s(); err != nil || len(w) != 6 || w[2] != 1.5 {
		t.Errorf("Float64s = %v, %v", w, err)
	}
}

func TestSigningBytes(t *testing.T) {
	req := &SubmitReportRequest{Auth: validAuth(), Round: 3, Messages: validMessages(3)}
	b1, err := SigningBytes(Shuffler_SubmitReport_FullMethodName, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Auth.Signature) == 0 {
		t.Fatal("SigningBytes modified the request")
	}
	// The signature itself is not signed.
	req2 := proto.Clone(req).(*SubmitReportRequest)
	req2.Auth.Signature = []byte("other")
	b2, _ := SigningBytes(Shuffler_SubmitReport_FullMethodName, req2)
	if !bytes.Equal(b1, b2) {
		t.Error("signing bytes depend on the signature")
	}
	// Everything else is: method, round, labels, ciphertexts, nonce.
	for name, f := range map[string]func(r *SubmitReportRequest){
		"round":      func(r *SubmitReportRequest) { r.Round = 4 },
		"label":      func(r *SubmitReportRequest) { r.Messages[1].Label = 9 },
		"ciphertext": func(r *SubmitReportRequest) { r.Messages[0].Ciphertext[0] ^= 1 },
		"nonce":      func(r *SubmitReportRequest) { r.Auth.Nonce[0] ^= 1 },
		"timestamp":  func(r *SubmitReportRequest) { r.Auth.TimestampUnixNano++ },
		"client":     func(r *SubmitReportRequest) { r.Auth.ClientId = "client-0002" },
	} {
		r := proto.Clone(req).(*SubmitReportRequest)
		f(r)
		b, _ := SigningBytes(Shuffler_SubmitReport_FullMethodName, r)
		if bytes.Equal(b, b1) {
			t.Errorf("changing the %s does not change the signing bytes", name)
		}
	}
	hb, _ := SigningBytes(Shuffler_Heartbeat_FullMethodName, req)
	if bytes.Equal(hb, b1) {
		t.Error("signing bytes do not depend on the method")
	}
	if _, err := SigningBytes("", req); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("empty method: %v", err)
	}
	if _, err := SigningBytes("m", &SubmitReportRequest{}); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("no auth: %v", err)
	}
	short := proto.Clone(req).(*SubmitReportRequest)
	short.Auth.Nonce = short.Auth.Nonce[:15]
	if _, err := SigningBytes(Shuffler_SubmitReport_FullMethodName, short); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("15-byte nonce: %v", err)
	}
	// The one encoding: pki's request over the body digest.
	sr, body, err := SignedRequest(Shuffler_SubmitReport_FullMethodName, req)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sr.SigningBytes(), b1) || sr.Kind != Shuffler_SubmitReport_FullMethodName || sr.Round != 3 ||
		sr.ClientID != req.Auth.ClientId || sr.PayloadHash != pki.PayloadHash(body) {
		t.Errorf("SignedRequest = %+v, not the signing bytes' request", sr.Request)
	}
	noAuth := proto.Clone(req).(*SubmitReportRequest)
	noAuth.Auth = nil
	if want, _ := (proto.MarshalOptions{Deterministic: true}).Marshal(noAuth); !bytes.Equal(body, want) {
		t.Error("the signed body is not the request without its auth")
	}
}

// TestSignVerify: wire.Sign and wire.Verify are the two ends of the signed
// encoding; a request changed after signing, sent to another method,
// replayed or stale is rejected with pki's reason.
func TestSignVerify(t *testing.T) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := pki.NewSigner("client-0001", key)
	if err != nil {
		t.Fatal(err)
	}
	reg := pki.NewRegistry()
	if err := reg.Add("client-0001", s.Public()); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	r := rand.New(rand.NewPCG(1, 2))
	newReq := func() *SubmitReportRequest {
		req := &SubmitReportRequest{Auth: &RequestAuth{}, Round: 3, Messages: validMessages(3)}
		if err := Sign(s, r, now, Shuffler_SubmitReport_FullMethodName, req); err != nil {
			t.Fatal(err)
		}
		return req
	}
	cases := []struct {
		name   string
		method string
		at     time.Duration
		change func(*SubmitReportRequest)
		want   pki.Reason // 0: accepted
	}{
		{name: "valid", method: Shuffler_SubmitReport_FullMethodName},
		// The verifier rebuilds the signed request from the method and
		// the body it received: a request sent to another method or
		// changed after signing fails the signature.
		{name: "other method", method: Shuffler_Heartbeat_FullMethodName, want: pki.ReasonSignature},
		{name: "round changed", method: Shuffler_SubmitReport_FullMethodName, change: func(q *SubmitReportRequest) { q.Round = 4 }, want: pki.ReasonSignature},
		{name: "ciphertext changed", method: Shuffler_SubmitReport_FullMethodName, change: func(q *SubmitReportRequest) { q.Messages[0].Ciphertext[0] ^= 1 }, want: pki.ReasonSignature},
		{name: "timestamp changed", method: Shuffler_SubmitReport_FullMethodName, change: func(q *SubmitReportRequest) { q.Auth.TimestampUnixNano++ }, want: pki.ReasonSignature},
		{name: "bad signature", method: Shuffler_SubmitReport_FullMethodName, change: func(q *SubmitReportRequest) { q.Auth.Signature[0] ^= 1 }, want: pki.ReasonSignature},
		{name: "stale", method: Shuffler_SubmitReport_FullMethodName, at: time.Hour, want: pki.ReasonTime},
		{name: "unknown client", method: Shuffler_SubmitReport_FullMethodName, change: func(q *SubmitReportRequest) { q.Auth.ClientId = "client-0002" }, want: pki.ReasonUnknownClient},
	}
	for _, c := range cases {
		v, err := pki.NewVerifier(reg, pki.DefaultVerifierConfig())
		if err != nil {
			t.Fatal(err)
		}
		req := newReq()
		if c.change != nil {
			c.change(req)
		}
		id, err := Verify(v, now.Add(c.at), c.method, req)
		if c.want == 0 {
			if err != nil || id != "client-0001" {
				t.Errorf("%s: Verify = %q, %v", c.name, id, err)
			}
			// The same request again is a replay.
			if _, err := Verify(v, now, c.method, req); func() pki.Reason { r, _ := pki.ReasonOf(err); return r }() != pki.ReasonReplay {
				t.Errorf("%s: replayed: %v, want a replay rejection", c.name, err)
			}
			continue
		}
		if got, ok := pki.ReasonOf(err); !ok || got != c.want {
			t.Errorf("%s: Verify = %v, want reason %v", c.name, err, c.want)
		}
	}
	if err := Sign(s, r, now, Shuffler_SubmitReport_FullMethodName, &SubmitReportRequest{}); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("Sign without auth: %v", err)
	}
}

func TestStatus(t *testing.T) {
	err := Errorf(codes.FailedPrecondition, Reason_REASON_DUPLICATE_REPORT, "", 7, "client %s already reported", "c1")
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("code %v", status.Code(err))
	}
	d, ok := DetailOf(err)
	if !ok || d.Reason != Reason_REASON_DUPLICATE_REPORT || d.Round != 7 || !strings.Contains(d.Message, "c1") {
		t.Errorf("DetailOf = %v, %v", d, ok)
	}
	for _, tc := range []struct {
		err    error
		code   codes.Code
		reason Reason
		field  string
	}{
		{(&SealedMessage{}).Validate(), codes.InvalidArgument, Reason_REASON_MALFORMED, "ciphertext"},
		{(&SealedMessage{Ciphertext: make([]byte, MaxCiphertextBytes+1)}).Validate(), codes.ResourceExhausted, Reason_REASON_TOO_LARGE, "ciphertext"},
		{errors.New("disk on fire"), codes.Internal, Reason_REASON_INTERNAL, ""},
		{err, codes.FailedPrecondition, Reason_REASON_DUPLICATE_REPORT, ""},
	} {
		st := StatusOf(tc.err)
		d, ok := DetailOf(st)
		if status.Code(st) != tc.code || !ok || d.Reason != tc.reason || d.Field != tc.field {
			t.Errorf("StatusOf(%v) = %v, detail %v", tc.err, st, d)
		}
	}
	if StatusOf(nil) != nil {
		t.Error("StatusOf(nil) != nil")
	}
	if _, ok := DetailOf(errors.New("plain")); ok {
		t.Error("DetailOf(plain error) found a detail")
	}
	long := Errorf(codes.Internal, Reason_REASON_INTERNAL, strings.Repeat("f", 1000), -1, "%s", strings.Repeat("m", 10000))
	if d, ok := DetailOf(long); !ok || len(d.Message) != MaxMessageTextBytes || len(d.Field) != MaxIDBytes {
		t.Errorf("long detail not truncated to valid: %v", ok)
	}
}

func TestUnmarshal(t *testing.T) {
	var r SubmitReportRequest
	if err := Unmarshal([]byte{0xff, 0xff}, &r); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("garbage: %v", err)
	}
	if err := Unmarshal(make([]byte, DefaultMaxMessageBytes+1), &r); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized: %v", err)
	}
	b, _ := proto.Marshal(&SubmitReportRequest{Auth: validAuth(), Round: 1})
	var fe *FieldError
	if err := Unmarshal(b, &r); !errors.As(err, &fe) || fe.Field != "messages" {
		t.Errorf("decodes but invalid: %v", err)
	}
}

func TestBatchAssembler(t *testing.T) {
	h := validBatchHeader()
	ms := validMessages(5)
	chunks, err := ChunkBatch(h, ms, 2)
	if err != nil || len(chunks) != 3 {
		t.Fatalf("ChunkBatch = %d chunks, %v", len(chunks), err)
	}
	var a BatchAssembler
	for _, c := range chunks {
		if err := a.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	gh, gm, err := a.Finish()
	if err != nil || gh != h || len(gm) != 5 || gm[4] != ms[4] {
		t.Fatalf("Finish = %v, %d, %v", gh, len(gm), err)
	}
	for _, tc := range []struct {
		name   string
		chunks []*BatchChunk
		finish bool // the error comes from Finish
	}{
		{"no header", []*BatchChunk{{Messages: ms[:1]}}, false},
		{"two headers", []*BatchChunk{{Header: h, Messages: ms[:1]}, {Header: h, Messages: ms[1:]}}, false},
		{"too many", []*BatchChunk{{Header: h, Messages: ms}, {Messages: ms[:1]}}, false},
		{"too few", []*BatchChunk{{Header: h, Messages: ms[:4]}}, true},
		{"empty stream", nil, true},
		{"invalid chunk", []*BatchChunk{{Header: h}, {}}, false},
	} {
		var a BatchAssembler
		var err error
		for _, c := range tc.chunks {
			if err = a.Add(c); err != nil {
				break
			}
		}
		if tc.finish {
			if err != nil {
				t.Errorf("%s: Add failed: %v", tc.name, err)
			}
			_, _, err = a.Finish()
		}
		if !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tc.name, err)
		}
	}
	if _, err := ChunkBatch(h, ms[:4], 2); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("ChunkBatch count mismatch: %v", err)
	}
	if _, err := ChunkBatch(h, ms, 0); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("ChunkBatch perChunk 0: %v", err)
	}
}
