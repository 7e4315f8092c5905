package deploy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// A client's request is signed in the deployment's one signed encoding
// (wire.SigningBytes, which is pki.Request.SigningBytes): the full gRPC
// method name, the client id, the request's round, the timestamp, the nonce
// and the SHA-256 of the request body. wire.Sign and wire.Verify are its
// two ends; this file only checks the round and maps rejections to gRPC
// statuses.

// sign fills req's auth (which must exist) for method. round must be the
// request's own round (wire.RequestRound).
func sign(s *pki.Signer, r *rand.Rand, now time.Time, method string, round int64, req wire.AuthRequest) error {
	if got := wire.RequestRound(req); got != max(round, 0) {
		return checks.Invalidf("deploy: signing a %s request of round %d as round %d", method, got, round)
	}
	return wire.Sign(s, r, now, method, req)
}

// verify checks req's signature for method with v at now, returning the
// client id, or a status error naming the reason. round is the request's
// round, reported in the error detail. When ctx carries the signed header
// the stream was admitted on (admission.admit), req must carry exactly
// that auth (wire.SameRequest); the full check (body digest, nonce) is
// v's either way.
func verify(ctx context.Context, v *pki.Verifier, now time.Time, method string, round int64, req wire.AuthRequest) (string, error) {
	if req.GetAuth() == nil {
		return "", wire.Errorf(codes.Unauthenticated, wire.Reason_REASON_BAD_SIGNATURE, "auth", round, "no credentials")
	}
	if h, ok := ctx.Value(headerKey{}).(*pki.SignedRequest); ok && !wire.SameRequest(h, method, req) {
		return "", wire.Errorf(codes.Unauthenticated, wire.Reason_REASON_BAD_SIGNATURE, "auth", round, "the request's auth is not the one its signed header announced")
	}
	id, err := wire.Verify(v, now, method, req)
	if err == nil {
		return id, nil
	}
	return "", authStatus(err, round)
}

// authStatus maps a signature check's error (pki.Verifier,
// wire.CheckHeader, or an unreadable auth) to the documented status.
func authStatus(err error, round int64) error {
	r, ok := pki.ReasonOf(err)
	if !ok {
		if errors.Is(err, checks.ErrInvalid) {
			return wire.Errorf(codes.Unauthenticated, wire.Reason_REASON_BAD_SIGNATURE, "auth", round, "%v", err)
		}
		return wire.StatusOf(err)
	}
	reason := wire.Reason_REASON_UNAUTHENTICATED
	switch r {
	case pki.ReasonSignature, pki.ReasonPayload, pki.ReasonMalformed, pki.ReasonKind:
		reason = wire.Reason_REASON_BAD_SIGNATURE
	case pki.ReasonTime:
		reason = wire.Reason_REASON_STALE_TIMESTAMP
	case pki.ReasonReplay:
		reason = wire.Reason_REASON_REPLAY
	case pki.ReasonUnknownClient:
		reason = wire.Reason_REASON_NOT_REGISTERED
	}
	return wire.Errorf(codes.Unauthenticated, reason, "auth", round, "%v", err)
}

// errf is fmt.Errorf, for brevity.
var errf = fmt.Errorf

// newSigner is pki.NewSigner.
func newSigner(id string, key []byte) (*pki.Signer, error) { return pki.NewSigner(id, key) }
