package main

import (
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"shufflefl/checks"
	"shufflefl/pki"
	"shufflefl/seal"
)

const certsUsage = `Usage: shufflefl certs --out DIR --clients N [flags]

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

Flags:
`

// certsMaxClients bounds --clients (six-digit client ids).
const certsMaxClients = 100000

// certsOutputs are the top-level files `shufflefl certs` writes.
var certsOutputs = []string{"ca.crt", "ca.key", "shuffler.crt", "shuffler.key", "analyzer.crt", "analyzer.key",
	"analyzer-hpke.key", "analyzer-hpke.pub", "clients.json"}

// certsClientDir holds the client keys; certsClientKeyRE matches their names.
const certsClientDir = "clients"

var certsClientKeyRE = regexp.MustCompile(`^client-[0-9]{6}\.key$`)

// certsOpts are the flags of `shufflefl certs`.
type certsOpts struct {
	out       string
	clients   int
	hosts     []string
	suite     seal.Suite
	validity  time.Duration
	overwrite bool
}

// certFile is one file to write: its path relative to --out, its contents,
// and whether it is a secret (mode 0600).
type certFile struct {
	name   string
	data   []byte
	secret bool
}

// runCerts implements `shufflefl certs`.
func runCerts(args []string, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "shufflefl certs: %s\n", oneLine(err))
		return code
	}
	o, err := parseCertsFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return fail(2, err)
	}
	if err := checkOutDir(o.out, o.overwrite); err != nil {
		return fail(2, err)
	}
	files, err := makeCerts(o, time.Now())
	if err != nil {
		if errors.Is(err, checks.ErrInvalid) {
			return fail(2, err)
		}
		return fail(1, err)
	}
	if err := writeCerts(o.out, files, o.overwrite); err != nil {
		return fail(1, err)
	}
	fmt.Fprintf(stdout, "shufflefl certs: wrote %d files to %s: CA, shuffler and analyzer certificates for %s (valid %v), analyzer HPKE key (%v), %d client keys and clients.json\n",
		len(files), o.out, strings.Join(o.hosts, ","), o.validity, o.suite, o.clients)
	return 0
}

// parseCertsFlags parses and validates the flags; every error wraps
// checks.ErrInvalid (or is flag.ErrHelp after the help was printed).
func parseCertsFlags(args []string, stdout io.Writer) (*certsOpts, error) {
	fs := flag.NewFlagSet("shufflefl certs", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		o                   certsOpts
		hosts, suite, valid string
	)
	fs.StringVar(&o.out, "out", "", "directory to write the credentials to (required)")
	fs.IntVar(&o.clients, "clients", 0, fmt.Sprintf("number of client key pairs, 1 to %d (required)", certsMaxClients))
	fs.StringVar(&hosts, "hosts", strings.Join(pki.DefaultHosts, ","), "comma-separated DNS names and IP addresses of the shuffler and analyzer certificates")
	fs.StringVar(&suite, "suite", seal.DefaultSuite.String(), "HPKE suite of the analyzer's key: x25519 or xwing (post-quantum hybrid; 15x larger per-coordinate messages, see docs/DEPLOYMENT.md)")
	fs.StringVar(&valid, "validity", "720h", "how long the certificates are valid (a Go duration)")
	fs.BoolVar(&o.overwrite, "overwrite", false, "replace the credentials in a used --out directory")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, certsUsage)
			printFlags(stdout, fs)
			return nil, err
		}
		return nil, checks.Invalidf("%s (run 'shufflefl certs --help')", flagError(err))
	}
	if fs.NArg() > 0 {
		return nil, checks.Invalidf("unexpected argument %q (run 'shufflefl certs --help')", fs.Arg(0))
	}
	if o.out == "" {
		return nil, checks.Invalidf("--out is required (the directory to write the credentials to)")
	}
	if o.clients < 1 || o.clients > certsMaxClients {
		return nil, checks.Invalidf("--clients must be in [1, %d], got %d", certsMaxClients, o.clients)
	}
	var err error
	if o.hosts, err = pki.ParseHosts(hosts); err != nil {
		return nil, checks.Invalidf("--hosts: %s", strings.TrimPrefix(err.Error(), checks.ErrInvalid.Error()+": "))
	}
	if o.suite, err = seal.ParseSuite(suite); err != nil {
		return nil, checks.Invalidf("--suite: %s", strings.TrimPrefix(err.Error(), checks.ErrInvalid.Error()+": "))
	}
	if o.validity, err = time.ParseDuration(valid); err != nil || o.validity <= 0 {
		return nil, checks.Invalidf("--validity must be a positive duration such as 720h, got %q", valid)
	}
	return &o, nil
}

// certsClientID is the id of client i (1-based).
func certsClientID(i int) string { return fmt.Sprintf("client-%06d", i) }

// makeCerts generates every credential in memory (no I/O).
func makeCerts(o *certsOpts, now time.Time) ([]certFile, error) {
	ca, err := pki.NewCA("shufflefl development CA", now, o.validity)
	if err != nil {
		return nil, err
	}
	caKey, err := pki.EncodeKeyPEM(ca.Key)
	if err != nil {
		return nil, err
	}
	files := []certFile{{"ca.crt", pki.EncodeCertPEM(ca.Cert), false}, {"ca.key", caKey, true}}
	for _, role := range []pki.Role{pki.RoleShuffler, pki.RoleAnalyzer} {
		is, err := ca.Issue(role, o.hosts, now, o.validity)
		if err != nil {
			return nil, err
		}
		key, err := pki.EncodeKeyPEM(is.Key)
		if err != nil {
			return nil, err
		}
		files = append(files, certFile{string(role) + ".crt", pki.EncodeCertPEM(is.Cert), false},
			certFile{string(role) + ".key", key, true})
	}
	hk, err := seal.GenerateKey(o.suite)
	if err != nil {
		return nil, err
	}
	hpriv, err := hk.MarshalPEM()
	if err != nil {
		return nil, err
	}
	files = append(files, certFile{"analyzer-hpke.key", hpriv, true}, certFile{"analyzer-hpke.pub", hk.Public().MarshalPEM(), false})
	reg := pki.NewRegistry()
	for i := 1; i <= o.clients; i++ {
		pub, priv, err := ed25519.GenerateKey(nil)
		if err != nil {
			return nil, fmt.Errorf("client key: %w", err)
		}
		id := certsClientID(i)
		if err := reg.Add(id, pub); err != nil {
			return nil, err
		}
		key, err := pki.EncodeKeyPEM(priv)
		if err != nil {
			return nil, err
		}
		files = append(files, certFile{filepath.Join(certsClientDir, id+".key"), key, true})
	}
	regJSON, err := reg.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(files, certFile{"clients.json", append(regJSON, '\n'), false}), nil
}

// writeCerts writes the files into dir (created with mode 0700 if absent),
// after removing the outputs of an earlier `shufflefl certs` when overwrite
// is set. Every file is created anew (O_EXCL), secrets with mode 0600 and
// the rest 0644.
func writeCerts(dir string, files []certFile, overwrite bool) error {
	if overwrite {
		if err := removeCertsOutputs(dir); err != nil {
			return fmt.Errorf("--overwrite: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, certsClientDir), 0o700); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	for _, f := range files {
		mode := os.FileMode(0o644)
		if f.secret {
			mode = 0o600
		}
		path := filepath.Join(dir, f.name)
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		if _, err := fh.Write(f.data); err != nil {
			fh.Close()
			return fmt.Errorf("writing %s: %w", path, err)
		}
		if err := fh.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// removeCertsOutputs removes what `shufflefl certs` writes (certsOutputs
// and clients/client-NNNNNN.key), keeping any other file.
func removeCertsOutputs(dir string) error {
	for _, n := range certsOutputs {
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	cdir := filepath.Join(dir, certsClientDir)
	entries, err := os.ReadDir(cdir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && certsClientKeyRE.MatchString(e.Name()) {
			if err := os.Remove(filepath.Join(cdir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}
