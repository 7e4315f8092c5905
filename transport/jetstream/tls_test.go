package jetstream

import (
	"crypto/tls"
	"crypto/x509"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/transport/pki"
)

// testPKI issues a CA and a certificate of each role for 127.0.0.1.
func testPKI(t *testing.T, roles ...pki.Role) ([]tls.Certificate, *x509.CertPool) {
	t.Helper()
	now := time.Now()
	ca, err := pki.NewCA("test CA", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var certs []tls.Certificate
	for _, r := range roles {
		is, err := ca.Issue(r, pki.DefaultHosts, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, is.TLSCertificate())
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return certs, roots
}

// TestTLSListener: a server WithTLS serves TLS only. A connection that
// verifies its certificate against the CA gets through; one without TLS,
// and one that trusts another CA, are refused; in-process connections
// need none.
func TestTLSListener(t *testing.T) {
	certs, roots := testPKI(t, pki.RoleEngine)
	_, otherRoots := testPKI(t, pki.RoleEngine)
	s := embedded(t, t.TempDir(), WithLoopbackPort(0), WithTLS(certs[0], roots, nil))
	if !strings.HasPrefix(s.URL(), "tls://") {
		t.Fatalf("URL %q, want tls://", s.URL())
	}
	c, err := Connect(s.URL(), WithRootCAs(roots))
	if err != nil {
		t.Fatalf("TLS connection: %v", err)
	}
	q, err := c.Queue(testCtx(t), QueueConfig{Name: "tls"})
	if err != nil {
		t.Fatal(err)
	}
	publishN(t, q, 0, 3)
	c.Close()
	plain := "nats://" + strings.TrimPrefix(s.URL(), "tls://")
	for _, tc := range []struct {
		name string
		url  string
		opts []ConnOption
	}{
		{"without TLS", plain, nil},
		{"trusting another CA", s.URL(), []ConnOption{WithRootCAs(otherRoots)}},
	} {
		if c, err := Connect(tc.url, tc.opts...); err == nil {
			c.Close()
			t.Errorf("%s: connected, want refused", tc.name)
		}
	}
	in, err := s.Connect()
	if err != nil {
		t.Fatalf("in-process connection: %v", err)
	}
	in.Close()
}

// TestClusterTLSRoutes: the nodes of a cluster WithTLS route to one
// another over mutual TLS (an R3 queue works), and a node whose
// certificate has another role is not admitted as a route.
func TestClusterTLSRoutes(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-node cluster takes seconds to elect")
	}
	certs, roots := testPKI(t, pki.RoleEngine, pki.RoleShuffler)
	nodes, urls := startCluster(t, 3, WithTLS(certs[0], roots, pki.RequireRole(pki.RoleEngine)))
	if !strings.HasPrefix(nodes[0].URL(), "tls://") {
		t.Fatalf("URL %q", nodes[0].URL())
	}
	c, err := ConnectWait(testCtx(t), urls, 30*time.Second, nil, WithReplicas(3), WithRootCAs(roots))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	q := openReplicated(t, c, "tls-repl")
	publishN(t, q, 0, 5)
	routes := func() []int {
		var rs []int
		for _, n := range nodes {
			rs = append(rs, n.ns.NumRoutes())
		}
		return rs
	}
	before := routes()
	// A node holding the CA's shuffler certificate tries to join.
	ports, err := FreeLoopbackPorts(2)
	if err != nil {
		t.Fatal(err)
	}
	intruder := embedded(t, t.TempDir(), WithLoopbackPort(ports[0]), WithServerName("intruder"),
		WithCluster(ClusterConfig{Name: "test-cluster", Port: ports[1], Routes: []string{nodes[0].ClusterURL()}}),
		WithTLS(certs[1], roots, nil))
	time.Sleep(2 * time.Second)
	if got := routes(); !slices.Equal(got, before) || intruder.ns.NumRoutes() != 0 {
		t.Fatalf("routes %v (intruder %d) after a shuffler-certificate node dialled in, want %v (0)", got, intruder.ns.NumRoutes(), before)
	}
}
