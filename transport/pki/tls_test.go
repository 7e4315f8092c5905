package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/checks"
)

// world is a CA with a shuffler and an analyzer certificate.
type world struct {
	ca                 *CA
	roots              *x509.CertPool
	shuffler, analyzer tls.Certificate
}

func newWorld(t *testing.T) *world {
	t.Helper()
	now := time.Now()
	ca, err := NewCA("test CA", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := ca.Issue(RoleShuffler, DefaultHosts, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	an, err := ca.Issue(RoleAnalyzer, DefaultHosts, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	roots, err := Pool(EncodeCertPEM(ca.Cert))
	if err != nil {
		t.Fatal(err)
	}
	return &world{ca: ca, roots: roots, shuffler: sh.TLSCertificate(), analyzer: an.TLSCertificate()}
}

// handshake runs a TLS handshake between the two configurations over
// loopback TCP and returns the client's and the server's errors; the
// client then writes a byte and the server reads it, so that the server's
// verdict on a TLS 1.3 client certificate (sent after the client's
// handshake returns) reaches both sides.
func handshake(client, server *tls.Config) (cerr, serr error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err, err
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer s.Close()
		s.SetDeadline(time.Now().Add(10 * time.Second))
		srv := tls.Server(s, server)
		err = srv.Handshake()
		if err == nil {
			_, err = srv.Read(make([]byte, 1))
		}
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return err, <-done
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	cl := tls.Client(c, client)
	cerr = cl.Handshake()
	if cerr == nil {
		if _, cerr = cl.Write([]byte{1}); cerr == nil {
			// Wait for the server's verdict: EOF after its read, or an alert.
			_, rerr := cl.Read(make([]byte, 1))
			if rerr != nil && !errors.Is(rerr, io.EOF) {
				cerr = rerr
			}
		}
	}
	cl.Close()
	return cerr, <-done
}

func TestMutualTLS(t *testing.T) {
	w := newWorld(t)
	other := newWorld(t) // another CA
	server := MutualServerConfig(w.analyzer, w.roots, RoleShuffler)
	tests := []struct {
		name   string
		client *tls.Config
		ok     bool
	}{
		{"shuffler to analyzer", MutualClientConfig(w.shuffler, w.roots, "localhost", RoleAnalyzer), true},
		{"by IPv4", MutualClientConfig(w.shuffler, w.roots, "127.0.0.1", RoleAnalyzer), true},
		{"by IPv6", MutualClientConfig(w.shuffler, w.roots, "::1", RoleAnalyzer), true},
		{"analyzer cert as client", MutualClientConfig(w.analyzer, w.roots, "localhost", RoleAnalyzer), false},
		{"client cert of another CA", MutualClientConfig(other.shuffler, w.roots, "localhost", RoleAnalyzer), false},
		{"no client cert", ClientConfig(w.roots, "localhost"), false},
		{"server name not in SANs", MutualClientConfig(w.shuffler, w.roots, "example.com", RoleAnalyzer), false},
		{"server of the wrong role", MutualClientConfig(w.shuffler, w.roots, "localhost", RoleShuffler), false},
		{"untrusted server", MutualClientConfig(w.shuffler, other.roots, "localhost", RoleAnalyzer), false},
		{"TLS 1.2 client", func() *tls.Config {
			c := MutualClientConfig(w.shuffler, w.roots, "localhost", RoleAnalyzer)
			c.MinVersion, c.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
			return c
		}(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cerr, serr := handshake(tt.client, server)
			if ok := cerr == nil && serr == nil; ok != tt.ok {
				t.Errorf("client: %v; server: %v; want ok=%v", cerr, serr, tt.ok)
			}
		})
	}
	// The role check names its failure.
	_, serr := handshake(MutualClientConfig(w.analyzer, w.roots, "localhost", RoleAnalyzer), server)
	if !errors.Is(serr, ErrWrongRole) {
		t.Errorf("wrong-role client: server error %v, want ErrWrongRole", serr)
	}
}

func TestClientToShuffler(t *testing.T) {
	w := newWorld(t)
	if cerr, serr := handshake(ClientConfig(w.roots, "localhost"), ServerConfig(w.shuffler)); cerr != nil || serr != nil {
		t.Fatalf("client to shuffler: %v / %v", cerr, serr)
	}
	// A client refuses the analyzer's certificate: it talks to the shuffler
	// only.
	cerr, _ := handshake(ClientConfig(w.roots, "localhost"), ServerConfig(w.analyzer))
	if !errors.Is(cerr, ErrWrongRole) {
		t.Errorf("client to analyzer: %v, want ErrWrongRole", cerr)
	}
	if ServerConfig(w.shuffler).MinVersion != tls.VersionTLS13 {
		t.Error("server accepts TLS below 1.3")
	}
}

func TestIssue(t *testing.T) {
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	ca, err := NewCA("dev", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	is, err := ca.Issue(RoleAnalyzer, []string{"localhost", "127.0.0.1", "::1", "analyzer.internal"}, now, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c := is.Cert
	if len(c.DNSNames) != 2 || len(c.IPAddresses) != 2 || !c.IPAddresses[1].Equal(net.IPv6loopback) {
		t.Errorf("SANs: %v %v", c.DNSNames, c.IPAddresses)
	}
	if r, ok := RoleOf(c); !ok || r != RoleAnalyzer {
		t.Errorf("role %q %v", r, ok)
	}
	if !c.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("certificate outlives its CA: %v > %v", c.NotAfter, ca.Cert.NotAfter)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: must(Pool(EncodeCertPEM(ca.Cert))), DNSName: "analyzer.internal", CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("verify: %v", err)
	}
	bad := []func() error{
		func() error { _, err := NewCA(" ", now, time.Hour); return err },
		func() error { _, err := NewCA("x", now, 0); return err },
		func() error { _, err := ca.Issue("client", DefaultHosts, now, time.Hour); return err },
		func() error { _, err := ca.Issue(RoleShuffler, nil, now, time.Hour); return err },
		func() error { _, err := ca.Issue(RoleShuffler, []string{"bad host"}, now, time.Hour); return err },
		func() error { _, err := ca.Issue(RoleShuffler, DefaultHosts, now, -time.Hour); return err },
		func() error { _, err := Pool(EncodeCertPEM(is.Cert)); return err }, // not a CA
	}
	for i, f := range bad {
		if err := f(); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("bad input %d: %v", i, err)
		}
	}
}

func TestParseHosts(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"localhost,127.0.0.1,::1", true},
		{"a.example.com, *.svc.local", true},
		{"", false},
		{"localhost,", false},
		{"-bad.com", false},
		{"a..b", false},
		{"under_score", false},
	}
	for _, tt := range tests {
		if _, err := ParseHosts(tt.in); (err == nil) != tt.ok {
			t.Errorf("%q: %v", tt.in, err)
		}
	}
}

func TestPEMRoundTrip(t *testing.T) {
	w := newWorld(t)
	keyPEM, err := EncodeKeyPEM(w.ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := KeyPair(EncodeCertPEM(w.ca.Cert), keyPEM); err != nil {
		t.Fatal(err)
	}
	other := newWorld(t)
	otherKey, _ := EncodeKeyPEM(other.ca.Key)
	if _, err := KeyPair(EncodeCertPEM(w.ca.Cert), otherKey); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("mismatched pair: %v", err)
	}
	for i, data := range [][]byte{nil, []byte("x"), keyPEM, append(EncodeCertPEM(w.ca.Cert), "junk"...)} {
		if _, err := ParseCertPEM(data); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("bad certificate %d: %v", i, err)
		}
	}
	if _, err := ParseKeyPEM(EncodeCertPEM(w.ca.Cert)); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("certificate as key: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
