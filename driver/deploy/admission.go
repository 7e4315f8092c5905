package deploy

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/tap"

	"github.com/shufflefl/shufflefl/transport/pki"
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
//
// What unauthenticated peers can hold together is bounded too: at most
// ShufflerConfig.MaxConns connections (TLS and HTTP/2 buffers, a reader
// goroutine; connLimit refuses more before their TLS handshake), at most
// maxStreams streams on each, and at most ShufflerConfig.MaxUnauthenticated
// header checks at once (a check over the bound is refused at once,
// ResourceExhausted BUSY, without its Ed25519 verification).

// maxInflight is how many requests one registered client may have in
// flight at the shuffler: a client runs at most three at once (a held
// pull, a submission, a heartbeat), plus retries of calls it gave up on.
const maxInflight = 8

// Defaults of the admission bounds (ShufflerConfig.MaxConns,
// MaxUnauthenticated) and the streams one connection may carry (a client
// runs at most three calls at once on its connection; gRPC refuses a
// stream over the bound with REFUSED_STREAM, which a gRPC client queues).
const (
	defaultMaxUnauthenticated = 256
	minMaxConns               = 1024
	maxStreams                = 32
)

// maxConns is the shuffler's connection bound: ShufflerConfig.MaxConns,
// or by default twice the run's clients plus minMaxConns (room for
// reconnections and the clients' retries).
func (s *Shuffler) maxConns() int {
	if s.cfg.MaxConns > 0 {
		return s.cfg.MaxConns
	}
	return 2*s.st.Config.Clients + minMaxConns
}

// headerKey is the context key of the signed header a stream was admitted
// on.
type headerKey struct{}

// admission is the shuffler's tap: it admits a client stream on its signed
// header and counts the streams in flight per client.
type admission struct {
	s *Shuffler
	// check is wire.CheckHeader (a test may slow it down).
	check func(*pki.Registry, time.Duration, time.Time, string, *pki.SignedRequest) error
	// checking counts the header checks running; maxChecking bounds it.
	checking    atomic.Int64
	maxChecking int64

	mu       sync.Mutex
	inflight map[string]int
	// lim is the connection bound; an admitted stream marks its
	// connection authenticated there.
	lim *connLimit
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
	if n := a.checking.Add(1); n > a.maxChecking {
		a.checking.Add(-1)
		return nil, a.s.reject(wire.Errorf(codes.ResourceExhausted, wire.Reason_REASON_BUSY, "auth", round, "%d unauthenticated requests are being checked (at most %d)", n-1, a.maxChecking))
	}
	err = a.check(a.s.cfg.Registry, a.s.cfg.Verifier.Skew, a.s.now(), info.FullMethodName, sr)
	a.checking.Add(-1)
	if err != nil {
		return nil, a.s.reject(authStatus(err, round))
	}
	if p, ok := peer.FromContext(ctx); ok && a.lim != nil {
		a.lim.authenticated(p.Addr.String())
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
// besides wire.ServerOptions: the tap, a small header list, the streams
// per connection, and its credentials creds under the connection bound.
func publicServerOptions(s *Shuffler, creds credentials.TransportCredentials) []grpc.ServerOption {
	a := &admission{s: s, inflight: map[string]int{}, check: wire.CheckHeader, maxChecking: int64(s.cfg.MaxUnauthenticated)}
	if s.checkHeader != nil {
		a.check = s.checkHeader
	}
	if a.maxChecking <= 0 {
		a.maxChecking = defaultMaxUnauthenticated
	}
	count := func(what string) func() {
		return func() {
			s.mu.Lock()
			s.stats.Rejected[what]++
			s.mu.Unlock()
		}
	}
	lim := &connLimit{TransportCredentials: creds, max: int64(s.maxConns()), refused: count("connections"), evicted: count("evicted"), authWithin: s.authWithin}
	a.lim = lim
	return []grpc.ServerOption{grpc.InTapHandle(a.admit), grpc.MaxHeaderListSize(wire.MaxHeaderListBytes),
		grpc.MaxConcurrentStreams(maxStreams), grpc.Creds(lim)}
}

// errTooManyConns is the handshake error of a connection over the bound.
var errTooManyConns = errors.New("deploy: shuffler: too many connections")

// errTooManyFromPeer is the handshake error of a connection over the
// per-address bound on unauthenticated connections.
var errTooManyFromPeer = errors.New("deploy: shuffler: too many unauthenticated connections from this address")

// Bounds on unauthenticated connections: the TLS handshake must finish
// within handshakeTimeout, the connection's first signed request must be
// admitted within authTimeout of its start, and one address may hold at
// most perPeerUnauth(max) connections that have not authenticated.
const (
	handshakeTimeout = 10 * time.Second
	authTimeout      = 15 * time.Second
)

// perPeerUnauth is the bound on one address's unauthenticated
// connections under a global bound of max: a quarter of it, at least 64,
// so that one peer cannot take every slot while many clients behind one
// address (a NAT, deploy-local's loopback) still connect at once.
func perPeerUnauth(bound int64) int {
	return int(min(bound, max(64, bound/4)))
}

// connLimit wraps the public server's transport credentials: a connection
// is counted from the start of its handshake until it is closed. One
// address may hold at most perPeerUnauth(max) connections that have not
// authenticated (none of their streams was admitted on a verified
// header): a new one past it evicts that address's oldest. A new
// connection over max evicts the oldest unauthenticated connection of the
// address holding the most, or is closed before its TLS handshake when
// every connection has authenticated. A connection that has not
// authenticated within authTimeout (its handshake within
// handshakeTimeout) is closed. So a flood of idle or
// slow connections from one peer cannot lock clients out: they are
// refused past the per-peer bound and evicted for a client's connection
// (the peer sees the connection closed: gRPC Unavailable, without a
// status of the shuffler's, for there is no session to carry one).
type connLimit struct {
	credentials.TransportCredentials
	max              int64
	refused, evicted func()
	// authWithin is authTimeout (a test may shorten it).
	authWithin time.Duration

	mu     sync.Mutex
	open   int64
	conns  map[string]*countedConn // by remote address
	unauth []*countedConn          // not authenticated, oldest first
	perIP  map[string]int          // unauthenticated connections by host
}

// ServerHandshake implements credentials.TransportCredentials.
func (l *connLimit) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	host := peerHost(raw.RemoteAddr())
	// raw is set before c is published in l.unauth: an eviction from
	// another handshake may close it at once.
	c := &countedConn{l: l, addr: raw.RemoteAddr().String(), host: host, raw: raw}
	var evict *countedConn
	l.mu.Lock()
	if l.conns == nil {
		l.conns, l.perIP = map[string]*countedConn{}, map[string]int{}
	}
	switch {
	case l.perIP[host] >= perPeerUnauth(l.max):
		// The address is at its bound: its oldest unauthenticated
		// connection makes room (a client behind the address of a flood
		// still gets in).
		evict = l.oldestLocked(host)
	case l.open >= l.max:
		// Every slot is taken: the oldest unauthenticated connection of
		// the address holding the most makes room.
		evict = l.oldestLocked(l.busiestLocked())
	}
	if evict == nil && (l.open >= l.max || l.perIP[host] >= perPeerUnauth(l.max)) {
		l.mu.Unlock()
		l.refused()
		if l.open >= l.max {
			return nil, nil, errTooManyConns
		}
		return nil, nil, errTooManyFromPeer
	}
	if evict != nil {
		l.dropLocked(evict)
	}
	l.open++
	l.perIP[host]++
	l.conns[c.addr] = c
	l.unauth = append(l.unauth, c)
	l.mu.Unlock()
	if evict != nil {
		l.evicted()
		evict.closeRaw()
	}
	_ = raw.SetDeadline(time.Now().Add(handshakeTimeout))
	conn, info, err := l.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	_ = raw.SetDeadline(time.Time{})
	within := l.authWithin
	if within <= 0 {
		within = authTimeout
	}
	c.mu.Lock()
	c.Conn = conn
	c.mu.Unlock()
	time.AfterFunc(within, func() {
		l.mu.Lock()
		late := !c.authed && !c.gone
		l.mu.Unlock()
		if late {
			l.evicted()
			c.Close()
		}
	})
	return c, info, nil
}

// authenticated marks the connection from remote address addr as
// authenticated: it no longer counts against its address's bound and is
// never evicted.
func (l *connLimit) authenticated(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.conns[addr]
	if c == nil || c.authed {
		return
	}
	l.removeUnauthLocked(c)
	c.authed = true
}

// oldestLocked is host's oldest unauthenticated connection (nil if none).
func (l *connLimit) oldestLocked(host string) *countedConn {
	for _, c := range l.unauth {
		if c.host == host {
			return c
		}
	}
	return nil
}

// busiestLocked is the address holding the most unauthenticated
// connections ("" if none).
func (l *connLimit) busiestLocked() string {
	best, n := "", 0
	for h, k := range l.perIP {
		if k > n || k == n && h < best {
			best, n = h, k
		}
	}
	return best
}

// dropLocked forgets c (it is closed or being closed).
func (l *connLimit) dropLocked(c *countedConn) {
	if c.gone {
		return
	}
	c.gone = true
	l.open--
	if !c.authed {
		l.removeUnauthLocked(c)
	}
	delete(l.conns, c.addr)
}

// removeUnauthLocked takes c out of the unauthenticated connections.
func (l *connLimit) removeUnauthLocked(c *countedConn) {
	for i, u := range l.unauth {
		if u == c {
			l.unauth = append(l.unauth[:i], l.unauth[i+1:]...)
			break
		}
	}
	if l.perIP[c.host]--; l.perIP[c.host] <= 0 {
		delete(l.perIP, c.host)
	}
}

// peerHost is the host part of a remote address.
func peerHost(a net.Addr) string {
	if h, _, err := net.SplitHostPort(a.String()); err == nil {
		return h
	}
	return a.String()
}

// Clone implements credentials.TransportCredentials (the count is shared).
func (l *connLimit) Clone() credentials.TransportCredentials { return l }

// countedConn gives its connLimit slot back when it is closed.
type countedConn struct {
	net.Conn   // the TLS connection once the handshake is done
	l          *connLimit
	addr, host string
	raw        net.Conn // set at creation, never written again
	// authed and gone are guarded by l.mu.
	authed, gone bool
	mu           sync.Mutex // guards Conn during the handshake
}

// Close implements net.Conn.
func (c *countedConn) Close() error {
	c.l.mu.Lock()
	c.l.dropLocked(c)
	c.l.mu.Unlock()
	return c.closeRaw()
}

// closeRaw closes the connection (the TLS one, or the raw one while it
// handshakes).
func (c *countedConn) closeRaw() error {
	c.mu.Lock()
	conn := c.Conn
	c.mu.Unlock()
	if conn != nil {
		return conn.Close()
	}
	if c.raw != nil {
		return c.raw.Close()
	}
	return nil
}
