package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/deploy"
	"github.com/shufflefl/shufflefl/driver/rundir"
	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
)

// certsOpts are the flags of `shufflefl certs`.
type certsOpts struct {
	pki.DevOptions
	out       string
	overwrite bool
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
	if err := rundir.Check(o.out, o.overwrite); err != nil {
		return fail(2, err)
	}
	files, err := pki.DevFiles(o.DevOptions, time.Now())
	if err != nil {
		if errors.Is(err, checks.ErrInvalid) {
			return fail(2, err)
		}
		return fail(1, err)
	}
	if err := pki.WriteDev(o.out, files, o.overwrite); err != nil {
		return fail(1, err)
	}
	// The shuffler's shard key (for --shuffler-shards), kept by the
	// shuffler and its shards only.
	keyPath := filepath.Join(o.out, deploy.ShardKeyFile)
	if o.overwrite {
		_ = os.Remove(keyPath)
	}
	if err := deploy.WriteShardKey(keyPath); err != nil {
		return fail(1, err)
	}
	// The NATS keys of the roles that use the engine, their permissions
	// and an external server's configuration (nats/).
	if err := deploy.WriteNATSKeys(o.out); err != nil {
		return fail(1, err)
	}
	fmt.Fprintf(stdout, "shufflefl certs: wrote %d files to %s: CA, shuffler, analyzer and NATS server certificates for %s (valid %v), analyzer HPKE key (%v), the shuffler's shard key, %d client keys and clients.json, and in nats/ the NATS keys of the analyzer, openers, shuffler and shards with nats-server.conf\n",
		len(files)+1, o.out, strings.Join(o.Hosts, ","), o.Validity, o.Suite, o.Clients)
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
	fs.IntVar(&o.Clients, "clients", 0, fmt.Sprintf("number of client key pairs, 1 to %d (required)", pki.MaxDevClients))
	fs.StringVar(&hosts, "hosts", strings.Join(pki.DefaultHosts, ","), "comma-separated DNS names and IP addresses of the shuffler and analyzer certificates")
	fs.StringVar(&suite, "suite", seal.DefaultSuite.String(), "HPKE suite of the analyzer's key: x25519 or xwing (post-quantum hybrid; 15x larger per-coordinate messages, see docs/DEPLOYMENT.md)")
	fs.StringVar(&valid, "validity", "720h", "how long the certificates are valid (a Go duration)")
	fs.BoolVar(&o.overwrite, "overwrite", false, "replace the credentials in a used --out directory")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, pki.DevHelp)
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
	if o.Clients < 1 || o.Clients > pki.MaxDevClients {
		return nil, checks.Invalidf("--clients must be in [1, %d], got %d", pki.MaxDevClients, o.Clients)
	}
	var err error
	if o.Hosts, err = pki.ParseHosts(hosts); err != nil {
		return nil, checks.Invalidf("--hosts: %s", strings.TrimPrefix(err.Error(), checks.ErrInvalid.Error()+": "))
	}
	if o.Suite, err = seal.ParseSuite(suite); err != nil {
		return nil, checks.Invalidf("--suite: %s", strings.TrimPrefix(err.Error(), checks.ErrInvalid.Error()+": "))
	}
	if o.Validity, err = time.ParseDuration(valid); err != nil || o.Validity <= 0 {
		return nil, checks.Invalidf("--validity must be a positive duration such as 720h, got %q", valid)
	}
	return &o, nil
}
