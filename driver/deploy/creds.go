package deploy

import (
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// Credentials are a deployment's keys and certificates, as `shufflefl
// certs` writes them. A real deployment gives each role only its own; the
// fields a role does not need may be left empty.
type Credentials struct {
	// Roots trusts the deployment's CA.
	Roots *x509.CertPool
	// Shuffler and Analyzer are the roles' TLS certificates.
	Shuffler, Analyzer tls.Certificate
	// HPKE is the analyzer's private key (the analyzer only); HPKEPublic
	// its public key (everyone).
	HPKE       *seal.PrivateKey
	HPKEPublic *seal.PublicKey
	// Registry holds the clients' public keys (the shuffler).
	Registry *pki.Registry
	// Clients are the clients' signing keys by id (each client its own).
	Clients map[string]ed25519.PrivateKey
}

// ServerName is the name the roles' certificates are checked against.
const ServerName = "localhost"

// ClientID is the id of the client with 0-based index i, as `shufflefl
// certs` names it (client-000001 for index 0).
func ClientID(i int) string { return fmt.Sprintf("client-%06d", i+1) }

// ClientIndex is the inverse of ClientID.
func ClientIndex(id string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "client-"))
	if err != nil || !strings.HasPrefix(id, "client-") || n < 1 {
		return 0, checks.Invalidf("client id %q is not client-NNNNNN", id)
	}
	return n - 1, nil
}

// NewDevCredentials makes a development CA, both roles' certificates for
// 127.0.0.1, ::1 and localhost, the analyzer's HPKE key pair and n client
// keys with their registry, in memory (tests and deploy-local).
func NewDevCredentials(n int, suite seal.Suite) (*Credentials, error) {
	now := time.Now()
	ca, err := pki.NewCA("shufflefl development CA", now, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	c := &Credentials{Roots: x509.NewCertPool(), Registry: pki.NewRegistry(), Clients: map[string]ed25519.PrivateKey{}}
	c.Roots.AddCert(ca.Cert)
	for _, r := range []pki.Role{pki.RoleShuffler, pki.RoleAnalyzer} {
		is, err := ca.Issue(r, pki.DefaultHosts, now, 24*time.Hour)
		if err != nil {
			return nil, err
		}
		if r == pki.RoleShuffler {
			c.Shuffler = is.TLSCertificate()
		} else {
			c.Analyzer = is.TLSCertificate()
		}
	}
	if c.HPKE, err = seal.GenerateKey(suite); err != nil {
		return nil, err
	}
	c.HPKEPublic = c.HPKE.Public()
	for i := 0; i < n; i++ {
		pub, priv, err := ed25519.GenerateKey(nil)
		if err != nil {
			return nil, err
		}
		if err := c.Registry.Add(ClientID(i), pub); err != nil {
			return nil, err
		}
		c.Clients[ClientID(i)] = priv
	}
	return c, nil
}

// LoadCredentials reads what role needs from a `shufflefl certs` directory:
// "analyzer" (CA, its certificate, the HPKE key pair), "shuffler" (CA, its
// certificate, the HPKE public key, the registry) or "client" (CA, the HPKE
// public key, and the key of client id).
func LoadCredentials(dir, role, id string) (*Credentials, error) {
	read := func(name string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("credentials: %w", err)
		}
		return b, nil
	}
	c := &Credentials{}
	ca, err := read("ca.crt")
	if err != nil {
		return nil, err
	}
	if c.Roots, err = pki.Pool(ca); err != nil {
		return nil, err
	}
	pub, err := read("analyzer-hpke.pub")
	if err != nil {
		return nil, err
	}
	if c.HPKEPublic, err = seal.ParsePublicKeyPEM(pub); err != nil {
		return nil, err
	}
	pair := func(name string) (tls.Certificate, error) {
		crt, err := read(name + ".crt")
		if err != nil {
			return tls.Certificate{}, err
		}
		key, err := read(name + ".key")
		if err != nil {
			return tls.Certificate{}, err
		}
		return pki.KeyPair(crt, key)
	}
	switch role {
	case "analyzer":
		if c.Analyzer, err = pair("analyzer"); err != nil {
			return nil, err
		}
		k, err := read("analyzer-hpke.key")
		if err != nil {
			return nil, err
		}
		if c.HPKE, err = seal.ParsePrivateKeyPEM(k); err != nil {
			return nil, err
		}
	case "shuffler":
		if c.Shuffler, err = pair("shuffler"); err != nil {
			return nil, err
		}
		r, err := read("clients.json")
		if err != nil {
			return nil, err
		}
		if c.Registry, err = pki.ParseRegistry(r); err != nil {
			return nil, err
		}
	case "client":
		k, err := read(filepath.Join("clients", id+".key"))
		if err != nil {
			return nil, err
		}
		key, err := pki.ParseClientKeyPEM(k)
		if err != nil {
			return nil, err
		}
		c.Clients = map[string]ed25519.PrivateKey{id: key}
	default:
		return nil, checks.Invalidf("credentials: unknown role %q", role)
	}
	return c, nil
}

// The shuffler-to-analyzer link carries a round's whole batch (63 MB for
// 1,000 whole reports of d = 7,850; 604 MB per-coordinate) on one stream.
// Its HTTP/2 windows are static and larger than a batch chunk
// (forwardChunkBytes): a chunk is sent without waiting for a window update,
// and no BDP estimation adjusts the windows while a chunk is in flight.
// Every window round trip costs a hop through several goroutines (the
// receiver's reader and handler, its writer, the sender's reader and
// writer), and on a loaded machine, with a thousand client connections
// runnable, each hop waits its turn.
const (
	linkStreamWindow = 4 * forwardChunkBytes
	linkConnWindow   = 2 * linkStreamWindow
)

// linkServerOptions are the analyzer server's options for the link.
func linkServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.StaticStreamWindowSize(linkStreamWindow), grpc.StaticConnWindowSize(linkConnWindow)}
}

// linkDialOptions are the shuffler's dial options for the link.
func linkDialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithStaticStreamWindowSize(linkStreamWindow), grpc.WithStaticConnWindowSize(linkConnWindow)}
}

// AnalyzerServer returns the analyzer's gRPC server (mutual TLS: only the
// shuffler may connect) serving a.
func AnalyzerServer(c *Credentials, a *Analyzer) *grpc.Server {
	opts := append(wire.ServerOptions(0), linkServerOptions()...)
	opts = append(opts, grpc.Creds(credentials.NewTLS(pki.MutualServerConfig(c.Analyzer, c.Roots, pki.RoleShuffler))))
	g := grpc.NewServer(opts...)
	g.RegisterService(wire.Strict(&wire.Analyzer_ServiceDesc), a)
	return g
}

// ShufflerServers returns the shuffler's two gRPC servers: the one for
// clients (TLS; clients sign their requests, and a stream is admitted on
// its signed header before its body is read: admission.go) and the control one for the
// analyzer (mutual TLS: only the analyzer may connect).
func ShufflerServers(c *Credentials, s *Shuffler) (public, control *grpc.Server) {
	public = grpc.NewServer(append(wire.ServerOptions(0), publicServerOptions(s, credentials.NewTLS(pki.ServerConfig(c.Shuffler)))...)...)
	public.RegisterService(wire.Strict(&wire.Shuffler_ServiceDesc), s)
	control = grpc.NewServer(append(wire.ServerOptions(0), grpc.Creds(credentials.NewTLS(pki.MutualServerConfig(c.Shuffler, c.Roots, pki.RoleAnalyzer))))...)
	control.RegisterService(wire.Strict(&wire.ShufflerControl_ServiceDesc), s)
	return public, control
}

// DialAnalyzer connects the shuffler to the analyzer at addr (mutual TLS).
func DialAnalyzer(c *Credentials, addr string) (*grpc.ClientConn, error) {
	opts := append(wire.DialOptions(0), linkDialOptions()...)
	return grpc.NewClient(addr, append(opts, grpc.WithTransportCredentials(credentials.NewTLS(pki.MutualClientConfig(c.Shuffler, c.Roots, ServerName, pki.RoleAnalyzer))))...)
}

// DialShufflerControl connects the analyzer to the shuffler's control
// service at addr (mutual TLS).
func DialShufflerControl(c *Credentials, addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, append(wire.DialOptions(0), grpc.WithTransportCredentials(credentials.NewTLS(pki.MutualClientConfig(c.Analyzer, c.Roots, ServerName, pki.RoleShuffler))))...)
}

// DialShuffler connects a client to the shuffler at addr (TLS, the
// shuffler's certificate checked).
func DialShuffler(c *Credentials, addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, append(wire.DialOptions(0), grpc.WithTransportCredentials(credentials.NewTLS(pki.ClientConfig(c.Roots, ServerName))))...)
}
