// Package pki holds the transport credentials of a shufflefl deployment:
// a development certificate authority and the TLS certificates of the
// shuffler and the analyzer (mutual TLS between them, TLS 1.3 only), and the
// Ed25519 credentials with which clients sign their requests to the
// shuffler.
//
// # TLS
//
// NewCA makes a self-signed ECDSA P-256 CA; CA.Issue makes a role's
// certificate, valid for server and client authentication, with DNS and IP
// subject alternative names for the hosts it serves and a URI naming its
// role (Role.URI, e.g. "urn:shufflefl:role:shuffler"). The tls.Config
// builders require TLS 1.3 and check the peer's role besides its chain, so a
// certificate of the same CA issued to another role is refused: the analyzer
// accepts only the shuffler, and clients accept only the shuffler.
//
// # Client requests
//
// A client has an Ed25519 key pair whose public key is registered with the
// shuffler (Registry, stored as JSON). It signs every request over the
// client id, the round, a timestamp, a random nonce, the SHA-256 of the
// request's payload and the request kind (Signer). The shuffler's Verifier
// checks, in order: the encoding, the kind it expects, that the client is
// registered, that the timestamp is within the allowed skew of its clock,
// the payload hash, the signature, and that the nonce was not seen within
// the window; the nonce cache has bounded memory and fails closed when full.
// Time is injected: the Verifier is pure logic, with no clock, network or
// disk of its own.
//
// # Development PKI
//
// DevFiles makes every credential of a local deployment in memory (CA,
// both roles' certificates, the analyzer's HPKE key, the client keys and
// their registry) and WriteDev writes them, secrets with mode 0600: what
// `shufflefl certs` does (DevHelp).
//
// Keys come from crypto/rand; nonces from the caller's *rand.Rand
// (rng.NewCrypto in a deployment).
package pki
