package seal

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

func TestKeyPEMRoundTrip(t *testing.T) {
	for _, suite := range Suites() {
		k, err := GenerateKey(suite)
		if err != nil {
			t.Fatal(err)
		}
		priv, err := k.MarshalPEM()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(priv, []byte("Suite: "+suite.String())) {
			t.Errorf("%v: PEM lacks the suite header:\n%s", suite, priv)
		}
		k2, err := ParsePrivateKeyPEM(priv)
		if err != nil {
			t.Fatalf("%v: %v", suite, err)
		}
		if !k2.Public().Equal(k.Public()) || k2.Suite() != suite {
			t.Errorf("%v: private key round trip changed the key", suite)
		}
		pub, err := ParsePublicKeyPEM(k.Public().MarshalPEM())
		if err != nil {
			t.Fatalf("%v: %v", suite, err)
		}
		if !pub.Equal(k.Public()) || len(pub.Bytes()) != suite.publicKeySize() || pub.Suite() != suite {
			t.Errorf("%v: public key round trip changed the key", suite)
		}
		// Sealed to the parsed public key, opened with the parsed private key.
		s, err := NewSealer(pub, "r")
		if err != nil {
			t.Fatal(err)
		}
		m := mustSeal(t, s, 1, Coord(0), 1)
		o, err := NewOpener(k2, "r", 1, perCoord(1))
		if err != nil {
			t.Fatal(err)
		}
		if _, v, err := o.Open(m); err != nil || v[0] != 1 {
			t.Errorf("%v: %v %v", suite, v, err)
		}
	}
}

func TestGenerateKeyFresh(t *testing.T) {
	a, _ := GenerateKey(X25519)
	b, _ := GenerateKey(X25519)
	if a.Public().Equal(b.Public()) {
		t.Error("two generated keys are equal")
	}
	if _, err := GenerateKey(Suite(0)); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("suite 0: %v", err)
	}
}

func TestDeriveKey(t *testing.T) {
	ikm := bytes.Repeat([]byte{7}, 32)
	a, _ := DeriveKey(XWing, ikm)
	b, _ := DeriveKey(XWing, ikm)
	if !a.Public().Equal(b.Public()) {
		t.Error("DeriveKey is not deterministic")
	}
	if _, err := DeriveKey(X25519, ikm[:31]); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("31-byte ikm: %v", err)
	}
	if _, err := DeriveKey(Suite(3), ikm); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("suite 3: %v", err)
	}
}

func TestParseKeyPEMRejects(t *testing.T) {
	k := testKey(t, X25519)
	priv, _ := k.MarshalPEM()
	pub := k.Public().MarshalPEM()
	edit := func(b []byte, old, new string) []byte {
		return []byte(strings.Replace(string(b), old, new, 1))
	}
	tests := []struct {
		name string
		pub  bool
		data []byte
	}{
		{"empty", false, nil},
		{"not PEM", false, []byte("hello")},
		{"public as private", false, pub},
		{"private as public", true, priv},
		{"unknown suite", false, edit(priv, "Suite: x25519", "Suite: p256")},
		{"no suite header", false, edit(priv, "Suite: x25519", "Proc-Type: 4,ENCRYPTED")},
		{"two headers", false, edit(priv, "Suite: x25519", "Suite: x25519\nComment: x")},
		{"suite and length disagree", true, edit(pub, "Suite: x25519", "Suite: xwing")},
		{"trailing data", false, append(append([]byte(nil), priv...), "junk"...)},
		{"two blocks", false, append(append([]byte(nil), priv...), priv...)},
		{"short key", false, []byte("-----BEGIN SHUFFLEFL HPKE PRIVATE KEY-----\nSuite: x25519\n\nAAAA\n-----END SHUFFLEFL HPKE PRIVATE KEY-----\n")},
	}
	for _, tt := range tests {
		var err error
		if tt.pub {
			_, err = ParsePublicKeyPEM(tt.data)
		} else {
			_, err = ParsePrivateKeyPEM(tt.data)
		}
		if !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: %v, want an error wrapping checks.ErrInvalid", tt.name, err)
		}
	}
	// Surrounding whitespace is fine.
	if _, err := ParsePrivateKeyPEM(append([]byte("\n"), append(priv, "\n\n"...)...)); err != nil {
		t.Errorf("whitespace: %v", err)
	}
}

func TestParseSuite(t *testing.T) {
	for _, s := range Suites() {
		if got, err := ParseSuite(s.String()); err != nil || got != s {
			t.Errorf("%v: %v %v", s, got, err)
		}
	}
	if _, err := ParseSuite("X25519"); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("case-sensitive names: %v", err)
	}
}
