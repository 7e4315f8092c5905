package metrics

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// PlotAccuracy writes a PNG of test accuracy and test loss over rounds.
func PlotAccuracy(path, title string, recs []Record) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "round"
	p.Y.Label.Text = "test accuracy"
	p.Y.Min, p.Y.Max = 0, 1
	acc := make(plotter.XYs, len(recs))
	for i, r := range recs {
		acc[i] = plotter.XY{X: float64(r.Round), Y: r.TestAccuracy}
	}
	if err := plotutil.AddLinePoints(p, "test accuracy", acc); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	p.Add(plotter.NewGrid())
	if err := p.Save(6*vg.Inch, 4*vg.Inch, path); err != nil {
		return fmt.Errorf("plot: saving %s: %w", path, err)
	}
	return nil
}

// PlotPrivacy writes a PNG of the per-round central epsilon, the cumulative
// central epsilon and the largest per-client spent local epsilon over rounds.
// Rounds without a finite guarantee are left out; if none has one, the plot
// says so in its title.
func PlotPrivacy(path, title string, recs []Record) error {
	p := plot.New()
	p.X.Label.Text = "round"
	p.Y.Label.Text = "epsilon"
	var round, cum, client plotter.XYs
	lo, hi := math.Inf(1), 0.0
	add := func(xy *plotter.XYs, round int, v *float64) {
		if v != nil && *v > 0 {
			*xy = append(*xy, plotter.XY{X: float64(round), Y: *v})
			lo, hi = math.Min(lo, *v), math.Max(hi, *v)
		}
	}
	for _, r := range recs {
		add(&round, r.Round, r.RoundCentralEpsilon)
		add(&cum, r.Round, r.CumulativeEpsilon)
		add(&client, r.Round, r.MaxClientEpsilon)
	}
	// Local and central epsilons often differ by orders of magnitude: use a
	// log scale then, so that every curve stays readable.
	if hi > 100*lo {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Label.Text = "epsilon (log scale)"
	}
	p.Title.Text = title
	if n := len(recs); n > 0 && recs[n-1].CumulativeEpsilon != nil {
		p.Title.Text = fmt.Sprintf("%s, cumulative delta %.3g", title, recs[n-1].CumulativeDelta)
	}
	if len(round)+len(cum)+len(client) == 0 {
		p.Title.Text = title + " (no privacy guarantee)"
		p.Y.Min, p.Y.Max = 0, 1
		p.X.Min, p.X.Max = 0, float64(len(recs))
	}
	lines := []struct {
		name string
		xy   plotter.XYs
		c    color.Color
	}{
		{"central epsilon (round)", round, plotutil.Color(0)},
		{"cumulative central epsilon", cum, plotutil.Color(1)},
		{"max client local epsilon spent", client, plotutil.Color(2)},
	}
	for _, l := range lines {
		if len(l.xy) == 0 {
			continue
		}
		ln, err := plotter.NewLine(l.xy)
		if err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		ln.Color = l.c
		ln.Width = vg.Points(1.5)
		p.Add(ln)
		p.Legend.Add(l.name, ln)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	if err := p.Save(6*vg.Inch, 4*vg.Inch, path); err != nil {
		return fmt.Errorf("plot: saving %s: %w", path, err)
	}
	return nil
}

// Series is one named run for comparison plots.
type Series struct {
	Name    string
	Records []Record
}

// PlotCompare writes a PNG overlaying the test accuracy of several runs.
func PlotCompare(path, title string, runs []Series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "round"
	p.Y.Label.Text = "test accuracy"
	p.Y.Min, p.Y.Max = 0, 1
	var args []any
	for _, r := range runs {
		xy := make(plotter.XYs, len(r.Records))
		for i, rec := range r.Records {
			xy[i] = plotter.XY{X: float64(rec.Round), Y: rec.TestAccuracy}
		}
		args = append(args, r.Name, xy)
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	p.Legend.Top = false
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("plot: saving %s: %w", path, err)
	}
	return nil
}
