package pki

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shufflefl/shufflefl/checks"
)

// NonceSize is the length of a request nonce in bytes.
const NonceSize = 16

// MaxIDLen is the longest client id (and request kind) in bytes.
const MaxIDLen = 64

// requestVersion is the version byte of a request's encoding.
const requestVersion = 1

// signingDomain prefixes the signed bytes, so a request signature can never
// be mistaken for a signature over anything else.
const signingDomain = "shufflefl/pki/request/v1\x00"

// Request is what a client signs for one request to the shuffler: the one
// signed encoding of the deployment (SigningBytes). Package wire builds it
// from a gRPC request (wire.SignedRequest): Kind is the full gRPC method
// name, Round the request's round, and PayloadHash the SHA-256 of the
// request's body (wire.RequestBody).
type Request struct {
	ClientID string // registered id (CheckID)
	// Kind is what the request is for: a full gRPC method name such as
	// "/shufflefl.wire.v1.Shuffler/SubmitReport" (CheckKind).
	Kind  string
	Round uint64
	Time  time.Time // the client's clock when it signed
	Nonce [NonceSize]byte
	// PayloadHash is the SHA-256 of the request's payload (PayloadHash):
	// the signature covers the payload through it.
	PayloadHash [sha256.Size]byte
}

// SignedRequest is a Request with the client's Ed25519 signature over
// Request.SigningBytes.
type SignedRequest struct {
	Request
	Signature []byte
}

// PayloadHash is the SHA-256 of a request's payload.
func PayloadHash(payload []byte) [sha256.Size]byte { return sha256.Sum256(payload) }

// CheckID accepts a client id: 1 to MaxIDLen bytes of letters, digits, '.',
// '_' and '-'.
func CheckID(id string) error { return checkToken("client id", id, false) }

// CheckKind accepts a request kind: 1 to MaxIDLen bytes of a client id's
// alphabet and '/' (a gRPC method name).
func CheckKind(kind string) error { return checkToken("request kind", kind, true) }

func checkToken(what, s string, slash bool) error {
	if len(s) == 0 || len(s) > MaxIDLen {
		return checks.Invalidf("pki: %s must have 1 to %d bytes, has %d", what, MaxIDLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || slash && c == '/') {
			return checks.Invalidf("pki: %s %q has a byte %q outside [A-Za-z0-9._-%s]", what, s, c, map[bool]string{true: "/"}[slash])
		}
	}
	return nil
}

// validate checks the request's fields.
func (r *Request) validate() error {
	if err := CheckID(r.ClientID); err != nil {
		return err
	}
	return CheckKind(r.Kind)
}

// appendFields appends the encoding of the request's fields: version, kind
// and id (each preceded by its length byte), round, time (Unix nanoseconds,
// signed), nonce, payload hash.
func (r *Request) appendFields(b []byte) []byte {
	b = append(b, requestVersion, byte(len(r.Kind)))
	b = append(b, r.Kind...)
	b = append(b, byte(len(r.ClientID)))
	b = append(b, r.ClientID...)
	b = binary.BigEndian.AppendUint64(b, r.Round)
	b = binary.BigEndian.AppendUint64(b, uint64(r.Time.UnixNano()))
	b = append(b, r.Nonce[:]...)
	return append(b, r.PayloadHash[:]...)
}

// SigningBytes returns the bytes a client signs: a domain string and the
// request's fields.
func (r *Request) SigningBytes() []byte {
	return r.appendFields([]byte(signingDomain))
}

// MarshalBinary encodes the signed request for transport (for example a
// gRPC metadata value or a bytes field): the request's fields followed by
// the 64-byte signature.
func (s *SignedRequest) MarshalBinary() ([]byte, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	if len(s.Signature) != ed25519.SignatureSize {
		return nil, checks.Invalidf("pki: signature has %d bytes, want %d", len(s.Signature), ed25519.SignatureSize)
	}
	return append(s.appendFields(nil), s.Signature...), nil
}

// UnmarshalBinary decodes a signed request strictly (version, lengths,
// alphabet, no trailing bytes). It does not verify the signature: that is
// the Verifier's job.
func (s *SignedRequest) UnmarshalBinary(b []byte) error {
	fail := func(format string, a ...any) error {
		return checks.Invalidf("pki: signed request: "+format, a...)
	}
	if len(b) < 2 {
		return fail("%d bytes", len(b))
	}
	if b[0] != requestVersion {
		return fail("unsupported version %d", b[0])
	}
	kl := int(b[1])
	b = b[2:]
	if len(b) < kl+1 {
		return fail("truncated kind")
	}
	kind := string(b[:kl])
	il := int(b[kl])
	b = b[kl+1:]
	const fixed = 8 + 8 + NonceSize + sha256.Size + ed25519.SignatureSize
	if len(b) != il+fixed {
		return fail("%d bytes after the kind, want %d", len(b), il+fixed)
	}
	var r SignedRequest
	r.Kind = kind
	r.ClientID = string(b[:il])
	b = b[il:]
	r.Round = binary.BigEndian.Uint64(b)
	r.Time = time.Unix(0, int64(binary.BigEndian.Uint64(b[8:])))
	b = b[16:]
	copy(r.Nonce[:], b)
	copy(r.PayloadHash[:], b[NonceSize:])
	r.Signature = append([]byte(nil), b[NonceSize+sha256.Size:]...)
	if err := r.validate(); err != nil {
		return err
	}
	*s = r
	return nil
}

// Signer signs a client's requests.
type Signer struct {
	id  string
	key ed25519.PrivateKey
}

// NewSigner returns the Signer of client id with its Ed25519 private key.
func NewSigner(id string, key ed25519.PrivateKey) (*Signer, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	if len(key) != ed25519.PrivateKeySize {
		return nil, checks.Invalidf("pki: Ed25519 private key has %d bytes, want %d", len(key), ed25519.PrivateKeySize)
	}
	return &Signer{id: id, key: key}, nil
}

// ID returns the client id.
func (s *Signer) ID() string { return s.id }

// Public returns the client's public key (what the registry holds).
func (s *Signer) Public() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

// Sign signs a request of kind for round over payload at time now, with a
// nonce drawn from r (rng.NewCrypto() in a deployment: nonces must not
// repeat, and must not be predictable by a replaying attacker).
func (s *Signer) Sign(r *rand.Rand, now time.Time, kind string, round uint64, payload []byte) (*SignedRequest, error) {
	if err := CheckKind(kind); err != nil {
		return nil, err
	}
	req := Request{ClientID: s.id, Kind: kind, Round: round, Time: now, PayloadHash: PayloadHash(payload)}
	for i := 0; i < NonceSize; i += 8 {
		binary.BigEndian.PutUint64(req.Nonce[i:], r.Uint64())
	}
	return &SignedRequest{Request: req, Signature: ed25519.Sign(s.key, req.SigningBytes())}, nil
}

// String describes the request (not the signature).
func (r *Request) String() string {
	return fmt.Sprintf("%s request of %s for round %d at %s", r.Kind, r.ClientID, r.Round, r.Time.UTC().Format(time.RFC3339Nano))
}

// ParseClientKeyPEM decodes a client's Ed25519 private key (a PKCS #8
// "PRIVATE KEY" block, as `shufflefl certs` writes it); any other key type
// is an error.
func ParseClientKeyPEM(data []byte) (ed25519.PrivateKey, error) {
	k, err := ParseKeyPEM(data)
	if err != nil {
		return nil, err
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, checks.Invalidf("pki: client key is %T, want an Ed25519 key", k)
	}
	return ek, nil
}
