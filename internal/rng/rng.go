// Package rng provides the randomness sources of shufflefl.
//
// Two kinds of source exist, and every randomized component takes its generator
// as a parameter (a *rand.Rand from math/rand/v2) rather than reaching for a
// global one:
//
//   - Seeded streams for reproducible simulation. Stream(seed, labels...) derives
//     an independent PCG generator for every (seed, round, client, purpose)
//     tuple, so the result of a simulation does not depend on how work is spread
//     over goroutines.
//   - Cryptographic sources for deployment. NewCrypto returns a ChaCha8 generator
//     keyed with 32 bytes from crypto/rand (a CSPRNG), and CryptoSource reads
//     crypto/rand directly for callers that want no user-space state at all.
package rng

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
)

// Labels used as the second argument of Stream to separate the purposes a
// seeded stream may serve. Using distinct labels guarantees that, for example,
// the client-sampling stream and a client's noise stream never coincide.
const (
	LabelSampling  uint64 = 1 + iota // which clients take part in a round
	LabelTraining                    // local SGD minibatch order
	LabelNoise                       // local randomizer
	LabelShuffle                     // shuffler permutations and padding
	LabelAnalyzer                    // analyzer-side noise (central DP)
	LabelPartition                   // data partitioning
	LabelInit                        // model initialisation
	LabelBudget                      // personalized budget generation
)

// splitmix64 is the finalizer of SplitMix64; it is a bijection on uint64 with
// good avalanche, used here to hash stream labels into PCG seeds.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// StreamSeed hashes a seed and a list of labels into the two 64-bit words of a
// PCG state. Different label lists give (with overwhelming probability)
// unrelated states.
func StreamSeed(seed uint64, labels ...uint64) (uint64, uint64) {
	h1 := splitmix64(seed ^ 0x6a09e667f3bcc908)
	h2 := splitmix64(seed ^ 0xbb67ae8584caa73b)
	for _, l := range labels {
		h1 = splitmix64(h1 ^ splitmix64(l))
		h2 = splitmix64(h2 + splitmix64(l^0x3c6ef372fe94f82b))
	}
	return h1, h2
}

// Stream returns a reproducible generator for the stream named by seed and
// labels, for example Stream(seed, LabelNoise, round, client). It is intended
// for simulation only: PCG is fast but not cryptographically secure.
func Stream(seed uint64, labels ...uint64) *rand.Rand {
	a, b := StreamSeed(seed, labels...)
	return rand.New(rand.NewPCG(a, b))
}

// NewSeeded returns a reproducible generator for a single seed.
func NewSeeded(seed uint64) *rand.Rand { return Stream(seed) }

// NewCrypto returns a ChaCha8 generator keyed from crypto/rand. ChaCha8 is a
// cryptographically secure generator, so its output is unpredictable to anyone
// who does not hold the key; it is the default for every real client, shuffler
// and analyzer. It panics only if the operating system's entropy source fails,
// which crypto/rand itself treats as fatal.
func NewCrypto() *rand.Rand {
	var key [32]byte
	if _, err := crand.Read(key[:]); err != nil {
		panic(fmt.Sprintf("rng: crypto/rand failed: %v", err))
	}
	return rand.New(rand.NewChaCha8(key))
}

// CryptoSource is a rand.Source that reads every word from crypto/rand. It
// keeps no state in user space; it is much slower than NewCrypto and exists for
// callers (and benchmarks) that want the operating system's generator directly.
type CryptoSource struct{}

// Uint64 returns 64 bits from crypto/rand.
func (CryptoSource) Uint64() uint64 {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("rng: crypto/rand failed: %v", err))
	}
	return binary.LittleEndian.Uint64(b[:])
}

// NewCryptoDirect returns a generator backed by CryptoSource.
func NewCryptoDirect() *rand.Rand { return rand.New(CryptoSource{}) }
