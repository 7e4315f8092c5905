package deploy

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"shufflefl/pki"
	"shufflefl/wire"
)

// A client's request is signed with pki.Signer over a pki.Request whose kind
// is the gRPC method's short name, whose round is the request's round (0
// when it has none), and whose payload is wire.SigningBytes of the request
// with its auth reduced to the client id. The timestamp, the nonce and the
// signature travel in wire.RequestAuth; the shuffler rebuilds the
// pki.SignedRequest from them and verifies it with pki.Verifier (kind,
// registration, timestamp window, payload hash, signature, nonce cache).

// methodKind is the pki request kind of a full gRPC method name.
func methodKind(method string) string { return method[strings.LastIndexByte(method, '/')+1:] }

// signedPayload returns the bytes whose hash the signature covers.
func signedPayload(method string, req wire.AuthRequest) ([]byte, error) {
	c := proto.Clone(req).(wire.AuthRequest)
	a := c.GetAuth()
	a.TimestampUnixNano, a.Nonce, a.Signature = 0, nil, nil
	return wire.SigningBytes(method, c)
}

// sign fills req's auth (which must exist) for method.
func sign(s *pki.Signer, r *rand.Rand, now time.Time, method string, round int64, req wire.AuthRequest) error {
	req.GetAuth().ClientId = s.ID()
	payload, err := signedPayload(method, req)
	if err != nil {
		return err
	}
	sr, err := s.Sign(r, now, methodKind(method), uint64(max(round, 0)), payload)
	if err != nil {
		return err
	}
	a := req.GetAuth()
	a.TimestampUnixNano = sr.Time.UnixNano()
	a.Nonce = append([]byte(nil), sr.Nonce[:]...)
	a.Signature = sr.Signature
	return nil
}

// verify checks req's signature for method with v at now, returning the
// client id, or a status error naming the reason.
func verify(v *pki.Verifier, now time.Time, method string, round int64, req wire.AuthRequest) (string, error) {
	a := req.GetAuth()
	if a == nil {
		return "", wire.Errorf(codes.Unauthenticated, wire.Reason_REASON_UNAUTHENTICATED, "auth", round, "no credentials")
	}
	if len(a.Nonce) != pki.NonceSize {
		return "", wire.Errorf(codes.Unauthenticated, wire.Reason_REASON_UNAUTHENTICATED, "auth.nonce", round, "nonce has %d bytes, want %d", len(a.Nonce), pki.NonceSize)
	}
	payload, err := signedPayload(method, req)
	if err != nil {
		return "", wire.StatusOf(err)
	}
	sr := &pki.SignedRequest{Request: pki.Request{ClientID: a.ClientId, Kind: methodKind(method), Round: uint64(max(round, 0)),
		Time: time.Unix(0, a.TimestampUnixNano), PayloadHash: pki.PayloadHash(payload)}, Signature: a.Signature}
	copy(sr.Nonce[:], a.Nonce)
	if err := v.Verify(now, methodKind(method), payload, sr); err != nil {
		reason := wire.Reason_REASON_UNAUTHENTICATED
		if r, ok := pki.ReasonOf(err); ok {
			switch r {
			case pki.ReasonSignature, pki.ReasonPayload:
				reason = wire.Reason_REASON_BAD_SIGNATURE
			case pki.ReasonTime:
				reason = wire.Reason_REASON_STALE_TIMESTAMP
			case pki.ReasonReplay:
				reason = wire.Reason_REASON_REPLAY
			case pki.ReasonUnknownClient:
				reason = wire.Reason_REASON_NOT_REGISTERED
			}
		}
		return "", wire.Errorf(codes.Unauthenticated, reason, "auth", round, "%v", err)
	}
	return a.ClientId, nil
}

// errf is fmt.Errorf, for brevity.
var errf = fmt.Errorf

// newSigner is pki.NewSigner.
func newSigner(id string, key []byte) (*pki.Signer, error) { return pki.NewSigner(id, key) }
