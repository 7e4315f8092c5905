package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/driver/deploy"
	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

func TestShufflerShardUsageErrors(t *testing.T) {
	dir := t.TempDir()
	key, bad := filepath.Join(dir, "shard.key"), filepath.Join(dir, "bad.key")
	if err := deploy.WriteShardKey(key); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := []string{"--dataset", "blobs", "--clients", "4", "--rounds", "1"}
	full := func(extra ...string) []string {
		args := []string{"shuffler-shard", "--nats", "nats://127.0.0.1:1", "--shard-key", key, "--index", "1", "--shards", "2",
			"--certs", dir, "--analyzer", "127.0.0.1:1", "--db", filepath.Join(dir, "s.db")}
		return append(append(args, extra...), run...)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"shuffler-shard"}, "--nats URL is required"},
		{[]string{"shuffler-shard", "--nats", "nats://127.0.0.1:1"}, "--shard-key FILE is required"},
		{[]string{"shuffler-shard", "--nats", "nats://x", "--shard-key", key}, "--shards 0"},
		{[]string{"shuffler-shard", "--nats", "nats://x", "--shard-key", key, "--shards", "2", "--index", "3"}, "--index 3"},
		{[]string{"shuffler-shard", "--index", "one"}, "--index"},
		{[]string{"shuffler-shard", "--bogus"}, "--bogus"},
		{full("--shard-key", filepath.Join(dir, "none")), "no such file"},
		{full("--shard-key", bad), "bad.key"},
		{full("--test-seed", "x"), "--test-seed"},
		{full("--analyzer", "192.0.2.1:1"), "--allow-remote"},
		{[]string{"shuffler-shard", "--nats", "nats://x", "--shard-key", key, "--shards", "2", "--index", "1", "--certs", dir}, "needs --analyzer"},
	} {
		var out, errb bytes.Buffer
		if code := realMain(tc.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
	var out bytes.Buffer
	if code := realMain([]string{"shuffler-shard", "--help"}, &out, &out); code != 0 || !strings.Contains(out.String(), "--shard-key") || !strings.Contains(out.String(), "--nats URL") {
		t.Errorf("--help: exit %d, %q", code, out.String())
	}
}

// ackingAnalyzer acknowledges every batch and counts them.
type ackingAnalyzer struct {
	wire.UnimplementedAnalyzerServer
	parts atomic.Int64
}

func (a *ackingAnalyzer) SubmitBatch(st grpc.ClientStreamingServer[wire.BatchChunk, wire.BatchResponse]) error {
	h, ms, err := wire.ReceiveBatch(st)
	if err != nil {
		return err
	}
	a.parts.Add(1)
	return st.SendAndClose(&wire.BatchResponse{Round: h.Round, Accepted: uint64(len(ms))})
}

// TestShufflerShardExitsAfterLastRound: a shard whose database holds its
// saved part of the run's last round (a shard restarted after saving it)
// forwards it to the analyzer over the shuffler's mutual TLS, and exits 0
// once the analyzer acknowledged it.
func TestShufflerShardExitsAfterLastRound(t *testing.T) {
	dir := t.TempDir()
	creds, err := deploy.WriteLocalPKI(filepath.Join(dir, "pki"), 1)
	if err != nil {
		t.Fatal(err)
	}
	an := &ackingAnalyzer{}
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(pki.MutualServerConfig(creds.Analyzer, creds.Roots, pki.RoleShuffler))))
	wire.RegisterAnalyzerServer(g, an)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(l)
	defer g.Stop()
	users, err := deploy.LoadNATSUsers(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	cert, roots, err := deploy.LoadNATSTLS(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := jetstream.Embedded(filepath.Join(dir, "nats"), jetstream.WithLoopbackPort(0), jetstream.WithUsers(users),
		jetstream.WithTLS(cert, roots, pki.RequireRole(pki.RoleEngine)))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	key, dbPath := filepath.Join(dir, "shard.key"), filepath.Join(dir, "shard-1.db")
	if err := deploy.WriteShardKey(key); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := proto.Marshal(&wire.BatchHeader{Round: 1, RunId: "shard-cli", Counts: &wire.BatchCounts{Reports: 1, Messages: 2}, Shards: 2, Shard: 1})
	if err == nil {
		err = db.OpenInboxRound(1, nil)
	}
	if err == nil {
		err = db.SaveBatch(1, hb, []store.SealedMessage{{Label: 0, Sealed: []byte("a")}, {Label: 1, Sealed: []byte("b")}})
	}
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := realMain([]string{"shuffler-shard", "--nats", srv.URL(), "--shard-key", key, "--index", "1", "--shards", "2", "--certs", filepath.Join(dir, "pki"),
		"--analyzer", l.Addr().String(), "--db", dbPath, "--run-id", "shard-cli", "--dataset", "blobs", "--clients", "4", "--rounds", "1", "--progress", "none"}, &out, &errb)
	if code != 0 || an.parts.Load() != 1 || !strings.Contains(out.String(), "1 rounds forwarded, 2 messages") {
		t.Fatalf("exit %d, %d parts acknowledged; stdout %q, stderr:\n%s", code, an.parts.Load(), out.String(), errb.String())
	}
}
