package jetstream

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Defaults of an embedded [Server].
const (
	// DefaultMaxPayload is the largest message an embedded server accepts
	// (the NATS server's own default is 1 MiB; 8 MiB is the size above which
	// NATS warns that large messages hurt latency).
	DefaultMaxPayload = 8 << 20
	// startTimeout bounds the wait for the server to accept connections.
	startTimeout = 10 * time.Second
	// lockName is the file in the store directory that one server at a
	// time holds locked.
	lockName = "LOCK"
)

// Server is a NATS server with JetStream running inside this process, its
// streams in a file store under one directory. It has no network listener
// unless [WithLoopbackPort] asks for one; [Server.Connect] connects in
// process either way.
type Server struct {
	ns   *server.Server
	dir  string
	url  string
	lock *os.File
	// internal is the seed of the server's own user (WithUsers), which
	// Connect proves.
	internal []byte
	// routeURL is the node's route listener (WithCluster), or "".
	routeURL string
}

// Option configures an embedded [Server].
type Option func(*serverConfig) error

type serverConfig struct {
	port       int // -1: no listener
	maxPayload int
	maxStore   int64
	syncAlways bool
	name       string
	users      []User
	cluster    *clusterConfig
	// tlsCert and tlsRoots: WithTLS (nil: no TLS).
	tlsCert  *tls.Certificate
	tlsRoots *x509.CertPool
	tlsPeer  func(tls.ConnectionState) error
}

// WithLoopbackPort makes the server also listen on 127.0.0.1:port, so that
// other processes on this machine can [Connect] to [Server.URL]; port 0
// picks a free port. Without [WithUsers] the listener has no
// authentication: anything on this machine that can reach the port can use
// every stream.
func WithLoopbackPort(port int) Option {
	return func(c *serverConfig) error {
		if port < 0 || port > 65535 {
			return fmt.Errorf("loopback port %d is not in [0, 65535]", port)
		}
		c.port = port
		return nil
	}
}

// WithMaxPayload sets the largest message, in bytes, the server accepts
// (default [DefaultMaxPayload]; at most 64 MiB, the NATS limit).
func WithMaxPayload(bytes int) Option {
	return func(c *serverConfig) error {
		if bytes <= 0 || bytes > 64<<20 {
			return fmt.Errorf("max payload %d bytes is not in [1, 64 MiB]", bytes)
		}
		c.maxPayload = bytes
		return nil
	}
}

// WithMaxStore caps the bytes all streams together may hold on disk
// (default: no cap beyond the disk's free space).
func WithMaxStore(bytes int64) Option {
	return func(c *serverConfig) error {
		if bytes <= 0 {
			return fmt.Errorf("max store %d bytes is not positive", bytes)
		}
		c.maxStore = bytes
		return nil
	}
}

// WithSyncAlways makes the file store fsync every message before it is
// acknowledged, so that an acknowledged message survives a power loss too,
// at the cost of one fsync per message. Without it the store syncs every two
// minutes (an acknowledged message survives a kill of the process).
func WithSyncAlways() Option {
	return func(c *serverConfig) error {
		c.syncAlways = true
		return nil
	}
}

// WithServerName names the server (default "shufflefl-embedded"); the name
// appears in the store's metadata and in connection errors.
func WithServerName(name string) Option {
	return func(c *serverConfig) error {
		if name == "" {
			return errors.New("empty server name")
		}
		c.name = name
		return nil
	}
}

// Embedded starts a NATS server with JetStream in this process, its file
// store under dir (created if missing). Restarting on the same dir, after a
// [Server.Shutdown] or a crash, recovers every stream with its messages and
// consumers. Only one server may use a dir at a time: Embedded fails if
// another holds it.
func Embedded(dir string, opts ...Option) (*Server, error) {
	cfg := serverConfig{port: -1, maxPayload: DefaultMaxPayload, name: "shufflefl-embedded"}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("jetstream: embedded server: %w", err)
		}
	}
	if dir == "" {
		return nil, errors.New("jetstream: embedded server: empty store directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("jetstream: embedded server: store directory %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("jetstream: embedded server: %w", err)
	}
	lock, err := lockDir(filepath.Join(abs, lockName))
	if err != nil {
		return nil, fmt.Errorf("jetstream: embedded server on %s: %w", abs, err)
	}
	s, err := startServer(abs, cfg)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("jetstream: embedded server on %s: %w", abs, err)
	}
	s.lock = lock
	return s, nil
}

func startServer(dir string, cfg serverConfig) (*Server, error) {
	o := &server.Options{
		ServerName:         cfg.name,
		JetStream:          true,
		StoreDir:           dir,
		SyncAlways:         cfg.syncAlways,
		MaxPayload:         int32(cfg.maxPayload),
		JetStreamMaxMemory: 64 << 20, // memory streams are not used; keep the reservation small
		JetStreamMaxStore:  cfg.maxStore,
		NoSigs:             true,
		NoLog:              true,
		DontListen:         cfg.port < 0,
		Host:               "127.0.0.1",
		Port:               cfg.port,
		HTTPPort:           0,
	}
	if cfg.port == 0 {
		o.Port = server.RANDOM_PORT
	}
	if cfg.maxStore == 0 {
		o.JetStreamMaxStore = -1
	}
	if cfg.cluster != nil {
		if cfg.port < 0 {
			return nil, errors.New("a cluster node needs a client listener (WithLoopbackPort)")
		}
		cfg.cluster.apply(o)
		if cfg.tlsCert != nil {
			o.Cluster.TLSConfig, o.Cluster.TLSTimeout = cfg.routeTLS(), tlsTimeout
		}
	}
	if cfg.tlsCert != nil {
		o.TLSConfig, o.TLS, o.TLSTimeout = cfg.serverTLS(), true, tlsTimeout
	}
	var internal []byte
	if len(cfg.users) > 0 {
		seed, pub, err := NewUserKey()
		if err != nil {
			return nil, err
		}
		internal = seed
		o.Nkeys = nkeyUsers(cfg.users, pub)
	}
	ns, err := server.NewServer(o)
	if err != nil {
		return nil, fmt.Errorf("configure: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(startTimeout) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("not ready for connections within %v", startTimeout)
	}
	if !ns.JetStreamEnabled() {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, errors.New("JetStream did not start (is the store directory writable?)")
	}
	s := &Server{ns: ns, dir: dir, internal: internal}
	if cfg.port >= 0 {
		addr, ok := ns.Addr().(*net.TCPAddr)
		if !ok {
			ns.Shutdown()
			ns.WaitForShutdown()
			return nil, fmt.Errorf("listener address %v is not TCP", ns.Addr())
		}
		scheme := "nats://"
		if cfg.tlsCert != nil {
			scheme = "tls://"
		}
		s.url = scheme + net.JoinHostPort("127.0.0.1", strconv.Itoa(addr.Port))
	}
	if cfg.cluster != nil {
		u, err := routeURLOf(ns)
		if err != nil {
			ns.Shutdown()
			ns.WaitForShutdown()
			return nil, err
		}
		s.routeURL = u
	}
	return s, nil
}

// Dir returns the absolute path of the server's store directory.
func (s *Server) Dir() string { return s.dir }

// URL returns the server's nats:// URL on the loopback interface, or "" when
// it was started without [WithLoopbackPort].
func (s *Server) URL() string { return s.url }

// Connect opens a connection to the server in process (no socket). Streams
// it creates have one replica unless opts say otherwise. The connection
// closes for good when the server shuts down.
func (s *Server) Connect(opts ...ConnOption) (*Conn, error) {
	cfg, err := connConfigOf(opts)
	if err != nil {
		return nil, fmt.Errorf("jetstream: connect in process: %w", err)
	}
	if cfg.seed == nil && s.internal != nil {
		cfg.seed = s.internal
	}
	no, err := cfg.natsOptionsAuth()
	if err != nil {
		return nil, fmt.Errorf("jetstream: connect in process: %w", err)
	}
	nc, err := nats.Connect("", append(no, nats.InProcessServer(s.ns), nats.NoReconnect())...)
	if err != nil {
		return nil, fmt.Errorf("jetstream: connect in process to %s: %w", s.dir, err)
	}
	return newConn(nc, cfg)
}

// Shutdown stops the server and waits until it has closed its store; the
// connections to it fail from then on. The store directory keeps every
// stream for the next [Embedded] on it. Shutdown is idempotent.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	if s.lock != nil {
		s.lock.Close() // releases the lock
		s.lock = nil
	}
}
