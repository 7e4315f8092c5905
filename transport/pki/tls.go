package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/shufflefl/shufflefl/checks"
)

// KeyPair returns the tls.Certificate of PEM-encoded certificate and key
// files (what `shufflefl certs` writes).
func KeyPair(certPEM, keyPEM []byte) (tls.Certificate, error) {
	if _, err := ParseCertPEM(certPEM); err != nil {
		return tls.Certificate{}, err
	}
	if _, err := ParseKeyPEM(keyPEM); err != nil {
		return tls.Certificate{}, err
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, checks.Invalidf("pki: key pair: %v", err)
	}
	return c, nil
}

// TLSCertificate returns the tls.Certificate of an issued certificate.
func (is *Issued) TLSCertificate() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{is.Cert.Raw}, PrivateKey: is.Key, Leaf: is.Cert}
}

// Pool returns a certificate pool holding the CA certificate(s) of a PEM
// file: the trust anchor of a deployment.
func Pool(caPEM []byte) (*x509.CertPool, error) {
	cert, err := ParseCertPEM(caPEM)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, checks.Invalidf("pki: %q is not a CA certificate", cert.Subject.CommonName)
	}
	p := x509.NewCertPool()
	p.AddCert(cert)
	return p, nil
}

// ErrWrongRole is wrapped by the handshake error when the peer's
// certificate chains to the CA but is issued to another role.
var ErrWrongRole = errors.New("pki: peer certificate has the wrong role")

// RequireRole returns a tls.Config VerifyConnection callback that accepts
// only a peer whose (already chain-verified) leaf names role: a NATS
// cluster node admits routes from RoleEngine certificates only.
func RequireRole(role Role) func(tls.ConnectionState) error { return requireRole(role) }

// requireRole returns a VerifyConnection callback that accepts only a peer
// whose (already chain-verified) leaf names role.
func requireRole(role Role) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return fmt.Errorf("%w: no peer certificate (want %s)", ErrWrongRole, role)
		}
		got, ok := RoleOf(cs.PeerCertificates[0])
		if !ok || got != role {
			return fmt.Errorf("%w: peer is %q, want %q", ErrWrongRole, got, role)
		}
		return nil
	}
}

// base is the common configuration: TLS 1.3 only.
func base() *tls.Config { return &tls.Config{MinVersion: tls.VersionTLS13} }

// ServerConfig is the configuration of a TLS server that authenticates
// itself with cert and does not ask for client certificates: the shuffler's
// endpoint for clients, which authenticate each request with their Ed25519
// signature instead (Verifier).
func ServerConfig(cert tls.Certificate) *tls.Config {
	c := base()
	c.Certificates = []tls.Certificate{cert}
	return c
}

// ClientConfig is the configuration of a federated-learning client dialling
// the shuffler: it trusts roots, checks serverName against the certificate,
// and accepts only a certificate issued to the shuffler.
func ClientConfig(roots *x509.CertPool, serverName string) *tls.Config {
	c := base()
	c.RootCAs = roots
	c.ServerName = serverName
	c.VerifyConnection = requireRole(RoleShuffler)
	return c
}

// MutualServerConfig is the configuration of a mutual-TLS server (the
// analyzer serving the shuffler, or the reverse): it presents cert, requires
// a client certificate chaining to roots, and accepts only one issued to
// peer.
func MutualServerConfig(cert tls.Certificate, roots *x509.CertPool, peer Role) *tls.Config {
	c := base()
	c.Certificates = []tls.Certificate{cert}
	c.ClientAuth = tls.RequireAndVerifyClientCert
	c.ClientCAs = roots
	c.VerifyConnection = requireRole(peer)
	return c
}

// MutualClientConfig is the configuration of a mutual-TLS client (the
// shuffler dialling the analyzer, or the reverse): it presents cert, trusts
// roots, checks serverName, and accepts only a server issued to peer.
func MutualClientConfig(cert tls.Certificate, roots *x509.CertPool, serverName string, peer Role) *tls.Config {
	c := base()
	c.Certificates = []tls.Certificate{cert}
	c.RootCAs = roots
	c.ServerName = serverName
	c.VerifyConnection = requireRole(peer)
	return c
}
