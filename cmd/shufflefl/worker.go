package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/shufflefl/shufflefl/driver/sim/remote"
	"github.com/shufflefl/shufflefl/transport/jetstream"
)

const workerUsage = `Usage: shufflefl worker --nats URL [flags]

Computes blocks of simulated clients for 'shufflefl run --nats URL' (or
--worker-procs) until interrupted: it takes a block of a round's clients from
the JetStream work queue, builds the run from its settings (loading the same
dataset itself, from the same --dataset and --data-dir), trains and encodes the
clients and returns their partial aggregate. The coordinator merges the blocks
in order, so the results are bit-identical to a run in one process, whatever
the number of workers. Start as many as you like, on any machine that reaches
the server and has the dataset.

Flags:
`

// runWorker is 'shufflefl worker'.
func runWorker(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	url := fs.String("nats", "", "NATS `URL` of the JetStream server the coordinator uses (required)")
	n := fs.Int("workers", 1, "blocks computed at once by this process")
	seedFile := fs.String("nats-seed", "", "the `file` of the NATS user key to prove to the server ('shufflefl run --worker-procs' gives its workers the run's own key)")
	ackWait := fs.Duration("ack-wait", 30*time.Second, "how long a block may go unanswered before the server gives it to another worker")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, workerUsage)
			printFlags(stdout, fs)
			return 0
		}
		fmt.Fprintf(stderr, "shufflefl worker: %s (run 'shufflefl worker --help' for the flags)\n", flagError(err))
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "shufflefl worker: unexpected argument %q\n", fs.Arg(0))
		return 2
	case *url == "":
		fmt.Fprintln(stderr, "shufflefl worker: --nats URL is required")
		return 2
	case *n < 1:
		fmt.Fprintf(stderr, "shufflefl worker: --workers %d: need at least 1\n", *n)
		return 2
	}
	copts := []jetstream.ConnOption{jetstream.WithName("shufflefl worker " + strconv.Itoa(os.Getpid()))}
	if *seedFile != "" {
		copts = append(copts, jetstream.WithUserSeedFile(*seedFile))
	}
	conn, err := jetstream.Connect(*url, copts...)
	if err != nil {
		fmt.Fprintf(stderr, "shufflefl worker: %s\n", oneLine(err))
		return 1
	}
	defer conn.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := remote.ServeWorker(ctx, conn, remote.WorkerOptions{Goroutines: *n, AckWait: *ackWait, Log: stderr}); err != nil {
		fmt.Fprintf(stderr, "shufflefl worker: %s\n", oneLine(err))
		return 1
	}
	return 0
}
