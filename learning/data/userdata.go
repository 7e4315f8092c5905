package data

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
)

// UserData are the options of the datasets users bring: "csv" and "npz"
// (a file), "leaf" (a directory, Options.DataDir) and the generated
// "synthetic-fedprox". The zero value gives their defaults.
type UserData struct {
	// DataFile is the file of "csv" and "npz".
	DataFile string
	// TestFile is the held-out set of "csv" or "npz", in the same format.
	// Without it, TestFraction of the rows are held out.
	TestFile string
	// TestFraction is the fraction of the rows of DataFile held out as the
	// test set when there is no TestFile (and, for npz, no x_test array);
	// 0 means DefaultTestFraction. See SplitFraction for how rows are
	// chosen.
	TestFraction float64
	// LabelColumn names the CSV column of the labels ("" means "label");
	// ClientColumn, if set, names the CSV column whose values are the
	// natural clients.
	LabelColumn, ClientColumn string
	// FedproxAlpha and FedproxBeta are the alpha and beta of FedProx's
	// Synthetic(alpha, beta) (nil means DefaultFedprox), FedproxDevices its
	// number of devices (0 means DefaultFedproxDevices).
	FedproxAlpha, FedproxBeta *float64
	FedproxDevices            int
}

// Defaults of UserData.
const (
	DefaultLabelColumn    = "label"
	DefaultTestFraction   = 0.2
	DefaultFedprox        = 1.0
	DefaultFedproxDevices = 30
)

// UserDataNames are the datasets read from the users' files or generated
// with a natural partition: their rows carry Dataset.Client.
var UserDataNames = []string{"csv", "leaf", "npz", "synthetic-fedprox"}

func init() {
	registry["csv"] = loader{
		"a CSV file (--data-file): numeric feature columns, a label column (--label-column, default label; any integers or strings, mapped to classes in sorted order), an optional client column (--client-column) giving the natural partition",
		loadCSV, false}
	registry["npz"] = loader{
		"a NumPy .npz archive (--data-file) as numpy.savez writes it: arrays x (rows of features) and y (integer labels), optional client (natural partition), x_test and y_test",
		loadNPZ, false}
	registry["leaf"] = loader{
		"a LEAF data directory (--data-dir) with train/ and test/ *.json files (FEMNIST and other numeric sets; one client per user)",
		loadLEAF, false}
	registry["synthetic-fedprox"] = loader{
		"FedProx's Synthetic(alpha, beta) of Li et al. (MLSys 2020): 60 features, 10 classes, --fedprox-devices devices (default 30) with power-law sizes, one client per device",
		loadFedprox, false}
}

// HasNaturalPartition reports whether the named dataset can carry a
// natural partition (its rows then have Dataset.Client): synthetic-fedprox
// and leaf always, csv with a client column, npz with a client array.
func HasNaturalPartition(name string) bool { return slices.Contains(UserDataNames, name) }

// NaturalClients returns the number of natural clients of the named
// dataset's training set (0 if it has no natural partition), loading the
// set if it must (the client column of a CSV file, the client array of an
// npz archive, the users of LEAF files); synthetic-fedprox's is
// FedproxDevices. Errors are Load's. The set it loads is handed over to
// the next Load of the same dataset with the same options if its files
// have not changed (same size and modification time), which returns it
// without reading them again; any other Load reads the files.
func NaturalClients(name string, o Options) (int, error) {
	if !HasNaturalPartition(name) {
		return 0, nil
	}
	if name == "synthetic-fedprox" {
		d, err := orDefault("fedprox devices", o.FedproxDevices, DefaultFedproxDevices)
		return d, err
	}
	s, err := Load(name, o)
	if err != nil {
		return 0, err
	}
	keep(name, o, s) // for the Load that follows, so the file is read once
	return len(s.Train.ClientNames), nil
}

// Caps on the sets read from users' files, variables so that tests can
// lower them.
var (
	// maxRows is the most rows a file may hold (2^31 − 1): row indices
	// are ints everywhere, and client indices int32.
	maxRows = 1<<31 - 1
	// maxValues is the most feature values a set may hold in memory
	// (4 GiB of float32).
	maxValues = 1 << 30
)

// dataErr returns an ErrData error about file: "data file error: FILE: ...".
func dataErr(file, format string, a ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrData, file, fmt.Sprintf(format, a...))
}

// valueIndex maps the distinct values of a labels or clients column to
// 0..K-1 in sorted order: numerically when every value is an integer
// (strconv.ParseInt), so "2" < "10"; otherwise bytewise as strings. It
// returns the index of every value and the sorted distinct values.
func valueIndex(values ...[]string) (map[string]int, []string) {
	seen := map[string]bool{}
	var distinct []string
	for _, vs := range values {
		for _, v := range vs {
			if !seen[v] {
				seen[v] = true
				distinct = append(distinct, v)
			}
		}
	}
	numeric := true
	nums := make(map[string]int64, len(distinct))
	for _, v := range distinct {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			numeric = false
			break
		}
		nums[v] = n
	}
	if numeric {
		slices.SortFunc(distinct, func(a, b string) int { return cmp.Compare(nums[a], nums[b]) })
	} else {
		slices.Sort(distinct)
	}
	idx := make(map[string]int, len(distinct))
	for i, v := range distinct {
		idx[v] = i
	}
	return idx, distinct
}

// classIndex maps the labels of a training and a test set to classes
// (valueIndex over both, so a class seen only in the test set is still a
// class), refusing fewer than 2 or more than 256 classes. what names the
// labels' source for the errors.
func classIndex(what string, train, test []string) ([]uint8, []uint8, []string, error) {
	idx, names := valueIndex(train, test)
	switch {
	case len(names) < 2:
		return nil, nil, nil, fmt.Errorf("%w: %s: one class only (%q): classification needs at least 2", ErrData, what, names)
	case len(names) > 256:
		return nil, nil, nil, fmt.Errorf("%w: %s: %d distinct labels: at most 256 classes are supported", ErrData, what, len(names))
	}
	conv := func(vs []string) []uint8 {
		out := make([]uint8, len(vs))
		for i, v := range vs {
			out[i] = uint8(idx[v])
		}
		return out
	}
	return conv(train), conv(test), names, nil
}

// clientIndex maps the client identifiers of the rows to client indices in
// valueIndex's sorted order.
func clientIndex(values []string) ([]int32, []string) {
	idx, names := valueIndex(values)
	out := make([]int32, len(values))
	for i, v := range values {
		out[i] = int32(idx[v])
	}
	return out, names
}

// setSplit labels the stream of SplitFraction (a set of the stream space
// of the synthetic sets, see synthetic.go).
const setSplit uint64 = 3

// SplitFraction chooses the rows of a set of n rows held out as its test
// set, a fraction p in (0, 1) of them, from the stream
// rng.Stream(seed, labelData, setSplit). Without clients (clients nil) it
// holds out floor(p·n) rows, at least 1 and at most n−1, drawn uniformly.
// With clients (the client index of every row, K clients) it splits every
// client's rows alike, as LEAF and FedProx split each user's data: client c
// with n_c rows holds out min(floor(p·n_c), n_c − 1) of them, drawn
// uniformly, so every client keeps at least one training row. It returns
// the training and test rows, each in increasing order. An empty test set
// (every client too small) is an error.
func SplitFraction(seed uint64, n int, p float64, clients []int32, k int) (train, test []int, err error) {
	if !(p > 0 && p < 1) {
		return nil, nil, checks.Invalidf("test-fraction must be in (0, 1), got %v", p)
	}
	if n < 2 {
		return nil, nil, checks.Invalidf("a test fraction needs at least 2 rows, got %d", n)
	}
	r := rng.Stream(seed, labelData, setSplit)
	held := make([]bool, n)
	if clients == nil {
		holdRows(r, iota(n), max(1, min(int(p*float64(n)), n-1)), held)
	} else {
		byClient := make([][]int, k)
		for i, c := range clients {
			byClient[c] = append(byClient[c], i)
		}
		for _, rows := range byClient {
			holdRows(r, rows, min(int(p*float64(len(rows))), len(rows)-1), held)
		}
	}
	for i, h := range held {
		if h {
			test = append(test, i)
		} else {
			train = append(train, i)
		}
	}
	if len(test) == 0 {
		return nil, nil, checks.Invalidf("test-fraction %v holds out no row (every client has fewer than %.0f rows): raise it or give a test file", p, 1/p)
	}
	return train, test, nil
}

// holdRows marks m of rows, chosen uniformly (a partial Fisher–Yates
// shuffle of rows from r), in held.
func holdRows(r *rand.Rand, rows []int, m int, held []bool) {
	for i := range max(m, 0) {
		j := i + r.IntN(len(rows)-i)
		rows[i], rows[j] = rows[j], rows[i]
		held[rows[i]] = true
	}
}

func iota(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// testFraction returns o's test fraction with its default, checked.
func (o UserData) testFraction() (float64, error) {
	p := o.TestFraction
	if p == 0 {
		p = DefaultTestFraction
	}
	if !(p > 0 && p < 1) {
		return 0, checks.Invalidf("test-fraction must be in (0, 1), got %v", o.TestFraction)
	}
	return p, nil
}

// splitRows splits ds (whose Client, if set, is kept with the rows) into
// a training and a test set by SplitFraction.
func splitRows(seed uint64, ds *Dataset, p float64) (Split, error) {
	train, test, err := SplitFraction(seed, ds.Len(), p, ds.Client, len(ds.ClientNames))
	if err != nil {
		return Split{}, fmt.Errorf("%s: %w", ds.Name, err)
	}
	tr, te := ds.Subset(train), ds.Subset(test)
	te.Client, te.ClientNames = nil, nil
	return Split{Train: tr, Test: te}, nil
}
