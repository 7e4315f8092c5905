package data

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/shufflefl/shufflefl/checks"
)

// leafFile is the JSON of a LEAF data file (Caldas et al., "LEAF: A
// Benchmark for Federated Settings", 2018; the files of its
// data/*/data/train and test directories): the users, their sample
// counts, and each user's samples x and labels y.
type leafFile struct {
	Users      []string `json:"users"`
	NumSamples []int    `json:"num_samples"`
	UserData   map[string]struct {
		X json.RawMessage `json:"x"`
		Y json.RawMessage `json:"y"`
	} `json:"user_data"`
}

// leafSet is the samples of the files of one LEAF directory.
type leafSet struct {
	x      []float32
	labels []string
	users  []string // the user of every row
	f      int
}

// LoadLEAF reads the "leaf" dataset of o (see Load): the LEAF data
// directory o.DataDir, whose train/ and test/ subdirectories hold *.json
// files as LEAF's scripts write them ({"users": [...], "num_samples":
// [...], "user_data": {user: {"x": [...], "y": [...]}}}, e.g. FEMNIST).
// The natural partition is LEAF's: every user of the training files is a
// client (Client, ClientNames, users in sorted order: numerically if every
// user id is an integer, else bytewise); the test files'
// samples are pooled into the test set. Files are read in name order.
//
// Every sample's x must be a list of numbers (or one number), the same
// length for all; y an integer or a string, mapped to classes 0..K-1 in
// sorted order (numerically if every label is an integer; FedProx's JSON
// writes integer labels as 3.0, taken as 3). String x, as in LEAF's
// Shakespeare and Sent140 (characters and words), are refused: shufflefl's
// models take numeric features, and an encoding of text is the user's to
// choose (write it as numbers). A 784-feature set (FEMNIST) is taken as
// 28×28 images. Errors about the files wrap ErrData and name the file,
// the user and the sample.
func LoadLEAF(o Options) (Split, error) {
	if o.DataDir == "" {
		return Split{}, checks.Invalidf("dataset leaf needs --data-dir: a LEAF data directory with train/ and test/ subdirectories of .json files")
	}
	tr, err := readLEAFDir(filepath.Join(o.DataDir, "train"), 0)
	if err != nil {
		return Split{}, err
	}
	te, err := readLEAFDir(filepath.Join(o.DataDir, "test"), tr.f)
	if err != nil {
		return Split{}, err
	}
	ytr, yte, names, err := classIndex(o.DataDir+": y", tr.labels, te.labels)
	if err != nil {
		return Split{}, err
	}
	ds := &Dataset{Name: "leaf", X: tr.x, Y: ytr, Features: tr.f, Classes: len(names), Labels: names}
	ds.Client, ds.ClientNames = clientIndex(tr.users)
	test := &Dataset{Name: "leaf", X: te.x, Y: yte, Features: te.f, Classes: len(names), Labels: names}
	if tr.f == 28*28 {
		ds.Rows, ds.Cols, test.Rows, test.Cols = 28, 28, 28, 28
	}
	return Split{Train: ds, Test: test}, nil
}

func loadLEAF(o Options) (Split, error) { return LoadLEAF(o) }

// readLEAFDir reads every *.json file of dir; features is the expected
// feature count (0: set by the first sample).
func readLEAFDir(dir string, features int) (*leafSet, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrData, dir, err)
	}
	if len(files) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrData, err)
		}
		return nil, dataErr(dir, "no .json files (a LEAF data directory has train/*.json and test/*.json)")
	}
	slices.Sort(files)
	s := &leafSet{f: features}
	seen := map[string]string{}
	for _, path := range files {
		if err := s.readFile(path, seen); err != nil {
			return nil, err
		}
	}
	if len(s.labels) == 0 {
		return nil, dataErr(dir, "no samples")
	}
	return s, nil
}

// readFile appends the samples of one LEAF file; seen maps every user
// read so far to its file, so a user in two files is refused.
func (s *leafSet) readFile(path string, seen map[string]string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrData, err)
	}
	var lf leafFile
	if err := json.Unmarshal(b, &lf); err != nil {
		return dataErr(path, "not LEAF JSON: %v", err)
	}
	if len(lf.NumSamples) != len(lf.Users) {
		return dataErr(path, "%d users but %d num_samples", len(lf.Users), len(lf.NumSamples))
	}
	for i, u := range lf.Users {
		if f, dup := seen[u]; dup {
			return dataErr(path, "user %q is also in %s", u, f)
		}
		seen[u] = path
		ud, ok := lf.UserData[u]
		if !ok {
			return dataErr(path, "user %q has no user_data", u)
		}
		xs, err := leafRows(ud.X)
		if err != nil {
			return dataErr(path, "user %q: %v", u, err)
		}
		ys, err := leafLabels(ud.Y)
		if err != nil {
			return dataErr(path, "user %q: %v", u, err)
		}
		if len(xs) != len(ys) || len(xs) != lf.NumSamples[i] {
			return dataErr(path, "user %q: %d x, %d y and num_samples %d disagree", u, len(xs), len(ys), lf.NumSamples[i])
		}
		if len(s.labels)+len(xs) > maxRows {
			return dataErr(path, "user %q: more than %d samples in all", u, maxRows)
		}
		for j, row := range xs {
			if s.f == 0 {
				s.f = len(row)
				if s.f == 0 {
					return dataErr(path, "user %q, sample %d: x has no features", u, j)
				}
			}
			if len(row) != s.f {
				return dataErr(path, "user %q, sample %d: x has %d features, the first sample %d", u, j, len(row), s.f)
			}
			if len(s.x)+s.f > maxValues {
				return dataErr(path, "user %q: more than %d feature values in all", u, maxValues)
			}
			for k, v := range row {
				if math.Abs(v) > math.MaxFloat32 {
					return dataErr(path, "user %q, sample %d, feature %d: %v is beyond float32's range", u, j, k, v)
				}
				s.x = append(s.x, float32(v))
			}
			s.labels = append(s.labels, ys[j])
			s.users = append(s.users, u)
		}
	}
	return nil
}

// leafRows decodes a user's x: a list of samples, each a list of numbers
// or a single number. String samples are refused.
func leafRows(raw json.RawMessage) ([][]float64, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("x is not a list of samples: %v", err)
	}
	rows := make([][]float64, len(items))
	for j, it := range items {
		it = bytes.TrimSpace(it)
		if len(it) > 0 && (it[0] == '"' || bytes.Contains(it, []byte{'"'})) {
			return nil, fmt.Errorf("sample %d: x holds text (as in LEAF's Shakespeare and Sent140): only numeric x are supported; encode the text as numbers first", j)
		}
		if len(it) > 0 && it[0] != '[' {
			var v float64
			if err := json.Unmarshal(it, &v); err != nil {
				return nil, fmt.Errorf("sample %d: x is not a number or a list of numbers: %s", j, short(it))
			}
			rows[j] = []float64{v}
			continue
		}
		if err := json.Unmarshal(it, &rows[j]); err != nil {
			return nil, fmt.Errorf("sample %d: x is not a list of numbers (nested lists must be flattened): %s", j, short(it))
		}
	}
	return rows, nil
}

// leafLabels decodes a user's y: integers (3 or 3.0) or strings.
func leafLabels(raw json.RawMessage) ([]string, error) {
	var items []any
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("y is not a list of labels: %v", err)
	}
	out := make([]string, len(items))
	for j, it := range items {
		switch v := it.(type) {
		case float64:
			if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
				return nil, fmt.Errorf("sample %d: label %v is not an integer", j, v)
			}
			out[j] = strconv.FormatInt(int64(v), 10)
		case string:
			out[j] = v
		default:
			return nil, fmt.Errorf("sample %d: label %v is neither an integer nor a string", j, it)
		}
	}
	return out, nil
}

// short abbreviates a JSON value for a message.
func short(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}
