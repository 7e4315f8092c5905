package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/shufflefl/shufflefl/checks"
)

// Role is the role a certificate is issued to.
type Role string

const (
	// RoleShuffler is the shuffler: a TLS server to clients and the
	// analyzer's mutual-TLS peer.
	RoleShuffler Role = "shuffler"
	// RoleAnalyzer is the analyzer: the shuffler's mutual-TLS peer.
	RoleAnalyzer Role = "analyzer"
	// RoleEngine is the NATS JetStream server (and, in a cluster, each
	// of its nodes, which authenticate one another with it): a TLS server
	// to the roles that use the engine. Neither the shuffler nor the
	// analyzer accepts it as a peer.
	RoleEngine Role = "nats"
)

// URI returns the role's URI subject alternative name,
// "urn:shufflefl:role:NAME".
func (r Role) URI() *url.URL {
	return &url.URL{Scheme: "urn", Opaque: "shufflefl:role:" + string(r)}
}

// valid reports whether r is a known role.
func (r Role) valid() bool { return r == RoleShuffler || r == RoleAnalyzer || r == RoleEngine }

// RoleOf returns the role named by a certificate's URI SAN (ok false if it
// names none, or more than one).
func RoleOf(cert *x509.Certificate) (Role, bool) {
	var found Role
	for _, u := range cert.URIs {
		if u.Scheme != "urn" || !strings.HasPrefix(u.Opaque, "shufflefl:role:") {
			continue
		}
		r := Role(strings.TrimPrefix(u.Opaque, "shufflefl:role:"))
		if !r.valid() || (found != "" && found != r) {
			return "", false
		}
		found = r
	}
	return found, found != ""
}

// DefaultHosts are the subject alternative names of a local run.
var DefaultHosts = []string{"localhost", "127.0.0.1", "::1"}

// CA is a certificate authority: its certificate and signing key.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// Issued is a certificate with its private key.
type Issued struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// serial returns a random 127-bit serial number.
func serial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("pki: serial number: %w", err)
	}
	return s.Add(s, big.NewInt(1)), nil
}

// checkValidity rejects a non-positive validity.
func checkValidity(validity time.Duration) error {
	if validity <= 0 {
		return checks.Invalidf("pki: validity must be positive, got %v", validity)
	}
	return nil
}

// NewCA makes a self-signed development CA named name, valid from one hour
// before now (clock skew) for validity.
func NewCA(name string, now time.Time, validity time.Duration) (*CA, error) {
	if strings.TrimSpace(name) == "" {
		return nil, checks.Invalidf("pki: CA name is empty")
	}
	if err := checkValidity(validity); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"shufflefl development"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	return &CA{Cert: cert, Key: key}, nil
}

// ParseHosts splits and checks a comma-separated host list: IP addresses,
// or DNS names of letters, digits, '-', '.' (and a leading "*." wildcard).
func ParseHosts(list string) ([]string, error) {
	var hosts []string
	for _, h := range strings.Split(list, ",") {
		h = strings.TrimSpace(h)
		if err := checkHost(h); err != nil {
			return nil, err
		}
		hosts = append(hosts, h)
	}
	return hosts, nil
}

func checkHost(h string) error {
	if h == "" {
		return checks.Invalidf("pki: empty host name")
	}
	if net.ParseIP(h) != nil {
		return nil
	}
	name := strings.TrimPrefix(h, "*.")
	if len(name) > 253 {
		return checks.Invalidf("pki: host name %q is longer than 253 bytes", h)
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return checks.Invalidf("pki: %q is neither an IP address nor a DNS name", h)
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return checks.Invalidf("pki: %q is neither an IP address nor a DNS name", h)
			}
		}
	}
	return nil
}

// Issue makes the certificate of role for hosts (DNS names or IP addresses;
// DefaultHosts for a local run), valid from one hour before now for
// validity but not beyond the CA's own expiry. The certificate is good for
// both server and client authentication: the shuffler and the analyzer
// both serve and dial one another.
func (ca *CA) Issue(role Role, hosts []string, now time.Time, validity time.Duration) (*Issued, error) {
	if !role.valid() {
		return nil, checks.Invalidf("pki: unknown role %q", role)
	}
	if len(hosts) == 0 {
		return nil, checks.Invalidf("pki: a %s certificate needs at least one host", role)
	}
	if err := checkValidity(validity); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: %s key: %w", role, err)
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: "shufflefl " + string(role), Organization: []string{"shufflefl development"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:         []*url.URL{role.URI()},
	}
	for _, h := range hosts {
		if err := checkHost(h); err != nil {
			return nil, err
		}
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("pki: %s certificate: %w", role, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: %s certificate: %w", role, err)
	}
	return &Issued{Cert: cert, Key: key}, nil
}

// PEM block types.
const (
	certPEMType = "CERTIFICATE"
	keyPEMType  = "PRIVATE KEY"
)

// EncodeCertPEM encodes a certificate as a PEM "CERTIFICATE" block.
func EncodeCertPEM(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: certPEMType, Bytes: cert.Raw})
}

// EncodeKeyPEM encodes a private key (ECDSA or Ed25519) as a PKCS #8
// "PRIVATE KEY" block. The result is a secret: write it with mode 0600.
func EncodeKeyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pki: encoding private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: keyPEMType, Bytes: der}), nil
}

// onePEM decodes exactly one block of type typ, with nothing but whitespace
// around it.
func onePEM(data []byte, typ string) ([]byte, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, checks.Invalidf("pki: no PEM block of type %q", typ)
	}
	if block.Type != typ {
		return nil, checks.Invalidf("pki: PEM block has type %q, want %q", block.Type, typ)
	}
	if len(block.Headers) != 0 {
		return nil, checks.Invalidf("pki: %q block has headers (encrypted keys are not supported)", typ)
	}
	if strings.TrimSpace(string(rest)) != "" {
		return nil, checks.Invalidf("pki: trailing data after the %q block", typ)
	}
	return block.Bytes, nil
}

// ParseCertPEM decodes exactly one PEM certificate.
func ParseCertPEM(data []byte) (*x509.Certificate, error) {
	der, err := onePEM(data, certPEMType)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, checks.Invalidf("pki: certificate: %v", err)
	}
	return cert, nil
}

// ParseKeyPEM decodes exactly one PKCS #8 private key (ECDSA or Ed25519).
func ParseKeyPEM(data []byte) (crypto.Signer, error) {
	der, err := onePEM(data, keyPEMType)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, checks.Invalidf("pki: private key: %v", err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, checks.Invalidf("pki: private key of type %T cannot sign", k)
	}
	return s, nil
}
