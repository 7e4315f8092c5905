package round

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/data"
)

// naturalSet has 5 clients of 1..5 rows, rows grouped by client in
// reverse order.
func naturalSet() *data.Dataset {
	ds := &data.Dataset{Name: "t", Features: 1, Classes: 2, ClientNames: []string{"a", "b", "c", "d", "e"}}
	for c := 4; c >= 0; c-- {
		for range c + 1 {
			ds.X = append(ds.X, float32(c))
			ds.Y = append(ds.Y, uint8(c%2))
			ds.Client = append(ds.Client, int32(c))
		}
	}
	return ds
}

func TestNaturalShards(t *testing.T) {
	ds := naturalSet()
	shards, err := naturalShards(rng.Stream(1, rng.LabelPartition), ds, "t", 5, 0)
	if err != nil {
		t.Fatal(err)
	}
	for c, sh := range shards {
		if len(sh) != c+1 {
			t.Fatalf("client %d holds %d rows, want %d", c, len(sh), c+1)
		}
		for _, i := range sh {
			if ds.Client[i] != int32(c) {
				t.Fatalf("client %d holds row %d of client %d", c, i, ds.Client[i])
			}
		}
	}
	// Two validation clients: drawn at random, moved to the end, the others
	// in their order; reproducible from the stream.
	val, err := naturalShards(rng.Stream(1, rng.LabelPartition), ds, "t", 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := naturalShards(rng.Stream(1, rng.LabelPartition), ds, "t", 3, 2)
	if !reflect.DeepEqual(val, again) {
		t.Fatal("validation clients are not reproducible")
	}
	owner := func(sh []int) int32 { return ds.Client[sh[0]] }
	if owner(val[0]) > owner(val[1]) || owner(val[1]) > owner(val[2]) || owner(val[3]) > owner(val[4]) {
		t.Fatalf("order not kept: clients %d %d %d | %d %d", owner(val[0]), owner(val[1]), owner(val[2]), owner(val[3]), owner(val[4]))
	}
	for _, bad := range []struct{ clients, holdout int }{{4, 0}, {6, 0}, {4, 2}} {
		if _, err := naturalShards(rng.Stream(1, rng.LabelPartition), ds, "t", bad.clients, bad.holdout); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%d + %d clients for 5 natural ones: %v", bad.clients, bad.holdout, err)
		}
	}
	ds.Client, ds.ClientNames = nil, nil
	if _, err := naturalShards(rng.Stream(1, rng.LabelPartition), ds, "t", 5, 0); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("a set without clients: %v", err)
	}
}

func TestPartitionDataNatural(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dataset, cfg.Partition, cfg.Clients = "t", NaturalPartition, 5
	ds := naturalSet()
	p, err := PartitionData(cfg, data.Split{Train: ds, Test: ds})
	if err != nil {
		t.Fatal(err)
	}
	if p.Clients() != 5 || len(p.Shard(4)) != 5 {
		t.Fatalf("%d clients, client 4 holds %d rows", p.Clients(), len(p.Shard(4)))
	}
}

// writeCSV writes a CSV of k clients with n rows each.
func writeCSV(t *testing.T, k, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("user,x,label\n")
	for c := range k {
		for i := range n {
			b.WriteString(strings.Join([]string{"u" + string(rune('a'+c)), "1." + string(rune('0'+i%10)), []string{"no", "yes"}[i%2]}, ",") + "\n")
		}
	}
	p := filepath.Join(t.TempDir(), "d.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResolveData(t *testing.T) {
	f := writeCSV(t, 4, 6)
	base := DefaultConfig()
	base.Dataset, base.DataFile, base.ClientColumn = "csv", f, "user"
	keys := func(ks ...string) func(string) bool { return func(k string) bool { return slices.Contains(ks, k) } }

	c := base
	given, err := ResolveData(&c, keys())
	if err != nil {
		t.Fatal(err)
	}
	if c.Partition != NaturalPartition || c.Clients != 4 || c.TestFraction != data.DefaultTestFraction || !given("clients") || !given("samples-per-client") {
		t.Fatalf("partition %q, clients %d, test-fraction %v, clients given %v", c.Partition, c.Clients, c.TestFraction, given("clients"))
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}

	c = base
	c.HoldoutClients = 1
	if _, err := ResolveData(&c, keys("holdout-clients")); err != nil || c.Clients != 3 {
		t.Fatalf("with a validation client: clients %d, %v", c.Clients, err)
	}

	c = base
	c.Clients = 5
	if _, err := ResolveData(&c, keys("clients")); !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), "4 natural clients") {
		t.Fatalf("--clients 5 for 4 natural clients: %v", err)
	}
	c.Clients = 4
	if _, err := ResolveData(&c, keys("clients")); err != nil {
		t.Fatalf("--clients 4 for 4 natural clients: %v", err)
	}

	// Another partition given: the pooled rows, --clients untouched.
	c = base
	c.Partition, c.Clients = "iid", 3
	if _, err := ResolveData(&c, keys("partition", "clients")); err != nil || c.Partition != "iid" || c.Clients != 3 {
		t.Fatalf("partition iid: %q, %d clients, %v", c.Partition, c.Clients, err)
	}

	// No client column: no natural partition, unless asked for.
	c = base
	c.ClientColumn = ""
	if _, err := ResolveData(&c, keys()); err != nil || c.Partition != "iid" {
		t.Fatalf("no client column: %q, %v", c.Partition, err)
	}
	c.Partition = NaturalPartition
	if _, err := ResolveData(&c, keys("partition")); !errors.Is(err, checks.ErrInvalid) {
		t.Fatalf("partition natural without a client column: %v", err)
	}

	// A bad file is the file's error.
	c = base
	c.DataFile = filepath.Join(t.TempDir(), "absent.csv")
	if _, err := ResolveData(&c, keys()); !errors.Is(err, data.ErrData) {
		t.Fatalf("a missing file: %v", err)
	}

	// synthetic-fedprox records its defaults.
	c = DefaultConfig()
	c.Dataset = "synthetic-fedprox"
	if _, err := ResolveData(&c, keys()); err != nil || *c.FedproxAlpha != 1 || *c.FedproxBeta != 1 || c.FedproxDevices != 30 || c.Clients != 30 {
		t.Fatalf("fedprox: %v %v %d devices, %d clients, %v", c.FedproxAlpha, c.FedproxBeta, c.FedproxDevices, c.Clients, err)
	}

	// Built-in datasets are left alone.
	c = DefaultConfig()
	before := c
	if _, err := ResolveData(&c, keys()); err != nil || !reflect.DeepEqual(c, before) {
		t.Fatalf("fashion-mnist changed: %v", err)
	}
}

func TestValidateData(t *testing.T) {
	alpha := 0.5
	neg := -1.0
	for _, tc := range []struct {
		name string
		set  func(*Config)
		ok   bool
	}{
		{"csv", func(c *Config) { c.Dataset, c.DataFile = "csv", "f.csv" }, true},
		{"csv without file", func(c *Config) { c.Dataset = "csv" }, false},
		{"data-file with fashion-mnist", func(c *Config) { c.DataFile = "f.csv" }, false},
		{"data-dir with csv", func(c *Config) { c.Dataset, c.DataFile, c.DataDir = "csv", "f.csv", "d" }, false},
		{"client-column with npz", func(c *Config) { c.Dataset, c.DataFile, c.ClientColumn = "npz", "f.npz", "u" }, false},
		{"fedprox-alpha with csv", func(c *Config) { c.Dataset, c.DataFile, c.FedproxAlpha = "csv", "f.csv", &alpha }, false},
		{"fedprox", func(c *Config) { c.Dataset, c.FedproxAlpha, c.FedproxDevices = "synthetic-fedprox", &alpha, 10 }, true},
		{"fedprox negative", func(c *Config) { c.Dataset, c.FedproxBeta = "synthetic-fedprox", &neg }, false},
		{"test-fraction 1", func(c *Config) { c.Dataset, c.DataFile, c.TestFraction = "csv", "f.csv", 1 }, false},
		{"both test settings", func(c *Config) { c.Dataset, c.DataFile, c.TestFile, c.TestFraction = "csv", "f.csv", "t.csv", 0.1 }, false},
		{"natural on blobs", func(c *Config) { c.Dataset, c.Partition = "blobs", NaturalPartition }, false},
		{"natural with samples-per-client", func(c *Config) {
			c.Dataset, c.Partition, c.SamplesPerClient = "synthetic-fedprox", NaturalPartition, 10
		}, false},
		{"leaf without directory", func(c *Config) { c.Dataset = "leaf" }, false},
	} {
		c := DefaultConfig()
		tc.set(&c)
		err := c.Validate()
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: Validate() = %v", tc.name, err)
		}
	}
}

// TestDataSourceUnchanged checks that the settings of a built-in dataset
// are what they were: no DataSource key in config.yaml, no data setting in
// the shard settings, and the data options of before.
func TestDataSourceUnchanged(t *testing.T) {
	c := DefaultConfig()
	b, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range DataFlagNames {
		if strings.Contains(string(b), k+":") {
			t.Errorf("config.yaml of a default run holds %s", k)
		}
	}
	if len(c.DataSource.Settings()) != 0 {
		t.Errorf("settings %v", c.DataSource.Settings())
	}
	c.DataDir, c.Seed = "dir", 9
	if got := c.DataOptions(); !reflect.DeepEqual(got, data.Options{DataDir: "dir", Seed: 9}) {
		t.Errorf("DataOptions() = %+v", got)
	}
}
