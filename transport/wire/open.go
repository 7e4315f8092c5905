package wire

import "math"

// DigestBytes is the length of an OpenChunk's digest (SHA-256) and
// MACBytes of the opener queue's MACs (HMAC-SHA256).
const (
	DigestBytes = 32
	MACBytes    = 32
)

// Validate checks the spec's mode, dimension and ranges (finite bounds,
// lo < hi; the meta range only when meta is set).
func (x *OpenSpec) Validate() error {
	c := &v{msg: "OpenSpec"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	c.intIn("mode", int64(x.Mode), 1, 2)
	c.intIn("dimension", int64(x.Dimension), 1, MaxDimension)
	c.interval("values", x.ValuesLo, x.ValuesHi)
	if x.Meta {
		c.interval("meta", x.MetaLo, x.MetaHi)
	}
	return c.err
}

// interval checks a closed interval [lo, hi] with finite lo < hi.
func (c *v) interval(field string, lo, hi float64) {
	switch {
	case math.IsNaN(lo) || math.IsInf(lo, 0) || math.IsNaN(hi) || math.IsInf(hi, 0):
		c.bad(field, "bounds [%v, %v] must be finite", lo, hi)
	case lo >= hi:
		c.bad(field, "bounds [%v, %v] must have lo < hi", lo, hi)
	}
}

// Validate checks the chunk's identity (run, round, index below the count),
// the key's, the digest's and the MAC's lengths, the spec, and the messages: 1 to
// MaxMessagesPerChunk of them, each non-empty, at most MaxChunkBytes in
// all.
func (x *OpenChunk) Validate() error {
	c := &v{msg: "OpenChunk"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	c.printable("run_id", x.RunId, MaxIDBytes)
	c.atLeast("round", x.Round, 1)
	c.atLeast("chunks", int64(x.Chunks), 1)
	if x.Chunk >= x.Chunks {
		c.bad("chunk", "index %d is not below the chunk count %d", x.Chunk, x.Chunks)
	}
	c.bytesIn("analyzer_public_key", x.AnalyzerPublicKey, 1, MaxPublicKeyBytes)
	c.bytesIn("digest", x.Digest, DigestBytes, DigestBytes)
	c.bytesIn("mac", x.Mac, MACBytes, MACBytes)
	if c.required("spec", x.Spec != nil) {
		c.nested("spec", x.Spec.Validate())
	}
	c.intIn("messages", int64(len(x.Messages)), 1, MaxMessagesPerChunk)
	total := 0
	for i, m := range x.Messages {
		if c.err != nil {
			break
		}
		total += len(m)
		switch {
		case len(m) == 0:
			c.bad("messages", "message %d is empty", i)
		case len(m) > MaxCiphertextBytes:
			c.tooLarge("messages", "message %d of %d bytes exceeds %d", i, len(m), MaxCiphertextBytes)
		case total > MaxChunkBytes:
			c.tooLarge("messages", "messages exceed %d bytes in total", MaxChunkBytes)
		}
	}
	return c.err
}

// Validate checks the result's identity, its digest's and MAC's lengths
// and its shape: one outcome byte per
// message (1 to MaxMessagesPerChunk), no more coordinates than outcomes,
// and values that are whole finite float64s. That the outcomes, the
// coordinates and the values agree with each other and with the chunk is
// the receiver's check (it knows the spec).
func (x *OpenResult) Validate() error {
	c := &v{msg: "OpenResult"}
	if !c.required("(message)", x != nil) {
		return c.err
	}
	c.printable("run_id", x.RunId, MaxIDBytes)
	c.atLeast("round", x.Round, 1)
	c.bytesIn("digest", x.Digest, DigestBytes, DigestBytes)
	c.bytesIn("mac", x.Mac, MACBytes, MACBytes)
	c.bytesIn("outcomes", x.Outcomes, 1, MaxMessagesPerChunk)
	if len(x.Coordinates) > len(x.Outcomes) {
		c.bad("coordinates", "%d coordinates for %d messages", len(x.Coordinates), len(x.Outcomes))
	}
	c.bytesIn("values", x.Values, 0, MaxChunkBytes)
	switch {
	case len(x.Values)%8 != 0:
		c.bad("values", "length %d is not a multiple of 8", len(x.Values))
	case c.err == nil:
		if i := firstNonFinite(x.Values); i >= 0 {
			c.bad("values", "value %d is not finite", i)
		}
	}
	c.text("opener", x.Opener, MaxIDBytes)
	return c.err
}
