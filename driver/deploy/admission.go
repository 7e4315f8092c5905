package deploy

import (
	"context"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/tap"

	"github.com/shufflefl/shufflefl/transport/wire"
)

// Admission of client requests at the shuffler's public port.
//
// gRPC reads a whole request (up to wire.DefaultMaxMessageBytes) into
// memory and decodes it before any handler or interceptor runs, so a
// signature checked by the handler is checked too late: issue 19's six
// 46 MiB requests from an unregistered id grew the shuffler's heap by
// 2.8 GB and took 5 s each to refuse. The one hook gRPC runs before the
// body is read is the transport's tap (grpc.InTapHandle), which sees the
// method and the headers. A client therefore sends its request's signed
// header (wire.AuthHeader: method, id, round, timestamp, nonce, the body's
// SHA-256, signature) in the metadata, and the tap checks it
// (wire.CheckHeader: registered, fresh, signature) before a stream is
// created. A refused stream is answered at once with its status and reset:
// its body is never read, and what the peer sent before the reset (at most
// one HTTP/2 flow-control window) is discarded. The full check (the body's
// digest, the nonce) is pki.Verifier's once the body is decoded (verify).
//
// What an unauthenticated peer can hold is thus bounded: one header list
// of at most wire.MaxHeaderListBytes per connection at a time (the tap
// runs in the connection's reader, one stream after another). A
// registered client, whose header verifies, may have maxInflight requests
// in flight at once; more are refused (ResourceExhausted), so the memory
// that authenticated bodies can take is bounded by the registry's size
// times maxInflight times the receive limit.

// maxInflight is how many requests one registered client may have in
// flight at the shuffler: a client runs at most three at once (a held
// pull, a submission, a heartbeat), plus retries of calls it gave up on.
const maxInflight = 8

// headerKey is the context key of the signed header a stream was admitted
// on.
type headerKey struct{}

// admission is the shuffler's tap: it admits a client stream on its signed
// header and counts the streams in flight per client.
type admission struct {
	s *Shuffler

	mu       sync.Mutex
	inflight map[string]int
}

// admit is the grpc.InTapHandle of the shuffler's public server. It runs
// in the connection's reader goroutine and must not block: it parses the
// header, checks it (one Ed25519 verification) and counts the
// stream, released when the stream ends.
func (a *admission) admit(ctx context.Context, info *tap.Info) (context.Context, error) {
	if !strings.HasPrefix(info.FullMethodName, "/"+wire.Shuffler_ServiceDesc.ServiceName+"/") {
		return ctx, nil // gRPC answers Unimplemented without reading the body
	}
	sr, err := wire.ParseHeader(info.Header)
	if err != nil {
		return nil, a.s.reject(wire.Errorf(codes.Unauthenticated, wire.Reason_REASON_BAD_SIGNATURE, "auth", -1, "no signed header: %v", err))
	}
	round := int64(min(sr.Round, 1<<62))
	if err := wire.CheckHeader(a.s.cfg.Registry, a.s.cfg.Verifier.Skew, a.s.now(), info.FullMethodName, sr); err != nil {
		return nil, a.s.reject(authStatus(err, round))
	}
	id := sr.ClientID
	a.mu.Lock()
	n := a.inflight[id]
	if n < maxInflight {
		a.inflight[id] = n + 1
	}
	a.mu.Unlock()
	if n >= maxInflight {
		return nil, a.s.reject(wire.Errorf(codes.ResourceExhausted, wire.Reason_REASON_BUSY, "auth", round, "%s has %d requests in flight", id, n))
	}
	context.AfterFunc(ctx, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.inflight[id]--; a.inflight[id] == 0 {
			delete(a.inflight, id)
		}
	})
	return context.WithValue(ctx, headerKey{}, sr), nil
}

// publicServerOptions are the options of the shuffler's public server
// besides wire.ServerOptions and its credentials: the tap and a small
// header list.
func publicServerOptions(s *Shuffler) []grpc.ServerOption {
	a := &admission{s: s, inflight: map[string]int{}}
	return []grpc.ServerOption{grpc.InTapHandle(a.admit), grpc.MaxHeaderListSize(wire.MaxHeaderListBytes)}
}
