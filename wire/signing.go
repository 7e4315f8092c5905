package wire

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"shufflefl/checks"
)

// SigningContext prefixes every signed request, for domain separation.
const SigningContext = "shufflefl.wire.v1 request signature\x00"

// AuthRequest is a client request carrying RequestAuth.
type AuthRequest interface {
	Message
	GetAuth() *RequestAuth
}

// SigningBytes returns the bytes a client signs for req sent to method (the
// full gRPC method name, e.g. Shuffler_SubmitReport_FullMethodName):
// SigningContext, method, a zero byte, then the deterministic protobuf
// encoding of req with auth.signature cleared. Binding the method stops a
// signed Heartbeat from being replayed as another call; the timestamp and
// nonce inside auth stop replays of the same call; the round and labels are
// part of the encoding. The shuffler recomputes the bytes from the request
// it decoded, so both sides must use this package's protobuf version
// (deterministic encoding is stable within one implementation, not across
// languages). req is not modified.
func SigningBytes(method string, req AuthRequest) ([]byte, error) {
	if method == "" || len(method) > MaxIDBytes {
		return nil, fmt.Errorf("wire: signing bytes: %w", checks.Invalidf("method name length must be in [1, %d], got %d", MaxIDBytes, len(method)))
	}
	if req == nil || req.GetAuth() == nil {
		return nil, fmt.Errorf("wire: signing bytes for %s: %w", method, checks.Invalidf("request has no auth"))
	}
	c := proto.Clone(req).(AuthRequest)
	c.GetAuth().Signature = nil
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("wire: signing bytes for %s: %w", method, err)
	}
	out := make([]byte, 0, len(SigningContext)+len(method)+1+len(body))
	out = append(out, SigningContext...)
	out = append(out, method...)
	out = append(out, 0)
	return append(out, body...), nil
}
