package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/deploy"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/rundir"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/transport/trainer"
)

// trainerFlags are --trainer and --trainer-timeout: the clients' local
// training runs in the user's trainer process (docs/TRAINER.md).
type trainerFlags struct {
	command string
	timeout time.Duration
}

// register binds the flags to fs.
func (t *trainerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.command, "trainer", t.command, "train the clients in the trainer program `CMD` (split into words as a shell would, without expansions), which speaks the trainer protocol of docs/TRAINER.md on its stdin and stdout; one process per worker. shufflefl still clips, randomizes, seals, shuffles and accounts")
	if t.timeout == 0 {
		t.timeout = trainer.DefaultTimeout
	}
	fs.DurationVar(&t.timeout, "trainer-timeout", t.timeout, "the deadline of the trainer's handshake and of each client's training; a trainer that misses it is killed")
}

// setting is the trainer as config.yaml keeps it (rundir.Trainer).
func (t trainerFlags) setting() rundir.Trainer {
	if t.command == "" {
		return rundir.Trainer{}
	}
	return rundir.Trainer{Command: t.command, Timeout: t.timeout}
}

// checkDeploy refuses --trainer in the deployment's commands other than
// client, and in a client given its shard file (--data: its example
// indices are the file's, not the data set's). It is nil without --trainer.
func (t trainerFlags) checkDeploy(cmd string, cfg round.Config, data string) error {
	switch {
	case t.command == "":
		return nil
	case cmd != "client" && cmd != "deploy-local":
		return checks.Invalidf("--trainer is a flag of 'shufflefl run', 'shufflefl client' and 'shufflefl deploy-local', not of %s", cmd)
	case data != "":
		return checks.Invalidf("--trainer cannot be combined with --data (the trainer loads the data set, whose rows the client's indices name)")
	}
	return t.check(cfg, false)
}

// check refuses --trainer with the settings it does not support: remote
// workers, a rotated partition (the trainer would see untransformed data)
// and regression data sets. It is nil without --trainer.
func (t trainerFlags) check(cfg round.Config, remote bool) error {
	if t.command == "" {
		return nil
	}
	if _, err := trainer.ParseCommand(t.command); err != nil {
		return checks.Invalidf("--trainer: %v", err)
	}
	if t.timeout <= 0 {
		return checks.Invalidf("--trainer-timeout must be positive, got %v", t.timeout)
	}
	switch {
	case remote:
		return checks.Invalidf("--trainer runs the clients in this process's trainer programs; it cannot be combined with --worker-procs or --nats")
	case cfg.Partition == "rotated":
		return checks.Invalidf("--trainer does not support partition rotated (its clients' examples are transformed in shufflefl, the trainer loads them untransformed)")
	case data.IsRegression(cfg.Dataset):
		return checks.Invalidf("--trainer does not support the regression data set %s", cfg.Dataset)
	}
	return nil
}

// runTrainers are the trainer processes of a run, one per worker.
type runTrainers struct{ ps []*trainer.Process }

// attach starts one trainer process per worker of eng and makes the
// engine train with them; the returned value evaluates the final model
// with them (finish) and stops them (close).
func (t trainerFlags) attach(eng *sim.Engine, cfg round.Config, stderr io.Writer) (*runTrainers, error) {
	argv, err := trainer.ParseCommand(t.command)
	if err != nil {
		return nil, checks.Invalidf("--trainer: %v", err)
	}
	h := helloFor(eng, cfg)
	rt := &runTrainers{}
	err = eng.SetTrainers(func(int) (sim.Trainer, error) {
		p, err := trainer.Start(argv, h, trainer.Options{Timeout: t.timeout})
		if err != nil {
			return nil, trainerError{err}
		}
		rt.ps = append(rt.ps, p)
		return processTrainer{p}, nil
	})
	if err != nil {
		rt.close(stderr)
		return nil, fmt.Errorf("starting --trainer: %w", err)
	}
	return rt, nil
}

// close stops every process, printing a failure on stderr.
func (rt *runTrainers) close(stderr io.Writer) {
	for _, p := range rt.ps {
		if err := p.Close(); err != nil {
			fmt.Fprintf(stderr, "shufflefl: %s\n", oneLine(err))
		}
	}
}

// evalTolerance is how far the trainer's test accuracy may be from
// shufflefl's before the run says so: float32 kernels in another order
// flip the prediction of a few examples near a tie, not more.
const evalTolerance = 0.01

// finish is rundir.Options.Finish: the first process whose trainer
// evaluates (its ready said so) evaluates the final model on the test
// set, and the summary keeps its figures. A clustered protocol's k models
// are not sent (the trainer evaluates one model). A trainer whose accuracy
// is further than evalTolerance from shufflefl's is reported: it does not
// read the parameters as the hello lays them out, or not the same test set.
func (rt *runTrainers) finish(eng *sim.Engine, sum *round.Summary) error {
	if len(eng.Models()) > 1 {
		return nil
	}
	for _, p := range rt.ps {
		if !p.Evaluates() {
			continue
		}
		test := eng.TestExamples()
		digest := sha256.Sum256(test.Y)
		r, err := p.Evaluate(eng.Weights(), trainer.EvaluateRequest{Round: eng.Round(), Split: "test", Examples: test.Len(), LabelsSHA256: hex.EncodeToString(digest[:])})
		if err != nil {
			return fmt.Errorf("the trainer's evaluation of the final model: %w", err)
		}
		sum.TrainerEvaluation = &round.TrainerEvaluation{Round: r.Round, Examples: r.Examples, Accuracy: r.Accuracy, Loss: r.Loss}
		if math.Abs(r.Accuracy-sum.FinalAccuracy) > evalTolerance {
			return fmt.Errorf("the trainer's test accuracy %.4f is not shufflefl's %.4f (more than %v apart): does it read the parameters as the hello's layers lay them out, and the same test set?", r.Accuracy, sum.FinalAccuracy, evalTolerance)
		}
		return nil
	}
	return nil
}

// helloFor is the hello of eng's trainer processes: they serve every
// client.
func helloFor(eng *sim.Engine, cfg round.Config) trainer.Hello {
	return helloOf(eng.Model(), eng.TrainingExamples(), cfg, [2]int{0, cfg.Clients - 1})
}

// helloOf is the hello of a run of cfg training m on ex, for the clients
// in the inclusive range served.
func helloOf(m fl.Model, ex fl.Examples, cfg round.Config, served [2]int) trainer.Hello {
	sum := sha256.Sum256(ex.Y)
	h := trainer.Hello{
		Dim: m.Dim(), Model: cfg.Model, Dataset: cfg.Dataset, DataDir: cfg.DataDir,
		Features: m.Features(), Classes: m.Classes(),
		TrainExamples: ex.Len(), TrainLabelsSHA256: hex.EncodeToString(sum[:]),
		Clients: [][2]int{served}, Seed: cfg.Seed,
	}
	for _, l := range m.Layers() {
		h.Layers = append(h.Layers, trainer.Layer{Name: l.Name, Offset: l.Offset, Shape: l.Shape})
	}
	if s, err := fl.ParseSpec(cfg.Model); err == nil {
		for _, l := range s {
			h.Spec = append(h.Spec, trainer.LayerSpec(l))
		}
	}
	return h
}

// clientTrainer returns deploy.ServiceOptions.NewTrainer for `shufflefl
// client --trainer`: one trainer process serving the client.
func (t trainerFlags) clientTrainer() func(st *deploy.Setup, index int) (deploy.Trainer, func(), error) {
	return func(st *deploy.Setup, index int) (deploy.Trainer, func(), error) {
		argv, err := trainer.ParseCommand(t.command)
		if err != nil {
			return nil, nil, checks.Invalidf("--trainer: %v", err)
		}
		p, err := trainer.Start(argv, helloOf(st.Model, st.Train, st.Config, [2]int{index, index}), trainer.Options{Timeout: t.timeout})
		if err != nil {
			return nil, nil, fmt.Errorf("starting --trainer: %w", err)
		}
		return processTrainer{p}, func() { p.Close() }, nil
	}
}

// processTrainer is a sim.Trainer and a deploy.Trainer on a trainer
// process.
type processTrainer struct{ p *trainer.Process }

// Train implements sim.Trainer.
func (t processTrainer) Train(dst []float64, j sim.TrainJob) error {
	if err := t.LocalUpdate(dst, j.Global, j.Round, j.Client, j.Rand, j.Shard, j.Local); err != nil {
		return trainerError{err}
	}
	return nil
}

// LocalUpdate implements deploy.Trainer: it sends the client's request,
// with the seed of its local randomness drawn from r (the client's
// training stream of the round).
func (t processTrainer) LocalUpdate(dst, global []float64, round, client int, r *rand.Rand, shard []int, local fl.LocalConfig) error {
	req := trainer.TrainRequest{
		Round: round, Client: client, Indices: shard, Seed: r.Uint64(),
		Local: trainer.LocalConfig{Mode: local.Mode.String(), Epochs: local.Epochs, Steps: local.Steps, Batch: local.Batch, LR: local.LR, Mu: local.Mu},
	}
	_, err := t.p.Train(dst, global, req)
	return err
}

// trainerError marks a trainer process's error as sim.ErrTrainer, keeping
// its message.
type trainerError struct{ error }

func (e trainerError) Unwrap() []error { return []error{sim.ErrTrainer, e.error} }

// localTrainers returns deploy-local's trainers: procs trainer processes,
// started on first use and shared by the clients (client i uses process
// i mod procs, one request at a time), each told that it serves every
// client; the returned function stops them.
func (t trainerFlags) localTrainers(procs int) (func(st *deploy.Setup, index int) (deploy.Trainer, func(), error), func()) {
	pool := &trainerPool{flags: t, procs: make([]*sharedTrainer, max(procs, 1))}
	return pool.get, pool.close
}

// trainerPool is deploy-local's shared trainer processes.
type trainerPool struct {
	flags trainerFlags
	mu    sync.Mutex
	procs []*sharedTrainer
}

// sharedTrainer is one trainer process that several clients use in turn.
type sharedTrainer struct {
	mu sync.Mutex
	t  processTrainer
}

// LocalUpdate implements deploy.Trainer, one client's request at a time.
func (s *sharedTrainer) LocalUpdate(dst, global []float64, round, client int, r *rand.Rand, shard []int, local fl.LocalConfig) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.LocalUpdate(dst, global, round, client, r, shard, local)
}

// get is client index's trainer (LocalOptions.NewTrainer); the processes
// are stopped by close, not by the clients.
func (p *trainerPool) get(st *deploy.Setup, index int) (deploy.Trainer, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := index % len(p.procs)
	if p.procs[k] == nil {
		argv, err := trainer.ParseCommand(p.flags.command)
		if err != nil {
			return nil, nil, checks.Invalidf("--trainer: %v", err)
		}
		proc, err := trainer.Start(argv, helloOf(st.Model, st.Train, st.Config, [2]int{0, st.Config.Clients - 1}), trainer.Options{Timeout: p.flags.timeout})
		if err != nil {
			return nil, nil, fmt.Errorf("starting --trainer: %w", err)
		}
		p.procs[k] = &sharedTrainer{t: processTrainer{proc}}
	}
	return p.procs[k], func() {}, nil
}

// close stops every process started.
func (p *trainerPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.procs {
		if s != nil {
			s.t.p.Close()
		}
	}
}
