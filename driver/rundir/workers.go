package rundir

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/driver/sim/remote"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/transport/jetstream"
)

// Workers are run's remote workers (--worker-procs, --nats): the engine's
// client blocks go to 'shufflefl worker' processes over NATS JetStream, and
// the results are bit-identical to a run in one process.
type Workers struct {
	// Procs is the number of local worker processes to start (0: none).
	Procs int
	// NATS is the URL of an external JetStream server ("": an embedded one).
	NATS string
	// Command is the command line that starts one worker, to which
	// "--nats URL --nats-seed FILE" is appended (e.g. the running
	// executable and "worker").
	Command []string
	// Seed is the file of the NATS user key to prove to an external server
	// (--nats-seed; "": none). An embedded server admits only a key made
	// for the run, which the local workers get in a 0600 file.
	Seed string
	// seedFile is the embedded server's key file for the local workers.
	seedFile string
}

// RegisterFlags binds --worker-procs and --nats to fs.
func (s *Workers) RegisterFlags(fs *flag.FlagSet) {
	fs.Func("worker-procs", "run the clients in `N` 'shufflefl worker' processes over an embedded NATS JetStream server (default 0: in this process); results are identical", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a count of processes (0 or more)", v)
		}
		s.Procs = n
		return nil
	})
	fs.StringVar(&s.NATS, "nats", s.NATS, "run the clients on the 'shufflefl worker --nats URL' processes of the JetStream server at `URL` (with --worker-procs, start those locally too)")
	fs.StringVar(&s.Seed, "nats-seed", s.Seed, "the `file` of the NATS user key to prove to the --nats server (a server that admits only known keys)")
}

// Attach connects eng to its remote workers, starting the embedded server
// and the local worker processes it asks for; the returned function stops
// them. Without either flag it does nothing.
func (s *Workers) Attach(eng *sim.Engine, cfg round.Config, stderr io.Writer) (func(), error) {
	if s.Procs == 0 && s.NATS == "" {
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
		err = s.start(url, stderr, &stops)
	}
	if err == nil {
		var r *remote.Remote
		if r, err = remote.Attach(context.Background(), eng, conn, remote.Options{}); err == nil {
			stops = append(stops, func() {
				if err := r.Close(); err != nil {
					fmt.Fprintf(stderr, "shufflefl: remote workers: %s\n", strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
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
func (s *Workers) connect(stops *[]func()) (string, *jetstream.Conn, error) {
	if s.NATS != "" {
		opts := []jetstream.ConnOption{jetstream.WithName("shufflefl run")}
		if s.Seed != "" {
			opts = append(opts, jetstream.WithUserSeedFile(s.Seed))
			s.seedFile = s.Seed
		}
		conn, err := jetstream.Connect(s.NATS, opts...)
		if err != nil {
			return "", nil, err
		}
		*stops = append(*stops, conn.Close)
		return s.NATS, conn, nil
	}
	dir, err := os.MkdirTemp("", "shufflefl-nats-")
	if err != nil {
		return "", nil, fmt.Errorf("embedded JetStream: %w", err)
	}
	*stops = append(*stops, func() { os.RemoveAll(dir) })
	// The engine is never open: the embedded server admits only a key made
	// for this run, which the local workers read from a 0600 file.
	seed, pub, err := jetstream.NewUserKey()
	if err != nil {
		return "", nil, err
	}
	s.seedFile = filepath.Join(dir, "worker.nk")
	if err := os.WriteFile(s.seedFile, append(seed, '\n'), 0o600); err != nil {
		return "", nil, fmt.Errorf("embedded JetStream: %w", err)
	}
	srv, err := jetstream.Embedded(filepath.Join(dir, "store"), jetstream.WithLoopbackPort(0), jetstream.WithUsers([]jetstream.User{{Name: "worker", NKey: pub}}))
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

// start starts s.Procs worker processes on url, their output to stderr;
// stopping them sends SIGTERM and waits.
func (s *Workers) start(url string, stderr io.Writer, stops *[]func()) error {
	if s.Procs > 0 && len(s.Command) == 0 {
		return fmt.Errorf("starting workers: no worker command")
	}
	for range s.Procs {
		args := append(append([]string(nil), s.Command[1:]...), "--nats", url)
		if s.seedFile != "" {
			args = append(args, "--nats-seed", s.seedFile)
		}
		cmd := exec.Command(s.Command[0], args...)
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
