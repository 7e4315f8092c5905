package data

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// IDX is the content of an IDX file of unsigned bytes (type code 0x08), the
// format of MNIST, Fashion-MNIST, QMNIST and EMNIST: a big-endian header
// 0x00 0x00 0x08 ndims, ndims uint32 sizes, then the product of the sizes in
// bytes, row-major.
type IDX struct {
	Dims []int  // sizes, outermost first: [n, rows, cols] for images, [n] for labels
	Data []byte // product(Dims) bytes, row-major
}

const (
	idxTypeUbyte = 0x08
	// maxIDXBytes bounds the body size a header may declare (4 GiB of
	// float32 once decoded), so a corrupt header cannot ask for absurd
	// allocations.
	maxIDXBytes = 1 << 30
	// maxPrealloc bounds the buffer allocated up front from a header's claim
	// before any data has been seen; larger bodies grow as they arrive.
	maxPrealloc = 1 << 20
	maxIDXDims  = 8
	// Compressed image bodies larger than aheadThreshold are decompressed
	// in a separate goroutine (see readAhead), aheadChunkSize at a time.
	aheadThreshold = 4 << 20
	aheadChunkSize = 256 << 10
)

var gzipMagic = [2]byte{0x1f, 0x8b}

// corrupt returns an ErrData error with a formatted description.
func corrupt(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrData, fmt.Sprintf(format, a...))
}

// ReadIDX reads an IDX file of unsigned bytes from r, decompressing it first
// if it starts with the gzip magic bytes 0x1f 0x8b. It checks the magic
// number, the type code, that every size is positive, and that the data is
// exactly as long as the header declares: a truncated header or body, or
// bytes after the body, are errors. Errors wrap ErrData.
func ReadIDX(r io.Reader) (*IDX, error) {
	m, err := readIDX(r, idxOpts{})
	if err != nil {
		return nil, err
	}
	return &IDX{Dims: m.dims, Data: m.data}, nil
}

// ReadIDXImages reads an IDX image file (3 dimensions: n, rows, cols; gzip or
// raw, see ReadIDX) and returns its pixels scaled from 0..255 to [0, 1],
// n*rows*cols values row-major.
func ReadIDXImages(r io.Reader) (n, rows, cols int, pixels []float32, err error) {
	m, err := readIDX(r, idxOpts{ndims: 3, unit: true})
	if err != nil {
		return 0, 0, 0, nil, err
	}
	return m.dims[0], m.dims[1], m.dims[2], m.unit, nil
}

// ReadIDXLabels reads an IDX label file (1 dimension; gzip or raw, see
// ReadIDX). It does not check the range of the labels: the caller knows the
// class count (LoadIDXDir checks it).
func ReadIDXLabels(r io.Reader) ([]uint8, error) {
	m, err := readIDX(r, idxOpts{ndims: 1})
	if err != nil {
		return nil, err
	}
	return m.data, nil
}

// ReadIDXFile reads the IDX file at path like ReadIDX. A name ending in
// ".gz" must hold a gzip stream; other names are decompressed only if they
// start with the gzip magic bytes. Errors name the file.
func ReadIDXFile(path string) (*IDX, error) {
	m, err := readIDXFS(os.DirFS(filepath.Dir(path)), filepath.Base(path), path, idxOpts{})
	if err != nil {
		return nil, err
	}
	return &IDX{Dims: m.dims, Data: m.data}, nil
}

// idxOpts selects what readIDX accepts and returns.
type idxOpts struct {
	ndims    int  // required dimension count; 0 accepts 1 to maxIDXDims
	mustGzip bool // reject input that is not gzip-compressed
	unit     bool // return the body as float32 in [0, 1] instead of bytes
	// Size hints, 0 when unknown (no IDX file is empty): the size of the
	// input (raw or compressed) and the ISIZE field of a gzip trailer
	// (uncompressed size mod 2^32). They let the reader allocate the whole
	// body at once.
	fileSize, gzipSize int64
}

// idxData is a decoded IDX file: data holds the body, or unit its pixels
// scaled to [0, 1] when idxOpts.unit is set.
type idxData struct {
	dims []int
	data []byte
	unit []float32
}

// readIDXFS opens name in fsys and reads it; display is the name used in
// errors (the full path on disk).
func readIDXFS(fsys fs.FS, name, display string, o idxOpts) (*idxData, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrData, display, unwrapPathError(err))
	}
	defer f.Close()
	o.fileSize, o.gzipSize = 0, 0
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		if st.Size() == 0 {
			return nil, corrupt("%s: empty file", display)
		}
		o.fileSize = st.Size()
	}
	if ra, ok := f.(io.ReaderAt); ok && o.fileSize >= 18 {
		var tail [4]byte
		if _, err := ra.ReadAt(tail[:], o.fileSize-4); err == nil {
			o.gzipSize = int64(binary.LittleEndian.Uint32(tail[:]))
		}
	}
	o.mustGzip = strings.HasSuffix(name, ".gz")
	m, err := readIDX(f, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", display, err)
	}
	return m, nil
}

// unwrapPathError drops the *fs.PathError wrapper (whose path is relative to
// the fs.FS root) so the caller can name the file itself, keeping the cause
// (for example fs.ErrNotExist) reachable by errors.Is.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readIDX is the reader behind every IDX entry point: it detects gzip and
// decodes the header and body.
func readIDX(r io.Reader, o idxOpts) (*idxData, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	peek, err := br.Peek(2)
	if len(peek) == 0 {
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%w: %w", ErrData, err)
		}
		return nil, corrupt("empty file")
	}
	src := io.Reader(br)
	compressed := len(peek) == 2 && peek[0] == gzipMagic[0] && peek[1] == gzipMagic[1]
	switch {
	case compressed:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, corrupt("bad gzip header: %v", err)
		}
		defer zr.Close()
		src = zr
		o.fileSize = 0 // the size of the compressed input says nothing
	case o.mustGzip:
		return nil, corrupt("named .gz but not gzip-compressed (first bytes %#x, want 0x1f8b)", peek)
	default:
		o.gzipSize = 0
	}

	m, err := decodeIDX(src, o)
	if err != nil && compressed && isGzipError(err) {
		return nil, corrupt("corrupt gzip stream: %v", err)
	}
	return m, err
}

func isGzipError(err error) bool {
	var ce flate.CorruptInputError
	return errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.As(err, &ce)
}

// decodeIDX parses the header and body from an uncompressed stream.
func decodeIDX(src io.Reader, o idxOpts) (*idxData, error) {
	var magic [4]byte
	if k, err := io.ReadFull(src, magic[:]); err != nil {
		return nil, shortRead(err, "truncated header: %d of 4 magic bytes", k)
	}
	if magic[0] != 0 || magic[1] != 0 {
		return nil, corrupt("bad magic number %#08x: not an IDX file (want 0x0000TTNN)", binary.BigEndian.Uint32(magic[:]))
	}
	if magic[2] != idxTypeUbyte {
		return nil, corrupt("data type code %#02x, want 0x08 (unsigned byte)", magic[2])
	}
	nd := int(magic[3])
	switch {
	case o.ndims > 0 && nd != o.ndims:
		return nil, corrupt("%d dimensions, want %d (images have 3: count, rows, cols; labels 1)", nd, o.ndims)
	case nd < 1 || nd > maxIDXDims:
		return nil, corrupt("%d dimensions, want 1 to %d", nd, maxIDXDims)
	}
	hdr := make([]byte, 4*nd)
	if k, err := io.ReadFull(src, hdr); err != nil {
		return nil, shortRead(err, "truncated header: %d of %d size bytes", k, len(hdr))
	}
	dims := make([]int, nd)
	total := int64(1)
	for i := range dims {
		s := binary.BigEndian.Uint32(hdr[4*i:])
		if s == 0 {
			return nil, corrupt("dimension %d has size 0", i)
		}
		dims[i] = int(s)
		total *= int64(s)
		if total > maxIDXBytes {
			return nil, corrupt("header declares more than %d data bytes (sizes %v...)", maxIDXBytes, dims[:i+1])
		}
	}
	headerLen := int64(4 + len(hdr))
	if o.fileSize > 0 && o.fileSize != headerLen+total {
		return nil, sizeMismatch(total, o.fileSize-headerLen)
	}
	// The header's size is trusted for allocation once the input's own size
	// (or gzip's record of it) agrees with it.
	trusted := o.fileSize > 0 || (o.gzipSize > 0 && o.gzipSize == (headerLen+total)&0xffffffff)
	m := &idxData{dims: dims}
	var err error
	if o.unit {
		body := src
		if _, isGzip := src.(*gzip.Reader); isGzip && total > aheadThreshold {
			ra := newReadAhead(src, aheadChunkSize, 4)
			defer ra.Close()
			body, src = ra, ra
		}
		m.unit, err = readBodyUnit(body, int(total), trusted)
	} else {
		m.data, err = readBody(src, int(total), trusted)
	}
	if err != nil {
		return nil, err
	}
	// Anything after the body is an error (and reading to EOF makes gzip
	// verify its checksum).
	extra, err := io.Copy(io.Discard, src)
	if err != nil {
		return nil, fmt.Errorf("%w: after the body: %w", ErrData, err)
	}
	if extra > 0 {
		return nil, sizeMismatch(total, total+extra)
	}
	return m, nil
}

func sizeMismatch(want, got int64) error {
	if got < want {
		return corrupt("truncated body: header declares %d data bytes, file holds %d", want, got)
	}
	return corrupt("%d trailing bytes: header declares %d data bytes, file holds %d", got-want, want, got)
}

func shortRead(err error, format string, a ...any) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return corrupt(format, a...)
	}
	return fmt.Errorf("%w: %s: %w", ErrData, fmt.Sprintf(format, a...), err)
}

// readBody reads exactly n bytes. Unless the size is trusted, the buffer
// starts at most maxPrealloc bytes and grows as data arrives, so a header
// that lies about its size costs memory only in proportion to the bytes
// actually present.
func readBody(src io.Reader, n int, trusted bool) ([]byte, error) {
	capacity := n
	if !trusted {
		capacity = min(n, maxPrealloc)
	}
	buf := make([]byte, 0, capacity)
	for len(buf) < n {
		if len(buf) == cap(buf) {
			nb := make([]byte, len(buf), min(n, 4*cap(buf)))
			copy(nb, buf)
			buf = nb
		}
		k, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if done, err := bodyErr(err, len(buf), n); done {
			if err != nil {
				return nil, err
			}
			break
		}
	}
	if len(buf) < n {
		return nil, sizeMismatch(int64(n), int64(len(buf)))
	}
	return buf, nil
}

// bodyErr classifies a read error met after got of want body bytes: done
// reports whether to stop reading, err whether that is a failure other than
// running out of data (which the caller reports as truncation).
func bodyErr(err error, got, want int) (done bool, _ error) {
	switch err {
	case nil:
		return false, nil
	case io.EOF, io.ErrUnexpectedEOF:
		return true, nil
	}
	return true, fmt.Errorf("%w: reading body after %d of %d bytes: %w", ErrData, got, want, err)
}

// readBodyUnit is readBody fused with BytesToUnit: it converts each chunk
// as it arrives, so the bytes are never held in full.
func readBodyUnit(src io.Reader, n int, trusted bool) ([]float32, error) {
	capacity := n
	if !trusted {
		capacity = min(n, maxPrealloc)
	}
	out := make([]float32, 0, capacity)
	chunk := make([]byte, min(n, 1<<16))
	for len(out) < n {
		k, err := src.Read(chunk[:min(len(chunk), n-len(out))])
		if k > 0 {
			if len(out)+k > cap(out) {
				no := make([]float32, len(out), min(n, max(4*cap(out), len(out)+k)))
				copy(no, out)
				out = no
			}
			dst := out[len(out) : len(out)+k]
			for i, v := range chunk[:k] {
				dst[i] = unitTable[v]
			}
			out = out[:len(out)+k]
		}
		if done, err := bodyErr(err, len(out), n); done {
			if err != nil {
				return nil, err
			}
			break
		}
	}
	if len(out) < n {
		return nil, sizeMismatch(int64(n), int64(len(out)))
	}
	return out, nil
}

// unitTable maps a byte v to v/255 in float32.
var unitTable = func() (t [256]float32) {
	for i := range t {
		t[i] = float32(i) / 255
	}
	return t
}()

// BytesToUnit converts pixel bytes 0..255 to float32 values in [0, 1]
// (v/255).
func BytesToUnit(b []byte) []float32 {
	out := make([]float32, len(b))
	for i, v := range b {
		out[i] = unitTable[v]
	}
	return out
}

// WriteIDX writes an uncompressed IDX file of unsigned bytes with the given
// sizes (outermost first); len(data) must equal their product. Wrap w in a
// gzip.Writer for a .gz file. It is used by tests and by the sample tool.
func WriteIDX(w io.Writer, dims []int, data []byte) error {
	if len(dims) < 1 || len(dims) > maxIDXDims {
		return fmt.Errorf("WriteIDX: %d dimensions, want 1 to %d", len(dims), maxIDXDims)
	}
	hdr := make([]byte, 4+4*len(dims))
	hdr[2], hdr[3] = idxTypeUbyte, byte(len(dims))
	total := 1
	for i, d := range dims {
		if d < 1 || int64(d) > 1<<32-1 {
			return fmt.Errorf("WriteIDX: dimension %d has size %d", i, d)
		}
		binary.BigEndian.PutUint32(hdr[4+4*i:], uint32(d))
		total *= d
	}
	if total != len(data) {
		return fmt.Errorf("WriteIDX: sizes %v need %d bytes, got %d", dims, total, len(data))
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	_, err := w.Write(data)
	return err
}
