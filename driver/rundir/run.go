package rundir

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/driver/sim/metrics"
	"github.com/shufflefl/shufflefl/internal/format"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/privacy/account"
)

// Options steer Execute: how a run of the engine writes its directory and
// what it shows.
type Options struct {
	// Resume continues the run in cfg.Out from its checkpoint; otherwise
	// cfg.Out is prepared (Prepare, with Overwrite).
	Resume    bool
	Overwrite bool
	// StopAfter stops (checkpointed) after this round; 0 runs every round.
	StopAfter int
	// Progress is the display: auto, bar, log or none (NewProgress).
	Progress string
	// Version heads config.yaml.
	Version string
	// Stdout and Stderr receive the run's lines, which run.log gets too.
	Stdout, Stderr io.Writer
	// Attach, if set, is called with the engine once it is built (or
	// restored), before the run's files are written; the function it
	// returns is called when the run ends. `shufflefl run` attaches its
	// remote workers (remote.Attach, package driver/sim/remote) this way.
	Attach func(*sim.Engine) (func(), error)
	// Trainer is the run's trainer program, written to config.yaml (the
	// caller attaches it).
	Trainer Trainer
	// Finish, if set, is called once the rounds are done, before
	// summary.json is written, with the engine and the summary, which it
	// may complete (the trainer's evaluation of the final model). An error
	// is printed and does not fail the run.
	Finish func(*sim.Engine, *round.Summary) error
}

// ErrInterrupted reports a run stopped by SIGINT or SIGTERM (after its
// round in progress, checkpointed).
var ErrInterrupted = errors.New("interrupted")

// invalid marks an error as invalid input (checks.ErrInvalid) whatever it
// wraps, keeping its message.
type invalid struct{ error }

func (e invalid) Unwrap() error        { return e.error }
func (e invalid) Is(target error) bool { return target == checks.ErrInvalid }

// Execute runs the engine for cfg into cfg.Out and writes every output of
// the run (docs/OUTPUTS.md): the budgets and data are read and the engine
// built (or restored from its checkpoint with Resume), then each round's
// record and checkpoint are written as it ends; SIGINT and SIGTERM finish
// the round in progress. Once the directory is prepared, *log is set to
// run.log (the caller closes it), which gets every line. An error that
// wraps checks.ErrInvalid is the input's fault; ErrInterrupted reports a
// run stopped by a signal (its outputs so far are written).
func Execute(cfg round.Config, o Options, log *io.Writer) error {
	eng, split, recs, err := open(cfg, o)
	if err != nil {
		return err
	}
	if o.Attach != nil {
		detach, err := o.Attach(eng)
		if err != nil {
			return err
		}
		defer detach()
	}
	lf, mf, err := openFiles(cfg, o, log)
	if mf != nil {
		defer mf.Close()
	}
	if err != nil {
		return invalid{err}
	}
	jl := metrics.NewJSONL(mf)
	for _, r := range recs {
		if err := jl.Write(r); err != nil {
			return err
		}
	}
	stdout, stderr := Tee{o.Stdout, lf}, Tee{o.Stderr, lf}
	if o.Resume {
		fmt.Fprintf(stderr, "shufflefl: resuming %s after round %d of %d\n", cfg.Out, eng.Round(), cfg.Rounds)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var interrupted atomic.Bool
	go func() {
		if _, ok := <-sigs; ok {
			interrupted.Store(true)
			fmt.Fprintf(stderr, "\nshufflefl: interrupted; finishing the round in progress\n")
		}
	}()
	stopped := func() bool { return o.StopAfter > 0 && eng.Round() >= o.StopAfter }
	eng.SetStop(func() bool { return interrupted.Load() || stopped() })
	printStart(stderr, cfg, split, eng)
	prog := NewProgress(o.Progress, o.Stderr, lf, cfg.Rounds)
	var werr error
	ranNone := true
	sum, err := eng.Run(func(r round.RoundResult) {
		ranNone = false
		rec := metrics.FromResult(r)
		recs = append(recs, rec)
		if e := jl.Write(rec); e != nil && werr == nil {
			werr = e
		}
		// The checkpoint follows the round's record (see Restore).
		if e := WriteCheckpoint(eng, cfg.Out); e != nil && werr == nil {
			werr = e
		}
		prog.Round(rec)
	})
	prog.Done()
	if err != nil {
		if eng.Round() == 0 && !o.Resume {
			return fmt.Errorf("%w (no round completed, so there is nothing to resume; rerun with --overwrite to reuse %s)", err, cfg.Out)
		}
		return fmt.Errorf("%w (partial results of the rounds before are in %s; resume with: shufflefl run --resume %s)", err, cfg.Out, cfg.Out)
	}
	if werr != nil {
		return werr
	}
	if err := mf.Close(); err != nil {
		return fmt.Errorf("writing metrics.jsonl: %w", err)
	}
	if err := WriteModel(eng, cfg, split.Train.Features, split.Train.Classes); err != nil {
		return err
	}
	sum = complete(sum, eng, recs, ranNone)
	sum.LowerBound = runLowerBound(eng, cfg, recs)
	if o.Finish != nil && !ranNone {
		if err := o.Finish(eng, &sum); err != nil {
			fmt.Fprintf(stderr, "shufflefl: %v\n", err)
		}
	}
	halted := interrupted.Load() || stopped()
	if o.Resume || halted {
		if err := WriteConfig(cfg, o.Version, o.Trainer); err != nil {
			return invalid{err}
		}
	}
	if err := WriteSummaryAndPlots(cfg, recs, sum); err != nil {
		return err
	}
	if halted && eng.Round() < cfg.Rounds && sum.Halted == "" {
		fmt.Fprintf(stderr, "shufflefl: stopped after round %d of %d; outputs so far are in %s; resume with: shufflefl run --resume %s\n", eng.Round(), cfg.Rounds, cfg.Out, cfg.Out)
		if interrupted.Load() {
			return ErrInterrupted
		}
	}
	printEnd(stdout, stderr, cfg, recs, sum)
	return nil
}

// open reads the budgets and the data and builds the engine; a resumed
// run is restored from its checkpoint (with the records of its rounds),
// and a new one's output directory is prepared.
func open(cfg round.Config, o Options) (*sim.Engine, data.Split, []metrics.Record, error) {
	var explicit []float64
	var split data.Split
	if cfg.EpsFile != "" {
		f, err := os.Open(cfg.EpsFile)
		if err != nil {
			return nil, split, nil, checks.Invalidf("eps-file: %v", err)
		}
		explicit, err = account.ReadBudgets(f)
		f.Close()
		if err != nil {
			return nil, split, nil, invalid{fmt.Errorf("eps-file %s: %w", cfg.EpsFile, err)}
		}
	}
	budgets, err := round.ResolveBudgets(cfg, explicit) // one budget, not one per client, when all are equal
	if err != nil {
		return nil, split, nil, err
	}
	if split, err = cfg.LoadData(); err != nil {
		return nil, split, nil, invalid{err}
	}
	eng, err := sim.NewBudgets(cfg, split, budgets)
	if err != nil {
		return nil, split, nil, err
	}
	var recs []metrics.Record
	if o.Resume {
		if recs, err = Restore(eng, cfg.Out); err != nil {
			return nil, split, nil, err
		}
	} else if err := Prepare(cfg.Out, o.Overwrite); err != nil {
		// Everything is checked: replace the previous outputs
		// (--overwrite) and start writing.
		return nil, split, nil, invalid{err}
	}
	return eng, split, recs, nil
}

// openFiles opens run.log (appending on resume; *log is set to it) and
// writes config.yaml, then creates metrics.jsonl, which holds exactly the
// rounds done (a resumed run rewrites the restored ones, dropping a record
// written after the checkpoint).
func openFiles(cfg round.Config, o Options, log *io.Writer) (*os.File, *os.File, error) {
	logFlags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if o.Resume {
		logFlags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	lf, err := os.OpenFile(filepath.Join(cfg.Out, LogFile), logFlags, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("writing %s: %w", LogFile, err)
	}
	*log = lf
	if err := WriteConfig(cfg, o.Version, o.Trainer); err != nil {
		return lf, nil, err
	}
	mf, err := os.Create(filepath.Join(cfg.Out, "metrics.jsonl"))
	if err != nil {
		return lf, nil, fmt.Errorf("writing metrics.jsonl: %w", err)
	}
	return lf, mf, nil
}

// printStart writes the run's first lines: what runs, the privacy plan
// and the engine's warnings.
func printStart(stderr io.Writer, cfg round.Config, split data.Split, eng *sim.Engine) {
	fmt.Fprintf(stderr, "shufflefl: %s on %s (%d train / %d test), model %s (d=%d), %d clients, %d rounds, %d workers\n",
		cfg.Protocol, cfg.Dataset, split.Train.Len(), split.Test.Len(), cfg.Model, eng.Model().Dim(), cfg.Clients, cfg.Rounds, eng.Workers())
	if plan := eng.PrivacyPlan(); plan.Private {
		how := ""
		if cfg.TargetEpsilon > 0 && !round.CentralTarget(cfg.Protocol) {
			how = fmt.Sprintf("; local budgets calibrated to the target %s (scale %s, largest local epsilon %s per round)", format.Figure(cfg.TargetEpsilon, -1), format.Figure(plan.Scale, 4), format.Figure(plan.LocalEpsilon, 4))
			if plan.Approximate {
				how = fmt.Sprintf("; local budgets calibrated to the target %s by an approximate statement, so the target is met only approximately (scale %s, largest local epsilon %s per round)", format.Figure(cfg.TargetEpsilon, -1), format.Figure(plan.Scale, 4), format.Figure(plan.LocalEpsilon, 4))
			}
		}
		fmt.Fprintf(stderr, "privacy plan: %s\n", PlanLine(plan, how))
	}
	for _, w := range eng.Warnings() {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
}

// complete completes the engine's summary to cover every round of the
// run, resumed or not: a resumed run that stopped before (target, early
// stop) runs no round, and its figures are those of its last record.
func complete(sum round.Summary, eng *sim.Engine, recs []metrics.Record, ranNone bool) round.Summary {
	sum.Rounds = eng.Round()
	for _, r := range recs {
		sum.BestAccuracy = math.Max(sum.BestAccuracy, r.TestAccuracy)
	}
	if n := len(recs); n > 0 && ranNone {
		last := recs[n-1]
		sum.FinalAccuracy, sum.FinalLoss = last.TestAccuracy, last.TestLoss
		sum.Privacy = last.Privacy()
		sum.Alone = round.AloneRound{Epsilon: math.Inf(1), Delta: last.RoundAloneDelta}
		if last.RoundAloneEpsilon != nil {
			sum.Alone.Epsilon, sum.Alone.Method = *last.RoundAloneEpsilon, "as recorded in metrics.jsonl"
		}
		sum.ClusterAccuracy = last.ClusterAccuracy
		sum.MaxClientEpsilon = math.Inf(1)
		if last.MaxClientEpsilon != nil {
			sum.MaxClientEpsilon = *last.MaxClientEpsilon
		}
	}
	return sum
}

// printEnd writes the run's last lines: why it halted, the validation and
// the final accuracy and privacy.
func printEnd(stdout, stderr io.Writer, cfg round.Config, recs []metrics.Record, sum round.Summary) {
	srec := metrics.NewSummary(cfg, sum)
	if sum.Halted != "" {
		fmt.Fprintf(stderr, "shufflefl: %s\n", sum.Halted)
	}
	eps := epsString(srec.CumulativeEpsilon, srec.CumulativeDelta, srec.Approximate, srec.LowerBoundEpsilon)
	if n := len(recs); n > 0 && recs[n-1].DPrivacy != nil {
		d := recs[n-1].DPrivacy
		eps += fmt.Sprintf("; d-privacy leakage %s per participation, at most %s composed for a client", format.Figure(d.Level, 4), format.Figure(d.MaxCumulative, 4))
	}
	if v := sum.Validation; v != nil {
		fmt.Fprintf(stdout, "validation on %d held-out clients (not covered by the privacy statement, which covers the %d training clients): best loss %s at round %d, test accuracy %.4f there\n",
			v.HoldoutClients, cfg.Clients, format.Figure(v.BestLoss, 4), v.BestRound, v.TestAccuracyAtBest)
	}
	if te := sum.TrainerEvaluation; te != nil {
		fmt.Fprintf(stdout, "the trainer's evaluation of the final model: test accuracy %.4f, loss %.4f on %d examples (shufflefl's: %.4f, %.4f)\n",
			te.Accuracy, te.Loss, te.Examples, sum.FinalAccuracy, sum.FinalLoss)
	}
	fmt.Fprintf(stdout, "final test accuracy %.4f (best %.4f), loss %.4f after %d rounds in %.1fs; cumulative central epsilon %s; outputs in %s\n",
		sum.FinalAccuracy, sum.BestAccuracy, sum.FinalLoss, sum.Rounds, sum.Seconds, eps, cfg.Out)
}

// Tee writes to the terminal (stdout or stderr) and to run.log. A failure
// to write the log does not stop the run; the log's Close reports it.
type Tee struct{ Term, Log io.Writer }

// Write implements io.Writer.
func (t Tee) Write(p []byte) (int, error) {
	t.Log.Write(p) //nolint:errcheck // see the type's comment
	return t.Term.Write(p)
}

// PlanLine is the privacy plan's line after "privacy plan: ", how being
// appended. A resumed run's plan composes the rounds done with those that
// remain, and says so; an approximate plan (S-APES) says that first.
func PlanLine(plan round.Plan, how string) string {
	rounds := fmt.Sprintf("%d rounds", plan.Rounds)
	if plan.Done > 0 {
		rounds = fmt.Sprintf("%d rounds (the %d done, as they were accounted, and %d more)", plan.Rounds, plan.Done, plan.Rounds-plan.Done)
	}
	qual := "at most"
	if plan.Approximate {
		qual = "approximately (not a proven bound)"
	}
	return fmt.Sprintf("%s spend %s epsilon %s at delta %s (%s)%s", rounds, qual, format.Figure(plan.Epsilon, 4), format.Figure(plan.Delta, 3), plan.Method, how)
}

// epsString writes a cumulative guarantee and, when one was computed, the
// proven lower bound on the true epsilon beside it ("7.992 (delta 1e-06,
// lower bound 6.62)"); an approximate guarantee (S-APES) is labelled so,
// since it is not a proven upper bound.
func epsString(eps *float64, delta float64, approximate bool, lower *float64) string {
	if eps == nil {
		return "none (not private)"
	}
	lb := ""
	if lower != nil {
		lb = ", lower bound " + lowerFigure(*lower)
	}
	if approximate {
		return fmt.Sprintf("%s (delta %s%s), approximate: not a proven bound", format.Figure(*eps, 4), format.Figure(delta, 3), lb)
	}
	return fmt.Sprintf("%s (delta %s%s)", format.Figure(*eps, 4), format.Figure(delta, 3), lb)
}

// lowerFigure writes a lower bound with 3 significant digits, rounded
// DOWN (so that the figure printed is still a lower bound).
func lowerFigure(x float64) string {
	if !(x > 0) || math.IsInf(x, 0) {
		return format.Figure(x, 3)
	}
	e := math.Pow(10, math.Floor(math.Log10(x))-2)
	return format.Figure(math.Floor(x/e)*e, 3)
}

// Progress shows a run's rounds: a bar on a terminal and log lines
// elsewhere; every round's log line goes to run.log whatever the display.
type Progress struct {
	mode   string
	w      io.Writer // the terminal side (stderr)
	log    io.Writer // run.log
	total  int
	start  time.Time
	active bool
}

// NewProgress returns the display of a run of total rounds on w in mode
// auto (a bar if w is a terminal, else log lines), bar, log or none,
// writing every round's log line to log too.
func NewProgress(mode string, w, log io.Writer, total int) *Progress {
	if mode == "auto" {
		mode = "log"
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				mode = "bar"
			}
		}
	}
	return &Progress{mode: mode, w: w, log: log, total: total, start: time.Now()}
}

// Mode returns the display NewProgress chose: bar, log or none (auto
// resolved).
func (p *Progress) Mode() string { return p.mode }

// Round shows round r.
func (p *Progress) Round(r metrics.Record) {
	eps := "-"
	if r.CumulativeEpsilon != nil {
		eps = format.Figure(*r.CumulativeEpsilon, 3)
	}
	line := fmt.Sprintf("round %d/%d  acc %.4f  loss %.4f  eps %s  %.2fs\n", r.Round, p.total, r.TestAccuracy, r.TestLoss, eps, r.Seconds)
	if r.SatOut > 0 {
		line += fmt.Sprintf("round %d: %d client(s) sat out: %s\n", r.Round, r.SatOut, r.TrainerError)
	}
	fmt.Fprint(p.log, line)
	switch p.mode {
	case "log":
		fmt.Fprint(p.w, line)
	case "bar":
		const width = 30
		done := r.Round * width / p.total
		el := time.Since(p.start)
		eta := time.Duration(float64(el) / float64(r.Round) * float64(p.total-r.Round))
		fmt.Fprintf(p.w, "\r[%s%s] %d/%d acc %.4f eps %s eta %s   ",
			strings.Repeat("#", done), strings.Repeat(".", width-done), r.Round, p.total, r.TestAccuracy, eps, eta.Round(time.Second))
		p.active = true
	}
}

// Done ends the display (the bar's line).
func (p *Progress) Done() {
	if p.active {
		fmt.Fprintln(p.w)
	}
}

// CheckRun is cfg.Validate plus the checks of `shufflefl run` that the
// engine does not make: a setting that would be silently ignored is an
// error, and so is a dataset a run cannot train on.
func CheckRun(cfg round.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	// runtime checks alpha only under --partition dirichlet; a negative
	// concentration is never meaningful, so reject it whatever the
	// partition (the default 0.5 passes).
	if err := checks.Positive("alpha", cfg.Alpha); err != nil {
		return err
	}
	if cfg.Protocol == "nonprivate" {
		switch {
		case cfg.EpsDist != "":
			return checks.Invalidf("eps-dist %q has no effect with protocol nonprivate (no privacy budgets are spent): choose a private protocol or drop --eps-dist", cfg.EpsDist)
		case cfg.EpsFile != "":
			return checks.Invalidf("eps-file %q has no effect with protocol nonprivate (no privacy budgets are spent): choose a private protocol or drop --eps-file", cfg.EpsFile)
		}
	}
	if data.IsRegression(cfg.Dataset) {
		return checks.Invalidf("dataset %s is a regression set (for the clustered-FL experiments); shufflefl run trains classifiers: choose one of %s",
			cfg.Dataset, strings.Join(data.ClassificationNames(), ", "))
	}
	return nil
}
