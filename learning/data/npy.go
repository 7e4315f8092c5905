package data

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// npyArray is a NumPy .npy array: its dtype descriptor, shape and raw
// little-endian (or single-byte) data, in C order once read (readNPY
// reorders a Fortran-order array).
type npyArray struct {
	descr string
	shape []int
	data  []byte
}

// npyItemSize is the size in bytes of the dtypes numpy writes by default
// for floats, integers and bytes; the other dtypes are refused.
var npyItemSize = map[string]int{"<f8": 8, "<f4": 4, "<i8": 8, "<i4": 4, "|u1": 1}

// npyMagic starts every .npy file.
const npyMagic = "\x93NUMPY"

// maxNPYHeader bounds a .npy header's declared length.
const maxNPYHeader = 1 << 16

// readNPY reads a .npy file of format version 1.0 or 2.0 from r (name
// names it in errors): the magic string, the version, the header length
// (2 bytes little-endian in 1.0, 4 in 2.0), the header, a Python dict
// literal {'descr': ..., 'fortran_order': ..., 'shape': (...)}, then
// exactly prod(shape)·itemsize bytes of data. Errors wrap ErrData.
func readNPY(name string, r io.Reader) (*npyArray, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, dataErr(name, "not a .npy array (too short): %v", err)
	}
	if string(pre[:6]) != npyMagic {
		return nil, dataErr(name, "not a .npy array (bad magic string %q)", pre[:6])
	}
	var hlen int
	switch major, minor := pre[6], pre[7]; {
	case major == 1 && minor == 0:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, dataErr(name, "truncated .npy header: %v", err)
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case major == 2 && minor == 0:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, dataErr(name, "truncated .npy header: %v", err)
		}
		hlen = int(binary.LittleEndian.Uint32(b[:]))
	default:
		return nil, dataErr(name, ".npy format version %d.%d is not supported (only 1.0 and 2.0, what numpy writes for plain arrays)", major, minor)
	}
	if hlen > maxNPYHeader {
		return nil, dataErr(name, ".npy header of %d bytes is too long", hlen)
	}
	hb := make([]byte, hlen)
	if _, err := io.ReadFull(r, hb); err != nil {
		return nil, dataErr(name, "truncated .npy header: %v", err)
	}
	descr, fortran, shape, err := parseNPYHeader(string(hb))
	if err != nil {
		return nil, dataErr(name, "bad .npy header %q: %v", strings.TrimSpace(string(hb)), err)
	}
	size, ok := npyItemSize[descr]
	if !ok {
		return nil, dataErr(name, "dtype %q is not supported (only <f8, <f4, <i8, <i4 and |u1, numpy's defaults for floats, integers and bytes: convert with astype)", descr)
	}
	n := size
	for _, s := range shape {
		if s < 0 || (s > 0 && n > maxValues*8/s) {
			return nil, dataErr(name, "shape %v is too large", shape)
		}
		n *= s
	}
	// The buffer grows as the data arrive, so a header declaring a huge
	// shape over a short body cannot make us allocate what it declares.
	var buf bytes.Buffer
	buf.Grow(min(n, maxPrealloc))
	if got, err := io.CopyN(&buf, r, int64(n)); err != nil {
		return nil, dataErr(name, "truncated data: the header's shape %v of %s needs %d bytes, the body has %d: %v", shape, descr, n, got, err)
	}
	data := buf.Bytes()
	switch k, err := r.Read(make([]byte, 1)); {
	case k > 0:
		return nil, dataErr(name, "bytes after the %d bytes of data the header's shape %v of %s declares", n, shape, descr)
	case err != nil && !errors.Is(err, io.EOF):
		return nil, dataErr(name, "%v", err) // e.g. a zip entry's checksum
	}
	a := &npyArray{descr: descr, shape: shape, data: data}
	if fortran && len(shape) > 1 {
		a.data = fortranToC(data, shape, size)
	}
	return a, nil
}

// fortranToC reorders the column-major (Fortran-order) data of an array
// of the given shape and item size into row-major (C) order. Element
// (i_0, ..., i_{d-1}) is at item Σ i_a·Π_{b<a} shape_b in Fortran order.
func fortranToC(data []byte, shape []int, size int) []byte {
	out := make([]byte, len(data))
	d := len(shape)
	stride := make([]int, d) // Fortran strides, in items
	stride[0] = 1
	for a := 1; a < d; a++ {
		stride[a] = stride[a-1] * shape[a-1]
	}
	idx := make([]int, d)
	for c := 0; c*size < len(data); c++ {
		off := 0
		for a := range d {
			off += idx[a] * stride[a]
		}
		copy(out[c*size:(c+1)*size], data[off*size:(off+1)*size])
		for a := d - 1; a >= 0; a-- { // next C-order index
			idx[a]++
			if idx[a] < shape[a] {
				break
			}
			idx[a] = 0
		}
	}
	return out
}

// parseNPYHeader parses the dict literal of a .npy header:
// {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), } and the
// padding after it.
func parseNPYHeader(h string) (descr string, fortran bool, shape []int, err error) {
	p := &pyParser{s: h}
	p.space()
	if !p.eat('{') {
		return "", false, nil, errors.New("not a dict")
	}
	seen := map[string]bool{}
	for {
		p.space()
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return "", false, nil, err
		}
		p.space()
		if !p.eat(':') {
			return "", false, nil, fmt.Errorf("no ':' after key %q", key)
		}
		p.space()
		switch key {
		case "descr":
			if p.peek() != '\'' && p.peek() != '"' {
				return "", false, nil, errors.New("descr is not a plain dtype string (structured arrays are not supported)")
			}
			descr, err = p.str()
		case "fortran_order":
			fortran, err = p.boolean()
		case "shape":
			shape, err = p.tuple()
		default:
			return "", false, nil, fmt.Errorf("unknown key %q", key)
		}
		if err != nil {
			return "", false, nil, fmt.Errorf("%s: %w", key, err)
		}
		seen[key] = true
		p.space()
		if !p.eat(',') {
			p.space()
			if !p.eat('}') {
				return "", false, nil, fmt.Errorf("no ',' or '}' after %s", key)
			}
			break
		}
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return "", false, nil, fmt.Errorf("no %s", k)
		}
	}
	if strings.TrimSpace(p.s[p.i:]) != "" {
		return "", false, nil, errors.New("text after the dict")
	}
	return descr, fortran, shape, nil
}

// pyParser reads the Python literals of a .npy header.
type pyParser struct {
	s string
	i int
}

func (p *pyParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\n' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *pyParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *pyParser) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

// str reads a quoted string without escapes.
func (p *pyParser) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", errors.New("expected a quoted string")
	}
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", errors.New("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	return v, nil
}

func (p *pyParser) boolean() (bool, error) {
	for _, w := range []struct {
		s string
		v bool
	}{{"True", true}, {"False", false}} {
		if strings.HasPrefix(p.s[p.i:], w.s) {
			p.i += len(w.s)
			return w.v, nil
		}
	}
	return false, errors.New("expected True or False")
}

// tuple reads a tuple of non-negative integers: (), (5,) or (3, 4).
func (p *pyParser) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, errors.New("expected a tuple")
	}
	shape := []int{}
	for {
		p.space()
		if p.eat(')') {
			return shape, nil
		}
		j := p.i
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		v, err := strconv.Atoi(p.s[j:p.i])
		if err != nil || v > math.MaxInt32 {
			return nil, fmt.Errorf("bad dimension %q", p.s[j:p.i])
		}
		shape = append(shape, v)
		p.space()
		if !p.eat(',') {
			p.space()
			if !p.eat(')') {
				return nil, errors.New("expected ',' or ')'")
			}
			return shape, nil
		}
	}
}

// floats returns the array's values as float32 (name names it in errors),
// refusing NaN, ±Inf and values beyond float32's range, which it reports
// by flat index (row and column for a 2-D or wider array of features).
func (a *npyArray) floats(name string, features int) ([]float32, error) {
	n := len(a.data) / npyItemSize[a.descr]
	out := make([]float32, n)
	for i := range n {
		v := a.at(i)
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > math.MaxFloat32 {
			return nil, dataErr(name, "row %d, column %d: %v is not a finite float32", i/features, i%features, v)
		}
		out[i] = float32(v)
	}
	return out, nil
}

// ints returns the values of an integer array; a float array is refused.
func (a *npyArray) ints(name string) ([]int64, error) {
	if a.descr[1] == 'f' {
		return nil, dataErr(name, "dtype %s: the values must be integers (convert with astype(int))", a.descr)
	}
	n := len(a.data) / npyItemSize[a.descr]
	out := make([]int64, n)
	for i := range n {
		switch a.descr {
		case "<i8":
			out[i] = int64(binary.LittleEndian.Uint64(a.data[8*i:]))
		case "<i4":
			out[i] = int64(int32(binary.LittleEndian.Uint32(a.data[4*i:])))
		default:
			out[i] = int64(a.data[i])
		}
	}
	return out, nil
}

// at returns item i as a float64.
func (a *npyArray) at(i int) float64 {
	switch a.descr {
	case "<f8":
		return math.Float64frombits(binary.LittleEndian.Uint64(a.data[8*i:]))
	case "<f4":
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(a.data[4*i:])))
	case "<i8":
		return float64(int64(binary.LittleEndian.Uint64(a.data[8*i:])))
	case "<i4":
		return float64(int32(binary.LittleEndian.Uint32(a.data[4*i:])))
	}
	return float64(a.data[i])
}
