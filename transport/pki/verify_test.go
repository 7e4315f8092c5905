package pki

import (
	"crypto/ed25519"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/checks"
)

var t0 = time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)

// testClient returns a signer with a key derived from seed.
func testClient(t testing.TB, id string, seed byte) *Signer {
	t.Helper()
	var s [ed25519.SeedSize]byte
	s[0] = seed
	sg, err := NewSigner(id, ed25519.NewKeyFromSeed(s[:]))
	if err != nil {
		t.Fatal(err)
	}
	return sg
}

func testVerifier(t testing.TB, cfg VerifierConfig, clients ...*Signer) *Verifier {
	t.Helper()
	reg := NewRegistry()
	for _, c := range clients {
		if err := reg.Add(c.ID(), c.Public()); err != nil {
			t.Fatal(err)
		}
	}
	v, err := NewVerifier(reg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func reasonOf(err error) Reason { r, _ := ReasonOf(err); return r }

func TestVerifyAccepts(t *testing.T) {
	alice := testClient(t, "client-000001", 1)
	v := testVerifier(t, DefaultVerifierConfig(), alice)
	r := rand.New(rand.NewPCG(1, 2))
	payload := []byte("sealed messages")
	for i, skew := range []time.Duration{0, 29 * time.Second, -29 * time.Second, 30 * time.Second} {
		req, err := alice.Sign(r, t0.Add(skew), "report", 3, payload)
		if err != nil {
			t.Fatal(err)
		}
		// Through the wire encoding.
		b, err := req.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got SignedRequest
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if err := v.Verify(t0, "report", payload, &got); err != nil {
			t.Errorf("request %d (skew %v): %v", i, skew, err)
		}
	}
	if st := v.Stats(); st.Accepted != 4 || st.Rejected() != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestVerifyRejects(t *testing.T) {
	alice := testClient(t, "alice", 1)
	mallory := testClient(t, "mallory", 2) // not registered
	r := rand.New(rand.NewPCG(3, 4))
	payload := []byte("payload")
	sign := func(s *Signer, at time.Time, kind string) *SignedRequest {
		req, err := s.Sign(r, at, kind, 1, payload)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	edit := func(req *SignedRequest, f func(*SignedRequest)) *SignedRequest {
		c := *req
		c.Signature = append([]byte(nil), req.Signature...)
		f(&c)
		return &c
	}
	good := sign(alice, t0, "report")
	tests := []struct {
		name    string
		kind    string
		payload []byte
		req     *SignedRequest
		reason  Reason
	}{
		{"nil", "report", payload, nil, ReasonMalformed},
		{"bad id", "report", payload, edit(good, func(q *SignedRequest) { q.ClientID = "al ice" }), ReasonMalformed},
		{"short signature", "report", payload, edit(good, func(q *SignedRequest) { q.Signature = q.Signature[:63] }), ReasonMalformed},
		{"other kind", "heartbeat", payload, good, ReasonKind},
		{"unknown client", "report", payload, sign(mallory, t0, "report"), ReasonUnknownClient},
		{"too old", "report", payload, sign(alice, t0.Add(-31*time.Second), "report"), ReasonTime},
		{"too new", "report", payload, sign(alice, t0.Add(31*time.Second), "report"), ReasonTime},
		{"other payload", "report", []byte("payloaD"), good, ReasonPayload},
		{"round changed", "report", payload, edit(good, func(q *SignedRequest) { q.Round = 2 }), ReasonSignature},
		{"nonce changed", "report", payload, edit(good, func(q *SignedRequest) { q.Nonce[0] ^= 1 }), ReasonSignature},
		{"time changed", "report", payload, edit(good, func(q *SignedRequest) { q.Time = q.Time.Add(time.Nanosecond) }), ReasonSignature},
		{"kind changed", "heartbeat", payload, edit(good, func(q *SignedRequest) { q.Kind = "heartbeat" }), ReasonSignature},
		{"signed by another key", "report", payload, edit(sign(mallory, t0, "report"), func(q *SignedRequest) { q.ClientID = "alice" }), ReasonSignature},
		{"payload and hash swapped", "report", []byte("other"), edit(good, func(q *SignedRequest) { q.PayloadHash = PayloadHash([]byte("other")) }), ReasonSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := testVerifier(t, DefaultVerifierConfig(), alice)
			err := v.Verify(t0, tt.kind, tt.payload, tt.req)
			if !errors.Is(err, checks.ErrInvalid) || reasonOf(err) != tt.reason {
				t.Fatalf("got %v, want reason %v", err, tt.reason)
			}
			if st := v.Stats(); st.Count(tt.reason) != 1 || st.Rejected() != 1 || st.Accepted != 0 {
				t.Errorf("stats %+v", st)
			}
			if v.Nonces() != 0 {
				t.Errorf("a rejected request left %d nonces", v.Nonces())
			}
			// The genuine request still goes through: nothing was burnt.
			if err := v.Verify(t0, "report", payload, good); err != nil {
				t.Errorf("genuine request after the rejection: %v", err)
			}
		})
	}
}

func TestVerifyReplayWindow(t *testing.T) {
	alice := testClient(t, "alice", 1)
	v := testVerifier(t, DefaultVerifierConfig(), alice)
	r := rand.New(rand.NewPCG(5, 6))
	req, _ := alice.Sign(r, t0, "poll", 7, nil)
	if err := v.Verify(t0, "poll", nil, req); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{0, time.Second, 30 * time.Second} {
		if err := v.Verify(t0.Add(at), "poll", nil, req); reasonOf(err) != ReasonReplay {
			t.Errorf("replay %v later: %v, want a replay", at, err)
		}
	}
	// Past the window the timestamp check takes over, and the nonce is
	// forgotten.
	if err := v.Verify(t0.Add(30*time.Second+1), "poll", nil, req); reasonOf(err) != ReasonTime {
		t.Errorf("replay after the window: %v, want a time rejection", err)
	}
	fresh, _ := alice.Sign(r, t0.Add(31*time.Second), "poll", 7, nil)
	if err := v.Verify(t0.Add(31*time.Second), "poll", nil, fresh); err != nil {
		t.Fatal(err)
	}
	if n := v.Nonces(); n != 1 {
		t.Errorf("%d nonces remembered, want 1 (the old one expired)", n)
	}
	// A clock stepping back does not readmit the forgotten request.
	if err := v.Verify(t0, "poll", nil, req); reasonOf(err) != ReasonTime {
		t.Errorf("replay with the clock stepped back: %v, want a time rejection", err)
	}
}

func TestVerifyBoundedMemory(t *testing.T) {
	a, b, c := testClient(t, "a", 1), testClient(t, "b", 2), testClient(t, "c", 3)
	v := testVerifier(t, VerifierConfig{Skew: time.Second, MaxNonces: 4, MaxNoncesPerClient: 2}, a, b, c)
	r := rand.New(rand.NewPCG(7, 8))
	verify := func(s *Signer, at time.Time) error {
		req, _ := s.Sign(r, at, "poll", 1, nil)
		return v.Verify(at, "poll", nil, req)
	}
	for _, s := range []*Signer{a, a, b, b} {
		if err := verify(s, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := verify(a, t0); reasonOf(err) != ReasonBusy {
		t.Errorf("a's third request: %v, want busy (per-client cap)", err)
	}
	if err := verify(c, t0); reasonOf(err) != ReasonBusy {
		t.Errorf("c's first request: %v, want busy (cache full)", err)
	}
	// One second and a nanosecond later everything has expired.
	later := t0.Add(time.Second + 1)
	if err := verify(c, later); err != nil {
		t.Errorf("after expiry: %v", err)
	}
	if n := v.Nonces(); n != 1 {
		t.Errorf("%d nonces, want 1", n)
	}
	if st := v.Stats(); st.Busy != 2 || st.Accepted != 5 {
		t.Errorf("stats %+v", st)
	}
}

func TestVerifyConcurrentReplays(t *testing.T) {
	a := testClient(t, "a", 1)
	v := testVerifier(t, DefaultVerifierConfig(), a)
	req, _ := a.Sign(rand.New(rand.NewPCG(9, 9)), t0, "report", 1, []byte("x"))
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v.Verify(t0, "report", []byte("x"), req)
		}()
	}
	wg.Wait()
	if st := v.Stats(); st.Accepted != 1 || st.Replay != 7 {
		t.Errorf("stats %+v, want 1 accepted and 7 replays", st)
	}
}

func TestVerifierConfig(t *testing.T) {
	for _, c := range []VerifierConfig{
		{Skew: 0, MaxNonces: 1, MaxNoncesPerClient: 1},
		{Skew: time.Second, MaxNonces: 0, MaxNoncesPerClient: 0},
		{Skew: time.Second, MaxNonces: 1, MaxNoncesPerClient: 2},
	} {
		if _, err := NewVerifier(NewRegistry(), c); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if _, err := NewVerifier(nil, DefaultVerifierConfig()); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("nil registry: %v", err)
	}
}

func TestSignerRejects(t *testing.T) {
	if _, err := NewSigner("", make(ed25519.PrivateKey, 64)); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("empty id: %v", err)
	}
	if _, err := NewSigner("a", make(ed25519.PrivateKey, 32)); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("short key: %v", err)
	}
	s := testClient(t, "a", 1)
	if _, err := s.Sign(rand.New(rand.NewPCG(1, 1)), t0, "re port", 1, nil); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("bad kind: %v", err)
	}
}

func TestSignedRequestBinary(t *testing.T) {
	s := testClient(t, "client-7", 1)
	req, _ := s.Sign(rand.New(rand.NewPCG(1, 1)), t0, "report", 12, []byte("p"))
	b, err := req.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 + 6 + 1 + 8 + 8 + 8 + 16 + 32 + 64; len(b) != want {
		t.Errorf("%d bytes, want %d", len(b), want)
	}
	var got SignedRequest
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if got.ClientID != req.ClientID || got.Kind != req.Kind || got.Round != 12 || !got.Time.Equal(t0) ||
		got.Nonce != req.Nonce || got.PayloadHash != req.PayloadHash || string(got.Signature) != string(req.Signature) {
		t.Errorf("round trip: %+v", got)
	}
	bad := [][]byte{nil, {1}, {2, 0}, b[:len(b)-1], append(append([]byte(nil), b...), 0), {1, 200, 'a'}}
	for i, m := range bad {
		if err := new(SignedRequest).UnmarshalBinary(m); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("bad encoding %d: %v", i, err)
		}
	}
	noSig := *req
	noSig.Signature = nil
	if _, err := noSig.MarshalBinary(); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("marshal without signature: %v", err)
	}
}

func TestReasonNames(t *testing.T) {
	seen := map[string]bool{}
	for r := ReasonMalformed; r <= ReasonBusy; r++ {
		var st VerifyStats
		*st.field(r) = 1
		if st.Rejected() != 1 || seen[r.String()] {
			t.Errorf("reason %v", r)
		}
		seen[r.String()] = true
	}
}
