package pki

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/shufflefl/shufflefl/transport/seal"
)

// MaxDevClients bounds the clients of a development PKI (six-digit ids).
const MaxDevClients = 100000

// DevOptions describe a development PKI (`shufflefl certs`).
type DevOptions struct {
	Clients  int           // client key pairs, 1 to MaxDevClients
	Hosts    []string      // subject alternative names of the shuffler's, analyzer's and NATS server's certificates
	Suite    seal.Suite    // HPKE suite of the analyzer's key
	Validity time.Duration // how long the certificates are valid
}

// File is one credential file: its path relative to the PKI directory,
// its contents, and whether it is a secret (written with mode 0600).
type File struct {
	Name   string
	Data   []byte
	Secret bool
}

// devOutputs are the top-level files of a development PKI.
var devOutputs = []string{"ca.crt", "ca.key", "shuffler.crt", "shuffler.key", "analyzer.crt", "analyzer.key", "nats.crt", "nats.key",
	"analyzer-hpke.key", "analyzer-hpke.pub", "clients.json"}

// devClientDir holds the client keys; devClientKeyRE matches their names.
const devClientDir = "clients"

var devClientKeyRE = regexp.MustCompile(`^client-[0-9]{6}\.key$`)

// DevClientID is the id of client i (1-based) in a development PKI.
func DevClientID(i int) string { return fmt.Sprintf("client-%06d", i) }

// DevFiles generates every credential of a development PKI in memory (no
// I/O): a CA (whose key is among the files), the shuffler's, the
// analyzer's and the NATS server's (nats.crt) TLS certificates, the analyzer's HPKE key pair, one Ed25519
// key per client and the clients' registry, clients.json.
func DevFiles(o DevOptions, now time.Time) ([]File, error) {
	ca, err := NewCA("shufflefl development CA", now, o.Validity)
	if err != nil {
		return nil, err
	}
	caKey, err := EncodeKeyPEM(ca.Key)
	if err != nil {
		return nil, err
	}
	files := []File{{"ca.crt", EncodeCertPEM(ca.Cert), false}, {"ca.key", caKey, true}}
	for _, role := range []Role{RoleShuffler, RoleAnalyzer, RoleEngine} {
		is, err := ca.Issue(role, o.Hosts, now, o.Validity)
		if err != nil {
			return nil, err
		}
		key, err := EncodeKeyPEM(is.Key)
		if err != nil {
			return nil, err
		}
		files = append(files, File{string(role) + ".crt", EncodeCertPEM(is.Cert), false}, File{string(role) + ".key", key, true})
	}
	hk, err := seal.GenerateKey(o.Suite)
	if err != nil {
		return nil, err
	}
	hpriv, err := hk.MarshalPEM()
	if err != nil {
		return nil, err
	}
	files = append(files, File{"analyzer-hpke.key", hpriv, true}, File{"analyzer-hpke.pub", hk.Public().MarshalPEM(), false})
	reg := NewRegistry()
	for i := 1; i <= o.Clients; i++ {
		pub, priv, err := ed25519.GenerateKey(nil)
		if err != nil {
			return nil, fmt.Errorf("client key: %w", err)
		}
		id := DevClientID(i)
		if err := reg.Add(id, pub); err != nil {
			return nil, err
		}
		key, err := EncodeKeyPEM(priv)
		if err != nil {
			return nil, err
		}
		files = append(files, File{filepath.Join(devClientDir, id+".key"), key, true})
	}
	regJSON, err := reg.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(files, File{"clients.json", append(regJSON, '\n'), false}), nil
}

// WriteDev writes the files into dir (created with mode 0700 if absent),
// after removing the files of an earlier development PKI when overwrite is
// set (any other file is kept). Every file is created anew (O_EXCL),
// secrets with mode 0600 and the rest 0644.
func WriteDev(dir string, files []File, overwrite bool) error {
	if overwrite {
		if err := removeDev(dir); err != nil {
			return fmt.Errorf("--overwrite: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, devClientDir), 0o700); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	for _, f := range files {
		mode := os.FileMode(0o644)
		if f.Secret {
			mode = 0o600
		}
		path := filepath.Join(dir, f.Name)
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		if _, err := fh.Write(f.Data); err != nil {
			fh.Close()
			return fmt.Errorf("writing %s: %w", path, err)
		}
		if err := fh.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// removeDev removes the files of a development PKI (devOutputs and
// clients/client-NNNNNN.key), keeping any other file.
func removeDev(dir string) error {
	for _, n := range devOutputs {
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	cdir := filepath.Join(dir, devClientDir)
	entries, err := os.ReadDir(cdir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && devClientKeyRE.MatchString(e.Name()) {
			if err := os.Remove(filepath.Join(cdir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// DevHelp is the help of `shufflefl certs` (DevFiles, WriteDev) before its
// flags.
const DevHelp = `Usage: shufflefl certs --out DIR --clients N [flags]

Makes the credentials of a local deployment (development only: the CA key is
written next to the certificates it signs):

  ca.crt, ca.key                 a development CA (ECDSA P-256)
  shuffler.crt, shuffler.key     the shuffler's TLS certificate and key
  analyzer.crt, analyzer.key     the analyzer's TLS certificate and key
                                 (both for --hosts; mutual TLS between them)
  analyzer-hpke.key, .pub        the analyzer's HPKE key pair: clients and the
                                 shuffler seal values to the public key
  clients/client-NNNNNN.key      each client's Ed25519 request-signing key
  clients.json                   the registry of the clients' public keys,
                                 read by the shuffler

Private keys (*.key) are written with mode 0600. A non-empty --out is refused
unless --overwrite is given, which replaces these files (and any old client
keys) and keeps everything else.

Exit status: 0 success, 2 bad arguments or a used --out, 1 internal failure.
docs/DEPLOYMENT.md explains the design and the costs.

Examples:
  shufflefl certs --out creds --clients 1000
  shufflefl certs --out creds --clients 50 --hosts localhost,10.0.0.5 --suite xwing --overwrite

Flags:
`
