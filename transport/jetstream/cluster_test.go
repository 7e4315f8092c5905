package jetstream

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// startCluster starts n in-process nodes of one cluster, the first with
// every node routing to every node, and returns them and
// the comma-separated list of their client URLs.
func startCluster(t *testing.T, n int, opts ...Option) ([]*Server, string) {
	t.Helper()
	ports, err := FreeLoopbackPorts(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	for i := range n {
		routes = append(routes, RouteURL(ports[n+i]))
	}
	var nodes []*Server
	var urls []string
	for i := range n {
		cc := ClusterConfig{Name: "test-cluster", Port: ports[n+i], Routes: routes}
		s := embedded(t, t.TempDir(), append([]Option{WithLoopbackPort(ports[i]), WithServerName("node-" + string(rune('a'+i))), WithCluster(cc)}, opts...)...)
		nodes = append(nodes, s)
		urls = append(urls, s.URL())
	}
	return nodes, strings.Join(urls, ",")
}

// openReplicated opens an R3 queue on c, retrying while the cluster
// elects its meta leader and learns its peers.
func openReplicated(t *testing.T, c *Conn, name string) *Queue {
	t.Helper()
	ctx := testCtx(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		q, err := c.Queue(qctx, QueueConfig{Name: name})
		cancel()
		if err == nil {
			return q
		}
		if time.Now().After(deadline) {
			t.Fatalf("R3 queue on the cluster: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestClusterReplicatedQueue: on a 3-node cluster an R3 queue keeps
// every acknowledged message when the node leading it stops, accepts new
// ones (Publish retrying through the failover), and delivers all of them
// once.
func TestClusterReplicatedQueue(t *testing.T) {
	nodes, urls := startCluster(t, 3)
	c, err := ConnectWait(testCtx(t), urls, 30*time.Second, nil, WithReplicas(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	q := openReplicated(t, c, "repl")
	publishN(t, q, 0, 20)
	leader, err := c.StreamLeader(testCtx(t), "repl")
	if err != nil {
		t.Fatal(err)
	}
	i := int(leader[len(leader)-1] - 'a')
	if !strings.HasPrefix(leader, "node-") || i < 0 || i >= len(nodes) {
		t.Fatalf("stream leader %q is not a node", leader)
	}
	nodes[i].Shutdown() // the leader: the others elect a new one
	// Publish itself rides out the election of a new leader (failover.go).
	publishN(t, q, 20, 40)
	deadline := time.Now().Add(FailoverWait)
	var cons *Consumer
	for cons == nil {
		ctx, cancel := context.WithTimeout(testCtx(t), 5*time.Second)
		cons, err = q.Consumer(ctx, ConsumerConfig{Name: "g", AckWait: 2 * time.Second})
		cancel()
		if err != nil && time.Now().After(deadline) {
			t.Fatalf("consumer after a node stopped: %v", err)
		}
	}
	got := drain(t, cons)
	if len(got) != 40 {
		t.Fatalf("%d distinct messages delivered, want 40", len(got))
	}
}

// TestClusterOptionErrors: bad cluster options are refused before a
// server starts.
func TestClusterOptionErrors(t *testing.T) {
	if _, err := FreeLoopbackPorts(0); err == nil {
		t.Error("0 free ports: no error")
	}
	for _, cc := range []ClusterConfig{
		{},
		{Name: "a b"},
		{Name: "c", Port: -1},
		{Name: "c", Port: 70000},
		{Name: "c"},
		{Name: "c", Routes: []string{"http://127.0.0.1:1"}},
		{Name: "c", Routes: []string{"nats-route://127.0.0.1"}},
		{Name: "c", Routes: []string{"nats-route://%zz"}},
	} {
		if _, err := Embedded(t.TempDir(), WithLoopbackPort(0), WithCluster(cc)); err == nil {
			t.Errorf("cluster %+v: no error", cc)
		}
	}
	if _, err := Embedded(t.TempDir(), WithCluster(ClusterConfig{Name: "c", Routes: []string{RouteURL(1)}})); err == nil || !strings.Contains(err.Error(), "client listener") {
		t.Errorf("cluster node without a client listener: error %v", err)
	}
}

// TestPublishToDeletedStream: a publish to a queue deleted meanwhile
// fails at once with ErrStreamGone, not after FailoverWait of retries.
func TestPublishToDeletedStream(t *testing.T) {
	s := embedded(t, t.TempDir())
	c := connect(t, s)
	q := openQueue(t, c, QueueConfig{Name: "gone"})
	publishN(t, q, 0, 1)
	if err := q.Delete(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := q.Publish(testCtx(t), "gone.chunk", "m-1", payload(1))
	if !errors.Is(err, ErrStreamGone) {
		t.Fatalf("publish to a deleted queue: error %v, want ErrStreamGone", err)
	}
	if d := time.Since(start); d > tryTimeout+time.Second {
		t.Fatalf("the publish took %v to fail", d)
	}
}
