package deploy

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// LocalShards split deploy-local's shuffle over shuffler shards
// (ShufflerConfig.Shards) on NATS JetStream: the shuffler becomes the
// front, and each shard pads, shuffles and forwards its part.
type LocalShards struct {
	// Shards is the number of shards.
	Shards int
	// NATS is the URL of an external JetStream server; "" uses the one
	// deploy-local embeds (shared with the openers).
	NATS string
	// Command, if set, starts every shard as a process (`shufflefl
	// shuffler-shard` and the run's settings, e.g. its --config), to
	// which "--nats URL --shard-key FILE --index s --shards S --db FILE
	// --analyzer ADDR --certs Certs --run-id ID" is appended; otherwise
	// the shards run in this process.
	Command []string
	// Certs is the directory of the credentials the shard processes use
	// (the shuffler's; deploy-local writes them with WriteLocalPKI).
	Certs string
	// Stderr receives the processes' output (discarded if nil).
	Stderr io.Writer
}

// shards starts the shards o.ShufflerShards asks for, forwarding to the
// analyzer at aaddr over aconn, and returns the front's settings.
func (lr *localRun) shards(aaddr string, analyzer wire.AnalyzerClient) (int, *jetstream.Conn, *ShardKey, error) {
	ls := lr.o.ShufflerShards
	if ls == nil || ls.Shards == 0 {
		return 0, nil, nil, nil
	}
	if ls.Shards < 0 || ls.Shards > wire.MaxShards {
		return 0, nil, nil, errf("deploy-local: %d shuffler shards: want 1..%d", ls.Shards, wire.MaxShards)
	}
	url, conn, err := lr.natsServer(ls.NATS)
	if err != nil {
		return 0, nil, nil, err
	}
	keyFile := filepath.Join(lr.o.Dir, "shard.key")
	if _, err := os.Stat(keyFile); os.IsNotExist(err) {
		if err := WriteShardKey(keyFile); err != nil {
			return 0, nil, nil, err
		}
	}
	key, err := ReadShardKey(keyFile)
	if err != nil {
		return 0, nil, nil, err
	}
	for s := 1; s <= ls.Shards; s++ {
		if len(ls.Command) > 0 {
			err = lr.shardProc(ls, s, url, keyFile, aaddr)
		} else {
			err = lr.shardInProcess(s, conn, key, analyzer)
		}
		if err != nil {
			return 0, nil, nil, err
		}
	}
	return ls.Shards, conn, key, nil
}

// shardInProcess runs shard s of the run in this process.
func (lr *localRun) shardInProcess(s int, conn *jetstream.Conn, key *ShardKey, analyzer wire.AnalyzerClient) error {
	o := lr.o
	db, err := lr.open(fmt.Sprintf("shard-%d.db", s))
	if err != nil {
		return err
	}
	ss, err := NewShuffleShard(ShardConfig{Setup: lr.st, DB: db, AnalyzerKey: o.Creds.HPKEPublic, Analyzer: analyzer, Conn: conn, Key: key,
		Index: s, Shards: o.ShufflerShards.Shards, TestSeed: o.TestSeed, Logf: o.Logf, Progress: o.Progress, ProgressEvery: o.ProgressEvery, ShuffleMemory: o.ShuffleMemory,
		SpillDir: filepath.Join(o.Dir, fmt.Sprintf("shard-%d-spill", s))})
	if err != nil {
		return fmt.Errorf("deploy-local: shard %d: %w", s, err)
	}
	lr.add(ss.Close)
	return nil
}

// shardProc starts shard s as a process; stopping it sends SIGTERM and
// waits.
func (lr *localRun) shardProc(ls *LocalShards, s int, url, keyFile, aaddr string) error {
	out := ls.Stderr
	if out == nil {
		out = io.Discard
	}
	keys, err := lr.natsKeys()
	if err != nil {
		return err
	}
	args := append(append([]string(nil), ls.Command[1:]...), "--nats", url, "--nats-seed", NATSSeedFile(keys, NATSShard), "--nats-ca", NATSCAFile(keys), "--shard-key", keyFile,
		"--index", strconv.Itoa(s), "--shards", strconv.Itoa(ls.Shards), "--db", filepath.Join(lr.o.Dir, fmt.Sprintf("shard-%d.db", s)),
		"--analyzer", aaddr, "--certs", ls.Certs, "--run-id", lr.st.RunID)
	cmd := exec.Command(ls.Command[0], args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = openerProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("deploy-local: starting shuffler shard %d: %w", s, err)
	}
	lr.add(func() {
		if cmd.Process.Signal(syscall.SIGTERM) != nil {
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	})
	return nil
}
