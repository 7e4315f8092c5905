package pki

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// FuzzSignedRequest: UnmarshalBinary never panics, and what it accepts
// re-encodes to the same bytes.
func FuzzSignedRequest(f *testing.F) {
	s := testClient(f, "client-000001", 1)
	req, _ := s.Sign(rand.New(rand.NewPCG(1, 2)), t0, "report", 4, []byte("p"))
	b, _ := req.MarshalBinary()
	f.Add(b)
	f.Add(b[:len(b)-1])
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var r SignedRequest
		if err := r.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, checks.ErrInvalid) {
				t.Fatalf("error does not wrap checks.ErrInvalid: %v", err)
			}
			return
		}
		out, err := r.MarshalBinary()
		if err != nil || string(out) != string(data) {
			t.Fatalf("re-encoding: %v\n% x\n% x", err, data, out)
		}
	})
}

// FuzzParseRegistry: never panics; an accepted registry re-encodes to one
// that parses to the same ids.
func FuzzParseRegistry(f *testing.F) {
	reg := NewRegistry()
	reg.Add("client-1", testClient(f, "client-1", 1).Public())
	reg.Add("client-2", testClient(f, "client-2", 2).Public())
	b, _ := reg.MarshalJSON()
	f.Add(b)
	f.Add([]byte(`{"format":"shufflefl-client-registry","version":1,"clients":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRegistry(data)
		if err != nil {
			if !errors.Is(err, checks.ErrInvalid) {
				t.Fatalf("error does not wrap checks.ErrInvalid: %v", err)
			}
			return
		}
		out, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		r2, err := ParseRegistry(out)
		if err != nil || r2.Len() != r.Len() {
			t.Fatalf("re-encoded registry: %v", err)
		}
	})
}

// FuzzParseKeyPEM and FuzzParseCertPEM: never panic; errors wrap
// checks.ErrInvalid.
func FuzzParseKeyPEM(f *testing.F) {
	b, _ := EncodeKeyPEM(testClient(f, "a", 1).key)
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := ParseKeyPEM(data); err != nil && !errors.Is(err, checks.ErrInvalid) {
			t.Fatalf("error does not wrap checks.ErrInvalid: %v", err)
		}
	})
}

func FuzzParseCertPEM(f *testing.F) {
	ca, err := NewCA("fuzz", t0, 3600e9)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(EncodeCertPEM(ca.Cert))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := ParseCertPEM(data); err != nil && !errors.Is(err, checks.ErrInvalid) {
			t.Fatalf("error does not wrap checks.ErrInvalid: %v", err)
		}
	})
}
