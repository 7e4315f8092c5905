package experiment

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/shufflefl/shufflefl/driver/sim/metrics"
)

// Plots of the group-privacy experiments, in the project's plain style
// (title on top, grid, legend right of the data area where it fits).

var dprivColors = []color.Color{
	color.RGBA{0x4e, 0x79, 0xa7, 255}, color.RGBA{0xf2, 0x8e, 0x2b, 255}, color.RGBA{0xe1, 0x57, 0x59, 255},
	color.RGBA{0x76, 0xb7, 0xb2, 255}, color.RGBA{0x59, 0xa1, 0x4f, 255}, color.RGBA{0xed, 0xc9, 0x48, 255},
	color.RGBA{0xb0, 0x7a, 0xa1, 255}, color.RGBA{0x9c, 0x75, 0x5f, 255},
}

func dprivColor(i int) color.Color { return dprivColors[i%len(dprivColors)] }

func withAlpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: a}
}

func newDPrivPlot(title, xl, yl string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xl
	p.Y.Label.Text = yl
	p.Add(plotter.NewGrid())
	return p
}

// line is one curve of a line plot.
type line struct {
	name string
	xy   plotter.XYs
}

func plotLines(path, title, xl, yl string, lines []line, logY bool) error {
	p := newDPrivPlot(title, xl, yl)
	leg := metrics.NewLegend()
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	for i, l := range lines {
		if len(l.xy) == 0 {
			continue
		}
		ln, pts, err := plotter.NewLinePoints(l.xy)
		if err != nil {
			return err
		}
		ln.Color, pts.Color = dprivColor(i), dprivColor(i)
		ln.Dashes = [][]vg.Length{nil, {vg.Points(5), vg.Points(3)}, {vg.Points(1), vg.Points(2)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}[i%4]
		pts.Shape = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}[i%4]
		pts.Radius = vg.Points(2)
		p.Add(ln, pts)
		leg.Add(l.name, ln, pts)
	}
	return metrics.SavePNG(path, p, leg, 7*vg.Inch, 4.5*vg.Inch)
}

// plotReleases draws the paper's Figure 1 panel for one run: the vectors
// the clients released (sanitized or not), their true updated vectors
// (invisible to the server, drawn for clarity as in the paper), the
// hypotheses' trajectories over rounds and the optimal parameters.
func plotReleases(path, title string, releases, updates plotter.XYs, traj []plotter.XYs, stars [][]float64, clip float64) error {
	p := newDPrivPlot(title, "θ[0]", "θ[1]")
	leg := metrics.NewLegend()
	clipXY := func(xy plotter.XYs) plotter.XYs {
		var out plotter.XYs
		for _, v := range xy {
			if math.Abs(v.X) <= clip && math.Abs(v.Y) <= clip {
				out = append(out, v)
			}
		}
		return out
	}
	add := func(name string, xy plotter.XYs, c color.Color, shape draw.GlyphDrawer, r vg.Length) error {
		xy = clipXY(xy)
		if len(xy) == 0 {
			return nil
		}
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return err
		}
		s.Color, s.Shape, s.Radius = c, shape, r
		p.Add(s)
		leg.Add(name, s)
		return nil
	}
	if err := add("released vectors", releases, withAlpha(dprivColor(0), 110), draw.CircleGlyph{}, vg.Points(1.8)); err != nil {
		return err
	}
	if err := add("true updated vectors (not sent)", updates, withAlpha(dprivColor(4), 140), draw.CrossGlyph{}, vg.Points(2)); err != nil {
		return err
	}
	for j, t := range traj {
		t = clipXY(t)
		if len(t) == 0 {
			continue
		}
		ln, pts, err := plotter.NewLinePoints(t)
		if err != nil {
			return err
		}
		c := dprivColor(1 + j)
		ln.Color, pts.Color, pts.Shape, pts.Radius = c, c, draw.BoxGlyph{}, vg.Points(2)
		p.Add(ln, pts)
		leg.Add(fmt.Sprintf("hypothesis %d over rounds", j+1), ln, pts)
	}
	var st plotter.XYs
	for _, s := range stars {
		st = append(st, plotter.XY{X: s[0], Y: s[1]})
	}
	if err := add("optimal θ*", st, color.Black, draw.PyramidGlyph{}, vg.Points(5)); err != nil {
		return err
	}
	// Headroom for the legend above the data.
	p.Y.Max += 0.3 * (p.Y.Max - p.Y.Min)
	return metrics.SavePNG(path, p, leg, 6*vg.Inch, 6*vg.Inch)
}

// plotErrorBars draws mean ± sd curves: x values xs, one curve per name.
func plotErrorBars(path, title, xl, yl string, names []string, xs []float64, means, sds [][]float64) error {
	p := newDPrivPlot(title, xl, yl)
	leg := metrics.NewLegend()
	for i, name := range names {
		var xy plotter.XYs
		var ye plotter.YErrors
		for k := range xs {
			if math.IsNaN(means[i][k]) {
				continue
			}
			// Offset the curves slightly so that error bars do not overlap.
			xy = append(xy, plotter.XY{X: float64(k) + 0.06*float64(i) - 0.09, Y: means[i][k]})
			ye = append(ye, struct{ Low, High float64 }{sds[i][k], sds[i][k]})
		}
		if len(xy) == 0 {
			continue
		}
		ln, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		c := dprivColor(i)
		ln.Color, pts.Color = c, c
		pts.Shape = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}[i%4]
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{xy, ye})
		if err != nil {
			return err
		}
		eb.Color = c
		p.Add(ln, pts, eb)
		leg.Add(name, ln, pts)
	}
	var ticks []plot.Tick
	for k, x := range xs {
		ticks = append(ticks, plot.Tick{Value: float64(k), Label: fmt.Sprintf("%g", x)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -0.5, float64(len(xs))-0.5
	return metrics.SavePNG(path, p, leg, 7*vg.Inch, 4.5*vg.Inch)
}

// plotHistogram draws the distribution of the clients' composed leakage,
// one bar per number of participations (values are multiples of unit).
func plotHistogram(path, title, xl string, values []float64, unit float64) error {
	p := newDPrivPlot(title, xl, "clients")
	leg := metrics.NewLegend()
	counts := map[int]float64{}
	hi := 0
	for _, v := range values {
		k := int(math.Round(v / unit))
		counts[k]++
		hi = max(hi, k)
	}
	h := &plotter.Histogram{Width: unit, FillColor: withAlpha(dprivColor(0), 180)}
	h.LineStyle = plotter.DefaultLineStyle
	h.LineStyle.Color = dprivColor(0)
	for k := 0; k <= hi; k++ {
		h.Bins = append(h.Bins, plotter.HistogramBin{Min: (float64(k) - 0.5) * unit, Max: (float64(k) + 0.5) * unit, Weight: counts[k]})
	}
	p.Add(h)
	return metrics.SavePNG(path, p, leg, 7*vg.Inch, 4.5*vg.Inch)
}
