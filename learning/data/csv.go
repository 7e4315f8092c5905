package data

import (
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
)

// csvTable is a CSV file as read: its feature columns (in the training
// file's order), the raw label and client value of every row.
type csvTable struct {
	features []string
	x        []float32
	labels   []string
	clients  []string // nil without a client column
}

// csvColumns says which columns ReadCSV takes: the label column, the
// client column ("" for none) and, for a test file, the training file's
// feature columns in the order to store them (nil: every other column, in
// the file's order).
type csvColumns struct {
	label, client string
	features      []string
	// clientOptional lets the client column be absent (a test file).
	clientOptional bool
}

// LoadCSV reads the "csv" dataset of o (see Load): o.DataFile's rows,
// every column but the label column (o.LabelColumn, default "label") and
// the client column (o.ClientColumn) a numeric feature. The labels, any
// integers or strings, are mapped to classes 0..K-1 in sorted order
// (numerically if every label is an integer, else bytewise; Labels keeps
// the original labels); the client column's values likewise to the
// natural clients (Client, ClientNames). The test set is o.TestFile (the
// same feature and label columns, in any order; a client column there is
// ignored) or else o.TestFraction of the rows (SplitFraction, from
// o.Seed; per client with a client column).
//
// The file is comma-separated (tab-separated if its name ends in .tsv,
// gzip-compressed if it ends in .gz), with a header row. Every error about
// the file wraps ErrData and names the file, the line and the column: a
// missing label or client column, a ragged row, a value that is not a
// finite number (empty, NA and NaN included) or beyond float32, an empty
// label, one class only, more than 256 classes or 2^31 − 1 rows.
func LoadCSV(o Options) (Split, error) {
	if o.DataFile == "" {
		return Split{}, checks.Invalidf("dataset csv needs --data-file (a CSV file with a header row)")
	}
	label := orString(o.LabelColumn, DefaultLabelColumn)
	if o.ClientColumn == label {
		return Split{}, checks.Invalidf("the client column and the label column are both %q", label)
	}
	cols := csvColumns{label: label, client: o.ClientColumn}
	tr, err := readCSVFile(o.DataFile, cols)
	if err != nil {
		return Split{}, err
	}
	var te *csvTable
	if o.TestFile != "" {
		if o.TestFraction != 0 {
			return Split{}, checks.Invalidf("set only one of test-file and test-fraction")
		}
		cols.features, cols.clientOptional = tr.features, true
		if te, err = readCSVFile(o.TestFile, cols); err != nil {
			return Split{}, err
		}
	}
	var teLabels []string
	if te != nil {
		teLabels = te.labels
	}
	ytr, yte, names, err := classIndex(fmt.Sprintf("%s: column %q", o.DataFile, label), tr.labels, teLabels)
	if err != nil {
		return Split{}, err
	}
	ds := &Dataset{Name: "csv", X: tr.x, Y: ytr, Features: len(tr.features), Classes: len(names), Labels: names}
	if tr.clients != nil {
		ds.Client, ds.ClientNames = clientIndex(tr.clients)
	}
	if te != nil {
		test := &Dataset{Name: "csv", X: te.x, Y: yte, Features: len(tr.features), Classes: len(names), Labels: names}
		return Split{Train: ds, Test: test}, nil
	}
	p, err := o.testFraction()
	if err != nil {
		return Split{}, err
	}
	return splitRows(o.Seed, ds, p)
}

func loadCSV(o Options) (Split, error) { return LoadCSV(o) }

// orString returns s, or def when s is empty.
func orString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// readCSVFile opens path (gunzipping a .gz) and reads it by readCSV.
func readCSVFile(path string, cols csvColumns) (*csvTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrData, err)
	}
	defer f.Close()
	var r io.Reader = f
	name := strings.TrimSuffix(path, ".gz")
	if name != path {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, dataErr(path, "not a gzip file: %v", err)
		}
		defer gz.Close()
		r = gz
	}
	comma := ','
	if strings.HasSuffix(name, ".tsv") {
		comma = '\t'
	}
	return readCSV(path, r, comma, cols)
}

// readCSV reads a CSV table with a header row from r (file names it in
// errors).
func readCSV(file string, r io.Reader, comma rune, cols csvColumns) (*csvTable, error) {
	cr := csv.NewReader(r)
	cr.Comma = comma
	cr.FieldsPerRecord = -1 // ragged rows are reported below, with their line
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, dataErr(file, "empty file: a header row naming the columns is needed")
	}
	if err != nil {
		return nil, dataErr(file, "%v", csvError(err))
	}
	header = slices.Clone(header)
	at := map[string]int{}
	for j, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		header[j] = h
		if h == "" {
			return nil, dataErr(file, "line 1: column %d has no name", j+1)
		}
		if _, dup := at[h]; dup {
			return nil, dataErr(file, "line 1: column %q appears twice", h)
		}
		at[h] = j
	}
	li, ok := at[cols.label]
	if !ok {
		return nil, dataErr(file, "line 1: no label column %q (columns: %s); name it with --label-column", cols.label, strings.Join(header, ", "))
	}
	ci := -1
	if cols.client != "" {
		if ci, ok = at[cols.client]; !ok && !cols.clientOptional {
			return nil, dataErr(file, "line 1: no client column %q (columns: %s)", cols.client, strings.Join(header, ", "))
		}
		if !ok {
			ci = -1
		}
	}
	// fi[k] is the file column of feature k.
	var fi []int
	t := &csvTable{}
	if cols.features == nil {
		for j, h := range header {
			if j != li && j != ci {
				fi = append(fi, j)
				t.features = append(t.features, h)
			}
		}
		if len(fi) == 0 {
			return nil, dataErr(file, "line 1: no feature column (only the label and client columns)")
		}
	} else {
		t.features = cols.features
		used := map[int]bool{li: true, ci: true}
		for _, name := range cols.features {
			j, ok := at[name]
			if !ok {
				return nil, dataErr(file, "line 1: no column %q (a feature column of the training file)", name)
			}
			fi = append(fi, j)
			used[j] = true
		}
		for j, h := range header {
			if !used[j] {
				return nil, dataErr(file, "line 1: column %q is not a column of the training file", h)
			}
		}
	}
	if ci >= 0 {
		t.clients = []string{}
	}
	nf := len(fi)
	seen := map[string]string{}
	for rows := 0; ; rows++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, dataErr(file, "%v", csvError(err))
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return nil, dataErr(file, "line %d has %d fields, the header has %d (a ragged row)", line, len(rec), len(header))
		}
		if rows == maxRows {
			return nil, dataErr(file, "line %d: more than %d rows", line, maxRows)
		}
		if len(t.x)+nf > maxValues {
			return nil, dataErr(file, "line %d: more than %d feature values (%d rows of %d features)", line, maxValues, rows, nf)
		}
		for _, j := range fi {
			v, err := parseFeature(rec[j])
			if err != nil {
				return nil, dataErr(file, "line %d, column %q: %v", line, header[j], err)
			}
			t.x = append(t.x, v)
		}
		l := strings.TrimSpace(rec[li])
		if l == "" {
			return nil, dataErr(file, "line %d, column %q: empty label", line, header[li])
		}
		t.labels = append(t.labels, intern(seen, l))
		if ci >= 0 {
			c := strings.TrimSpace(rec[ci])
			if c == "" {
				return nil, dataErr(file, "line %d, column %q: empty client", line, header[ci])
			}
			t.clients = append(t.clients, intern(seen, c))
		}
	}
	if len(t.labels) == 0 {
		return nil, dataErr(file, "no data rows after the header")
	}
	return t, nil
}

// intern returns the copy of s kept in seen, making one if there is none:
// a label or client value read from a record is a slice of the whole line,
// which it would otherwise keep in memory.
func intern(seen map[string]string, s string) string {
	if c, ok := seen[s]; ok {
		return c
	}
	c := strings.Clone(s)
	seen[c] = c
	return c
}

// parseFeature parses a feature value: a finite number within float32's
// range.
func parseFeature(s string) (float32, error) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case s == "":
		return 0, errors.New("empty value (a missing value): every feature must be a number")
	case err != nil && !errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%q is not a number", s)
	case math.IsNaN(v) || math.IsInf(v, 0) || errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%q is not a finite number", s)
	case math.Abs(v) > math.MaxFloat32:
		return 0, fmt.Errorf("%s is beyond float32's range", s)
	}
	return float32(v), nil
}

// csvError renders an encoding/csv error as "line L, column C: what".
func csvError(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("line %d, character %d: %v", pe.Line, pe.Column, pe.Err)
	}
	return err.Error()
}
