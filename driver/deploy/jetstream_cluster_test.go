package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
)

// The child of TestJetStreamClusterNodeKilled: one node of a 3-node
// JetStream cluster, $SHUFFLEFL_CLUSTER_NODE its index, and
// $SHUFFLEFL_CLUSTER_SPEC "KEYS;DIR;C0,C1,C2;R0,R1,R2": the deployment's
// NATS keys (its users), the directory of the nodes' stores, and the
// nodes' client and route ports. It serves until it is killed.
const (
	clusterNodeEnv = "SHUFFLEFL_CLUSTER_NODE"
	clusterSpecEnv = "SHUFFLEFL_CLUSTER_SPEC"
	clusterNodes   = 3
)

func TestClusterNodeChild(t *testing.T) {
	if os.Getenv(clusterNodeEnv) == "" {
		t.Skip("the child of TestJetStreamClusterNodeKilled")
	}
	i, err := strconv.Atoi(os.Getenv(clusterNodeEnv))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(os.Getenv(clusterSpecEnv), ";")
	if len(parts) != 4 {
		t.Fatalf("cluster spec %q", os.Getenv(clusterSpecEnv))
	}
	users, err := LoadNATSUsers(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	cports, rports := strings.Split(parts[2], ","), strings.Split(parts[3], ",")
	var routes []string
	for _, p := range rports {
		n, _ := strconv.Atoi(p)
		routes = append(routes, jetstream.RouteURL(n))
	}
	cp, _ := strconv.Atoi(cports[i])
	rp, _ := strconv.Atoi(rports[i])
	cert, roots, err := LoadNATSTLS(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	srv, err := jetstream.Embedded(filepath.Join(parts[1], fmt.Sprint("node-", i)), jetstream.WithLoopbackPort(cp), jetstream.WithUsers(users),
		jetstream.WithTLS(cert, roots, pki.RequireRole(pki.RoleEngine)),
		jetstream.WithServerName(fmt.Sprint("node-", i)), jetstream.WithCluster(jetstream.ClusterConfig{Name: "shufflefl-test", Port: rp, Routes: routes}))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	select {} // serves until killed
}

// testCluster is a 3-node JetStream cluster of child processes of the
// test binary, admitting the deployment's NATS keys under keys.
type testCluster struct {
	keys  string
	urls  string
	procs []*exec.Cmd
	names []string
}

// startTestCluster starts the nodes; they are killed at the end of the
// test.
func startTestCluster(t *testing.T) *testCluster {
	t.Helper()
	keys := t.TempDir()
	if err := writeNATSTLS(keys); err != nil {
		t.Fatal(err)
	}
	if err := WriteNATSKeys(keys); err != nil {
		t.Fatal(err)
	}
	ports, err := jetstream.FreeLoopbackPorts(2 * clusterNodes)
	if err != nil {
		t.Fatal(err)
	}
	var cs, rs, urls []string
	for i := range clusterNodes {
		cs = append(cs, strconv.Itoa(ports[i]))
		rs = append(rs, strconv.Itoa(ports[clusterNodes+i]))
		urls = append(urls, jetstream.ClientURL(ports[i]))
	}
	spec := strings.Join([]string{keys, t.TempDir(), strings.Join(cs, ","), strings.Join(rs, ",")}, ";")
	c := &testCluster{keys: keys, urls: strings.Join(urls, ",")}
	for i := range clusterNodes {
		cmd := exec.Command(os.Args[0], "-test.run=^TestClusterNodeChild$", "-test.timeout=0")
		cmd.Env = append(os.Environ(), clusterNodeEnv+"="+strconv.Itoa(i), clusterSpecEnv+"="+spec)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c.procs = append(c.procs, cmd)
		c.names = append(c.names, fmt.Sprint("node-", i))
	}
	t.Cleanup(func() {
		for _, p := range c.procs {
			if p.ProcessState == nil {
				p.Process.Kill()
				p.Wait()
			}
		}
	})
	return c
}

// connect connects as role to the cluster (every node's URL), creating
// streams with 3 replicas.
func (c *testCluster) connect(t *testing.T, role string) *jetstream.Conn {
	t.Helper()
	opts, err := natsSeedOption(c.keys, role)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := jetstream.ConnectWait(context.Background(), c.urls, time.Minute, t.Logf, append(opts, jetstream.WithReplicas(clusterNodes), jetstream.WithName("test "+role))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// kill SIGKILLs the node named name.
func (c *testCluster) kill(t *testing.T, name string) {
	t.Helper()
	for i, n := range c.names {
		if n == name {
			if err := c.procs[i].Process.Kill(); err != nil {
				t.Fatal(err)
			}
			c.procs[i].Wait()
			return
		}
	}
	t.Fatalf("no node %q", name)
}

// TestJetStreamClusterNodeKilled: the opener queue on a 3-node cluster
// with R3 streams; the node leading the chunk queue is killed with
// SIGKILL while an opener holds a chunk of the round. The other two elect
// a new leader, the round's opening finishes, and it is the analyzer's
// own opening message for message (the model of the round is the
// fault-free one's): nothing is lost and nothing counted twice.
func TestJetStreamClusterNodeKilled(t *testing.T) {
	longtest.Skip(t)
	cl := startTestCluster(t)
	f := newOpenFixture(t, "ss-double")
	ms := f.batch(t, 6, true, 29)
	want, wantStats := f.local(t, ms)
	conn := cl.connect(t, NATSAnalyzer)
	clusterStreams(t, conn) // the cluster elects its meta leader, learns its peers
	a := &Analyzer{cfg: AnalyzerConfig{Setup: f.st, Key: f.creds.HPKE, Openers: conn, OpenerChunk: 10}, st: f.st, logf: t.Logf}
	if err := a.joinOpeners(); err != nil {
		t.Fatal(err)
	}
	held, killed := make(chan string, 1), make(chan struct{})
	var first atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i := range 2 {
		op, err := NewOpener(ctx, OpenerConfig{Conn: cl.connect(t, NATSOpener), Key: f.creds.HPKE, Workers: 1, AckWait: crashAckWait, Name: fmt.Sprint("test-", i), Logf: t.Logf, Restricted: true,
			started: func(s string) {
				if first.CompareAndSwap(false, true) { // the first chunk is held across the kill
					held <- s
					<-killed
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { op.Serve(ctx) })
	}
	var r recorder
	var got seal.Stats
	done := make(chan error, 1)
	go func() {
		var err error
		got, err = a.openRemote(context.Background(), 1, ms, r.add)
		done <- err
	}()
	var chunk string
	select {
	case chunk = <-held:
	case <-time.After(time.Minute):
		t.Fatal("no chunk reached an opener")
	}
	leader, err := a.cfg.Openers.StreamLeader(context.Background(), openQueueName)
	if err != nil {
		t.Fatal(err)
	}
	cl.kill(t, leader)
	t.Logf("killed %s, the leader of %s, while chunk %s was held", leader, openQueueName, chunk)
	close(killed)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		n, qerr := a.openq.chunks.Len(context.Background())
		m, lerr := a.openq.results.Count(context.Background(), resultSubject(runTag(f.st.RunID), 1, "*"))
		t.Fatalf("the opening did not finish after a node was killed: %d chunks queued (%v), %d results stored (%v)", n, qerr, m, lerr)
	}
	sameOpened(t, want, r.got)
	if got != wantStats {
		t.Fatalf("counts %+v, want %+v", got, wantStats)
	}
	if nl, err := a.cfg.Openers.StreamLeader(context.Background(), openQueueName); err != nil || nl == leader {
		t.Fatalf("leader after the kill: %q (%v), want another node than %s", nl, err, leader)
	}
}
