package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/shufflefl/shufflefl/checks"
)

// endorseDomain prefixes the bytes an analyzer signs to endorse its HPKE key.
const endorseDomain = "shufflefl/pki/hpke-key/v1\x00"

// KeyEndorsement binds the analyzer's HPKE public key to a run with the
// analyzer's TLS certificate. Clients seal their values to that key; if the
// shuffler relays it, a malicious shuffler could substitute a key of its own
// and read every value. A client that verifies the endorsement (chain to the
// CA, role analyzer, signature over run id and key) cannot be fooled that
// way. A key distributed out of band (the analyzer-hpke.pub file of
// `shufflefl certs`) needs no endorsement.
type KeyEndorsement struct {
	RunID string
	// Key is the HPKE public key as the analyzer publishes it (the PEM of
	// seal.PublicKey.MarshalPEM, which names the suite).
	Key []byte
	// Cert is the DER of the analyzer's certificate.
	Cert []byte
	// Signature is the certificate key's signature over SigningBytes.
	Signature []byte
}

// SigningBytes returns what the analyzer signs: a domain string, the run id
// and the key, each preceded by its length (4 bytes, big-endian).
func (e *KeyEndorsement) SigningBytes() []byte {
	b := []byte(endorseDomain)
	for _, f := range [][]byte{[]byte(e.RunID), e.Key} {
		n := len(f)
		b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		b = append(b, f...)
	}
	return b
}

// signedDigest hashes the signing bytes for ECDSA (Ed25519 signs them
// directly).
func (e *KeyEndorsement) signedDigest() []byte {
	h := sha256.Sum256(e.SigningBytes())
	return h[:]
}

// EndorseKey signs the analyzer's HPKE public key (its PEM) for runID with
// the analyzer's certificate and key (an ECDSA or Ed25519 key, as CA.Issue
// and `shufflefl certs` make).
func EndorseKey(cert *x509.Certificate, key crypto.Signer, runID string, hpkeKeyPEM []byte) (*KeyEndorsement, error) {
	if cert == nil || key == nil {
		return nil, checks.Invalidf("pki: endorsement needs the analyzer's certificate and key")
	}
	if runID == "" || len(hpkeKeyPEM) == 0 {
		return nil, checks.Invalidf("pki: endorsement needs a run id and a key")
	}
	e := &KeyEndorsement{RunID: runID, Key: append([]byte(nil), hpkeKeyPEM...), Cert: append([]byte(nil), cert.Raw...)}
	var err error
	switch key.(type) {
	case ed25519.PrivateKey:
		e.Signature, err = key.Sign(rand.Reader, e.SigningBytes(), crypto.Hash(0))
	default:
		e.Signature, err = key.Sign(rand.Reader, e.signedDigest(), crypto.SHA256)
	}
	if err != nil {
		return nil, fmt.Errorf("pki: signing the HPKE key: %w", err)
	}
	return e, nil
}

// Verify checks the endorsement at time now: the certificate chains to roots
// and names the analyzer's role, and its key signed this run id and key.
// Errors wrap checks.ErrInvalid.
func (e *KeyEndorsement) Verify(roots *x509.CertPool, now time.Time) error {
	cert, err := x509.ParseCertificate(e.Cert)
	if err != nil {
		return checks.Invalidf("pki: endorsement certificate: %v", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return checks.Invalidf("pki: endorsement certificate: %v", err)
	}
	if r, ok := RoleOf(cert); !ok || r != RoleAnalyzer {
		return checks.Invalidf("pki: HPKE key endorsed by %q, not the analyzer", r)
	}
	switch pub := cert.PublicKey.(type) {
	case *ecdsa.PublicKey:
		if !ecdsa.VerifyASN1(pub, e.signedDigest(), e.Signature) {
			return checks.Invalidf("pki: HPKE key endorsement signature does not verify")
		}
	case ed25519.PublicKey:
		if !ed25519.Verify(pub, e.SigningBytes(), e.Signature) {
			return checks.Invalidf("pki: HPKE key endorsement signature does not verify")
		}
	default:
		return checks.Invalidf("pki: endorsement certificate has a %T key", pub)
	}
	return nil
}
