package round

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/learning/data"
)

// DataSource are the settings of the datasets users bring (csv, npz, leaf)
// and of synthetic-fedprox, under the flag names of `shufflefl run`. Every
// key is omitted from config.yaml when unset, so the resolved settings of
// the other datasets are written as before.
type DataSource struct {
	// DataFile is the file of dataset csv or npz; TestFile its test set
	// (same format); TestFraction the fraction of DataFile's rows held out
	// instead (0: 0.2, data.DefaultTestFraction; npz archives with x_test
	// need neither).
	DataFile     string  `yaml:"data-file,omitempty"`
	TestFile     string  `yaml:"test-file,omitempty"`
	TestFraction float64 `yaml:"test-fraction,omitempty"`
	// LabelColumn and ClientColumn name the CSV columns of the labels
	// ("": "label") and of the natural clients ("": none).
	LabelColumn  string `yaml:"label-column,omitempty"`
	ClientColumn string `yaml:"client-column,omitempty"`
	// FedproxAlpha, FedproxBeta (nil: 1) and FedproxDevices (0: 30) are
	// the parameters of synthetic-fedprox (data.SyntheticFedProx).
	FedproxAlpha   *float64 `yaml:"fedprox-alpha,omitempty"`
	FedproxBeta    *float64 `yaml:"fedprox-beta,omitempty"`
	FedproxDevices int      `yaml:"fedprox-devices,omitempty"`
}

// NaturalPartition is the partition name of a dataset's own clients: a
// CSV client column, an npz client array, LEAF's users, FedProx's devices.
const NaturalPartition = "natural"

// DataOptions returns the data.Options that load the run's dataset: the
// data directory and seed, and the DataSource settings. Every driver
// loads with them, so simulation, deployment and workers read the same
// set; for the built-in datasets they are data.Options{DataDir, Seed}, as
// before.
func (c Config) DataOptions() data.Options {
	d := c.DataSource
	return data.Options{DataDir: c.DataDir, Seed: c.Seed, UserData: data.UserData{
		DataFile: d.DataFile, TestFile: d.TestFile, TestFraction: d.TestFraction,
		LabelColumn: d.LabelColumn, ClientColumn: d.ClientColumn,
		FedproxAlpha: d.FedproxAlpha, FedproxBeta: d.FedproxBeta, FedproxDevices: d.FedproxDevices,
	}}
}

// LoadData loads the run's dataset: data.Load(c.Dataset, c.DataOptions()).
func (c Config) LoadData() (data.Split, error) { return data.Load(c.Dataset, c.DataOptions()) }

// RegisterDataFlags binds the DataSource settings to flags of fs, named by
// their YAML keys (`shufflefl run`'s data flags beside --dataset and
// --data-dir).
func (c *Config) RegisterDataFlags(fs *flag.FlagSet) {
	d := &c.DataSource
	fs.StringVar(&d.DataFile, "data-file", d.DataFile, "the `file` of --dataset csv (a header row; numeric feature columns, a label column) or npz (numpy.savez's arrays x, y, optional client, x_test, y_test)")
	fs.StringVar(&d.TestFile, "test-file", d.TestFile, "the test set of --dataset csv or npz, a `file` in the same format (default: --test-fraction of the rows)")
	fs.Float64Var(&d.TestFraction, "test-fraction", d.TestFraction, "fraction of --data-file's rows held out as the test set, drawn from --seed (per client with a client column; 0 means 0.2)")
	fs.StringVar(&d.LabelColumn, "label-column", d.LabelColumn, "the CSV label column `name` (default label); labels, integers or strings, become classes 0..K-1 in sorted order")
	fs.StringVar(&d.ClientColumn, "client-column", d.ClientColumn, "a CSV column `name` whose values are the clients: the natural partition (--partition natural, --clients set from the data)")
	fs.Func("fedprox-alpha", "`alpha` of --dataset synthetic-fedprox, FedProx's Synthetic(alpha, beta): how much the devices' models differ (default 1)", floatPtr(&d.FedproxAlpha))
	fs.Func("fedprox-beta", "`beta` of --dataset synthetic-fedprox: how much the devices' data differ (default 1)", floatPtr(&d.FedproxBeta))
	fs.IntVar(&d.FedproxDevices, "fedprox-devices", d.FedproxDevices, "devices of --dataset synthetic-fedprox, one client each (0 means the paper's 30)")
}

// DataFlagNames are the flags RegisterDataFlags defines.
var DataFlagNames = []string{"data-file", "test-file", "test-fraction", "label-column", "client-column", "fedprox-alpha", "fedprox-beta", "fedprox-devices"}

// floatPtr parses a flag value into a new float64 at *p.
func floatPtr(p **float64) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		*p = &v
		return nil
	}
}

// validateData checks the DataSource settings against the dataset: each
// applies to its datasets only (never silently ignored), and the natural
// partition needs a dataset that can have one.
func (c *Config) validateData() error {
	d := c.DataSource
	file := c.Dataset == "csv" || c.Dataset == "npz"
	for _, s := range []struct {
		set  bool
		flag string
		ok   bool
		for_ string
	}{
		{d.DataFile != "", "data-file", file, "csv and npz"},
		{d.TestFile != "", "test-file", file, "csv and npz"},
		{d.TestFraction != 0, "test-fraction", file, "csv and npz"},
		{d.LabelColumn != "", "label-column", c.Dataset == "csv", "csv"},
		{d.ClientColumn != "", "client-column", c.Dataset == "csv", "csv"},
		{d.FedproxAlpha != nil, "fedprox-alpha", c.Dataset == "synthetic-fedprox", "synthetic-fedprox"},
		{d.FedproxBeta != nil, "fedprox-beta", c.Dataset == "synthetic-fedprox", "synthetic-fedprox"},
		{d.FedproxDevices != 0, "fedprox-devices", c.Dataset == "synthetic-fedprox", "synthetic-fedprox"},
		{c.DataDir != "", "data-dir", !file, "the datasets read from a directory (csv and npz take --data-file)"},
	} {
		if s.set && !s.ok {
			return checks.Invalidf("%s applies only to dataset %s, not %s", s.flag, s.for_, c.Dataset)
		}
	}
	if file && d.DataFile == "" {
		return checks.Invalidf("dataset %s needs --data-file", c.Dataset)
	}
	if c.Dataset == "leaf" && c.DataDir == "" {
		return checks.Invalidf("dataset leaf needs --data-dir (a LEAF data directory with train/ and test/)")
	}
	if d.TestFraction != 0 && !(d.TestFraction > 0 && d.TestFraction < 1) {
		return checks.Invalidf("test-fraction must be in (0, 1), got %v", d.TestFraction)
	}
	if d.TestFile != "" && d.TestFraction != 0 {
		return checks.Invalidf("set only one of test-file and test-fraction")
	}
	for _, p := range []struct {
		name string
		v    *float64
	}{{"fedprox-alpha", d.FedproxAlpha}, {"fedprox-beta", d.FedproxBeta}} {
		if p.v != nil {
			if err := checks.NonNegative(p.name, *p.v); err != nil {
				return err
			}
		}
	}
	if err := checks.IntAtLeast("fedprox-devices", d.FedproxDevices, 0); err != nil {
		return err
	}
	if c.Partition == NaturalPartition {
		if !data.HasNaturalPartition(c.Dataset) {
			return checks.Invalidf("partition natural needs a dataset with its own clients (%s), not %s", naturalList(), c.Dataset)
		}
		if c.Dataset == "csv" && d.ClientColumn == "" {
			return checks.Invalidf("partition natural of dataset csv needs --client-column (the column naming each row's client)")
		}
		if c.SamplesPerClient != 0 {
			return checks.Invalidf("samples-per-client %d does not apply to partition natural (every client holds its own rows)", c.SamplesPerClient)
		}
	}
	return nil
}

func naturalList() string {
	return "csv with --client-column, npz with a client array, leaf, synthetic-fedprox"
}

// ResolveData completes the settings of a run on a dataset with a natural
// partition before the per-protocol defaults apply; given reports the keys
// the user gave, and the returned function is given extended with the
// keys ResolveData decided (pass it to ApplyDefaults, so no protocol
// default overrides them). It records the defaults of synthetic-fedprox's
// parameters and of csv's test fraction, so that config.yaml states them.
//
// A dataset with natural clients (data.NaturalClients > 0; the file is
// read to count them) takes --partition natural unless the user gave
// another partition, which then splits the pooled rows as for any
// dataset. Under the natural partition the population is the data's:
// without --clients, clients = K − holdout-clients for K natural clients;
// a --clients that disagrees (clients + holdout-clients != K) is refused,
// since the data cannot have another number of clients.
func ResolveData(c *Config, given func(string) bool) (func(string) bool, error) {
	if !data.HasNaturalPartition(c.Dataset) {
		return given, nil
	}
	d := &c.DataSource
	if c.Dataset == "synthetic-fedprox" {
		one := data.DefaultFedprox
		if d.FedproxAlpha == nil {
			d.FedproxAlpha = &one
		}
		if d.FedproxBeta == nil {
			b := one
			d.FedproxBeta = &b
		}
		if d.FedproxDevices == 0 {
			d.FedproxDevices = data.DefaultFedproxDevices
		}
	}
	if c.Dataset == "csv" && d.TestFile == "" && d.TestFraction == 0 {
		d.TestFraction = data.DefaultTestFraction
	}
	if given("partition") && c.Partition != NaturalPartition {
		return given, nil
	}
	if c.Dataset == "csv" && d.ClientColumn == "" {
		if given("partition") {
			return nil, checks.Invalidf("partition natural of dataset csv needs --client-column (the column naming each row's client)")
		}
		return given, nil
	}
	if err := c.validateData(); err != nil {
		return nil, err
	}
	k, err := data.NaturalClients(c.Dataset, c.DataOptions())
	if err != nil {
		return nil, err
	}
	if k == 0 {
		if given("partition") {
			return nil, checks.Invalidf("partition natural: %s has no natural clients (%s)", c.Dataset, naturalList())
		}
		return given, nil
	}
	c.Partition = NaturalPartition
	if given("clients") {
		if c.Clients+c.HoldoutClients != k {
			return nil, checks.Invalidf("%s has %d natural clients but --clients %d and --holdout-clients %d make %d: leave out --clients (it is then %d), or give --partition iid or dirichlet to split the pooled rows instead",
				describeData(*c), k, c.Clients, c.HoldoutClients, c.Clients+c.HoldoutClients, k-c.HoldoutClients)
		}
	} else {
		if k-c.HoldoutClients < 1 {
			return nil, checks.Invalidf("%s has %d natural clients: holdout-clients %d leaves none to train", describeData(*c), k, c.HoldoutClients)
		}
		c.Clients = k - c.HoldoutClients
	}
	decided := []string{"partition", "clients"}
	if !given("samples-per-client") {
		decided = append(decided, "samples-per-client")
	}
	return func(key string) bool { return slices.Contains(decided, key) || given(key) }, nil
}

// describeData names the run's data for messages: the dataset and its
// file or directory.
func describeData(c Config) string {
	switch {
	case c.DataFile != "":
		return fmt.Sprintf("dataset %s (%s)", c.Dataset, c.DataFile)
	case c.DataDir != "":
		return fmt.Sprintf("dataset %s (%s)", c.Dataset, c.DataDir)
	}
	return "dataset " + c.Dataset
}

// naturalShards returns the shards of the natural partition: client c
// holds the rows of ds's natural client c, in row order. The population
// must be the data's: clients + holdout == K natural clients. With
// validation clients, holdout of the K clients, drawn uniformly from r,
// are moved to the end (the order of the others is kept), so the
// validation clients are a random sample of the data's clients rather
// than the last ones in sorted order.
func naturalShards(r *rand.Rand, ds *data.Dataset, dataset string, clients, holdout int) ([][]int, error) {
	if ds.Client == nil {
		return nil, checks.Invalidf("partition natural: dataset %s has no natural clients (%s)", dataset, naturalList())
	}
	k := len(ds.ClientNames)
	if clients+holdout != k {
		return nil, checks.Invalidf("partition natural: dataset %s has %d natural clients, but the run has %d clients and %d validation clients", dataset, k, clients, holdout)
	}
	rows := make([][]int, k)
	for i, c := range ds.Client {
		rows[c] = append(rows[c], i)
	}
	order := make([]int, 0, k)
	if holdout > 0 {
		val := make([]bool, k)
		for _, c := range r.Perm(k)[:holdout] {
			val[c] = true
		}
		for pass := range 2 {
			for c := range k {
				if val[c] == (pass == 1) {
					order = append(order, c)
				}
			}
		}
	} else {
		for c := range k {
			order = append(order, c)
		}
	}
	shards := make([][]int, k)
	for i, c := range order {
		if len(rows[c]) == 0 {
			return nil, checks.Invalidf("partition natural: client %q of dataset %s has no training rows", ds.ClientNames[c], dataset)
		}
		shards[i] = rows[c]
	}
	return shards, nil
}

// Settings returns the DataSource settings that are set, keyed by their
// flag names, as strings: they decide the data, hence every client's
// shard (deploy.ShardSettings includes them). Unset settings are left
// out, so the settings of the built-in datasets are unchanged.
func (d DataSource) Settings() map[string]string {
	m := map[string]string{}
	add := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	add("data-file", d.DataFile)
	add("test-file", d.TestFile)
	add("label-column", d.LabelColumn)
	add("client-column", d.ClientColumn)
	if d.TestFraction != 0 {
		add("test-fraction", f(d.TestFraction))
	}
	if d.FedproxAlpha != nil {
		add("fedprox-alpha", f(*d.FedproxAlpha))
	}
	if d.FedproxBeta != nil {
		add("fedprox-beta", f(*d.FedproxBeta))
	}
	if d.FedproxDevices != 0 {
		add("fedprox-devices", strconv.Itoa(d.FedproxDevices))
	}
	return m
}
