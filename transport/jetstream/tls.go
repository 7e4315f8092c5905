package jetstream

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
)

// tlsTimeout is how long, in seconds, a server waits for a connection's
// TLS handshake.
const tlsTimeout = 5

// WithTLS makes every network listener of the server require TLS 1.3 with
// cert: the client listener of [WithLoopbackPort] (its [Server.URL] is then
// a tls:// URL) and, for a cluster node ([WithCluster]), the route
// listener, whose peers must present a certificate that roots verifies and
// that peer accepts (nil: any such certificate; a deployment passes
// pki.RequireRole(pki.RoleEngine)), so that the nodes authenticate one
// another. In-process connections ([Server.Connect]) need no TLS: they
// never leave the process.
func WithTLS(cert tls.Certificate, roots *x509.CertPool, peer func(tls.ConnectionState) error) Option {
	return func(c *serverConfig) error {
		if len(cert.Certificate) == 0 || cert.PrivateKey == nil {
			return errors.New("tls: empty certificate")
		}
		if roots == nil {
			return errors.New("tls: no root certificates to verify cluster peers")
		}
		c.tlsCert, c.tlsRoots, c.tlsPeer = &cert, roots, peer
		return nil
	}
}

// serverTLS is the client listener's TLS configuration.
func (c serverConfig) serverTLS() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{*c.tlsCert}, MinVersion: tls.VersionTLS13}
}

// routeTLS is the route listener's (and route dialer's) TLS
// configuration: mutual, against the configured roots.
func (c serverConfig) routeTLS() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{*c.tlsCert}, MinVersion: tls.VersionTLS13,
		RootCAs: c.tlsRoots, ClientCAs: c.tlsRoots, ClientAuth: tls.RequireAndVerifyClientCert,
		VerifyConnection: c.tlsPeer,
	}
}

// WithRootCAs makes the connection require TLS and verify the server's
// certificate against roots: a server without TLS, or with a certificate
// roots does not verify, is refused.
func WithRootCAs(roots *x509.CertPool) ConnOption {
	return func(c *connConfig) error {
		if roots == nil {
			return errors.New("tls: no root certificates")
		}
		c.roots = roots
		return nil
	}
}

// WithRootCAFile is [WithRootCAs] with the PEM certificates of a file (a
// deployment's ca.crt).
func WithRootCAFile(path string) ConnOption {
	return func(c *connConfig) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("tls: root certificates: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return fmt.Errorf("tls: root certificates: %s holds no PEM certificate", path)
		}
		c.roots = pool
		return nil
	}
}

// tlsOption is the nats option of a connection that requires TLS.
func (c connConfig) tlsOption() nats.Option {
	return nats.Secure(&tls.Config{RootCAs: c.roots, MinVersion: tls.VersionTLS13})
}
