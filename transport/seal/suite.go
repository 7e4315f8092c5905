package seal

import (
	"crypto/ecdh"
	"crypto/hpke"
	"fmt"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
)

// Suite is an HPKE ciphersuite (KEM, KDF, AEAD) of the wire format. Both
// suites use HKDF-SHA256 and ChaCha20-Poly1305 (256-bit keys, constant time
// without AES hardware); they differ in the KEM.
type Suite uint8

const (
	// X25519 is DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305:
	// a 32-byte encapsulation per message. The default: per-coordinate
	// protocols send one encapsulation per coordinate (docs/DEPLOYMENT.md).
	X25519 Suite = 1
	// XWing is MLKEM768-X25519 (X-Wing, draft-ietf-hpke-pq), HKDF-SHA256,
	// ChaCha20-Poly1305: a post-quantum hybrid KEM with a 1,120-byte
	// encapsulation per message.
	XWing Suite = 2
)

// DefaultSuite is the suite `shufflefl certs` and deployments use unless told
// otherwise.
const DefaultSuite = X25519

// Suites lists the supported suites.
func Suites() []Suite { return []Suite{X25519, XWing} }

// String returns the suite's name as ParseSuite accepts it.
func (s Suite) String() string {
	switch s {
	case X25519:
		return "x25519"
	case XWing:
		return "xwing"
	}
	return fmt.Sprintf("Suite(%d)", uint8(s))
}

// ParseSuite returns the suite named name ("x25519" or "xwing").
func ParseSuite(name string) (Suite, error) {
	for _, s := range Suites() {
		if s.String() == name {
			return s, nil
		}
	}
	names := make([]string, 0, 2)
	for _, s := range Suites() {
		names = append(names, s.String())
	}
	return 0, checks.Invalidf("unknown HPKE suite %q (known: %s)", name, strings.Join(names, ", "))
}

// valid reports whether s is a supported suite.
func (s Suite) valid() bool { return s == X25519 || s == XWing }

// kem returns the suite's KEM.
func (s Suite) kem() hpke.KEM {
	if s == XWing {
		return hpke.MLKEM768X25519()
	}
	return hpke.DHKEM(ecdh.X25519())
}

// kdf and aead are the same for every suite.
func (Suite) kdf() hpke.KDF   { return hpke.HKDFSHA256() }
func (Suite) aead() hpke.AEAD { return hpke.ChaCha20Poly1305() }

// EncSize is the length in bytes of one HPKE encapsulated key of the suite.
func (s Suite) EncSize() int {
	switch s {
	case X25519:
		return 32
	case XWing:
		return 1120
	}
	return 0
}

// publicKeySize and privateKeySize are the serialized key lengths (RFC 9180
// SerializePublicKey / SerializePrivateKey; the X-Wing private key is its
// 32-byte seed).
func (s Suite) publicKeySize() int {
	if s == XWing {
		return 1216
	}
	return 32
}

func (Suite) privateKeySize() int { return 32 }

// info is the HPKE info string of the suite: a domain separator naming the
// format version, and the suite.
func (s Suite) info() []byte {
	return append([]byte("shufflefl/seal/v1 info\x00"), byte(s))
}
