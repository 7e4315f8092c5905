package data

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/shufflefl/shufflefl/checks"
)

// A shard file holds one client's training examples, as `shufflefl
// partition` writes them (format version 1, little-endian):
//
//	offset  size  field
//	0       8     magic "SFLSHARD"
//	8       4     version (1)
//	12      4     client index
//	16      4     examples n
//	20      4     features f
//	24      4     classes (2 to 256)
//	28      4     image rows (0 if not an image)
//	32      4     image columns (0 if not an image)
//	36      32    settings digest (the run settings the shard was cut for)
//	68      4n·f  features, float32 bits, row-major
//	        n     labels, one byte each
//	        32    SHA-256 of every byte before it
//
// The features are the float32 values the client trains on, bit for bit
// (the dataset's values, rotated for the client's group under the
// "rotated" partition), so a client training on its shard computes exactly
// what it computes on the same rows of the whole training set.
const (
	shardMagic      = "SFLSHARD"
	shardVersion    = 1
	shardHeaderSize = 68
	shardSumSize    = sha256.Size
)

// MaxShardBytes bounds the size of a shard file ReadShardFile and
// ParseShard accept (1 GiB): a header that declares more is refused before
// anything is allocated.
const MaxShardBytes = 1 << 30

// Shard is one client's training examples and what identifies them.
type Shard struct {
	// Client is the client's 0-based index.
	Client int
	// Settings is the digest of the run settings the shard was cut for
	// (package deploy's SettingsDigest); a client refuses a shard whose
	// digest is not that of its own settings.
	Settings [32]byte
	// X holds Len()·Features values row-major; Y one label per example.
	X        []float32
	Y        []uint8
	Features int
	Classes  int
	// Rows and Cols are the image shape (both 0 if the features are not an
	// image).
	Rows, Cols int
}

// Len returns the number of examples.
func (s *Shard) Len() int { return len(s.Y) }

// shardSize is the size of the file of n examples of f features, or -1 if
// it exceeds MaxShardBytes.
func shardSize(n, f int) int64 {
	if n < 0 || f < 1 || n > MaxShardBytes/(4*f+1) {
		return -1
	}
	return shardHeaderSize + int64(n)*int64(4*f+1) + shardSumSize
}

// validate checks the fields Marshal writes.
func (s *Shard) validate() error {
	switch {
	case s.Client < 0 || s.Client > math.MaxUint32:
		return checks.Invalidf("shard: client index %d out of range", s.Client)
	case s.Features < 1 || s.Features > math.MaxUint32:
		return checks.Invalidf("shard: %d features, want at least 1", s.Features)
	case s.Classes < 2 || s.Classes > 256:
		return checks.Invalidf("shard: %d classes, want 2 to 256 (a shard holds a classification set)", s.Classes)
	case len(s.X) != len(s.Y)*s.Features:
		return checks.Invalidf("shard: %d feature values for %d examples of %d features", len(s.X), len(s.Y), s.Features)
	case shardSize(len(s.Y), s.Features) < 0:
		return checks.Invalidf("shard: %d examples of %d features exceed %d bytes", len(s.Y), s.Features, MaxShardBytes)
	case s.Rows < 0 || s.Cols < 0 || s.Rows > math.MaxUint32 || s.Cols > math.MaxUint32 || (s.Rows != 0 || s.Cols != 0) && s.Rows*s.Cols != s.Features:
		return checks.Invalidf("shard: image shape %dx%d does not match %d features", s.Rows, s.Cols, s.Features)
	}
	for i, y := range s.Y {
		if int(y) >= s.Classes {
			return checks.Invalidf("shard: label %d of example %d is not below %d classes", y, i, s.Classes)
		}
	}
	return nil
}

// MarshalBinary encodes the shard in the shard file format. A shard with
// inconsistent fields is an error wrapping checks.ErrInvalid.
func (s *Shard) MarshalBinary() ([]byte, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	size := shardSize(len(s.Y), s.Features)
	b := make([]byte, shardHeaderSize, size)
	copy(b, shardMagic)
	le := binary.LittleEndian
	for i, v := range []int{shardVersion, s.Client, len(s.Y), s.Features, s.Classes, s.Rows, s.Cols} {
		le.PutUint32(b[8+4*i:], uint32(v))
	}
	copy(b[36:68], s.Settings[:])
	for _, x := range s.X {
		b = le.AppendUint32(b, math.Float32bits(x))
	}
	b = append(b, s.Y...)
	sum := sha256.Sum256(b)
	return append(b, sum[:]...), nil
}

// shardHeader is the decoded fixed-size header.
type shardHeader struct {
	client, n, features, classes, rows, cols int
	settings                                 [32]byte
}

// parseShardHeader decodes and checks the header, and returns it with the
// size of the whole file it declares.
func parseShardHeader(b []byte) (shardHeader, int64, error) {
	var h shardHeader
	if len(b) < shardHeaderSize {
		return h, 0, corrupt("shard: %d bytes, shorter than the %d-byte header", len(b), shardHeaderSize)
	}
	if string(b[:8]) != shardMagic {
		return h, 0, corrupt("shard: bad magic %q, want %q (not a shard file)", b[:8], shardMagic)
	}
	le := binary.LittleEndian
	u := func(i int) int { return int(le.Uint32(b[8+4*i:])) }
	if v := u(0); v != shardVersion {
		return h, 0, corrupt("shard: format version %d, this build reads version %d", v, shardVersion)
	}
	h = shardHeader{client: u(1), n: u(2), features: u(3), classes: u(4), rows: u(5), cols: u(6)}
	copy(h.settings[:], b[36:68])
	switch {
	case h.features < 1:
		return h, 0, corrupt("shard: %d features", h.features)
	case h.classes < 2 || h.classes > 256:
		return h, 0, corrupt("shard: %d classes, want 2 to 256", h.classes)
	case (h.rows != 0 || h.cols != 0) && int64(h.rows)*int64(h.cols) != int64(h.features):
		return h, 0, corrupt("shard: image shape %dx%d does not match %d features", h.rows, h.cols, h.features)
	}
	size := shardSize(h.n, h.features)
	if size < 0 {
		return h, 0, corrupt("shard: header declares %d examples of %d features, over the %d-byte limit", h.n, h.features, MaxShardBytes)
	}
	return h, size, nil
}

// ParseShard decodes a shard file's bytes. A file that is truncated, has
// trailing bytes, declares more than MaxShardBytes, fails its checksum or
// holds a label out of range is an error wrapping ErrData; nothing is
// allocated beyond the shard's own size.
func ParseShard(b []byte) (*Shard, error) {
	h, size, err := parseShardHeader(b)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != size {
		return nil, corrupt("shard: %d bytes, the header declares %d (%d examples of %d features): truncated or trailing bytes", len(b), size, h.n, h.features)
	}
	body := b[:size-shardSumSize]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], b[size-shardSumSize:]) {
		return nil, corrupt("shard: checksum mismatch (the file is corrupted)")
	}
	s := &Shard{Client: h.client, Settings: h.settings, Features: h.features, Classes: h.classes, Rows: h.rows, Cols: h.cols,
		X: make([]float32, h.n*h.features)}
	le := binary.LittleEndian
	xs := body[shardHeaderSize:]
	for i := range s.X {
		s.X[i] = math.Float32frombits(le.Uint32(xs[4*i:]))
	}
	s.Y = bytes.Clone(xs[4*len(s.X):])
	for i, y := range s.Y {
		if int(y) >= s.Classes {
			return nil, corrupt("shard: label %d of example %d is not below %d classes", y, i, s.Classes)
		}
	}
	return s, nil
}

// WriteShardFile writes s to path (created with mode 0600, replaced if it
// exists) and returns the SHA-256 of the file's bytes.
func WriteShardFile(path string, s *Shard) ([32]byte, error) {
	b, err := s.MarshalBinary()
	if err != nil {
		return [32]byte{}, err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return [32]byte{}, fmt.Errorf("%w: writing %s: %w", ErrData, path, err)
	}
	return sha256.Sum256(b), nil
}

// ReadShardFile reads and decodes the shard file at path, and returns it
// with the SHA-256 of the file's bytes. It reads the header first and
// refuses a file whose size is not the one the header declares before
// reading (or allocating for) the rest. Errors wrap ErrData and name the
// file.
func ReadShardFile(path string) (*Shard, [32]byte, error) {
	var sum [32]byte
	f, err := os.Open(path)
	if err != nil {
		return nil, sum, fmt.Errorf("%w: %w", ErrData, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, sum, fmt.Errorf("%w: %w", ErrData, err)
	}
	head := make([]byte, shardHeaderSize)
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, sum, corrupt("%s: shard header: %v (%d bytes, shorter than the %d-byte header)", path, err, fi.Size(), shardHeaderSize)
	}
	_, size, err := parseShardHeader(head)
	if err == nil && fi.Size() != size {
		err = corrupt("shard: %d bytes, the header declares %d: truncated or trailing bytes", fi.Size(), size)
	}
	if err != nil {
		return nil, sum, fmt.Errorf("%s: %w", path, err)
	}
	b := make([]byte, size)
	copy(b, head)
	if _, err := io.ReadFull(f, b[shardHeaderSize:]); err != nil {
		return nil, sum, corrupt("%s: reading the shard: %v", path, err)
	}
	s, err := ParseShard(b)
	if err != nil {
		return nil, sum, fmt.Errorf("%s: %w", path, err)
	}
	return s, sha256.Sum256(b), nil
}
