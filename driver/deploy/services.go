package deploy

import (
	"context"
	"crypto/ed25519"
	"flag"
	"log"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/format"
	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// ServiceOptions are the settings of one role run as a network service
// (`shufflefl analyzer|shuffler|client`); each role reads the fields its
// comment names.
type ServiceOptions struct {
	Certs         string // every role: the directory `shufflefl certs` wrote
	Listen        string // analyzer: address for the shuffler; shuffler: for clients
	ControlListen string // shuffler: address to serve the analyzer on
	Control       string // analyzer: the shuffler's control address
	Analyzer      string // shuffler: the analyzer's address
	Shuffler      string // client: the shuffler's address
	DB            string // every role: its SQLite state (resumed if present)
	ID            string // client: its id, client-NNNNNN
	RunID         string // every role: the run's id, bound into every sealed message
	// Data is a client's shard file (`shufflefl partition`): the client
	// then reads only it, not the dataset (LoadClientSetup). Empty: the
	// client loads the dataset and partitions it (LoadSetup).
	Data string
	// SetupDone, if set, is called with a client's Setup once it is built,
	// before the client opens its database or connects (the command sets
	// the process's memory limits there).
	SetupDone func(*Setup)
	// NewTrainer, if set, returns a client's Trainer (and the function
	// that stops it) once its Setup is built (`shufflefl client
	// --trainer`); nil trains in process.
	NewTrainer func(st *Setup, index int) (Trainer, func(), error)
	// RoundTimeout and MinReports are the analyzer's round deadline and
	// the fewest reports it releases.
	RoundTimeout time.Duration
	MinReports   int
	// NATSSeed is the file of the role's NATS key ("": DIR/nats/ROLE.nk of
	// --certs when it exists).
	NATSSeed string
	// NATSCA is the CA certificate file the engine's TLS certificate is
	// verified against ("": ca.crt of Certs, when there is one); with one,
	// a server without TLS is refused.
	NATSCA string
	// NATSReplicas is how many servers of a JetStream cluster store each
	// stream the role creates (0: 1; 3 for a cluster that survives the
	// loss of a node). Every role of a deployment must give the same.
	NATSReplicas int
	// ConnectDeadline is how long a role keeps retrying, with a line a
	// retry, a peer or NATS server that is not up yet before it gives up
	// (0: 5 minutes).
	ConnectDeadline time.Duration
	// Serve keeps the shuffler serving after the run's last round (by
	// default it exits once the analyzer acknowledged it).
	Serve bool
	// NATS is the URL of the analyzer's NATS JetStream server: the
	// analyzer opens its batches on the 'shufflefl opener' processes
	// serving its queue there ("": on its own cores). Openers is how many
	// opener processes deploy-local starts (with no NATS, over a server
	// embedded in it), OpenerChunk the messages of a chunk
	// (DefaultOpenerChunk if zero).
	NATS        string
	Openers     int
	OpenerChunk int
	// ShuffleMemory is the shuffler's round memory budget in bytes
	// (ShufflerConfig.ShuffleMemory; 1 GiB if zero).
	ShuffleMemory int64
	// ShufflerShards, if above zero, splits the shuffler's rounds over
	// that many `shufflefl shuffler-shard` processes (ShufflerConfig.Shards)
	// on the JetStream server at NATS, their queue sealed with the key in
	// the file ShardKey (`shufflefl certs` writes shard.key).
	ShufflerShards int
	ShardKey       string
	// Log receives the role's log lines.
	Log *log.Logger
	// ProgressEvery is how often the analyzer and the shuffler log a
	// running round's progress besides its stages' first and last events
	// (serviceProgressEvery if zero; negative: no progress lines).
	ProgressEvery time.Duration
}

// serviceProgressEvery is the services' default ProgressEvery.
const serviceProgressEvery = 5 * time.Second

// progressLog returns the observer that logs progress events on lg and its
// interval (nil when o.ProgressEvery is negative).
func (o ServiceOptions) progressLog() (func(Progress), time.Duration) {
	switch {
	case o.ProgressEvery < 0 || o.Log == nil:
		return nil, 0
	case o.ProgressEvery == 0:
		o.ProgressEvery = serviceProgressEvery
	}
	lg := o.Log
	return func(p Progress) { lg.Print(p.String()) }, o.ProgressEvery
}

// RegisterFlags binds the options to the flags of fs named by their YAML
// keys (`shufflefl analyzer|shuffler|client`'s flags, besides run's),
// whose defaults are the current values.
func (o *ServiceOptions) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Certs, "certs", o.Certs, "`directory` written by 'shufflefl certs'")
	fs.StringVar(&o.Listen, "listen", o.Listen, "`address` to serve on (analyzer: for the shuffler; shuffler: for clients)")
	fs.StringVar(&o.ControlListen, "control-listen", o.ControlListen, "shuffler: `address` to serve the analyzer on (mutual TLS)")
	fs.StringVar(&o.Control, "shuffler-control", o.Control, "analyzer: the shuffler's control `address`")
	fs.StringVar(&o.Analyzer, "analyzer", o.Analyzer, "shuffler: the analyzer's `address`")
	fs.StringVar(&o.Shuffler, "shuffler", o.Shuffler, "client: the shuffler's `address`")
	fs.StringVar(&o.DB, "db", o.DB, "SQLite `file` of the role's state (created if absent; resumed if present)")
	fs.StringVar(&o.ID, "id", o.ID, "client: its `id` (client-NNNNNN, as 'shufflefl certs' names it)")
	fs.StringVar(&o.Data, "data", o.Data, "client: its shard `file` written by 'shufflefl partition' (the client then reads only it, never the dataset)")
	fs.StringVar(&o.RunID, "run-id", o.RunID, "the run's `id`, bound into every sealed message (all roles must agree)")
	fs.DurationVar(&o.RoundTimeout, "round-timeout", o.RoundTimeout, "analyzer, deploy-local: time clients have to report in a round (default: a minute plus twice the round's estimated work on this machine's cores, printed at start)")
	fs.StringVar(&o.NATSCA, "nats-ca", o.NATSCA, "analyzer, shuffler, shuffler-shard: the CA certificate `file` that verifies the NATS server's TLS certificate (default: ca.crt in --certs); with it, a server without TLS is refused")
	fs.StringVar(&o.NATSSeed, "nats-seed", o.NATSSeed, "analyzer, shuffler, shuffler-shard: the `file` of the role's NATS key (default: nats/ROLE.nk in --certs, written by 'shufflefl certs')")
	fs.IntVar(&o.NATSReplicas, "nats-replicas", o.NATSReplicas, "analyzer, shuffler, shuffler-shard: `N` servers of the JetStream cluster store each stream (default 1; 3 survives the loss of a node; give every role the same)")
	fs.DurationVar(&o.ConnectDeadline, "connect-deadline", o.ConnectDeadline, "every role: how long to keep retrying a peer or NATS server that is not up yet, with a line a retry, before giving up (default 5m)")
	fs.IntVar(&o.MinReports, "min-reports", o.MinReports, "analyzer, deploy-local: minimum reports for a round to be released (below it the round is void)")
	fs.Int64Var(&o.ShuffleMemory, "shuffle-memory", o.ShuffleMemory, "shuffler, deploy-local: round memory budget in `bytes` (0: 1 GiB); a larger round is shuffled on disk")
	fs.BoolVar(&o.Serve, "serve", o.Serve, "shuffler: keep serving after the run's last round (default: exit 0 once the analyzer acknowledged it)")
	fs.StringVar(&o.NATS, "nats", o.NATS, "analyzer, deploy-local: open the batches on the 'shufflefl opener' processes of the NATS JetStream server at `URL` (default: on the analyzer's own cores)")
	fs.IntVar(&o.Openers, "openers", o.Openers, "deploy-local: open the batches on `N` 'shufflefl opener' processes over a NATS JetStream server embedded under DIR/state/nats (or the --nats server); the model is the same bit for bit (default 0: in the analyzer)")
	fs.IntVar(&o.ShufflerShards, "shuffler-shards", o.ShufflerShards, "shuffler, deploy-local: split every round's shuffle over `N` 'shufflefl shuffler-shard' processes on the NATS JetStream server (--nats; deploy-local: its embedded one), each padding, shuffling and forwarding a part (default 0: one shuffler)")
	fs.StringVar(&o.ShardKey, "shard-key", o.ShardKey, "shuffler: the shard key `file` shared with the shuffler shards (default: shard.key in --certs)")
	fs.IntVar(&o.OpenerChunk, "opener-chunk", o.OpenerChunk, "analyzer, deploy-local: messages of a chunk on the opener queue (default 4096, about 0.3 s of one core's opening; smaller spreads a small round over more openers)")
}

// LoadSetup loads cfg's dataset and builds the run's Setup.
func LoadSetup(cfg round.Config, runID string) (*Setup, error) {
	split, err := cfg.LoadData()
	if err != nil {
		return nil, err
	}
	return NewSetup(cfg, split, runID)
}

// ServeAnalyzer runs the analyzer of the run cfg until its last round or
// until ctx ends: it serves the shuffler on o.Listen, drives the rounds
// through the shuffler's control address o.Control, and logs every round.
func ServeAnalyzer(ctx context.Context, cfg round.Config, o ServiceOptions) (round.Summary, error) {
	st, err := LoadSetup(cfg, o.RunID)
	if err != nil {
		return round.Summary{}, err
	}
	creds, err := LoadCredentials(o.Certs, "analyzer", "")
	if err != nil {
		return round.Summary{}, err
	}
	db, err := store.Open(o.DB)
	if err != nil {
		return round.Summary{}, err
	}
	defer db.Close()
	conn, err := DialShufflerControl(creds, o.Control)
	if err != nil {
		return round.Summary{}, err
	}
	defer conn.Close()
	var openers *jetstream.Conn
	if o.NATS != "" {
		nopts, err := o.natsAuth(NATSAnalyzer)
		if err != nil {
			return round.Summary{}, err
		}
		if openers, err = jetstream.ConnectWait(ctx, o.NATS, o.ConnectDeadline, o.logf("analyzer"), append(nopts, jetstream.WithName("shufflefl analyzer"))...); err != nil {
			return round.Summary{}, err
		}
		defer openers.Close()
	}
	lg := o.Log
	prog, every := o.progressLog()
	an, err := NewAnalyzer(AnalyzerConfig{Setup: st, DB: db, Key: creds.HPKE, Shuffler: wire.NewShufflerControlClient(conn),
		RoundTimeout: o.RoundTimeout, MinReports: o.MinReports, Workers: cfg.Workers, Logf: lg.Printf, Progress: prog, ProgressEvery: every,
		Openers: openers, OpenerChunk: o.OpenerChunk,
		Observe: func(r round.RoundResult) {
			if d := r.DPrivacy; d != nil {
				lg.Printf("analyzer: round %d: %d reports, test accuracy %.4f, d-privacy leakage %s per participation, at most %s composed for a client (no (epsilon, delta) guarantee)",
					r.Round, r.Participants, r.TestAccuracy, format.Figure(d.Level, 4), format.Figure(d.MaxCumulative, 4))
				return
			}
			lg.Printf("analyzer: round %d: %d reports, test accuracy %.4f, cumulative epsilon %s", r.Round, r.Participants, r.TestAccuracy, format.Figure(r.Privacy.CumulativeEpsilon, 4))
		}})
	if err != nil {
		return round.Summary{}, err
	}
	l, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return round.Summary{}, err
	}
	g := AnalyzerServer(creds, an)
	go g.Serve(l)
	defer g.GracefulStop() // the last batch's acknowledgement is delivered
	return an.Run(ctx)
}

// ServeShuffler runs the shuffler of the run cfg until its last round is
// over (the analyzer acknowledged it; with o.Serve, until ctx ends) or ctx
// ends: it serves clients on o.Listen and the analyzer on o.ControlListen,
// and forwards every closed round to the analyzer at o.Analyzer. After the
// last round it deletes the per-report metadata of every closed round
// (PruneClosed). It returns the shuffler's counts.
func ServeShuffler(ctx context.Context, cfg round.Config, o ServiceOptions) (ShufflerStats, error) {
	p, err := openShufflerParty(cfg, o)
	if err != nil {
		return ShufflerStats{}, err
	}
	defer p.close()
	st, creds := p.st, p.creds
	prog, every := o.progressLog()
	scfg := ShufflerConfig{Setup: st, DB: p.db, Registry: creds.Registry, AnalyzerKey: creds.HPKEPublic,
		Analyzer: wire.NewAnalyzerClient(p.conn), Logf: o.Log.Printf, Progress: prog, ProgressEvery: every, ShuffleMemory: o.ShuffleMemory}
	if o.ShufflerShards > 0 {
		closeShards, err := o.shardFront(&scfg)
		if err != nil {
			return ShufflerStats{}, err
		}
		defer closeShards()
	}
	sh, err := NewShuffler(scfg)
	if err != nil {
		return ShufflerStats{}, err
	}
	defer sh.Close()
	pub, ctl := ShufflerServers(creds, sh)
	pl, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return ShufflerStats{}, err
	}
	cl, err := net.Listen("tcp", o.ControlListen)
	if err != nil {
		return ShufflerStats{}, err
	}
	go pub.Serve(pl)
	go ctl.Serve(cl)
	defer pub.Stop()
	defer ctl.Stop()
	finished := sh.Finished()
	if o.Serve {
		finished = nil
	}
	select {
	case <-ctx.Done():
	case <-finished:
		if n, err := sh.PruneClosed(); err != nil {
			return sh.Stats(), err
		} else if n > 0 {
			o.Log.Printf("shuffler: deleted the metadata of %d reports of the run's rounds", n)
		}
		o.Log.Printf("shuffler: the run's last round is over; exiting")
	}
	return sh.Stats(), nil
}

// shufflerParty is what every service of the shuffler party (the
// shuffler, or a front, and its shards) opens: the run's Setup, the
// shuffler's credentials, its database and its link to the analyzer.
type shufflerParty struct {
	st    *Setup
	creds *Credentials
	db    *store.DB
	conn  *grpc.ClientConn
}

// openShufflerParty opens them for the run cfg as o names them.
func openShufflerParty(cfg round.Config, o ServiceOptions) (*shufflerParty, error) {
	st, err := LoadSetup(cfg, o.RunID)
	if err != nil {
		return nil, err
	}
	creds, err := LoadCredentials(o.Certs, "shuffler", "")
	if err != nil {
		return nil, err
	}
	db, err := store.Open(o.DB)
	if err != nil {
		return nil, err
	}
	conn, err := DialAnalyzer(creds, o.Analyzer)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &shufflerParty{st: st, creds: creds, db: db, conn: conn}, nil
}

// close closes the link and the database.
func (p *shufflerParty) close() {
	p.conn.Close()
	p.db.Close()
}

// natsAuth is the connection option proving role's NATS key: --nats-seed,
// or the key in --certs.
func (o ServiceOptions) natsAuth(role string) ([]jetstream.ConnOption, error) {
	var opts []jetstream.ConnOption
	switch {
	case o.NATSReplicas < 0 || o.NATSReplicas > jetstream.MaxReplicas:
		return nil, errf("deploy: --nats-replicas %d: want 1 to %d (0: 1), the same on every role", o.NATSReplicas, jetstream.MaxReplicas)
	case o.NATSReplicas > 0:
		opts = append(opts, jetstream.WithReplicas(o.NATSReplicas))
	}
	switch {
	case o.NATSCA != "":
		opts = append(opts, jetstream.WithRootCAFile(o.NATSCA))
	case o.Certs != "":
		opts = append(opts, natsCAOption(o.Certs)...)
	}
	if o.NATSSeed != "" {
		return append(opts, jetstream.WithUserSeedFile(o.NATSSeed)), nil
	}
	if o.Certs == "" {
		return opts, nil
	}
	path := NATSSeedFile(o.Certs, role)
	if _, err := os.Stat(path); err != nil {
		return opts, nil
	}
	return append(opts, jetstream.WithUserSeedFile(path)), nil
}

// logf is the role's log line function for connection retries, prefixed
// with the role (nil when the options have no log).
func (o ServiceOptions) logf(role string) func(string, ...any) {
	if o.Log == nil {
		return nil
	}
	return func(format string, a ...any) { o.Log.Printf(role+": "+format, a...) }
}

// shardFront connects the front shuffler to its shards' queue at o.NATS
// with the shard key, and returns what closes the connection.
func (o ServiceOptions) shardFront(cfg *ShufflerConfig) (func(), error) {
	if o.NATS == "" {
		return nil, errf("deploy: shuffler: --shuffler-shards %d needs the NATS JetStream server of the shard queue (--nats URL)", o.ShufflerShards)
	}
	path := o.ShardKey
	if path == "" {
		path = filepath.Join(o.Certs, ShardKeyFile)
	}
	key, err := ReadShardKey(path)
	if err != nil {
		return nil, err
	}
	nopts, err := o.natsAuth(NATSShuffler)
	if err != nil {
		return nil, err
	}
	conn, err := jetstream.ConnectWait(context.Background(), o.NATS, o.ConnectDeadline, o.logf("shuffler"), append(nopts, jetstream.WithName("shufflefl shuffler"))...)
	if err != nil {
		return nil, err
	}
	cfg.Shards, cfg.ShardConn, cfg.ShardKey = o.ShufflerShards, conn, key
	return conn.Close, nil
}

// ShardKeyFile is the shard key's file name in a certs directory.
const ShardKeyFile = "shard.key"

// ServeClient runs client o.ID of the run cfg against the shuffler at
// o.Shuffler until the run ends or ctx does. With o.Data the client reads
// only its shard file (LoadClientSetup), else the whole dataset.
func ServeClient(ctx context.Context, cfg round.Config, o ServiceOptions) error {
	idx, err := ClientIndex(o.ID)
	if err != nil {
		return err
	}
	var st *Setup
	if o.Data != "" {
		st, err = LoadClientSetup(cfg, o.Data, o.ID, o.RunID)
	} else {
		st, err = LoadSetup(cfg, o.RunID)
	}
	if err != nil {
		return err
	}
	if o.SetupDone != nil {
		o.SetupDone(st)
	}
	creds, err := LoadCredentials(o.Certs, "client", o.ID)
	if err != nil {
		return err
	}
	signer, err := pki.NewSigner(o.ID, creds.Clients[o.ID])
	if err != nil {
		return err
	}
	db, err := store.Open(o.DB)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := DialShuffler(creds, o.Shuffler)
	if err != nil {
		return err
	}
	defer conn.Close()
	var tr Trainer
	if o.NewTrainer != nil {
		var stop func()
		if tr, stop, err = o.NewTrainer(st, idx); err != nil {
			return err
		}
		defer stop()
	}
	c, err := NewClient(ClientConfig{Setup: st, Index: idx, Signer: signer, AnalyzerKey: creds.HPKEPublic, DB: db,
		Shuffler: wire.NewShufflerClient(conn), Logf: o.Log.Printf, ShufflerAddr: o.Shuffler, ConnectDeadline: o.ConnectDeadline, Trainer: tr})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

// LoadAllCredentials reads every role's credentials from a certs directory
// of clients clients (deploy-local runs them all).
func LoadAllCredentials(dir string, clients int) (*Credentials, error) {
	a, err := LoadCredentials(dir, "analyzer", "")
	if err != nil {
		return nil, err
	}
	s, err := LoadCredentials(dir, "shuffler", "")
	if err != nil {
		return nil, err
	}
	a.Shuffler, a.Registry = s.Shuffler, s.Registry
	a.Clients = map[string]ed25519.PrivateKey{}
	for i := 0; i < clients; i++ {
		c, err := LoadCredentials(dir, "client", ClientID(i))
		if err != nil {
			return nil, err
		}
		for id, k := range c.Clients {
			a.Clients[id] = k
		}
	}
	return a, nil
}

// WriteLocalPKI writes a development PKI for clients clients into dir, as
// `shufflefl certs --overwrite` writes it, and loads every role's
// credentials from it.
func WriteLocalPKI(dir string, clients int) (*Credentials, error) {
	files, err := pki.DevFiles(pki.DevOptions{Clients: clients, Hosts: pki.DefaultHosts, Suite: seal.DefaultSuite, Validity: 24 * time.Hour}, time.Now())
	if err == nil {
		err = pki.WriteDev(dir, files, true)
	}
	if err == nil {
		err = WriteNATSKeys(dir)
	}
	if err != nil {
		return nil, err
	}
	return LoadAllCredentials(dir, clients)
}

// Help is the help of the deployment commands (`shufflefl deploy-local`,
// analyzer, shuffler and client) before their flags.
const Help = `Usage:
  shufflefl deploy-local --clients N --rounds T --protocol P --out DIR [--seed S] [--openers N] [run flags]
  shufflefl analyzer --certs DIR --listen ADDR --shuffler-control ADDR --db FILE [--nats URL] [run flags]
  shufflefl shuffler --certs DIR --listen ADDR --control-listen ADDR --analyzer ADDR --db FILE [run flags]
  shufflefl client   --certs DIR --id client-NNNNNN --shuffler ADDR --db FILE [--data SHARD] [run flags]

The roles of a deployment as network services (package deploy): clients talk
only to the shuffler (TLS, signed requests); the shuffler and the analyzer talk
over mutual TLS; every value is sealed to the analyzer with HPKE; the analyzer,
the shuffler and each client keep their state in SQLite (--db) and resume it
after a crash. Every role takes the run's settings (the flags of 'shufflefl
run', or --config with their names as keys) and must be given the same ones.
--certs is a directory written by 'shufflefl certs'. Addresses must be on
127.0.0.1 or [::1] unless --allow-remote is given.

deploy-local makes a development PKI in DIR/pki, starts the analyzer, the
shuffler and N clients on 127.0.0.1 in this process (real gRPC over TLS),
shows the rounds as they finish, and writes the outputs of 'shufflefl run'
(metrics.jsonl, summary.json, config.yaml, model.json, plots, run.log) to DIR;
the roles' databases are in DIR/state. With --shards SHARDS (a directory
written by 'shufflefl partition' with the same run flags) every client reads
its own shard file instead of the dataset's partition in memory.

A client given --data SHARD (its file from 'shufflefl partition --out SHARDS')
reads only that file, never the dataset; it refuses a shard cut for other run
settings (dataset, seed, clients, partition and its parameters) or for
another client.

--openers N (deploy-local) and --nats URL (the analyzer) open each round's
batch on 'shufflefl opener' processes over NATS JetStream instead of on the
analyzer's cores, with the same model bit for bit: the analyzer cuts the batch
into chunks on its queue, any number of openers (holding the analyzer's HPKE
key: its trust domain) open them, and the analyzer assembles their results in
batch order. Chunks and results are authenticated with a key derived from the
analyzer's; the server should still be the analyzer's (it sees the opened
values). See docs/DEPLOYMENT.md, "Openers".

Deployments draw every noise with the floating-point-safe samplers and every
random number from crypto/rand. --seed (deploy-local only) is a TEST MODE: the
clients' training and noise, the shuffler's padding and the analyzer's
randomness then come from the simulation's streams for that seed, so the run
reproduces 'shufflefl run --seed S --secure-noise --faithful' — and anyone who
knows the seed can strip every client's noise. Never use --seed with real data.

Exit status: 0 success, 2 bad arguments, 1 failure.

Deployment flags:
`
