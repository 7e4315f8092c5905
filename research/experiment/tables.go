package experiment

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim/metrics"
	"github.com/shufflefl/shufflefl/learning/data"
)

// TablesOptions are the command's settings of a paper experiment.
type TablesOptions struct {
	Dataset, DataDir string
	// Rounds, if positive, replaces every run's number of rounds.
	Rounds  int
	Seed    uint64
	Workers int
	// Only, if non-empty, keeps the runs with these labels.
	Only []string
	// Dir is the output directory: run r of table t writes into
	// Dir/tT-LABEL.
	Dir string
}

// RunConfig is one run of a paper's tables.
type RunConfig struct {
	Table  int // index of its table
	Label  string
	Config round.Config
}

// Configs returns the paper's runs (those o.Only keeps) for a training set
// of trainLen examples, with o's settings applied.
func (p Paper) Configs(o TablesOptions, trainLen int) []RunConfig {
	keep := map[string]bool{}
	for _, l := range o.Only {
		keep[l] = true
	}
	var out []RunConfig
	for ti, tab := range p.tables {
		for _, r := range tab.runs {
			if len(keep) > 0 && !keep[r.label] {
				continue
			}
			cfg := round.DefaultConfig()
			cfg.Dataset, cfg.DataDir, cfg.Seed, cfg.Workers = o.Dataset, o.DataDir, o.Seed, o.Workers
			p.base(&cfg, trainLen)
			if o.Rounds > 0 {
				cfg.Rounds = o.Rounds
			}
			r.mod(&cfg)
			if o.Rounds > 0 {
				cfg.Rounds = o.Rounds
			}
			if cfg.Protocol == "nonprivate" {
				// The base's budgets mean nothing without privacy; clear
				// them so that the run's config.yaml reruns as it is.
				cfg.EpsDist, cfg.EpsFile, cfg.EpsScale = "", "", 0
			}
			cfg.Out = filepath.Join(o.Dir, fmt.Sprintf("t%d-%s", ti+1, r.label))
			out = append(out, RunConfig{Table: ti, Label: r.label, Config: cfg})
		}
	}
	return out
}

// TablesPlan is a paper experiment whose every run is checked.
type TablesPlan struct {
	paper  Paper
	opts   TablesOptions
	split  data.Split
	runs   []RunConfig
	dims   []int    // each run's model dimension
	titles []string // each table's title, filled in
	// Checked is how long checking the runs took.
	Checked time.Duration
}

// Runs returns the number of planned runs.
func (p *TablesPlan) Runs() int { return len(p.runs) }

// PlanTables checks every run of paper and builds its engine once, so that
// a setting no run can honour fails now, not after hours of the runs
// before it. The engines are not kept (a planned APES engine holds tens of
// MB): each run builds its own again.
func PlanTables(paper Paper, o TablesOptions, split data.Split, runs Runs) (*TablesPlan, error) {
	start := time.Now()
	p := &TablesPlan{paper: paper, opts: o, split: split, runs: paper.Configs(o, split.Train.Len())}
	if len(p.runs) == 0 {
		return nil, checks.Invalidf("--only %q matches no run of %s", strings.Join(o.Only, ","), paper.Name)
	}
	for _, r := range p.runs {
		eng, err := buildRun(runs, r.Config, split)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", r.Label, err)
		}
		p.dims = append(p.dims, eng.Model().Dim())
	}
	for ti, tab := range paper.tables {
		p.titles = append(p.titles, p.tableTitle(tab.title, ti))
	}
	p.Checked = time.Since(start)
	return p, nil
}

// tableTitle fills the placeholders of the title of table ti: "{n}" with
// its planned runs' number of clients and "{d}" with their model dimension
// (a range when the runs differ), written with thousands separators.
func (p *TablesPlan) tableTitle(title string, ti int) string {
	nLo, nHi, dLo, dHi := -1, -1, -1, -1
	for k, r := range p.runs {
		if r.Table != ti {
			continue
		}
		n, d := r.Config.Clients, p.dims[k]
		if nLo < 0 {
			nLo, nHi, dLo, dHi = n, n, d, d
		}
		nLo, nHi, dLo, dHi = min(nLo, n), max(nHi, n), min(dLo, d), max(dHi, d)
	}
	if nLo < 0 {
		return title
	}
	span := func(lo, hi int) string {
		if lo == hi {
			return groupDigits(lo)
		}
		return groupDigits(lo) + "–" + groupDigits(hi)
	}
	return strings.NewReplacer("{n}", span(nLo, nHi), "{d}", span(dLo, dHi)).Replace(title)
}

// Run runs the plan, table by table, and writes into out.Dir results.md
// (one markdown table per table), an accuracy plot per table
// (accuracy-tN.png) and every run's own outputs.
func (p *TablesPlan) Run(out Output) (Result, error) {
	var res Result
	var md strings.Builder
	fmt.Fprintf(&md, "# Experiment `%s` on `%s`\n\n%s\n\nCommand: `shufflefl experiment %s`\n\n",
		p.paper.Name, p.opts.Dataset, p.paper.Summary, out.Command)
	start := time.Now()
	for ti := range p.paper.tables {
		var series []metrics.Series
		var rows []string
		for k, r := range p.runs {
			if r.Table != ti {
				continue
			}
			out.logf("== run %d of %d%s: %s: %s (%s)\n", k+1, len(p.runs), eta(k, len(p.runs), time.Since(start)), p.titles[ti], r.Label, r.Config.Protocol)
			recs, sum, err := p.runOne(r, out)
			if err != nil {
				return res, fmt.Errorf("run %s: %w", r.Label, err)
			}
			res.Runs = append(res.Runs, EngineRun{Table: ti, Label: r.Label, Config: r.Config, Records: recs, Summary: sum})
			series = append(series, metrics.Series{Name: r.Label, Records: recs})
			rows = append(rows, tableRow(r.Label, r.Config, recs, sum))
		}
		if len(rows) == 0 {
			continue
		}
		plot := fmt.Sprintf("accuracy-t%d.png", ti+1)
		if err := metrics.PlotCompare(filepath.Join(out.Dir, plot), fmt.Sprintf("%s: %s", p.paper.Name, p.titles[ti]), series); err != nil {
			return res, err
		}
		writeTable(&md, p.titles[ti], rows, plot)
	}
	res.Markdown = md.String()
	return res, out.writeFile("results.md", res.Markdown)
}

func (p *TablesPlan) runOne(r RunConfig, out Output) ([]metrics.Record, round.Summary, error) {
	eng, err := buildRun(out.Runs, r.Config, p.split)
	if err != nil {
		return nil, round.Summary{}, err
	}
	return out.runOne(r.Config, eng)
}

// writeTable writes one table of results.md with its plot.
func writeTable(md *strings.Builder, title string, rows []string, plot string) {
	fmt.Fprintf(md, "## %s\n\n", title)
	md.WriteString("| run | protocol | local ε per coordinate (min–max) | local ε per user (min–max) | central ε per coordinate, one round | central ε per user, one round (δ) | cumulative ε (δ) | bound | final accuracy | best accuracy | seconds |\n")
	md.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		md.WriteString(r)
	}
	fmt.Fprintf(md, "\n![accuracy](%s)\n\n", plot)
}

func fmtRange(lo, hi *float64) string {
	if lo == nil || hi == nil {
		return "∞"
	}
	if *lo == *hi {
		return fmt.Sprintf("%.4g", *lo)
	}
	return fmt.Sprintf("%.4g–%.4g", *lo, *hi)
}

// tableRow is one run's row of results.md.
func tableRow(label string, cfg round.Config, recs []metrics.Record, sum round.Summary) string {
	last := recs[len(recs)-1]
	delta := func(d float64) string {
		if d == 0 {
			return ""
		}
		return fmt.Sprintf(" (%.2g)", d)
	}
	bound := last.Bound
	if last.Approximate {
		bound += " [approximation]"
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s%s | %s%s | %s | %.4f | %.4f | %.1f |\n",
		label, cfg.Protocol, fmtRange(last.LocalCoordEpsilonMin, last.LocalCoordEpsilonMax), fmtRange(last.LocalEpsilonMin, last.LocalEpsilonMax),
		fmtEps(last.RoundCentralCoordEpsilon), fmtEps(last.RoundCentralEpsilon), delta(last.RoundCentralDelta),
		fmtEps(last.CumulativeEpsilon), delta(last.CumulativeDelta), bound,
		sum.FinalAccuracy, sum.BestAccuracy, sum.Seconds)
}
