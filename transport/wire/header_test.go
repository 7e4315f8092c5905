package wire

import (
	"crypto/ed25519"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/transport/pki"
)

// signedHeader returns a registry with one client, and a signed
// SubmitReport request of it with its parsed header.
func signedHeader(t *testing.T, now time.Time) (*pki.Registry, *SubmitReportRequest, *pki.SignedRequest) {
	t.Helper()
	pub, key, _ := ed25519.GenerateKey(nil)
	s, err := pki.NewSigner("client-0001", key)
	if err != nil {
		t.Fatal(err)
	}
	reg := pki.NewRegistry()
	if err := reg.Add("client-0001", pub); err != nil {
		t.Fatal(err)
	}
	req := &SubmitReportRequest{Auth: &RequestAuth{}, Round: 3, Messages: []*SealedMessage{{Label: 1, Ciphertext: []byte("sealed")}}}
	if err := Sign(s, rand.New(rand.NewPCG(1, 2)), now, Shuffler_SubmitReport_FullMethodName, req); err != nil {
		t.Fatal(err)
	}
	b, err := Header(Shuffler_SubmitReport_FullMethodName, req)
	if err != nil {
		t.Fatal(err)
	}
	sr, err := ParseHeader(metadata.Pairs(AuthHeader, string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return reg, req, sr
}

// TestCheckHeader: a header is accepted as signed, and refused for each
// reason CheckHeader checks, with that reason.
func TestCheckHeader(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	reg, _, sr := signedHeader(t, now)
	const skew = 30 * time.Second
	forged := *sr
	forged.Signature = append([]byte(nil), sr.Signature...)
	forged.Signature[5] ^= 1
	otherBody := *sr
	otherBody.PayloadHash[0] ^= 1
	unknown := *sr
	unknown.ClientID = "client-0002"
	for _, c := range []struct {
		name   string
		sr     *pki.SignedRequest
		method string
		at     time.Time
		want   pki.Reason // 0: accepted
	}{
		{"signed", sr, Shuffler_SubmitReport_FullMethodName, now, 0},
		{"at the window's edge", sr, Shuffler_SubmitReport_FullMethodName, now.Add(skew), 0},
		{"another method", sr, Shuffler_Heartbeat_FullMethodName, now, pki.ReasonKind},
		{"unregistered", &unknown, Shuffler_SubmitReport_FullMethodName, now, pki.ReasonUnknownClient},
		{"too old", sr, Shuffler_SubmitReport_FullMethodName, now.Add(skew + 1), pki.ReasonTime},
		{"from the future", sr, Shuffler_SubmitReport_FullMethodName, now.Add(-skew - 1), pki.ReasonTime},
		{"forged signature", &forged, Shuffler_SubmitReport_FullMethodName, now, pki.ReasonSignature},
		{"another body's digest", &otherBody, Shuffler_SubmitReport_FullMethodName, now, pki.ReasonSignature},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckHeader(reg, skew, c.at, c.method, c.sr)
			got, ok := pki.ReasonOf(err)
			if c.want == 0 && err != nil || c.want != 0 && (!ok || got != c.want) {
				t.Fatalf("CheckHeader: %v, want reason %v", err, c.want)
			}
		})
	}
}

// TestParseHeader refuses metadata without exactly one decodable header.
func TestParseHeader(t *testing.T) {
	_, req, _ := signedHeader(t, time.Now())
	b, _ := Header(Shuffler_SubmitReport_FullMethodName, req)
	for name, md := range map[string]metadata.MD{
		"none":    {},
		"two":     metadata.Pairs(AuthHeader, string(b), AuthHeader, string(b)),
		"garbage": metadata.Pairs(AuthHeader, "\x01\x02"),
		"cut":     metadata.Pairs(AuthHeader, string(b[:len(b)-1])),
	} {
		if _, err := ParseHeader(md); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// TestSameRequest: the header matches its own request, and not one whose
// auth differs in any signed field.
func TestSameRequest(t *testing.T) {
	_, req, sr := signedHeader(t, time.Now())
	if !SameRequest(sr, Shuffler_SubmitReport_FullMethodName, req) {
		t.Fatal("a request does not match its own header")
	}
	for name, change := range map[string]func(r *SubmitReportRequest){
		"client":    func(r *SubmitReportRequest) { r.Auth.ClientId = "client-0002" },
		"round":     func(r *SubmitReportRequest) { r.Round++ },
		"timestamp": func(r *SubmitReportRequest) { r.Auth.TimestampUnixNano++ },
		"nonce":     func(r *SubmitReportRequest) { r.Auth.Nonce[0] ^= 1 },
		"signature": func(r *SubmitReportRequest) { r.Auth.Signature[0] ^= 1 },
		"no auth":   func(r *SubmitReportRequest) { r.Auth = nil },
	} {
		r := proto.Clone(req).(*SubmitReportRequest)
		change(r)
		if SameRequest(sr, Shuffler_SubmitReport_FullMethodName, r) {
			t.Errorf("%s changed: still the same request", name)
		}
	}
	if SameRequest(sr, Shuffler_Heartbeat_FullMethodName, req) {
		t.Error("another method: still the same request")
	}
}

// TestStatusOfUndecodable: bytes that are not protobuf are InvalidArgument
// REASON_MALFORMED with a detail.
func TestStatusOfUndecodable(t *testing.T) {
	err := StatusOf(Unmarshal([]byte{0xff, 0xff, 0xff}, &SubmitReportRequest{}))
	d, ok := DetailOf(err)
	if status.Code(err) != codes.InvalidArgument || !ok || d.Reason != Reason_REASON_MALFORMED {
		t.Fatalf("%v, want InvalidArgument MALFORMED with a detail", err)
	}
}

// BenchmarkHeader is the client's cost of a signed header
// (DialOptions' interceptor) for a per-coordinate report of d = 7,850
// sealed 77-byte messages: the body is encoded and hashed once more.
func BenchmarkHeader(b *testing.B) {
	_, key, _ := ed25519.GenerateKey(nil)
	s, _ := pki.NewSigner("client-0001", key)
	req := &SubmitReportRequest{Auth: &RequestAuth{}, Round: 3}
	for j := range 7850 {
		req.Messages = append(req.Messages, &SealedMessage{Label: uint32(j), Ciphertext: make([]byte, 77)})
	}
	if err := Sign(s, rand.New(rand.NewPCG(1, 2)), time.Now(), Shuffler_SubmitReport_FullMethodName, req); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Header(Shuffler_SubmitReport_FullMethodName, req); err != nil {
			b.Fatal(err)
		}
	}
}
