package experiment

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/driver/sim/metrics"
	"github.com/shufflefl/shufflefl/learning/data"
)

// Runs is what the engine experiments need of `shufflefl run`: its checks
// of a run's settings beyond round.Config.Validate, the line that states
// a privacy plan, and the writing of a finished run's outputs into
// cfg.Out.
type Runs interface {
	Check(cfg round.Config) error
	PlanLine(plan round.Plan) string
	Write(cfg round.Config, recs []metrics.Record, sum round.Summary, log string) error
}

// Result is what an experiment computed: the results.md it wrote and the
// runs behind it (the field of its kind).
type Result struct {
	Markdown string
	// Runs are the engine runs of the paper tables and the frontier, in
	// the order of results.md.
	Runs []EngineRun
	// Reference are the runs of dprivacy-synthetic and
	// dprivacy-regression (reference simulation); Rotated those of
	// dprivacy-rotated (engine).
	Reference []DPrivacyRun
	Rotated   []RotatedRun
}

// EngineRun is one engine run of an experiment.
type EngineRun struct {
	Table   int    // paper tables: index of the run's table
	Label   string // paper tables: the row's label; frontier: the protocol
	Target  float64
	Config  round.Config
	Records []metrics.Record // one per round
	Summary round.Summary
	// Skipped, for a frontier point, says why the run could not be made
	// (Records is then empty).
	Skipped string
}

// Output is where an experiment writes.
type Output struct {
	// Dir is the output directory; the caller has checked it (no outputs
	// of another experiment in it) and created it.
	Dir string
	// Log receives status lines (nil: discarded); Progress adds one line
	// per round of every engine run.
	Log      io.Writer
	Progress bool
	// Command is the command line, quoted in results.md.
	Command string
	// Runs checks and writes the engine runs (engine experiments only).
	Runs Runs
}

func (o Output) logf(format string, a ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format, a...)
	}
}

// writeFile writes name under the output directory.
func (o Output) writeFile(name, text string) error {
	return os.WriteFile(filepath.Join(o.Dir, name), []byte(text), 0o644)
}

// buildRun checks one run's settings as `shufflefl run` does and builds its
// engine, whose pre-flight validates the protocol against the first round
// (FLAME's k <= d, say) and plans the privacy of every round.
func buildRun(runs Runs, cfg round.Config, split data.Split) (*sim.Engine, error) {
	if err := runs.Check(cfg); err != nil {
		return nil, err
	}
	budgets, err := round.Budgets(cfg, nil)
	if err != nil {
		return nil, err
	}
	return sim.New(cfg, split, budgets)
}

// runOne runs one built configuration and writes its outputs like
// `shufflefl run` into cfg.Out.
func (o Output) runOne(cfg round.Config, eng *sim.Engine) ([]metrics.Record, round.Summary, error) {
	var log strings.Builder
	fmt.Fprintf(&log, "shufflefl: %s on %s, model %s (d=%d), %d clients, %d rounds, %d workers\n",
		cfg.Protocol, cfg.Dataset, cfg.Model, eng.Model().Dim(), cfg.Clients, cfg.Rounds, eng.Workers())
	if plan := eng.PrivacyPlan(); plan.Private {
		fmt.Fprintf(&log, "privacy plan: %s\n", o.Runs.PlanLine(plan))
	}
	for _, w := range eng.Warnings() {
		fmt.Fprintf(&log, "warning: %s\n", w)
	}
	var recs []metrics.Record
	sum, err := eng.Run(func(r round.RoundResult) {
		recs = append(recs, metrics.FromResult(r))
		line := fmt.Sprintf("round %d/%d  acc %.4f  loss %.4f  %.2fs\n", r.Round, cfg.Rounds, r.TestAccuracy, r.TestLoss, r.Seconds)
		log.WriteString(line)
		if o.Progress {
			o.logf("%s", line)
		}
	})
	if err != nil {
		return nil, sum, err
	}
	if sum.Halted != "" {
		fmt.Fprintf(&log, "shufflefl: %s\n", sum.Halted)
		o.logf("shufflefl: %s\n", sum.Halted)
	}
	if err := o.Runs.Write(cfg, recs, sum, log.String()); err != nil {
		return nil, sum, err
	}
	return recs, sum, nil
}

// eta is ", ETA 1m2s" for the runs left after done of total runs took
// elapsed, or "" before the first has finished.
func eta(done, total int, elapsed time.Duration) string {
	if done == 0 {
		return ""
	}
	left := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
	return fmt.Sprintf(", ETA %s", left.Round(time.Second))
}

// groupDigits writes v with thousands separators: 10,000.
func groupDigits(v int) string {
	s := strconv.Itoa(v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// finite returns a pointer to v, or nil for an infinite or NaN v (JSON
// null: unbounded).
func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

// fmtEps writes an epsilon, ∞ for nil.
func fmtEps(v *float64) string {
	if v == nil {
		return "∞"
	}
	return fmt.Sprintf("%.4g", *v)
}

// meanSD returns the mean and the sample standard deviation (0 for one
// value) of vs.
func meanSD(vs []float64) (mean, sd float64) {
	for _, v := range vs {
		mean += v
	}
	mean /= float64(len(vs))
	if len(vs) < 2 {
		return mean, 0
	}
	for _, v := range vs {
		sd += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sd / float64(len(vs)-1))
}

// writeJSON writes v, indented, to name under the output directory.
func (o Output) writeJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.Dir, name), append(b, '\n'), 0o644)
}
