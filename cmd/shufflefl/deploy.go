package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/deploy"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/rundir"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/driver/sim/metrics"
	"github.com/shufflefl/shufflefl/research/bound"
	"github.com/shufflefl/shufflefl/transport/store"
)

// deployOpts are the flags of the deployment commands that 'run' does not
// have.
type deployOpts struct {
	deploy.ServiceOptions
	allowRemote bool
	testSeed    bool
	shards      string // deploy-local: a directory of shard files (partition.go)
}

func newDeployFlags(o *deployOpts) *flag.FlagSet {
	fs := flag.NewFlagSet("deploy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.RegisterFlags(fs)
	fs.BoolVar(&o.allowRemote, "allow-remote", o.allowRemote, "allow addresses other than 127.0.0.1 and [::1]")
	fs.StringVar(&o.shards, "shards", o.shards, "deploy-local: every client reads its shard from this `directory` (written by 'shufflefl partition' with the same flags)")
	return fs
}

// splitDeployArgs separates the deployment flags from the run flags, and
// notes whether --seed was given (test mode).
func splitDeployArgs(args []string, o *deployOpts) (deployArgs, runArgs []string) {
	fs := newDeployFlags(o)
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		if k := strings.IndexByte(name, '='); k >= 0 {
			name = name[:k]
		}
		if name == "seed" {
			o.testSeed = true
		}
		f := fs.Lookup(name)
		if !strings.HasPrefix(a, "-") || f == nil {
			runArgs = append(runArgs, a)
			continue
		}
		deployArgs = append(deployArgs, a)
		_, isBool := f.Value.(interface{ IsBoolFlag() bool })
		if !strings.Contains(a, "=") && !isBool && i+1 < len(args) {
			i++
			deployArgs = append(deployArgs, args[i])
		}
	}
	return deployArgs, runArgs
}

// deployKeys are the YAML keys of the deployment flags.
var deployKeys = []string{"certs", "listen", "control-listen", "shuffler-control", "analyzer", "shuffler", "db", "id", "run-id", "round-timeout", "min-reports", "allow-remote",
	"nats", "openers", "opener-chunk", "data", "shards", "shuffle-memory", "shuffler-shards", "shard-key"}

// resolveDeploy computes the run settings and the deployment options from
// flags and --config (one YAML file holding both, keyed by flag names).
func resolveDeploy(cmd string, args []string, stdout io.Writer) (round.Config, runExtras, deployOpts, error) {
	o := deployOpts{ServiceOptions: deploy.ServiceOptions{MinReports: 1, RunID: "shufflefl-run"}}
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fmt.Fprint(stdout, deploy.Help)
			printFlags(stdout, newDeployFlags(&o))
			fmt.Fprintln(stdout, "\nRun flags: those of 'shufflefl run --help'.")
			return round.Config{}, runExtras{}, o, flag.ErrHelp
		}
	}
	dargs, rargs := splitDeployArgs(args, &o)
	// A --config file may hold deployment keys: take them out and hand the
	// rest to run's loader.
	for i, a := range rargs {
		var path string
		switch {
		case (a == "--config" || a == "-config") && i+1 < len(rargs):
			path = rargs[i+1]
		case strings.HasPrefix(a, "--config="):
			path = strings.TrimPrefix(a, "--config=")
		default:
			continue
		}
		rest, extra, err := splitDeployYAML(path, &o)
		if err != nil {
			return round.Config{}, runExtras{}, o, err
		}
		dargs = append(extra, dargs...) // flags override the file
		if strings.HasPrefix(a, "--config=") {
			rargs[i] = "--config=" + rest
		} else {
			rargs[i+1] = rest
		}
		break
	}
	fs := newDeployFlags(&o)
	if err := fs.Parse(dargs); err != nil {
		return round.Config{}, runExtras{}, o, checks.Invalidf("%s", flagError(err))
	}
	if o.ShuffleMemory < 0 {
		return round.Config{}, runExtras{}, o, checks.Invalidf("--shuffle-memory %d: the budget must be positive (0: the default, 1 GiB)", o.ShuffleMemory)
	}
	cfg, ex, err := resolveConfigFor(cmd, rargs, stdout)
	if err == nil {
		err = ex.trainer.checkDeploy(cmd, cfg, o.Data)
	}
	if err != nil {
		return cfg, ex, o, err
	}
	if o.RoundTimeout < 0 {
		return cfg, ex, o, checks.Invalidf("--round-timeout %v: the deadline must be positive (0 or none: derived from the round's work and printed)", o.RoundTimeout)
	}
	if o.MinReports < 0 || o.MinReports > cfg.Clients {
		return cfg, ex, o, checks.Invalidf("--min-reports %d: must be in [0, clients = %d] (more could never be met: every round would be void)", o.MinReports, cfg.Clients)
	}
	if err := checkOpenerFlags(cmd, o, ex); err != nil {
		return cfg, ex, o, err
	}
	if cmd != "deploy-local" && o.testSeed {
		// Only deploy-local has a test mode; the roles' --seed sets the
		// public partition and initial model only.
		o.testSeed = false
	}
	if err := checkRoleDataFlags(cmd, o); err != nil {
		return cfg, ex, o, err
	}
	if !o.allowRemote {
		for _, a := range []string{o.Listen, o.Control, o.ControlListen, o.Analyzer, o.Shuffler} {
			if a != "" && !loopback(a) {
				return cfg, ex, o, checks.Invalidf("address %q is not on 127.0.0.1 or [::1] (give --allow-remote to serve beyond this host)", a)
			}
		}
	}
	return cfg, ex, o, nil
}

func loopback(addr string) bool {
	return strings.HasPrefix(addr, "127.0.0.1:") || strings.HasPrefix(addr, "[::1]:") || strings.HasPrefix(addr, "localhost:")
}

// splitDeployYAML reads a --config file, turns its deployment keys into
// flags, and writes the remaining keys to a temporary file for run's
// loader (which refuses unknown keys).
func splitDeployYAML(path string, o *deployOpts) (string, []string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, checks.Invalidf("config file: %v", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return "", nil, checks.Invalidf("config file %s: %v", path, err)
	}
	var flags []string
	for _, k := range deployKeys {
		if v, ok := m[k]; ok {
			flags = append(flags, fmt.Sprintf("--%s=%v", k, v))
			delete(m, k)
		}
	}
	if _, ok := m["seed"]; ok {
		o.testSeed = true
	}
	rest, err := yaml.Marshal(m)
	if err != nil {
		return "", nil, err
	}
	f, err := os.CreateTemp("", "shufflefl-config-*.yaml")
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	if _, err := f.Write(rest); err != nil {
		return "", nil, err
	}
	return f.Name(), flags, nil
}

func deployExit(cmd string, stderr io.Writer, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "shufflefl %s: %s\n", cmd, oneLine(err))
	if sim.IsUsageError(err) {
		return 2
	}
	return 1
}

// signalContext ends on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// runDeployLocal implements 'shufflefl deploy-local'.
func runDeployLocal(args []string, stdout, stderr io.Writer) int {
	args, resumeDir, err := deployLocalResumeArgs(args)
	if err != nil {
		return deployExit("deploy-local", stderr, err)
	}
	cfg, ex, o, err := resolveDeploy("deploy-local", args, stdout)
	if err != nil {
		return deployExit("deploy-local", stderr, err)
	}
	if resumeDir == "" {
		if err := rundir.Check(cfg.Out, ex.overwrite); err != nil {
			return deployExit("deploy-local", stderr, err)
		}
	}
	cfg.SecureNoise, cfg.Faithful = true, true
	st, err := deploy.LoadSetup(cfg, o.RunID)
	if err != nil {
		return deployExit("deploy-local", stderr, err)
	}
	stateDir := filepath.Join(cfg.Out, "state")
	var creds *deploy.Credentials
	var recs []metrics.Record
	if resumeDir != "" {
		// The run's own credentials and state: every role resumes from
		// its database, and the rounds done keep their records.
		if creds, err = deploy.LoadAllCredentials(filepath.Join(cfg.Out, "pki"), cfg.Clients); err == nil {
			recs, err = rundir.ReadRecords(filepath.Join(cfg.Out, rundir.MetricsFile))
		}
	} else {
		if err := rundir.Prepare(cfg.Out, ex.overwrite); err != nil {
			return deployExit("deploy-local", stderr, err)
		}
		if err = saveDeployLocalArgs(cfg.Out, args); err == nil {
			creds, err = deploy.WriteLocalPKI(filepath.Join(cfg.Out, "pki"), cfg.Clients)
		}
		if err == nil {
			err = os.RemoveAll(stateDir)
		}
	}
	if err != nil {
		return deployExit("deploy-local", stderr, err)
	}
	var logBuf strings.Builder
	var mu sync.Mutex
	logf := func(format string, a ...any) {
		mu.Lock()
		line := fmt.Sprintf(time.Now().Format("15:04:05.000 ")+format+"\n", a...)
		logBuf.WriteString(line)
		if ex.progress == "log" {
			io.WriteString(stderr, line)
		}
		mu.Unlock()
	}
	prog := rundir.NewProgress(ex.progress, stderr, io.Discard, cfg.Rounds)
	live := newLiveProgress(prog.Mode(), stderr, &mu)
	lo := deploy.LocalOptions{Dir: stateDir, Creds: creds, Shards: o.shards, RoundTimeout: o.RoundTimeout, MinReports: o.MinReports, Workers: cfg.Workers, Logf: logf,
		Progress: live.observer(), ProgressEvery: live.every, ShuffleMemory: o.ShuffleMemory,
		Observe: func(r round.RoundResult) {
			rec := metrics.FromResult(r)
			recs = append(recs, rec)
			if ex.progress != "none" {
				live.clear()
				prog.Round(rec)
			}
		}}
	if o.Openers > 0 || o.NATS != "" {
		lo.Openers = &deploy.LocalOpeners{Procs: o.Openers, NATS: o.NATS, Chunk: o.OpenerChunk, Stderr: stderr}
		if exe, err := os.Executable(); err == nil {
			lo.Openers.Command = []string{exe, "opener"}
		}
	}
	if o.ShufflerShards > 0 {
		if lo.ShufflerShards, err = localShards(cfg, o, stderr); err != nil {
			return deployExit("deploy-local", stderr, err)
		}
	}
	if ex.trainer.command != "" {
		if o.shards != "" {
			return deployExit("deploy-local", stderr, checks.Invalidf("--trainer cannot be combined with --shards (the trainer loads the data set, whose rows the clients' indices name)"))
		}
		procs := cfg.Workers
		if procs <= 0 {
			procs = runtime.GOMAXPROCS(0)
		}
		newTrainer, stop := ex.trainer.localTrainers(min(procs, cfg.Clients))
		defer stop()
		lo.NewTrainer = newTrainer
	}
	if o.testSeed {
		seed := cfg.Seed
		lo.TestSeed = &seed
		fmt.Fprintf(stderr, "shufflefl deploy-local: TEST MODE (--seed %d): every client's noise is predictable from the seed\n", seed)
	}
	if ex.cpuprofile != "" {
		f, err := os.Create(ex.cpuprofile)
		if err != nil {
			return deployExit("deploy-local", stderr, checks.Invalidf("cpuprofile: %v", err))
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return deployExit("deploy-local", stderr, err)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, cancel := signalContext()
	defer cancel()
	res, err := deploy.RunLocal(ctx, st, lo)
	if ex.progress != "none" {
		live.clear()
		prog.Done()
	}
	if err != nil && ctx.Err() != nil {
		return deployLocalInterrupted(cfg, recs, stderr)
	}
	if err != nil {
		return deployExit("deploy-local", stderr, err)
	}
	if err := rundir.WriteOutputs(cfg, recs, res.Summary, logBuf.String(), versionString()); err != nil {
		return deployExit("deploy-local", stderr, err)
	}
	if err := rundir.WriteModelFile(cfg.Out, rundir.Model{Model: cfg.Model, Dataset: cfg.Dataset, Features: st.Train.Features, Classes: st.Model.Classes(), Dim: len(res.Model), Round: res.Summary.Rounds, Weights: res.Model}); err != nil {
		return deployExit("deploy-local", stderr, err)
	}
	printLocalEnd(stdout, cfg, st, res, recs)
	return 0
}

// deployArgsFile keeps a deploy-local run's command line in its output
// directory, for --resume.
const deployArgsFile = "deploy-local-args.json"

// saveDeployLocalArgs writes the run's arguments into dir.
func saveDeployLocalArgs(dir string, args []string) error {
	b, err := json.Marshal(args)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, deployArgsFile), b, 0o644)
}

// deployLocalResumeArgs turns `deploy-local --resume DIR [--progress M]`
// into the interrupted run's own arguments (with its --out) and DIR; any
// other arguments are returned as they are, with no DIR.
func deployLocalResumeArgs(args []string) ([]string, string, error) {
	var dir, progress string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "resume" && name != "progress") {
			if dir != "" || slicesContainsResume(args) {
				return nil, "", checks.Invalidf("deploy-local --resume DIR continues the run with its own settings; only --progress may be given (got %s)", a)
			}
			return args, "", nil
		}
		if !hasVal {
			if i+1 >= len(args) {
				return nil, "", checks.Invalidf("flag needs an argument: %s", a)
			}
			i++
			val = args[i]
		}
		if name == "resume" {
			dir = val
		} else {
			progress = val
		}
	}
	if dir == "" {
		return args, "", nil
	}
	b, err := os.ReadFile(filepath.Join(dir, deployArgsFile))
	if err != nil {
		return nil, "", checks.Invalidf("--resume %s: not an interrupted deploy-local run (%v)", dir, err)
	}
	var saved []string
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, "", checks.Invalidf("--resume %s: %s: %v", dir, deployArgsFile, err)
	}
	saved = append(saved, "--out", dir)
	if progress != "" {
		saved = append(saved, "--progress", progress)
	}
	return saved, dir, nil
}

// slicesContainsResume says whether args name --resume.
func slicesContainsResume(args []string) bool {
	for _, a := range args {
		if n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && n == "resume" {
			return true
		}
	}
	return false
}

// deployLocalInterrupted ends a deploy-local run stopped by SIGINT or
// SIGTERM: the rounds done keep their records (metrics.jsonl), every role
// its database under state/, and the command to continue is printed; the
// exit status is 130.
func deployLocalInterrupted(cfg round.Config, recs []metrics.Record, stderr io.Writer) int {
	if err := rundir.WriteConfig(cfg, versionString(), rundir.Trainer{}); err != nil {
		fmt.Fprintf(stderr, "shufflefl deploy-local: interrupted; writing config.yaml: %v\n", err)
	}
	f, err := os.Create(filepath.Join(cfg.Out, rundir.MetricsFile))
	if err == nil {
		jl := metrics.NewJSONL(f)
		for _, r := range recs {
			if err = jl.Write(r); err != nil {
				break
			}
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "shufflefl deploy-local: interrupted; writing metrics.jsonl: %v\n", err)
	}
	fmt.Fprintf(stderr, "shufflefl deploy-local: interrupted after %d of %d rounds; the state is kept in %s. To continue: shufflefl deploy-local --resume %s\n",
		len(recs), cfg.Rounds, filepath.Join(cfg.Out, "state"), cfg.Out)
	return 130
}

// localShards is deploy-local's --shuffler-shards: that many
// `shufflefl shuffler-shard` processes of this executable, which read the
// run's settings from the config.yaml written now in the output directory
// and use the shuffler's credentials in its pki directory.
func localShards(cfg round.Config, o deployOpts, stderr io.Writer) (*deploy.LocalShards, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if err := rundir.WriteConfig(cfg, versionString(), rundir.Trainer{}); err != nil {
		return nil, err
	}
	cmd := []string{exe, "shuffler-shard", "--config", filepath.Join(cfg.Out, "config.yaml")}
	if o.testSeed {
		cmd = append(cmd, "--test-seed", strconv.FormatUint(cfg.Seed, 10))
	}
	return &deploy.LocalShards{Shards: o.ShufflerShards, NATS: o.NATS, Command: cmd, Certs: filepath.Join(cfg.Out, "pki"), Stderr: stderr}, nil
}

// liveProgress shows deploy-local's progress events (deploy.Progress) on
// stderr while a round runs: on a terminal (mode bar) one line rewritten
// in place, which the round's bar line replaces when the round ends; in
// mode log a timestamped line per event, at most one per 2 s within a
// stage besides its first and last. run.log does not get them.
type liveProgress struct {
	mode   string
	w      io.Writer
	mu     *sync.Mutex // shared with the run's log lines
	active bool        // a bar-mode line is shown (under mu)
	every  time.Duration
}

func newLiveProgress(mode string, w io.Writer, mu *sync.Mutex) *liveProgress {
	lp := &liveProgress{mode: mode, w: w, mu: mu, every: 250 * time.Millisecond}
	if mode == "log" {
		lp.every = 2 * time.Second
	}
	return lp
}

// observer returns show, or nil when nothing is shown (mode none).
func (lp *liveProgress) observer() func(deploy.Progress) {
	if lp.mode != "log" && lp.mode != "bar" {
		return nil
	}
	return lp.show
}

// show shows one event.
func (lp *liveProgress) show(p deploy.Progress) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	switch lp.mode {
	case "log":
		fmt.Fprintf(lp.w, "%s%s\n", time.Now().Format("15:04:05.000 "), p)
	case "bar":
		fmt.Fprintf(lp.w, "\r%s\x1b[K", p)
		lp.active = true
	}
}

// clear erases the bar-mode line, if shown.
func (lp *liveProgress) clear() {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.active {
		fmt.Fprint(lp.w, "\r\x1b[K")
		lp.active = false
	}
}

// printLocalEnd writes deploy-local's summary: the d-privacy statement if
// any, the run and its traffic, and each round's latency.
func printLocalEnd(stdout io.Writer, cfg round.Config, st *deploy.Setup, res *deploy.LocalResult, recs []metrics.Record) {
	if n := len(recs); n > 0 && recs[n-1].DPrivacy != nil {
		// The d-privacy statement (no (epsilon, delta) claim), as run
		// prints it; the analyzer's figure bounds every client's ledger.
		d := recs[n-1].DPrivacy
		fmt.Fprintf(stdout, "deploy-local: d-privacy leakage %s per participation, at most %s composed for a client; no (epsilon, delta)-DP guarantee\n", bound.Figure(d.Level, 4), bound.Figure(d.MaxCumulative, 4))
	}
	fmt.Fprintf(stdout, "deploy-local: %d rounds of %s with %d clients (d = %d): final test accuracy %.4f; analyzer opened %d messages (%d rejected); shuffler accepted %d reports, %d sealed bytes (%.0f per report); outputs in %s\n",
		res.Summary.Rounds, cfg.Protocol, cfg.Clients, st.Dim(), res.Summary.FinalAccuracy, res.Opened.Accepted, res.Opened.Rejected(), res.Shuffler.Accepted, res.Shuffler.Bytes,
		float64(res.Shuffler.Bytes)/math.Max(1, float64(res.Shuffler.Accepted)), cfg.Out)
	// Every round carries the same number of messages (no dropout, no
	// rejection in a local run): the opened total over the rounds.
	perRound := float64(res.Opened.Accepted+res.Opened.Rejected()) / math.Max(1, float64(len(recs)))
	for _, r := range recs {
		fmt.Fprintf(stdout, "  round %d: %d reports, latency %.2fs (analyzer's batch %.2fs), %.0f messages/s through the shuffler\n",
			r.Round, r.Participants, r.Seconds, r.Timing.Analyze, perRound/math.Max(r.Seconds, 1e-9))
	}
}

// need reports the first of the flags (name, value pairs) that is empty.
func need(cmd string, kv ...string) error {
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "" {
			return checks.Invalidf("%s needs --%s", cmd, kv[i])
		}
	}
	return nil
}

// runService implements 'shufflefl analyzer|shuffler|client': the flags,
// then the role's service (package deploy) until it ends or a signal.
// checkServiceFiles checks a role's files before any data is loaded: its
// credentials in --certs (as the role will read them) and its --db.
func checkServiceFiles(cmd string, o deployOpts) error {
	if _, err := deploy.LoadCredentials(o.Certs, cmd, o.ID); err != nil {
		return checks.Invalidf("--certs %s: %v", o.Certs, err)
	}
	if err := store.CheckPath(o.DB); err != nil {
		return fmt.Errorf("--db: %w", err)
	}
	return nil
}

func runService(cmd string, args []string, stdout, stderr io.Writer) int {
	cfg, ex, o, err := resolveDeploy(cmd, args, stdout)
	if err == nil {
		switch cmd {
		case "analyzer":
			err = need(cmd, "certs", o.Certs, "listen", o.Listen, "shuffler-control", o.Control, "db", o.DB)
		case "shuffler":
			err = need(cmd, "certs", o.Certs, "listen", o.Listen, "control-listen", o.ControlListen, "analyzer", o.Analyzer, "db", o.DB)
		default:
			err = need(cmd, "certs", o.Certs, "shuffler", o.Shuffler, "db", o.DB, "id", o.ID)
		}
	}
	if err == nil {
		err = checkServiceFiles(cmd, o)
	}
	if err != nil {
		return deployExit(cmd, stderr, err)
	}
	o.Log = log.New(stderr, "", log.LstdFlags|log.Lmicroseconds)
	if ex.progress == "none" {
		o.ProgressEvery = -1 // no progress lines in the log
	}
	ctx, cancel := signalContext()
	defer cancel()
	switch cmd {
	case "analyzer":
		sum, err := deploy.ServeAnalyzer(ctx, cfg, o.ServiceOptions)
		if err != nil {
			return deployExit(cmd, stderr, err)
		}
		if d := sum.Privacy.DPrivacy; d != nil {
			fmt.Fprintf(stdout, "analyzer: %d rounds, final test accuracy %.4f; %s\n", sum.Rounds, sum.FinalAccuracy, sum.Privacy.Bound)
			return 0
		}
		fmt.Fprintf(stdout, "analyzer: %d rounds, final test accuracy %.4f, cumulative epsilon %s\n", sum.Rounds, sum.FinalAccuracy, bound.Figure(sum.Privacy.CumulativeEpsilon, 4))
	case "shuffler":
		stats, err := deploy.ServeShuffler(ctx, cfg, o.ServiceOptions)
		if err != nil {
			return deployExit(cmd, stderr, err)
		}
		fmt.Fprintf(stdout, "shuffler: stopped; %+v\n", stats)
	default:
		if o.Data != "" {
			limitClientMemory(nil) // bounds the setup's heap too
			o.SetupDone = leanClient
		}
		if ex.trainer.command != "" {
			o.NewTrainer = ex.trainer.clientTrainer()
		}
		if err := deploy.ServeClient(ctx, cfg, o.ServiceOptions); err != nil {
			return deployExit(cmd, stderr, err)
		}
		fmt.Fprintf(stdout, "client %s: done\n", o.ID)
	}
	return 0
}
