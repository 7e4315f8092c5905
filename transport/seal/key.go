package seal

import (
	"crypto/hpke"
	"encoding/pem"
	"fmt"

	"github.com/shufflefl/shufflefl/checks"
)

// PEM block types of the analyzer's HPKE keys.
const (
	PrivateKeyPEMType = "SHUFFLEFL HPKE PRIVATE KEY"
	PublicKeyPEMType  = "SHUFFLEFL HPKE PUBLIC KEY"
)

// pemSuiteHeader is the PEM header that names the suite of a key.
const pemSuiteHeader = "Suite"

// PrivateKey is the analyzer's HPKE decapsulation key, with its suite.
type PrivateKey struct {
	suite Suite
	k     hpke.PrivateKey
}

// PublicKey is the analyzer's HPKE encapsulation key, with its suite. Clients
// seal their values to it, and the shuffler its dummies.
type PublicKey struct {
	suite Suite
	k     hpke.PublicKey
}

// GenerateKey returns a new key pair of the suite from crypto/rand.
func GenerateKey(s Suite) (*PrivateKey, error) {
	if !s.valid() {
		return nil, checks.Invalidf("seal: unsupported suite %v", s)
	}
	k, err := s.kem().GenerateKey()
	if err != nil {
		return nil, fmt.Errorf("seal: generating %v key: %w", s, err)
	}
	return &PrivateKey{suite: s, k: k}, nil
}

// DeriveKey derives a key pair of the suite deterministically from ikm
// (RFC 9180 DeriveKeyPair; at least 32 bytes of secret, uniformly random
// input keying material). Tests and reproducible fixtures use it; a deployment
// uses GenerateKey.
func DeriveKey(s Suite, ikm []byte) (*PrivateKey, error) {
	if !s.valid() {
		return nil, checks.Invalidf("seal: unsupported suite %v", s)
	}
	if len(ikm) < 32 {
		return nil, checks.Invalidf("seal: key material has %d bytes, want at least 32", len(ikm))
	}
	k, err := s.kem().DeriveKeyPair(ikm)
	if err != nil {
		return nil, fmt.Errorf("seal: deriving %v key: %w", s, err)
	}
	return &PrivateKey{suite: s, k: k}, nil
}

// Suite returns the key's suite.
func (k *PrivateKey) Suite() Suite { return k.suite }

// Public returns the matching public key.
func (k *PrivateKey) Public() *PublicKey {
	return &PublicKey{suite: k.suite, k: k.k.PublicKey()}
}

// Suite returns the key's suite.
func (k *PublicKey) Suite() Suite { return k.suite }

// Bytes returns the serialized public key (RFC 9180 SerializePublicKey).
func (k *PublicKey) Bytes() []byte { return k.k.Bytes() }

// Equal reports whether k and o are the same key of the same suite.
func (k *PublicKey) Equal(o *PublicKey) bool {
	return o != nil && k.suite == o.suite && string(k.k.Bytes()) == string(o.k.Bytes())
}

// MarshalPEM encodes the private key as a PEM block of type
// PrivateKeyPEMType with a "Suite" header. The result is a secret: write it
// with file mode 0600.
func (k *PrivateKey) MarshalPEM() ([]byte, error) {
	b, err := k.k.Bytes()
	if err != nil {
		return nil, fmt.Errorf("seal: serializing private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{
		Type:    PrivateKeyPEMType,
		Headers: map[string]string{pemSuiteHeader: k.suite.String()},
		Bytes:   b,
	}), nil
}

// MarshalPEM encodes the public key as a PEM block of type PublicKeyPEMType
// with a "Suite" header.
func (k *PublicKey) MarshalPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{
		Type:    PublicKeyPEMType,
		Headers: map[string]string{pemSuiteHeader: k.suite.String()},
		Bytes:   k.k.Bytes(),
	})
}

// decodePEM decodes exactly one PEM block of type typ with a valid Suite
// header and a payload of the suite's size (want returns it), and nothing but
// whitespace around it.
func decodePEM(data []byte, typ string, want func(Suite) int) (Suite, []byte, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return 0, nil, checks.Invalidf("seal: no PEM block of type %q", typ)
	}
	if block.Type != typ {
		return 0, nil, checks.Invalidf("seal: PEM block has type %q, want %q", block.Type, typ)
	}
	for _, c := range rest {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return 0, nil, checks.Invalidf("seal: trailing data after the %q block", typ)
		}
	}
	if len(block.Headers) != 1 {
		return 0, nil, checks.Invalidf("seal: %q block must have exactly one header (%s), has %d", typ, pemSuiteHeader, len(block.Headers))
	}
	name, ok := block.Headers[pemSuiteHeader]
	if !ok {
		return 0, nil, checks.Invalidf("seal: %q block has no %s header", typ, pemSuiteHeader)
	}
	s, err := ParseSuite(name)
	if err != nil {
		return 0, nil, fmt.Errorf("seal: %q block: %w", typ, err)
	}
	if n := want(s); len(block.Bytes) != n {
		return 0, nil, checks.Invalidf("seal: %v %q has %d bytes, want %d", s, typ, len(block.Bytes), n)
	}
	return s, block.Bytes, nil
}

// ParsePrivateKeyPEM decodes a private key written by PrivateKey.MarshalPEM.
// It accepts exactly one block and rejects anything else with an error
// wrapping checks.ErrInvalid.
func ParsePrivateKeyPEM(data []byte) (*PrivateKey, error) {
	s, b, err := decodePEM(data, PrivateKeyPEMType, Suite.privateKeySize)
	if err != nil {
		return nil, err
	}
	k, err := s.kem().NewPrivateKey(b)
	if err != nil {
		return nil, checks.Invalidf("seal: %v private key: %v", s, err)
	}
	return &PrivateKey{suite: s, k: k}, nil
}

// ParsePublicKeyPEM decodes a public key written by PublicKey.MarshalPEM.
// It accepts exactly one block and rejects anything else with an error
// wrapping checks.ErrInvalid.
func ParsePublicKeyPEM(data []byte) (*PublicKey, error) {
	s, b, err := decodePEM(data, PublicKeyPEMType, Suite.publicKeySize)
	if err != nil {
		return nil, err
	}
	k, err := s.kem().NewPublicKey(b)
	if err != nil {
		return nil, checks.Invalidf("seal: %v public key: %v", s, err)
	}
	return &PublicKey{suite: s, k: k}, nil
}
