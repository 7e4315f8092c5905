package deploy

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/pki"
)

// LocalOpeners have deploy-local's analyzer open its batches on openers
// over NATS JetStream (AnalyzerConfig.Openers).
type LocalOpeners struct {
	// Procs is the number of opener processes to start with Command.
	Procs int
	// InProcess is the number of openers to run as goroutines of this
	// process (tests; ServeOpener with one worker each).
	InProcess int
	// NATS is the URL of an external JetStream server; "" starts one
	// embedded in this process, its store in the run's state directory
	// (Dir/nats), listening on 127.0.0.1 for the processes.
	NATS string
	// Command is the command line that starts one opener process, to
	// which "--nats URL --key FILE --ack-wait D" is appended (e.g. the
	// running executable and "opener"). FILE is the analyzer's HPKE key,
	// written to Dir/opener/analyzer-hpke.key (mode 0600).
	Command []string
	// AckWait is the openers' AckWait (30 s if zero).
	AckWait time.Duration
	// Chunk is the number of messages of a chunk (DefaultOpenerChunk if
	// zero).
	Chunk int
	// Stderr receives the processes' output (discarded if nil).
	Stderr io.Writer
}

// openers starts what o.Openers asks for and returns the analyzer's
// connection to the opener queue (nil without openers).
func (lr *localRun) openers() (*jetstream.Conn, error) {
	lo := lr.o.Openers
	if lo == nil {
		return nil, nil
	}
	if lo.Procs < 0 || lo.InProcess < 0 || lo.Procs+lo.InProcess == 0 && lo.NATS == "" {
		return nil, errf("deploy-local: openers: %d processes and %d in process on no external server: nothing would open the batches", lo.Procs, lo.InProcess)
	}
	if lo.AckWait <= 0 {
		lo.AckWait = jetstream.DefaultAckWait
	}
	url, conn, err := lr.natsServer(lo.NATS)
	if err != nil {
		return nil, err
	}
	if lo.InProcess > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		lr.add(func() { cancel(); wg.Wait() })
		for i := range lo.InProcess {
			op, err := NewOpener(ctx, OpenerConfig{Conn: conn, Key: lr.o.Creds.HPKE, Workers: 1, AckWait: lo.AckWait, Name: fmt.Sprintf("in-process-%d", i), Logf: lr.o.Logf})
			if err != nil {
				return nil, err
			}
			wg.Go(func() { op.Serve(ctx) })
		}
	}
	if lo.Procs > 0 {
		if err := lr.openerProcs(lo, url); err != nil {
			return nil, err
		}
	}
	return conn, nil
}

// natsServer connects to url or, if it is empty, starts the embedded
// server under the run's directory, and returns its URL and a connection;
// the openers and the shuffler shards share it (the first call makes it).
func (lr *localRun) natsServer(url string) (string, *jetstream.Conn, error) {
	if lr.natsConn != nil {
		return lr.natsURL, lr.natsConn, nil
	}
	u, conn, err := lr.dialNATS(url)
	if err == nil {
		lr.natsURL, lr.natsConn = u, conn
	}
	return u, conn, err
}

// natsKeys returns the directory of the run's NATS keys, writing fresh
// ones under Dir/nats-keys when none was given.
func (lr *localRun) natsKeys() (string, error) {
	if lr.o.NATSKeys != "" {
		return lr.o.NATSKeys, nil
	}
	dir := filepath.Join(lr.o.Dir, "nats-keys")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return dir, fmt.Errorf("deploy-local: NATS keys: %w", err)
	}
	if _, err := os.Stat(NATSCertFile(dir)); err != nil {
		if err := writeNATSTLS(dir); err != nil {
			return dir, err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nats", "users.json")); err == nil {
		return dir, nil
	}
	return dir, WriteNATSKeys(dir)
}

// dialNATS is natsServer's first call. The embedded server admits only
// the roles' keys (natsauth.go); the analyzer connects in process.
func (lr *localRun) dialNATS(url string) (string, *jetstream.Conn, error) {
	keys, err := lr.natsKeys()
	if err != nil {
		return "", nil, err
	}
	if url != "" {
		opts, err := natsSeedOption(keys, NATSAnalyzer)
		if err != nil {
			return "", nil, err
		}
		conn, err := jetstream.Connect(url, append(opts, jetstream.WithName("shufflefl deploy-local"))...)
		if err != nil {
			return "", nil, err
		}
		lr.add(conn.Close)
		return url, conn, nil
	}
	users, err := LoadNATSUsers(keys)
	if err != nil {
		return "", nil, err
	}
	cert, roots, err := LoadNATSTLS(keys)
	if err != nil {
		return "", nil, err
	}
	srv, err := jetstream.Embedded(filepath.Join(lr.o.Dir, "nats"), jetstream.WithLoopbackPort(0), jetstream.WithUsers(users),
		jetstream.WithTLS(cert, roots, pki.RequireRole(pki.RoleEngine)))
	if err != nil {
		return "", nil, err
	}
	lr.add(srv.Shutdown)
	conn, err := srv.Connect(jetstream.WithName("shufflefl analyzer"))
	if err != nil {
		return "", nil, err
	}
	lr.add(conn.Close)
	return srv.URL(), conn, nil
}

// openerProcs writes the analyzer's key for the openers and starts
// lo.Procs opener processes on url; stopping them sends SIGTERM and waits.
func (lr *localRun) openerProcs(lo *LocalOpeners, url string) error {
	if len(lo.Command) == 0 {
		return errf("deploy-local: openers: no command to start an opener process")
	}
	pem, err := lr.o.Creds.HPKE.MarshalPEM()
	if err != nil {
		return err
	}
	keyFile := filepath.Join(lr.o.Dir, "opener", "analyzer-hpke.key")
	if err := os.MkdirAll(filepath.Dir(keyFile), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, pem, 0o600); err != nil {
		return err
	}
	out := lo.Stderr
	if out == nil {
		out = io.Discard
	}
	keys, err := lr.natsKeys()
	if err != nil {
		return err
	}
	for range lo.Procs {
		args := append(append([]string(nil), lo.Command[1:]...), "--nats", url, "--key", keyFile, "--ack-wait", lo.AckWait.String(),
			"--nats-seed", NATSSeedFile(keys, NATSOpener), "--nats-ca", NATSCAFile(keys))
		cmd := exec.Command(lo.Command[0], args...)
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = openerProcAttr()
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("deploy-local: starting an opener: %w", err)
		}
		lr.add(func() {
			if cmd.Process.Signal(syscall.SIGTERM) != nil {
				_ = cmd.Process.Kill()
			}
			_ = cmd.Wait()
		})
	}
	return nil
}
