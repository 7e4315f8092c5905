package wire

import (
	"fmt"
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/transport/pki"
)

// AuthRequest is a client request carrying RequestAuth.
type AuthRequest interface {
	Message
	GetAuth() *RequestAuth
}

// A client's request is signed in one encoding, pki.Request.SigningBytes:
// a domain string, the full gRPC method name, the client id, the request's
// round (RequestRound), the timestamp, the nonce and the SHA-256 of the
// request body (RequestBody: the request without its auth). The timestamp,
// the nonce and the signature travel in RequestAuth; SignedRequest rebuilds
// the pki.SignedRequest from a received request, and Sign and Verify are
// the two ends.

// RequestRound is the round a request is bound to: SubmitReportRequest's
// round, 0 for the requests that carry none.
func RequestRound(req AuthRequest) int64 {
	if r, ok := req.(interface{ GetRound() int64 }); ok {
		return max(r.GetRound(), 0)
	}
	return 0
}

// RequestBody returns the deterministic protobuf encoding of req without
// its auth: the bytes whose SHA-256 the signature binds. The signer and the
// verifier recompute it from the request they hold, so both must use this
// package's protobuf version (deterministic encoding is stable within one
// implementation, not across languages). req is not modified.
func RequestBody(req AuthRequest) ([]byte, error) {
	if req == nil || req.GetAuth() == nil {
		return nil, fmt.Errorf("wire: request body: %w", checks.Invalidf("request has no auth"))
	}
	c := proto.Clone(req).(AuthRequest)
	m := c.ProtoReflect()
	fd := m.Descriptor().Fields().ByName("auth")
	if fd == nil {
		return nil, fmt.Errorf("wire: request body: %w", checks.Invalidf("%s has no auth field", m.Descriptor().FullName()))
	}
	m.Clear(fd)
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("wire: request body: %w", err)
	}
	return b, nil
}

// SignedRequest returns the signed request that req carries for method,
// and req's body (RequestBody), as pki.Verifier checks them. An error wraps
// checks.ErrInvalid: no auth, or a nonce of other than pki.NonceSize bytes.
func SignedRequest(method string, req AuthRequest) (*pki.SignedRequest, []byte, error) {
	body, err := RequestBody(req)
	if err != nil {
		return nil, nil, err
	}
	a := req.GetAuth()
	if len(a.Nonce) != pki.NonceSize {
		return nil, nil, fmt.Errorf("wire: signed request: %w", checks.Invalidf("nonce has %d bytes, want %d", len(a.Nonce), pki.NonceSize))
	}
	sr := &pki.SignedRequest{Request: pki.Request{ClientID: a.ClientId, Kind: method, Round: uint64(RequestRound(req)),
		Time: time.Unix(0, a.TimestampUnixNano), PayloadHash: pki.PayloadHash(body)}, Signature: a.Signature}
	copy(sr.Nonce[:], a.Nonce)
	return sr, body, nil
}

// SigningBytes returns the bytes a client signs for req sent to method
// (the full gRPC method name, e.g. Shuffler_SubmitReport_FullMethodName):
// pki.Request.SigningBytes of SignedRequest(method, req).
func SigningBytes(method string, req AuthRequest) ([]byte, error) {
	if method == "" || len(method) > MaxIDBytes {
		return nil, fmt.Errorf("wire: signing bytes: %w", checks.Invalidf("method name length must be in [1, %d], got %d", MaxIDBytes, len(method)))
	}
	sr, _, err := SignedRequest(method, req)
	if err != nil {
		return nil, err
	}
	return sr.SigningBytes(), nil
}

// Sign fills req's auth (which must be present) for method: the signer's
// client id, the time now, a fresh nonce drawn from r (rng.NewCrypto() in a
// deployment) and the signature over SigningBytes.
func Sign(s *pki.Signer, r *rand.Rand, now time.Time, method string, req AuthRequest) error {
	a := req.GetAuth()
	if a == nil {
		return fmt.Errorf("wire: sign %s: %w", method, checks.Invalidf("request has no auth"))
	}
	a.ClientId = s.ID()
	body, err := RequestBody(req)
	if err != nil {
		return err
	}
	sr, err := s.Sign(r, now, method, uint64(RequestRound(req)), body)
	if err != nil {
		return fmt.Errorf("wire: sign %s: %w", method, err)
	}
	a.TimestampUnixNano = sr.Time.UnixNano()
	a.Nonce = append([]byte(nil), sr.Nonce[:]...)
	a.Signature = sr.Signature
	return nil
}

// Verify checks req's auth as a request for method received at now, with
// v (registration, timestamp window, body digest, signature, nonce cache),
// and returns the client id. A rejection is a *pki.RejectError
// (pki.ReasonOf names the reason); a request whose auth cannot be read is
// an error wrapping checks.ErrInvalid.
func Verify(v *pki.Verifier, now time.Time, method string, req AuthRequest) (string, error) {
	sr, body, err := SignedRequest(method, req)
	if err != nil {
		return "", err
	}
	if err := v.Verify(now, method, body, sr); err != nil {
		return "", err
	}
	return sr.ClientID, nil
}
