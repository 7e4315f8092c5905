package pki

import (
	"crypto/ed25519"
	"errors"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/checks"
)

func TestKeyEndorsement(t *testing.T) {
	now := time.Now()
	ca, _ := NewCA("ca", now, time.Hour)
	an, _ := ca.Issue(RoleAnalyzer, DefaultHosts, now, time.Hour)
	sh, _ := ca.Issue(RoleShuffler, DefaultHosts, now, time.Hour)
	other, _ := NewCA("other", now, time.Hour)
	otherAn, _ := other.Issue(RoleAnalyzer, DefaultHosts, now, time.Hour)
	roots := must(Pool(EncodeCertPEM(ca.Cert)))
	key := []byte("-----BEGIN SHUFFLEFL HPKE PUBLIC KEY-----\nSuite: x25519\n\nAAAA\n-----END SHUFFLEFL HPKE PUBLIC KEY-----\n")

	e, err := EndorseKey(an.Cert, an.Key, "run-1", key)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Verify(roots, now); err != nil {
		t.Fatalf("genuine endorsement: %v", err)
	}
	edit := func(f func(*KeyEndorsement)) *KeyEndorsement {
		c := *e
		c.Key = append([]byte(nil), e.Key...)
		c.Signature = append([]byte(nil), e.Signature...)
		f(&c)
		return &c
	}
	tests := map[string]*KeyEndorsement{
		"other run":        edit(func(c *KeyEndorsement) { c.RunID = "run-2" }),
		"substituted key":  edit(func(c *KeyEndorsement) { c.Key[len(c.Key)-40] ^= 1 }),
		"bad signature":    edit(func(c *KeyEndorsement) { c.Signature[10] ^= 1 }),
		"no certificate":   edit(func(c *KeyEndorsement) { c.Cert = nil }),
		"shuffler's own":   must(EndorseKey(sh.Cert, sh.Key, "run-1", key)),
		"another CA":       must(EndorseKey(otherAn.Cert, otherAn.Key, "run-1", key)),
		"certificate swap": edit(func(c *KeyEndorsement) { c.Cert = otherAn.Cert.Raw }),
	}
	for name, bad := range tests {
		if err := bad.Verify(roots, now); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := e.Verify(roots, now.Add(2*time.Hour)); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("expired certificate: %v", err)
	}
	if _, err := EndorseKey(an.Cert, an.Key, "", key); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("empty run id: %v", err)
	}
	// An Ed25519 key signs the bytes themselves (no prehash).
	ed := testClient(t, "x", 1)
	ee, err := EndorseKey(an.Cert, ed.key, "run-1", key)
	if err != nil || !ed25519.Verify(ed.Public(), ee.SigningBytes(), ee.Signature) {
		t.Errorf("Ed25519 signer: %v", err)
	}
}
