package data

import (
	"archive/zip"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
)

// npzSet is the arrays of one set of an .npz archive.
type npzSet struct {
	x       []float32
	y       []int64
	client  []int64 // nil without a client array
	n, f    int
	imgRows int // rows and columns of a 3-D x (n, rows, cols); 0 otherwise
	imgCols int
}

// LoadNPZ reads the "npz" dataset of o (see Load): o.DataFile, a NumPy
// .npz archive as numpy.savez or numpy.savez_compressed writes it (a zip
// of .npy arrays, stored or deflated, read with archive/zip), holding
//
//   - x (or x_train): the features, one row per example: 2-D (n, f), or
//     N-D (n, ...) flattened per row in C order (a 3-D (n, rows, cols)
//     array is taken as images of that shape);
//   - y (or y_train): 1-D integer labels, mapped to classes 0..K-1 in
//     increasing order (Labels keeps them);
//   - optionally client: 1-D integers, the natural client of every row
//     (clients in increasing order of their values);
//   - optionally x_test and y_test: the test set.
//
// Other arrays are ignored. The dtypes are those numpy writes by default:
// <f8, <f4, <i8, <i4, |u1 (values are taken as they are: uint8 images are
// not scaled to [0, 1]); any other dtype, a float label, NaN or ±Inf, a
// .npy format other than 1.0 and 2.0, or arrays of mismatched lengths is
// an error wrapping ErrData that names the archive and the array. Without
// x_test, the test set is o.TestFile (another such archive) or
// o.TestFraction of the rows (SplitFraction, per client with a client
// array).
func LoadNPZ(o Options) (Split, error) {
	if o.DataFile == "" {
		return Split{}, checks.Invalidf("dataset npz needs --data-file (a .npz archive written by numpy.savez)")
	}
	tr, te, err := readNPZFile(o.DataFile, true)
	if err != nil {
		return Split{}, err
	}
	switch {
	case o.TestFile != "" && o.TestFraction != 0:
		return Split{}, checks.Invalidf("set only one of test-file and test-fraction")
	case te != nil && (o.TestFile != "" || o.TestFraction != 0):
		return Split{}, checks.Invalidf("%s holds its own test set (x_test, y_test): leave out test-file and test-fraction", o.DataFile)
	case o.TestFile != "":
		if te, _, err = readNPZFile(o.TestFile, false); err != nil {
			return Split{}, err
		}
	}
	if te != nil && te.f != tr.f {
		return Split{}, dataErr(o.TestFile, "the test set has %d features, the training set %d", te.f, tr.f)
	}
	var teY []string
	if te != nil {
		teY = intStrings(te.y)
	}
	ytr, yte, names, err := classIndex(o.DataFile+": y", intStrings(tr.y), teY)
	if err != nil {
		return Split{}, err
	}
	ds := &Dataset{Name: "npz", X: tr.x, Y: ytr, Features: tr.f, Classes: len(names), Labels: names, Rows: tr.imgRows, Cols: tr.imgCols}
	if tr.client != nil {
		ds.Client, ds.ClientNames = clientIndex(intStrings(tr.client))
	}
	if te != nil {
		test := &Dataset{Name: "npz", X: te.x, Y: yte, Features: te.f, Classes: len(names), Labels: names, Rows: tr.imgRows, Cols: tr.imgCols}
		return Split{Train: ds, Test: test}, nil
	}
	p, err := o.testFraction()
	if err != nil {
		return Split{}, err
	}
	return splitRows(o.Seed, ds, p)
}

func loadNPZ(o Options) (Split, error) { return LoadNPZ(o) }

// intStrings formats integers in decimal, for valueIndex.
func intStrings(v []int64) []string {
	out := make([]string, len(v))
	cache := map[int64]string{}
	for i, x := range v {
		s, ok := cache[x]
		if !ok {
			s = strconv.FormatInt(x, 10)
			cache[x] = s
		}
		out[i] = s
	}
	return out
}

// readNPZFile reads the training arrays of the archive path (x or x_train,
// y or y_train, client) and, when withTest is set, its x_test and y_test
// (nil if absent).
func readNPZFile(path string, withTest bool) (train, test *npzSet, err error) {
	zr, err := zip.OpenReader(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return nil, nil, fmt.Errorf("%w: %w", ErrData, err)
	}
	if err != nil {
		return nil, nil, dataErr(path, "not a .npz (zip) archive: %v", err)
	}
	defer zr.Close()
	entries := map[string]*zip.File{}
	for _, f := range zr.File {
		entries[strings.TrimSuffix(f.Name, ".npy")] = f
	}
	pick := func(names ...string) *zip.File {
		for _, n := range names {
			if f, ok := entries[n]; ok {
				return f
			}
		}
		return nil
	}
	if train, err = readNPZSet(path, pick("x", "x_train"), pick("y", "y_train"), pick("client")); err != nil {
		return nil, nil, err
	}
	if xt, yt := pick("x_test"), pick("y_test"); withTest && (xt != nil || yt != nil) {
		if test, err = readNPZSet(path, xt, yt, nil); err != nil {
			return nil, nil, err
		}
	}
	return train, test, nil
}

// readNPZSet reads the arrays x, y and (if cf is not nil) client of one
// set of an archive.
func readNPZSet(path string, xf, yf, cf *zip.File) (*npzSet, error) {
	if xf == nil || yf == nil {
		return nil, dataErr(path, "the archive needs arrays x and y (or x_train and y_train; x_test goes with y_test)")
	}
	xa, err := readNPZEntry(path, xf)
	if err != nil {
		return nil, err
	}
	if len(xa.shape) < 2 {
		return nil, dataErr(path+": "+xf.Name, "x has shape %v: it needs a row per example, (n, features) or (n, ...) (reshape a 1-D x with x.reshape(-1, 1))", xa.shape)
	}
	s := &npzSet{n: xa.shape[0], f: 1}
	for _, d := range xa.shape[1:] {
		s.f *= d
	}
	if s.f == 0 {
		return nil, dataErr(path+": "+xf.Name, "x has shape %v: no features", xa.shape)
	}
	if s.n > maxRows {
		return nil, dataErr(path+": "+xf.Name, "x has %d rows: at most %d", s.n, maxRows)
	}
	if len(xa.shape) == 3 {
		s.imgRows, s.imgCols = xa.shape[1], xa.shape[2]
	}
	if s.x, err = xa.floats(path+": "+xf.Name, s.f); err != nil {
		return nil, err
	}
	ya, err := readNPZEntry(path, yf)
	if err != nil {
		return nil, err
	}
	if s.y, err = vector(path, yf, ya, s.n); err != nil {
		return nil, err
	}
	if cf != nil {
		ca, err := readNPZEntry(path, cf)
		if err != nil {
			return nil, err
		}
		if s.client, err = vector(path, cf, ca, s.n); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// vector checks that a is a 1-D integer array of n values and returns
// them.
func vector(path string, f *zip.File, a *npyArray, n int) ([]int64, error) {
	name := path + ": " + f.Name
	if len(a.shape) != 1 || a.shape[0] != n {
		return nil, dataErr(name, "shape %v: it needs one value per row of x, shape (%d,)", a.shape, n)
	}
	return a.ints(name)
}

// readNPZEntry reads one .npy member of an archive.
func readNPZEntry(path string, f *zip.File) (*npyArray, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, dataErr(path, "%s: %v", f.Name, err)
	}
	defer rc.Close()
	a, err := readNPY(path+": "+f.Name, rc)
	if err != nil {
		return nil, err
	}
	return a, nil
}
