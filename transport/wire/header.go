package wire

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/transport/pki"
)

// AuthHeader is the gRPC metadata key of a client request's signed header:
// pki.SignedRequest.MarshalBinary of the request's SignedRequest (method,
// client id, round, timestamp, nonce, the SHA-256 of the body and the
// signature; 131 bytes plus the method and the id). It travels in the HTTP/2 HEADERS frame, so
// a server can check it (CheckHeader) before it reads a byte of the body.
// DialOptions' interceptor attaches it to every signed request.
const AuthHeader = "shufflefl-auth-bin"

// MaxHeaderListBytes bounds the header list a shufflefl server accepts from
// a client (grpc.MaxHeaderListSize): the signed header, the method and
// gRPC's own fields fit many times over.
const MaxHeaderListBytes = 16 << 10

// Header returns the signed header (AuthHeader's value) of req, signed for
// method: SignedRequest's MarshalBinary.
func Header(method string, req AuthRequest) ([]byte, error) {
	sr, _, err := SignedRequest(method, req)
	if err != nil {
		return nil, err
	}
	b, err := sr.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("wire: header of %s: %w", method, err)
	}
	return b, nil
}

// ParseHeader reads the signed header from a request's metadata. An error
// wraps checks.ErrInvalid: no header, more than one, or one that does not
// decode.
func ParseHeader(md metadata.MD) (*pki.SignedRequest, error) {
	vs := md.Get(AuthHeader)
	if len(vs) != 1 {
		return nil, fmt.Errorf("wire: signed header: %w", checks.Invalidf("%d %s values, want 1", len(vs), AuthHeader))
	}
	var sr pki.SignedRequest
	if err := sr.UnmarshalBinary([]byte(vs[0])); err != nil {
		return nil, fmt.Errorf("wire: signed header: %w", err)
	}
	return &sr, nil
}

// CheckHeader checks a signed header received at now for method, without
// the body: the kind is method, the client is in reg, the timestamp is
// within skew of now, and the signature verifies over the header's fields
// (the body's SHA-256 as the header states it). A rejection is a
// *pki.RejectError. It remembers nothing: the nonce and the body's digest
// are pki.Verifier's checks once the body is read (Verify), and a request
// admitted on its header must pass them too (SameRequest).
func CheckHeader(reg *pki.Registry, skew time.Duration, now time.Time, method string, sr *pki.SignedRequest) error {
	reject := func(r pki.Reason, format string, a ...any) error {
		return &pki.RejectError{Reason: r, Detail: fmt.Sprintf(format, a...)}
	}
	if sr.Kind != method {
		return reject(pki.ReasonKind, "signed as a %q request, received as %q", sr.Kind, method)
	}
	pub, ok := reg.Key(sr.ClientID)
	if !ok {
		return reject(pki.ReasonUnknownClient, "client %q is not registered", sr.ClientID)
	}
	if d := sr.Time.Sub(now); d > skew || d < -skew {
		return reject(pki.ReasonTime, "timestamp %s is outside %v of %s", sr.Time.UTC().Format(time.RFC3339Nano), skew, now.UTC().Format(time.RFC3339Nano))
	}
	if len(sr.Signature) != ed25519.SignatureSize || !ed25519.Verify(pub, sr.SigningBytes(), sr.Signature) {
		return reject(pki.ReasonSignature, "signature of %s does not verify", sr.ClientID)
	}
	return nil
}

// SameRequest reports whether req, received for method, carries exactly
// the auth that header announced (client, round, timestamp, nonce,
// signature). With pki.Verifier's check of req, it binds the body to the
// header: the header's signature covers its stated digest, the body's
// (the same signature) covers the body's.
func SameRequest(header *pki.SignedRequest, method string, req AuthRequest) bool {
	a := req.GetAuth()
	return a != nil && header.Kind == method && header.ClientID == a.ClientId && header.Round == uint64(RequestRound(req)) &&
		header.Time.UnixNano() == a.TimestampUnixNano && string(header.Nonce[:]) == string(a.Nonce) &&
		string(header.Signature) == string(a.Signature)
}

// attachHeader is the client interceptor that sends a signed request's
// header (AuthHeader) with it. A request without a readable auth goes
// without one, and the server refuses it.
func attachHeader(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if ar, ok := req.(AuthRequest); ok && ar.GetAuth() != nil {
		if h, err := Header(method, ar); err == nil {
			ctx = metadata.AppendToOutgoingContext(ctx, AuthHeader, string(h))
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}
