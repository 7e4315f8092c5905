package sim

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// Vector is a float64 vector that a checkpoint stores compactly: JSON
// encodes it as a string, "f64le:" followed by the base64 of its values'
// IEEE-754 bits in little-endian order, which is exact and about 18 times
// faster to write than a JSON array of numbers and half its size
// (BenchmarkVectorJSON, figures in docs/PERFORMANCE.md). A JSON array of numbers (the format of earlier
// checkpoints) is read too.
type Vector []float64

// vectorPrefix marks the compact encoding.
const vectorPrefix = "f64le:"

// MarshalText implements encoding.TextMarshaler (JSON writes it as a
// string: a json.Marshaler's output would be scanned again by the
// encoder, which costs more than the encoding itself).
func (v Vector) MarshalText() ([]byte, error) {
	raw := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(x))
	}
	out := make([]byte, 0, len(vectorPrefix)+base64.StdEncoding.EncodedLen(len(raw)))
	out = append(out, vectorPrefix...)
	return base64.StdEncoding.AppendEncode(out, raw), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (v *Vector) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var xs []float64
		if err := json.Unmarshal(b, &xs); err != nil {
			return corrupt("%v", err)
		}
		*v = xs
		return nil
	}
	// The compact form is a JSON string of base64 characters and the
	// prefix, none of which JSON escapes; anything else is refused.
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' || bytes.IndexByte(b, '\\') >= 0 {
		return corrupt("neither an array of numbers nor a %q string", vectorPrefix)
	}
	s := string(b[1 : len(b)-1])
	if len(s) < len(vectorPrefix) || s[:len(vectorPrefix)] != vectorPrefix {
		return corrupt("a string without the %q prefix", vectorPrefix)
	}
	raw, err := base64.StdEncoding.DecodeString(s[len(vectorPrefix):])
	if err != nil {
		return corrupt("%v in its base64", err)
	}
	if len(raw)%8 != 0 {
		return corrupt("%d bytes, not a whole number of float64s (truncated?)", len(raw))
	}
	out := make([]float64, len(raw)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	*v = out
	return nil
}

// corruptError is a malformed stored value (a checkpoint edited or
// truncated): a usage error (errors.Is checks.ErrInvalid) whose text is
// only what is wrong, for the caller to prefix with the file and field.
type corruptError struct{ msg string }

func corrupt(format string, a ...any) error { return corruptError{fmt.Sprintf(format, a...)} }

func (e corruptError) Error() string        { return e.msg }
func (e corruptError) Is(target error) bool { return target == checks.ErrInvalid }
