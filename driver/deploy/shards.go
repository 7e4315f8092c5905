package deploy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
)

// ManifestName is the file name of the manifest WritePartition writes
// beside the shards.
const ManifestName = "manifest.json"

// manifestFormat names the manifest's format (with Manifest.Version).
const manifestFormat = "shufflefl-shards"

// ShardFile is the file name of client i's shard (0-based): its id
// (ClientID) with the extension .shard, e.g. client-000001.shard.
func ShardFile(i int) string { return ClientID(i) + ".shard" }

// ShardSettings returns the run settings that decide the clients' shards,
// keyed by their flag names: the dataset, the seed, the number of clients
// (and held-out clients), the partition and its parameters (alpha for
// dirichlet, groups for rotated), samples-per-client, and the data
// settings that are set (round.DataSource.Settings: the data file, the
// columns, FedProx's parameters). Any other setting
// leaves every shard as it is; a client checks those against the
// analyzer's announcements instead.
func ShardSettings(cfg round.Config) map[string]string {
	m := map[string]string{
		"dataset":            cfg.Dataset,
		"seed":               strconv.FormatUint(cfg.Seed, 10),
		"clients":            strconv.Itoa(cfg.Clients),
		"holdout-clients":    strconv.Itoa(cfg.HoldoutClients),
		"partition":          cfg.Partition,
		"samples-per-client": strconv.Itoa(cfg.SamplesPerClient),
	}
	switch cfg.Partition {
	case "dirichlet":
		m["alpha"] = strconv.FormatFloat(cfg.Alpha, 'g', -1, 64)
	case "rotated":
		m["groups"] = strconv.Itoa(cfg.Groups)
	}
	maps.Copy(m, cfg.DataSource.Settings()) // none for the built-in datasets
	return m
}

// SettingsDigest is the SHA-256 of ShardSettings(cfg) (its "key=value"
// lines in key order after a format line): every shard and the manifest
// carry it, and a client refuses a shard whose digest is not its own
// settings'.
func SettingsDigest(cfg round.Config) [32]byte {
	m := ShardSettings(cfg)
	var b strings.Builder
	b.WriteString(manifestFormat + " settings v1\n")
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%s\n", k, m[k])
	}
	return sha256.Sum256([]byte(b.String()))
}

// Manifest describes a directory of shards written by WritePartition.
type Manifest struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Settings are the run settings the shards were cut for
	// (ShardSettings); SettingsDigest their digest, in hex.
	Settings       map[string]string `json:"settings"`
	SettingsDigest string            `json:"settings_digest"`
	// Clients is the number of shards; Features and Classes the model's
	// input and output sizes; Rows and Cols the image shape (0 if none).
	Clients  int `json:"clients"`
	Features int `json:"features"`
	Classes  int `json:"classes"`
	Rows     int `json:"rows,omitempty"`
	Cols     int `json:"cols,omitempty"`
	// Shards lists every client's shard, in client order.
	Shards []ManifestShard `json:"shards"`
}

// ManifestShard is one client's entry in a Manifest.
type ManifestShard struct {
	Client   string `json:"client"`
	File     string `json:"file"`
	Examples int    `json:"examples"`
	SHA256   string `json:"sha256"`
}

// WritePartition partitions split's training set for the run cfg exactly
// as the deployment's roles and the simulation do (NewSetup, which calls
// round.PartitionData, and refuses a configuration a deployment does not
// run), writes every client's examples to dir/ShardFile(i) (data's shard
// format), and writes the Manifest to dir/ManifestName. dir is created if
// absent; files of the same names are replaced.
func WritePartition(cfg round.Config, split data.Split, dir string) (*Manifest, error) {
	st, err := NewSetup(cfg, split, "shufflefl-partition")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("partition: %w", err)
	}
	digest := SettingsDigest(cfg)
	m := &Manifest{Format: manifestFormat, Version: 1, Settings: ShardSettings(cfg), SettingsDigest: hex.EncodeToString(digest[:]),
		Clients: len(st.Shards), Features: st.Train.Features, Classes: st.Model.Classes(), Rows: split.Train.Rows, Cols: split.Train.Cols}
	f := st.Train.Features
	for i, idx := range st.Shards {
		sh := &data.Shard{Client: i, Settings: digest, Features: f, Classes: m.Classes, Rows: m.Rows, Cols: m.Cols,
			X: make([]float32, 0, len(idx)*f), Y: make([]uint8, 0, len(idx))}
		for _, j := range idx {
			sh.X = append(sh.X, st.Train.X[j*f:(j+1)*f]...)
			sh.Y = append(sh.Y, st.Train.Y[j])
		}
		sum, err := data.WriteShardFile(filepath.Join(dir, ShardFile(i)), sh)
		if err != nil {
			return nil, fmt.Errorf("partition: %w", err)
		}
		m.Shards = append(m.Shards, ManifestShard{Client: ClientID(i), File: ShardFile(i), Examples: len(idx), SHA256: hex.EncodeToString(sum[:])})
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err == nil {
		err = writeFileAtomic(filepath.Join(dir, ManifestName), append(b, '\n'))
	}
	if err != nil {
		return nil, fmt.Errorf("partition: manifest: %w", err)
	}
	return m, nil
}

// writeFileAtomic writes b to path through a temporary file and a rename.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadManifest reads a manifest written by WritePartition. A file that is
// not one is an error wrapping data.ErrData.
func ReadManifest(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", data.ErrData, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", data.ErrData, path, err)
	}
	if m.Format != manifestFormat || m.Version != 1 || len(m.Shards) != m.Clients {
		return nil, fmt.Errorf("%w: %s: not a version-1 %s manifest of %d shards (format %q, version %d, %d shards)",
			data.ErrData, path, manifestFormat, m.Clients, m.Format, m.Version, len(m.Shards))
	}
	return &m, nil
}

// settingsDiff names the settings that differ between the manifest's and
// want, as "key: manifest's value, want's value" phrases.
func settingsDiff(have, want map[string]string) string {
	var d []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if have[k] != want[k] {
			d = append(d, fmt.Sprintf("%s is %q there, %q here", k, have[k], want[k]))
		}
	}
	return strings.Join(d, "; ")
}

// LoadClientSetup builds client id's Setup from its shard file (written by
// WritePartition, i.e. `shufflefl partition`) without reading the dataset:
// it reads the shard, refuses it if it was cut for other settings
// (SettingsDigest of cfg) or for another client, and, when the directory
// holds the manifest, checks the shard's SHA-256, size and shape against
// it. The errors wrap checks.ErrInvalid (another run's or client's shard)
// or data.ErrData (an unreadable or corrupt file).
func LoadClientSetup(cfg round.Config, path, id, runID string) (*Setup, error) {
	idx, err := ClientIndex(id)
	if err != nil {
		return nil, err
	}
	sh, sum, err := data.ReadShardFile(path)
	if err != nil {
		return nil, err
	}
	var m *Manifest
	mpath := filepath.Join(filepath.Dir(path), ManifestName)
	if m, err = ReadManifest(mpath); errors.Is(err, fs.ErrNotExist) {
		m = nil
	} else if err != nil {
		return nil, err
	}
	want := SettingsDigest(cfg)
	if sh.Settings != want {
		why := ""
		if m != nil {
			why = ": " + settingsDiff(m.Settings, ShardSettings(cfg))
		}
		return nil, checks.Invalidf("shard %s was cut for other run settings than this client's (settings digest %x, this client's %x)%s; give the client the flags the shards were written with, or write the shards again with 'shufflefl partition'",
			path, sh.Settings[:6], want[:6], why)
	}
	if sh.Client != idx {
		return nil, checks.Invalidf("shard %s holds the data of %s, not of %s", path, ClientID(sh.Client), id)
	}
	if m != nil {
		if err := m.check(sh, sum, want); err != nil {
			return nil, fmt.Errorf("shard %s against %s: %w", path, mpath, err)
		}
	}
	return NewClientSetup(cfg, sh, runID)
}

// check compares a client's shard with its manifest entry.
func (m *Manifest) check(sh *data.Shard, sum, digest [32]byte) error {
	switch {
	case m.SettingsDigest != hex.EncodeToString(digest[:]):
		return checks.Invalidf("the manifest's settings digest %.12s… is not the shard's %x…", m.SettingsDigest, digest[:6])
	case sh.Client >= len(m.Shards):
		return checks.Invalidf("the manifest lists %d shards, not %s's", len(m.Shards), ClientID(sh.Client))
	case m.Features != sh.Features || m.Classes != sh.Classes:
		return checks.Invalidf("the manifest says %d features and %d classes, the shard %d and %d", m.Features, m.Classes, sh.Features, sh.Classes)
	}
	e := m.Shards[sh.Client]
	if e.SHA256 != hex.EncodeToString(sum[:]) || e.Examples != sh.Len() {
		return fmt.Errorf("%w: the file's SHA-256 %x… and %d examples are not the manifest's %.12s… and %d", data.ErrData, sum[:6], sh.Len(), e.SHA256, e.Examples)
	}
	return nil
}

// NewClientSetup builds client sh.Client's Setup from its shard alone:
// the run's protocol, model, budgets and plan are NewSetup's for cfg (the
// model's size from the shard's features and classes), Shards holds only
// this client's shard (the indexes of sh's examples) and Train only its
// examples; Test is empty. A client needs nothing else; such a Setup is
// no analyzer's or shuffler's.
func NewClientSetup(cfg round.Config, sh *data.Shard, runID string) (*Setup, error) {
	return newSetup(cfg, shardData{sh}, runID)
}

// shardData is one client's shard as a Setup's data.
type shardData struct{ sh *data.Shard }

func (s shardData) shape(round.Config) (int, int, error) { return s.sh.Features, s.sh.Classes, nil }

func (s shardData) fill(st *Setup) error {
	n := st.Config.Clients + st.Config.HoldoutClients
	if s.sh.Client < 0 || s.sh.Client >= n {
		return checks.Invalidf("shard of client index %d outside the run's %d clients", s.sh.Client, n)
	}
	idx := make([]int, s.sh.Len())
	for i := range idx {
		idx[i] = i
	}
	st.Shards = make([][]int, n)
	st.Shards[s.sh.Client] = idx
	st.Train = fl.Examples{X: s.sh.X, Y: s.sh.Y, Features: s.sh.Features}
	st.Test = fl.Examples{Features: s.sh.Features}
	st.TestGroups = 1
	if st.Config.Partition == "rotated" {
		st.TestGroups = st.Config.Groups
	}
	return nil
}
