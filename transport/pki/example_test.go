package pki_test

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/transport/pki"
)

// Example shows a client's signed request and the shuffler's check of it.
func Example() {
	// Registration: the client's public key goes into the shuffler's
	// registry (shufflefl certs writes both).
	pub, priv, _ := ed25519.GenerateKey(nil)
	reg := pki.NewRegistry()
	if err := reg.Add("client-000001", pub); err != nil {
		panic(err)
	}
	verifier, _ := pki.NewVerifier(reg, pki.DefaultVerifierConfig())

	// Client: sign the request over its payload.
	signer, _ := pki.NewSigner("client-000001", priv)
	payload := []byte("sealed report")
	now := time.Now()
	req, _ := signer.Sign(rng.NewCrypto(), now, "report", 1, payload)
	wire, _ := req.MarshalBinary()

	// Shuffler: decode and verify at its own clock.
	var got pki.SignedRequest
	if err := got.UnmarshalBinary(wire); err != nil {
		panic(err)
	}
	fmt.Println("first:", verifier.Verify(now.Add(time.Second), "report", payload, &got))
	fmt.Println("replay:", verifier.Verify(now.Add(2*time.Second), "report", payload, &got))
	// Output:
	// first: <nil>
	// replay: pki: request rejected (replay): nonce of client-000001 already seen
}
