package deploy

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/shufflefl/shufflefl/internal/longtest"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/learning/data"
)

// shardConfigs are runs over the partitions a deployment takes.
func shardConfigs() map[string]round.Config {
	iid := testConfig("apes", 12, 2)
	dir := testConfig("ss-double", 12, 2)
	dir.Partition, dir.Alpha = "dirichlet", 0.3
	rot := testConfig("ifca-dp", 12, 2)
	rot.Partition, rot.Groups, rot.Options = "rotated", 2, map[string]float64{"k": 2, "nu": 1}
	smp := testConfig("apes", 12, 2)
	smp.Partition, smp.SamplesPerClient = "sampled", 30
	return map[string]round.Config{"iid": iid, "dirichlet": dir, "rotated": rot, "sampled": smp}
}

// TestWritePartitionMatchesSetup: every client's Setup built from its
// shard file holds, bit for bit, the examples the whole-dataset Setup
// gives it (rotated for its group under "rotated"), and the manifest
// lists every shard with its size and SHA-256.
func TestWritePartitionMatchesSetup(t *testing.T) {
	t.Parallel() // a whole deployment or several: overlaps the others' waits
	for name, cfg := range shardConfigs() {
		t.Run(name, func(t *testing.T) {
			split := testSplit(t, cfg)
			whole, err := NewSetup(cfg, split, "r")
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			m, err := WritePartition(cfg, split, dir)
			if err != nil {
				t.Fatal(err)
			}
			if m.Clients != cfg.Clients || m.Features != split.Train.Features || m.Classes != split.Train.Classes || len(m.Shards) != cfg.Clients {
				t.Fatalf("manifest %+v", m)
			}
			d := SettingsDigest(cfg)
			if m.SettingsDigest != hex.EncodeToString(d[:]) {
				t.Errorf("manifest digest %s, want %x", m.SettingsDigest, d)
			}
			f := whole.Train.Features
			for i, idx := range whole.Shards {
				st, err := LoadClientSetup(cfg, filepath.Join(dir, ShardFile(i)), ClientID(i), "r")
				if err != nil {
					t.Fatal(err)
				}
				var x []float32
				var y []uint8
				for _, j := range idx {
					x = append(x, whole.Train.X[j*f:(j+1)*f]...)
					y = append(y, whole.Train.Y[j])
				}
				if !slices.Equal(f32bits(st.Train.X), f32bits(x)) || !slices.Equal(st.Train.Y, y) || m.Shards[i].Examples != len(idx) {
					t.Fatalf("client %d: its shard's examples differ from the whole Setup's", i)
				}
				if len(st.Shards) != cfg.Clients || len(st.Shards[i]) != len(idx) || st.Test.Len() != 0 {
					t.Fatalf("client %d: %d shards, its own of %d, %d test examples", i, len(st.Shards), len(st.Shards[i]), st.Test.Len())
				}
				if st.Dim() != whole.Dim() || st.Budget != whole.Budget || st.ClientBudget(i) != whole.ClientBudget(i) || !slices.Equal(st.Init, whole.Init) {
					t.Fatalf("client %d: the shard's Setup differs from the whole one in model or budget", i)
				}
			}
		})
	}
}

func f32bits(x []float32) []uint32 {
	u := make([]uint32, len(x))
	for i, v := range x {
		u[i] = math.Float32bits(v)
	}
	return u
}

// TestLoadClientSetupRefuses: another run's shard (its settings named),
// another client's shard, a corrupted shard and a manifest that does not
// list the file are refused; without a manifest the shard's own digest
// decides.
func TestLoadClientSetupRefuses(t *testing.T) {
	cfg := testConfig("apes", 6, 1)
	dir := t.TempDir()
	if _, err := WritePartition(cfg, testSplit(t, cfg), dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ShardFile(2))
	other := cfg
	other.Seed++
	_, err := LoadClientSetup(other, path, ClientID(2), "r")
	if !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), `seed is "7" there, "8" here`) {
		t.Errorf("other seed: %v", err)
	}
	if _, err := LoadClientSetup(cfg, path, ClientID(3), "r"); !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), "client-000003, not of client-000004") {
		t.Errorf("other client: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.shard")
	b[100] ^= 1
	if err := os.WriteFile(bad, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadClientSetup(cfg, bad, ClientID(2), "r"); !errors.Is(err, data.ErrData) {
		t.Errorf("corrupted shard: %v", err)
	}
	// A shard that is not the file the manifest lists (here client 1's,
	// renamed over client 0's after a rewrite for another seed).
	mdir := t.TempDir()
	if _, err := WritePartition(cfg, testSplit(t, cfg), mdir); err != nil {
		t.Fatal(err)
	}
	swap := filepath.Join(mdir, ShardFile(2))
	m, err := ReadManifest(filepath.Join(mdir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	m.Shards[2].SHA256 = m.Shards[1].SHA256
	writeManifest(t, mdir, m)
	if _, err := LoadClientSetup(cfg, swap, ClientID(2), "r"); !errors.Is(err, data.ErrData) || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("shard not the manifest's: %v", err)
	}
	if err := os.Remove(filepath.Join(mdir, ManifestName)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadClientSetup(cfg, swap, ClientID(2), "r"); err != nil {
		t.Errorf("shard without a manifest: %v", err)
	}
	if _, err := LoadClientSetup(other, swap, ClientID(2), "r"); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("other seed without a manifest: %v", err)
	}
}

func writeManifest(t *testing.T, dir string, m *Manifest) {
	t.Helper()
	w := *m
	b, err := json.MarshalIndent(&w, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestName), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLocalShardsEqualWhole: a local deployment (test mode) whose clients
// read their shard files gives the same final model, bit for bit, as one
// whose clients share the whole dataset's Setup. The dirichlet
// configuration (ss-double, whose calibration takes seconds) runs with the
// long tests.
func TestLocalShardsEqualWhole(t *testing.T) {
	longtest.Skip(t) // whole deployments, sharded and not
	t.Parallel()     // a whole deployment or several: overlaps the others' waits
	for name, cfg := range shardConfigs() {
		t.Run(name, func(t *testing.T) {
			if name == "dirichlet" {
				longtest.Skip(t)
			}
			split := testSplit(t, cfg)
			shards := t.TempDir()
			if _, err := WritePartition(cfg, split, shards); err != nil {
				t.Fatal(err)
			}
			run := func(dir string) []float64 {
				st, err := NewSetup(cfg, split, "test-shards")
				if err != nil {
					t.Fatal(err)
				}
				seed := cfg.Seed
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				res, err := RunLocal(ctx, st, LocalOptions{Dir: t.TempDir(), TestSeed: &seed, RoundTimeout: time.Minute, Workers: 1, Shards: dir, Logf: t.Logf})
				if err != nil {
					t.Fatal(err)
				}
				if slices.Equal(res.Model, st.Init) {
					t.Fatal("the model never moved: the comparison would prove nothing")
				}
				return res.Model
			}
			whole, sharded := run(""), run(shards)
			for j := range whole {
				if math.Float64bits(whole[j]) != math.Float64bits(sharded[j]) {
					t.Fatalf("parameter %d: %v with shard files, %v without", j, sharded[j], whole[j])
				}
			}
		})
	}
}
