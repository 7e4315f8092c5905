package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"time"

	"github.com/shufflefl/shufflefl/driver/deploy"
	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/seal"
)

const openerUsage = `Usage: shufflefl opener --nats URL --key FILE [flags]

Opens the analyzer's batches for 'shufflefl analyzer --nats URL' (or
'deploy-local --openers N') until interrupted: it takes a chunk of a round's
shuffled batch from the analyzer's JetStream queue, opens every sealed message
with the analyzer's HPKE private key, and returns the opened values; the
analyzer assembles the chunks in batch order, so the released model is the
same bit for bit whatever the number of openers. An opener keeps no state:
start as many as you like, on any machine that reaches the server. They hold
the analyzer's key and are part of its trust domain (docs/DEPLOYMENT.md,
"Openers"); the chunks carry the run's settings, so no run flags are needed.

Flags:
`

// runOpener is 'shufflefl opener'.
func runOpener(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("opener", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	url := fs.String("nats", "", "NATS `URL` of the analyzer's JetStream server (required)")
	keyFile := fs.String("key", "", "`file` holding the analyzer's HPKE private key (PEM, as 'shufflefl certs' writes analyzer-hpke.key; required)")
	n := fs.Int("workers", runtime.GOMAXPROCS(0), "chunks opened at once by this process")
	replicas := fs.Int("nats-replicas", 0, "`N` servers of the JetStream cluster store each stream the opener creates (give the analyzer's --nats-replicas)")
	caFile := fs.String("nats-ca", "", "the CA certificate `file` that verifies the NATS server's TLS certificate (ca.crt of a 'shufflefl certs' directory); with it, a server without TLS is refused")
	seedFile := fs.String("nats-seed", "", "the `file` of the opener's NATS key (nats/opener.nk of a 'shufflefl certs' directory); required by a server that admits only the deployment's keys")
	ackWait := fs.Duration("ack-wait", jetstream.DefaultAckWait, "how long a chunk may go unanswered before the server gives it to another opener (give every opener the same)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, openerUsage)
			printFlags(stdout, fs)
			return 0
		}
		fmt.Fprintf(stderr, "shufflefl opener: %s (run 'shufflefl opener --help' for the flags)\n", flagError(err))
		return 2
	}
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case *url == "":
		err = errors.New("--nats URL is required")
	case *keyFile == "":
		err = errors.New("--key FILE is required")
	case *n < 1:
		err = fmt.Errorf("--workers %d: need at least 1", *n)
	case *ackWait < time.Millisecond:
		err = fmt.Errorf("--ack-wait %v: need at least 1ms", *ackWait)
	case *replicas < 0 || *replicas > jetstream.MaxReplicas:
		err = fmt.Errorf("--nats-replicas %d: want 1 to %d (0: 1), the analyzer's", *replicas, jetstream.MaxReplicas)
	}
	var key *seal.PrivateKey
	if err == nil {
		key, err = readOpenerKey(*keyFile)
	}
	if err != nil {
		fmt.Fprintf(stderr, "shufflefl opener: %s\n", oneLine(err))
		return 2
	}
	copts := []jetstream.ConnOption{jetstream.WithName(fmt.Sprintf("shufflefl opener %d", os.Getpid()))}
	if *seedFile != "" {
		copts = append(copts, jetstream.WithUserSeedFile(*seedFile))
	}
	if *caFile != "" {
		copts = append(copts, jetstream.WithRootCAFile(*caFile))
	}
	if *replicas > 0 {
		copts = append(copts, jetstream.WithReplicas(*replicas))
	}
	conn, err := jetstream.Connect(*url, copts...)
	if err != nil {
		fmt.Fprintf(stderr, "shufflefl opener: %s\n", oneLine(err))
		return 1
	}
	defer conn.Close()
	ctx, stop := signalContext()
	defer stop()
	lg := log.New(stderr, "", log.LstdFlags|log.Lmicroseconds)
	if err := deploy.ServeOpener(ctx, deploy.OpenerConfig{Conn: conn, Key: key, Workers: *n, AckWait: *ackWait, Logf: lg.Printf, Restricted: *seedFile != ""}); err != nil {
		fmt.Fprintf(stderr, "shufflefl opener: %s\n", oneLine(err))
		return 1
	}
	return 0
}

// readOpenerKey reads the analyzer's HPKE private key from a PEM file.
func readOpenerKey(path string) (*seal.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--key: %w", err)
	}
	k, err := seal.ParsePrivateKeyPEM(b)
	if err != nil {
		return nil, fmt.Errorf("--key %s: %w", path, err)
	}
	return k, nil
}
