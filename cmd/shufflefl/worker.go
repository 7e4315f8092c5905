package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/protocol"
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
	conn, err := jetstream.Connect(*url, jetstream.WithName("shufflefl worker "+strconv.Itoa(os.Getpid())))
	if err != nil {
		fmt.Fprintf(stderr, "shufflefl worker: %s\n", oneLine(err))
		return 1
	}
	defer conn.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := sim.ServeWorker(ctx, conn, sim.WorkerOptions{Goroutines: *n, AckWait: *ackWait, Log: stderr}); err != nil {
		fmt.Fprintf(stderr, "shufflefl worker: %s\n", oneLine(err))
		return 1
	}
	return 0
}

// simFlags are run's flags for remote workers.
type simFlags struct {
	procs int
	nats  string
}

// register binds the flags to fs.
func (s *simFlags) register(fs *flag.FlagSet) {
	fs.Func("worker-procs", "run the clients in `N` 'shufflefl worker' processes over an embedded NATS JetStream server (default 0: in this process); results are identical", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a count of processes (0 or more)", v)
		}
		s.procs = n
		return nil
	})
	fs.StringVar(&s.nats, "nats", s.nats, "run the clients on the 'shufflefl worker --nats URL' processes of the JetStream server at `URL` (with --worker-procs, start those locally too)")
}

// attach connects eng to its remote workers, starting the embedded server
// and the local worker processes it asks for; the returned function stops
// them. Without either flag it does nothing.
func (s *simFlags) attach(eng *sim.Engine, cfg sim.Config, stderr io.Writer) (func(), error) {
	if s.procs == 0 && s.nats == "" {
		return func() {}, nil
	}
	if _, ok := eng.Protocol().(protocol.Clustered); ok || cfg.Faithful {
		fmt.Fprintln(stderr, "shufflefl: note: faithful and clustered rounds run in this process, not on the workers")
	}
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	url, conn, err := s.connect(&stops)
	if err == nil {
		err = startWorkerProcs(s.procs, url, stderr, &stops)
	}
	if err == nil {
		var r *sim.Remote
		if r, err = eng.SetRemote(context.Background(), conn, sim.RemoteOptions{}); err == nil {
			stops = append(stops, func() {
				if err := r.Close(); err != nil {
					fmt.Fprintf(stderr, "shufflefl: remote workers: %s\n", oneLine(err))
				}
			})
		}
	}
	if err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// connect joins the server at --nats or starts an embedded one on the
// loopback interface (its store in a temporary directory), and returns its
// URL and a connection.
func (s *simFlags) connect(stops *[]func()) (string, *jetstream.Conn, error) {
	if s.nats != "" {
		conn, err := jetstream.Connect(s.nats, jetstream.WithName("shufflefl run"))
		if err != nil {
			return "", nil, err
		}
		*stops = append(*stops, conn.Close)
		return s.nats, conn, nil
	}
	dir, err := os.MkdirTemp("", "shufflefl-nats-")
	if err != nil {
		return "", nil, fmt.Errorf("embedded JetStream: %w", err)
	}
	*stops = append(*stops, func() { os.RemoveAll(dir) })
	srv, err := jetstream.Embedded(dir, jetstream.WithLoopbackPort(0))
	if err != nil {
		return "", nil, err
	}
	*stops = append(*stops, srv.Shutdown)
	conn, err := srv.Connect()
	if err != nil {
		return "", nil, err
	}
	*stops = append(*stops, conn.Close)
	return srv.URL(), conn, nil
}

// startWorkerProcs starts n 'shufflefl worker' processes on url, their
// output to stderr; stopping them sends SIGTERM and waits.
func startWorkerProcs(n int, url string, stderr io.Writer, stops *[]func()) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("starting workers: %w", err)
	}
	for range n {
		cmd := exec.Command(exe, "worker", "--nats", url)
		cmd.Stdout, cmd.Stderr = stderr, stderr
		cmd.SysProcAttr = workerProcAttr()
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting a worker: %w", err)
		}
		*stops = append(*stops, func() {
			if cmd.Process.Signal(syscall.SIGTERM) != nil {
				_ = cmd.Process.Kill()
			}
			_ = cmd.Wait()
		})
	}
	return nil
}
