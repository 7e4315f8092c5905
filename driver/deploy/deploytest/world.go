package deploytest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/status"

	"github.com/shufflefl/shufflefl/driver/deploy"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/role/roletest"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// world is one script's deployment: the run's setup and credentials, the
// shuffler and the analyzer (each with its database in dir, restartable),
// the links the driver's clients sit behind, and the clients the script
// plays.
type world struct {
	drv   Driver
	dir   string
	seed  uint64
	st    *deploy.Setup
	creds *deploy.Credentials
	min   int
	wait  time.Duration // a round's timeout

	clients  shufflerLink
	control  controlLink
	analyzer analyzerLink

	sh      *deploy.Shuffler
	shDB    *store.DB
	shStop  func()
	an      *deploy.Analyzer
	anDB    *store.DB
	anStop  func()
	anRun   context.CancelFunc
	anDone  chan error
	players map[string]*player

	mu      sync.Mutex
	results map[int]round.RoundResult
}

// newWorld returns an empty world; the script's run command builds it.
func newWorld(drv Driver, dir string) *world {
	return &world{drv: drv, dir: dir, players: map[string]*player{}, results: map[int]round.RoundResult{}}
}

// runCmd builds the run (run proto=P clients=N rounds=R [min=M]
// [timeout=D] [epsilon=E] [target=T] [seed=S]) and starts the shuffler
// and the analyzer.
func (w *world) runCmd(s roletest.Step) (string, error) {
	if w.st != nil {
		return "", errors.New("the run is already started")
	}
	cfg := round.DefaultConfig()
	cfg.Dataset, cfg.LocalEpochs, cfg.Workers, cfg.Clip, cfg.SecureNoise = "blobs", 1, 1, 0.5, true
	cfg.Protocol = s.Key("proto", "ss-double")
	var err error
	ints := []struct {
		key string
		dst *int
		def int
	}{{"clients", &cfg.Clients, 3}, {"rounds", &cfg.Rounds, 2}, {"min", &w.min, 1}}
	for _, f := range ints {
		if *f.dst, err = strconv.Atoi(s.Key(f.key, strconv.Itoa(f.def))); err != nil {
			return "", fmt.Errorf("%s: %w", f.key, err)
		}
	}
	if cfg.Epsilon, err = strconv.ParseFloat(s.Key("epsilon", "4"), 64); err != nil {
		return "", fmt.Errorf("epsilon: %w", err)
	}
	if cfg.TargetEpsilon, err = strconv.ParseFloat(s.Key("target", "0"), 64); err != nil {
		return "", fmt.Errorf("target: %w", err)
	}
	if w.seed, err = strconv.ParseUint(s.Key("seed", "7"), 10, 64); err != nil {
		return "", fmt.Errorf("seed: %w", err)
	}
	if w.wait, err = time.ParseDuration(s.Key("timeout", "1m")); err != nil {
		return "", fmt.Errorf("timeout: %w", err)
	}
	cfg.Seed = w.seed
	split, err := data.Load(cfg.Dataset, data.Options{Seed: cfg.Seed})
	if err != nil {
		return "", err
	}
	if w.st, err = deploy.NewSetup(cfg, split, "roletest"); err != nil {
		return "", err
	}
	if w.st.Clustered() != nil {
		return "", errors.New("clustered protocols are not scripted (their clients encode a chosen model)")
	}
	if w.creds, err = deploy.NewDevCredentials(cfg.Clients, seal.DefaultSuite); err != nil {
		return "", err
	}
	if err := w.startShuffler(); err != nil {
		return "", err
	}
	if err := w.startAnalyzer(); err != nil {
		return "", err
	}
	return fmt.Sprintf("run of %s: %d clients, %d rounds, dimension %d, minimum %d reports", cfg.Protocol, cfg.Clients, cfg.Rounds, w.st.Dim(), w.min), nil
}

// startShuffler opens the shuffler's database, builds the shuffler (which
// resumes from it) and serves it.
func (w *world) startShuffler() error {
	db, err := store.Open(filepath.Join(w.dir, "shuffler.db"))
	if err != nil {
		return err
	}
	sh, err := deploy.NewShuffler(deploy.ShufflerConfig{Setup: w.st, DB: db, Registry: w.creds.Registry, AnalyzerKey: w.creds.HPKEPublic,
		Analyzer: &w.analyzer, TestSeed: &w.seed, Logf: func(string, ...any) {}})
	if err != nil {
		db.Close()
		return err
	}
	cli, ctl, stop, err := w.drv.ServeShuffler(w.creds, sh)
	if err != nil {
		sh.Close()
		db.Close()
		return err
	}
	w.sh, w.shDB, w.shStop = sh, db, stop
	w.clients.set(cli)
	w.control.set(ctl)
	return nil
}

// startAnalyzer opens the analyzer's database, builds the analyzer (which
// resumes from it), serves it and runs it.
func (w *world) startAnalyzer() error {
	db, err := store.Open(filepath.Join(w.dir, "analyzer.db"))
	if err != nil {
		return err
	}
	observe := func(r round.RoundResult) {
		w.mu.Lock()
		w.results[r.Round] = r
		w.mu.Unlock()
	}
	an, err := deploy.NewAnalyzer(deploy.AnalyzerConfig{Setup: w.st, DB: db, Key: w.creds.HPKE, Shuffler: &w.control,
		RoundTimeout: w.wait, MinReports: w.min, TestSeed: &w.seed, Workers: 1, Observe: observe, Logf: func(string, ...any) {}})
	if err != nil {
		db.Close()
		return err
	}
	cli, stop, err := w.drv.ServeAnalyzer(w.creds, an)
	if err != nil {
		db.Close()
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := an.Run(ctx)
		done <- err
	}()
	w.an, w.anDB, w.anStop, w.anRun, w.anDone = an, db, stop, cancel, done
	w.analyzer.set(cli)
	return nil
}

// crash stops a service as a crash would: unreachable at once, its
// process state lost; only its database remains.
func (w *world) crash(s roletest.Step) (string, error) {
	switch {
	case s.Has("shuffler") && w.sh != nil:
		w.clients.cut()
		w.control.cut()
		w.shStop()
		w.sh.Close()
		w.shDB.Close()
		w.sh = nil
	case s.Has("analyzer") && w.an != nil:
		w.analyzer.cut()
		w.anStop()
		w.anRun()
		<-w.anDone
		w.anDB.Close()
		w.an = nil
	default:
		return "", fmt.Errorf("crash shuffler|analyzer (of those running)")
	}
	return strings.Join(s.Args, " ") + " down", nil
}

// restart starts a crashed service again from its database.
func (w *world) restart(s roletest.Step) (string, error) {
	var err error
	switch {
	case s.Has("shuffler") && w.sh == nil:
		err = w.startShuffler()
	case s.Has("analyzer") && w.an == nil:
		err = w.startAnalyzer()
	default:
		return "", fmt.Errorf("restart shuffler|analyzer (of those crashed)")
	}
	if err != nil {
		return "", err
	}
	return strings.Join(s.Args, " ") + " up", nil
}

// close waits until the analyzer has finished round=N and prints how:
// released (the round log's counts, the round's privacy statement, a
// digest of the model) or void (why).
func (w *world) close(s roletest.Step) (string, error) {
	t, err := strconv.Atoi(s.Key("round", "0"))
	if err != nil || t < 1 {
		return "", fmt.Errorf("close round=N")
	}
	if w.an == nil {
		return "", errors.New("the analyzer is down")
	}
	deadline := time.Now().Add(w.wait + 30*time.Second)
	for w.an.Round() < int64(t) {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("round %d did not finish", t)
		}
		time.Sleep(5 * time.Millisecond)
	}
	e, err := w.anDB.Round(int64(t))
	if err != nil {
		return "", err
	}
	w.mu.Lock()
	res := w.results[t]
	w.mu.Unlock()
	c := e.Counts
	if e.Status == store.RoundVoid {
		return fmt.Sprintf("round %d void: %s", t, res.Privacy.Bound), nil
	}
	out := []string{fmt.Sprintf("round %d released: %d reports; %d messages received (%d dummies), %d opened%s", t, res.Reports, c.Received, c.Dummies, c.Accepted, rejected(c.Rejected))}
	if acct := w.an.Accountant(); acct != nil {
		for _, st := range acct.Log() {
			if st.Round == t {
				out = append(out, fmt.Sprintf("privacy: statement epsilon %.6g, run epsilon %.6g", st.Epsilon, acct.Spent().Epsilon))
			}
		}
	}
	out = append(out, "model "+digest(w.an.Model()))
	return strings.Join(out, "\n"), nil
}

// rejected formats rejection counts in the seal's order of reasons.
func rejected(m map[string]int64) string {
	var b strings.Builder
	for _, r := range seal.Reasons() {
		if n := m[r.String()]; n > 0 {
			fmt.Fprintf(&b, ", %d rejected %s", n, r)
		}
	}
	return b.String()
}

// stop ends every service.
func (w *world) stop() {
	if w.an != nil {
		w.crash(roletest.Step{Args: []string{"analyzer"}})
	}
	if w.sh != nil {
		w.crash(roletest.Step{Args: []string{"shuffler"}})
	}
}

// refusal formats an error a service returned: the wire reason and the
// message, or for an error without a reason (a service down) its gRPC
// code.
func refusal(err error) string {
	d, ok := wire.DetailOf(err)
	if !ok {
		st := status.Convert(err)
		return fmt.Sprintf("failed: %s (%s)", st.Code(), st.Message())
	}
	return fmt.Sprintf("refused: %s (%s)", strings.TrimPrefix(d.Reason.String(), "REASON_"), status.Convert(err).Message())
}

// digest is a short hash of a model's bits.
func digest(w []float64) string {
	var h uint64 = 14695981039346656037 // FNV-1a
	for _, v := range w {
		b := math.Float64bits(v)
		for i := 0; i < 8; i++ {
			h ^= b >> (8 * i) & 0xff
			h *= 1099511628211
		}
	}
	return fmt.Sprintf("%016x", h)
}
