package pki

import (
	"container/heap"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shufflefl/shufflefl/checks"
)

// Reason is why a Verifier rejected a request.
type Reason uint8

const (
	// ReasonMalformed: bad id or kind, or a signature of the wrong length.
	ReasonMalformed Reason = iota + 1
	// ReasonKind: signed for another kind of request than the one received.
	ReasonKind
	// ReasonUnknownClient: the client id is not registered.
	ReasonUnknownClient
	// ReasonTime: the timestamp is outside the allowed skew of the
	// verifier's clock (too old: a possible replay; too new: a wrong clock).
	ReasonTime
	// ReasonPayload: the payload's SHA-256 differs from the signed hash.
	ReasonPayload
	// ReasonSignature: the signature does not verify under the registered
	// key.
	ReasonSignature
	// ReasonReplay: the client's nonce was already seen within the window.
	ReasonReplay
	// ReasonBusy: the nonce cache is full (in total or for this client);
	// the request is refused rather than accepted unrecorded.
	ReasonBusy
)

// String returns the reason's name, as used in logs and metrics.
func (r Reason) String() string {
	switch r {
	case ReasonMalformed:
		return "malformed"
	case ReasonKind:
		return "kind"
	case ReasonUnknownClient:
		return "unknown-client"
	case ReasonTime:
		return "time"
	case ReasonPayload:
		return "payload"
	case ReasonSignature:
		return "signature"
	case ReasonReplay:
		return "replay"
	case ReasonBusy:
		return "busy"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// RejectError is the error of a rejected request. It wraps
// checks.ErrInvalid.
type RejectError struct {
	Reason Reason
	Detail string
}

// Error implements error.
func (e *RejectError) Error() string {
	return fmt.Sprintf("pki: request rejected (%v): %s", e.Reason, e.Detail)
}

// Unwrap returns checks.ErrInvalid.
func (e *RejectError) Unwrap() error { return checks.ErrInvalid }

// ReasonOf returns the Reason of a rejection error (ok false for any other
// error).
func ReasonOf(err error) (Reason, bool) {
	var re *RejectError
	if errors.As(err, &re) {
		return re.Reason, true
	}
	return 0, false
}

// VerifyStats counts the requests a Verifier accepted and, by reason,
// rejected.
type VerifyStats struct {
	Accepted      int64 `json:"accepted"`
	Malformed     int64 `json:"malformed"`
	Kind          int64 `json:"kind"`
	UnknownClient int64 `json:"unknown_client"`
	Time          int64 `json:"time"`
	Payload       int64 `json:"payload"`
	Signature     int64 `json:"signature"`
	Replay        int64 `json:"replay"`
	Busy          int64 `json:"busy"`
}

// Rejected returns the number of rejected requests.
func (s VerifyStats) Rejected() int64 {
	return s.Malformed + s.Kind + s.UnknownClient + s.Time + s.Payload + s.Signature + s.Replay + s.Busy
}

// Count returns the number of requests rejected for r.
func (s VerifyStats) Count(r Reason) int64 {
	if p := s.field(r); p != nil {
		return *p
	}
	return 0
}

func (s *VerifyStats) field(r Reason) *int64 {
	switch r {
	case ReasonMalformed:
		return &s.Malformed
	case ReasonKind:
		return &s.Kind
	case ReasonUnknownClient:
		return &s.UnknownClient
	case ReasonTime:
		return &s.Time
	case ReasonPayload:
		return &s.Payload
	case ReasonSignature:
		return &s.Signature
	case ReasonReplay:
		return &s.Replay
	case ReasonBusy:
		return &s.Busy
	}
	return nil
}

// VerifierConfig bounds a Verifier.
type VerifierConfig struct {
	// Skew is the largest accepted difference between a request's timestamp
	// and the verifier's clock, either way. A nonce is remembered until its
	// timestamp is more than Skew in the past, when the timestamp check
	// rejects it anyway.
	Skew time.Duration
	// MaxNonces bounds the nonce cache (about 100 bytes an entry); when it
	// is full of unexpired nonces, new requests are refused (ReasonBusy).
	MaxNonces int
	// MaxNoncesPerClient bounds one client's share of the cache, so one
	// registered client cannot fill it and lock the others out.
	MaxNoncesPerClient int
}

// DefaultVerifierConfig: 30 s of skew, a million nonces in all (about
// 100 MB at most), 4,096 per client (68 requests per second sustained over
// the up-to-60-s life of a nonce).
func DefaultVerifierConfig() VerifierConfig {
	return VerifierConfig{Skew: 30 * time.Second, MaxNonces: 1 << 20, MaxNoncesPerClient: 4096}
}

// Validate checks the configuration.
func (c VerifierConfig) Validate() error {
	if c.Skew <= 0 {
		return checks.Invalidf("pki: skew must be positive, got %v", c.Skew)
	}
	if c.MaxNonces < 1 || c.MaxNoncesPerClient < 1 || c.MaxNoncesPerClient > c.MaxNonces {
		return checks.Invalidf("pki: nonce limits must satisfy 1 <= per client (%d) <= total (%d)", c.MaxNoncesPerClient, c.MaxNonces)
	}
	return nil
}

// nonceKey identifies a nonce of one client.
type nonceKey struct {
	id    string
	nonce [NonceSize]byte
}

// nonceEntry is a remembered nonce and the time after which it may be
// forgotten.
type nonceEntry struct {
	key     nonceKey
	expires int64 // Unix nanoseconds
}

// expiryHeap is a min-heap of nonce entries by expiry.
type expiryHeap []nonceEntry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires < h[j].expires }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(nonceEntry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// Verifier checks signed client requests for the shuffler. It is safe for
// concurrent use; signature verification runs outside its lock. Time comes
// from the caller (Verify's now), never from a clock of its own.
type Verifier struct {
	reg *Registry
	cfg VerifierConfig

	mu        sync.Mutex
	clock     int64 // latest now seen (Unix nanoseconds)
	seen      map[nonceKey]struct{}
	expiry    expiryHeap
	perClient map[string]int
	stats     VerifyStats
}

// NewVerifier returns a Verifier of the registered clients. The registry
// must not be modified while the Verifier is in use.
func NewVerifier(reg *Registry, cfg VerifierConfig) (*Verifier, error) {
	if reg == nil {
		return nil, checks.Invalidf("pki: nil registry")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Verifier{reg: reg, cfg: cfg, seen: map[nonceKey]struct{}{}, perClient: map[string]int{}}, nil
}

// Stats returns the counts so far.
func (v *Verifier) Stats() VerifyStats {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.stats
}

// Nonces returns the number of nonces remembered.
func (v *Verifier) Nonces() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.seen)
}

func (v *Verifier) reject(r Reason, format string, a ...any) error {
	v.mu.Lock()
	*v.stats.field(r)++
	v.mu.Unlock()
	return &RejectError{Reason: r, Detail: fmt.Sprintf(format, a...)}
}

// rejectLocked is reject with v.mu held.
func (v *Verifier) rejectLocked(r Reason, format string, a ...any) error {
	*v.stats.field(r)++
	return &RejectError{Reason: r, Detail: fmt.Sprintf(format, a...)}
}

// Verify checks req, received at time now as a request of kind with
// payload. It returns nil if the request is accepted (its nonce is then
// remembered), or a *RejectError counted in Stats. The checks, in order:
// well-formed, kind, registered client, timestamp within Skew of now,
// payload hash, signature, fresh nonce with room in the cache. Nothing is
// remembered of a request that fails an earlier check, so an attacker
// without the client's key cannot burn its nonces or fill the cache.
//
// The timestamp check is against the latest now the Verifier has seen as
// well, so a clock that steps backwards cannot readmit a nonce already
// forgotten.
func (v *Verifier) Verify(now time.Time, kind string, payload []byte, req *SignedRequest) error {
	if req == nil {
		return v.reject(ReasonMalformed, "nil request")
	}
	if err := req.validate(); err != nil {
		return v.reject(ReasonMalformed, "%v", err)
	}
	if len(req.Signature) != ed25519.SignatureSize {
		return v.reject(ReasonMalformed, "signature has %d bytes, want %d", len(req.Signature), ed25519.SignatureSize)
	}
	if req.Kind != kind {
		return v.reject(ReasonKind, "signed as a %q request, received as %q", req.Kind, kind)
	}
	pub, ok := v.reg.Key(req.ClientID)
	if !ok {
		return v.reject(ReasonUnknownClient, "client %q is not registered", req.ClientID)
	}
	ts, t := req.Time.UnixNano(), now.UnixNano()
	skew := int64(v.cfg.Skew)
	v.mu.Lock()
	if t > v.clock {
		v.clock = t
	}
	high := v.clock
	v.mu.Unlock()
	if ts > t+skew || ts < high-skew {
		return v.reject(ReasonTime, "timestamp %s is outside %v of %s", req.Time.UTC().Format(time.RFC3339Nano), v.cfg.Skew, time.Unix(0, high).UTC().Format(time.RFC3339Nano))
	}
	if PayloadHash(payload) != req.PayloadHash {
		return v.reject(ReasonPayload, "payload does not match the signed SHA-256")
	}
	if !ed25519.Verify(pub, req.SigningBytes(), req.Signature) {
		return v.reject(ReasonSignature, "signature of %s does not verify", req.ClientID)
	}

	key := nonceKey{id: req.ClientID, nonce: req.Nonce}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.expire()
	if _, dup := v.seen[key]; dup {
		return v.rejectLocked(ReasonReplay, "nonce of %s already seen", req.ClientID)
	}
	if len(v.seen) >= v.cfg.MaxNonces {
		return v.rejectLocked(ReasonBusy, "nonce cache full (%d)", v.cfg.MaxNonces)
	}
	if v.perClient[req.ClientID] >= v.cfg.MaxNoncesPerClient {
		return v.rejectLocked(ReasonBusy, "client %s has %d requests in the window", req.ClientID, v.cfg.MaxNoncesPerClient)
	}
	v.seen[key] = struct{}{}
	v.perClient[req.ClientID]++
	heap.Push(&v.expiry, nonceEntry{key: key, expires: ts + skew})
	v.stats.Accepted++
	return nil
}

// expire forgets the nonces whose timestamps are more than Skew before the
// latest clock: any request carrying one fails the timestamp check. v.mu is
// held.
func (v *Verifier) expire() {
	for len(v.expiry) > 0 && v.expiry[0].expires < v.clock {
		e := heap.Pop(&v.expiry).(nonceEntry)
		delete(v.seen, e.key)
		if v.perClient[e.key.id]--; v.perClient[e.key.id] == 0 {
			delete(v.perClient, e.key.id)
		}
	}
}
