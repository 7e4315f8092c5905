package deploy

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/transport/jetstream"
)

// roleStreams connects as role with the service options o (natsAuth, as
// the role's service does) and creates the streams the role creates: the
// analyzer the opener queue and its results log, the sharded front (its
// connection from shardFront) and a shard the shard queue. It returns the
// names of the streams.
func roleStreams(ctx context.Context, o ServiceOptions, role string) ([]string, error) {
	var conn *jetstream.Conn
	if role == NATSShuffler {
		var scfg ShufflerConfig
		closeConn, err := o.shardFront(&scfg)
		if err != nil {
			return nil, err
		}
		defer closeConn()
		conn = scfg.ShardConn
	} else {
		nopts, err := o.natsAuth(role)
		if err != nil {
			return nil, err
		}
		if conn, err = jetstream.ConnectWait(ctx, o.NATS, o.ConnectDeadline, nil, nopts...); err != nil {
			return nil, err
		}
		defer conn.Close()
	}
	if role == NATSAnalyzer {
		if _, err := openOpenerStreams(ctx, conn, true); err != nil {
			return nil, err
		}
		return []string{openQueueName, openLogName}, nil
	}
	if _, err := openShardQueue(ctx, conn); err != nil {
		return nil, err
	}
	return []string{shardQueueName}, nil
}

// TestNATSReplicasRefused: a --nats-replicas out of range is refused at
// once, naming the option, by every role that connects to NATS; 2 on a
// single server is refused by the server when the role creates its
// streams, within seconds (no hang to a deadline).
func TestNATSReplicasRefused(t *testing.T) {
	srv, err := jetstream.Embedded(t.TempDir(), jetstream.WithLoopbackPort(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	keyFile := filepath.Join(t.TempDir(), ShardKeyFile)
	if err := WriteShardKey(keyFile); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := jetstream.ConnectWait(context.Background(), srv.URL(), time.Minute, nil, jetstream.WithReplicas(0)); err == nil || time.Since(start) > 10*time.Second {
		t.Errorf("ConnectWait with 0 replicas: error %v after %v, want a refusal at once", err, time.Since(start))
	}
	for _, tc := range []struct {
		replicas int
		want     string
	}{
		{-1, "--nats-replicas -1: want 1 to 5"},
		{6, "--nats-replicas 6: want 1 to 5"},
		{2, "replicas > 1 not supported in non-clustered mode"},
	} {
		for _, role := range []string{NATSAnalyzer, NATSShuffler, NATSShard} {
			o := ServiceOptions{NATS: srv.URL(), NATSReplicas: tc.replicas, ShufflerShards: 1, ShardKey: keyFile, ConnectDeadline: time.Minute}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			start := time.Now()
			_, err := roleStreams(ctx, o, role)
			cancel()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s with --nats-replicas %d: error %v, want one saying %q", role, tc.replicas, err, tc.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("%s with --nats-replicas %d: refused after %v, want at once", role, tc.replicas, d)
			}
		}
	}
}

// streamReplicas reads stream name's configured replicas and the number
// of cluster nodes storing it (its leader and its current followers)
// through the NATS client's JetStream API, as the analyzer's key.
func streamReplicas(t *testing.T, cl *testCluster, name string) (configured, current int) {
	t.Helper()
	nk, err := nats.NkeyOptionFromSeed(NATSSeedFile(cl.keys, NATSAnalyzer))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(cl.urls, nats.RootCAs(NATSCAFile(cl.keys)), nk)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	j, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := j.Stream(ctx, name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return info.Config.Replicas, 0
	}
	current = 1
	for _, p := range info.Cluster.Replicas {
		if p.Current && !p.Offline {
			current++
		}
	}
	return info.Config.Replicas, current
}

// deleteStreams deletes the streams names on the cluster, those that
// exist.
func deleteStreams(t *testing.T, conn *jetstream.Conn, names []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range names {
		var err error
		switch n {
		case openQueueName, openLogName:
			var q *openStreams
			if q, err = openOpenerStreams(ctx, conn, true); err == nil {
				err = errors.Join(q.chunks.Delete(ctx), q.results.Delete(ctx))
			}
		case shardQueueName:
			var q *shardQueue
			if q, err = openShardQueue(ctx, conn); err == nil {
				err = q.q.Delete(ctx)
			}
		}
		if err != nil {
			t.Fatalf("deleting %s: %v", n, err)
		}
	}
}

// TestJetStreamClusterReplicasOption: on a 3-node cluster, --nats-replicas
// 3 makes every stream each role creates (the analyzer's opener queue and
// results log, the front's and a shard's shard queue) a stream of 3
// replicas stored on the 3 nodes, each role creating them afresh; without
// the option the role creates them with 1; and 5, more than the cluster's
// nodes, is refused within the role's start rather than hanging.
func TestJetStreamClusterReplicasOption(t *testing.T) {
	longtest.Skip(t)
	cl := startTestCluster(t)
	admin := cl.connect(t, NATSAnalyzer)
	clusterStreams(t, admin) // the cluster places R3 streams
	all := []string{openQueueName, openLogName, shardQueueName}
	keyFile := filepath.Join(t.TempDir(), ShardKeyFile)
	if err := WriteShardKey(keyFile); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		replicas, want int
	}{{3, 3}, {0, 1}} {
		for _, role := range []string{NATSAnalyzer, NATSShuffler, NATSShard} {
			deleteStreams(t, admin, all)
			o := ServiceOptions{Certs: cl.keys, NATS: cl.urls, NATSReplicas: tc.replicas, ShufflerShards: 2, ShardKey: keyFile, ConnectDeadline: time.Minute}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			names, err := roleStreams(ctx, o, role)
			cancel()
			if err != nil {
				t.Fatalf("%s with --nats-replicas %d: %v", role, tc.replicas, err)
			}
			for _, n := range names {
				var configured, current int
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
					if configured, current = streamReplicas(t, cl, n); current == tc.want || time.Now().After(deadline) {
						break
					}
				}
				if configured != tc.want || current != tc.want {
					t.Errorf("%s with --nats-replicas %d: stream %s has %d replicas configured, %d nodes storing it; want %d",
						role, tc.replicas, n, configured, current, tc.want)
				}
				t.Logf("%s with --nats-replicas %d: %s has %d replicas on %d nodes", role, tc.replicas, n, configured, current)
			}
		}
	}
	deleteStreams(t, admin, all)
	for _, role := range []string{NATSAnalyzer, NATSShuffler, NATSShard} {
		o := ServiceOptions{Certs: cl.keys, NATS: cl.urls, NATSReplicas: 5, ShufflerShards: 2, ShardKey: keyFile, ConnectDeadline: time.Minute}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		_, err := roleStreams(ctx, o, role)
		late := ctx.Err()
		cancel()
		t.Logf("%s with --nats-replicas 5 on 3 nodes: %v after %v", role, err, time.Since(start).Round(time.Millisecond))
		if err == nil || late != nil || !strings.Contains(err.Error(), "5 replicas: fewer servers") {
			t.Errorf("%s with --nats-replicas 5 on 3 nodes: error %v after %v, want a refusal saying so before the deadline", role, err, time.Since(start))
		}
	}
}
