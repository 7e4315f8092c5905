package experiment

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/shufflefl/shufflefl/driver/sim/metrics"
)

// frontierColors are distinct colours for up to 14 protocols (Tableau 10
// and four more); the non-private ceiling is black.
var frontierColors = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	{188, 189, 34, 255}, {23, 190, 207, 255}, {0, 0, 128, 255}, {128, 128, 0, 255},
	{0, 128, 128, 255}, {128, 0, 0, 255},
}

// plotFrontier writes frontier.png: one line with markers per private
// protocol (final accuracy against the cumulative epsilon it reached, log
// x axis), dp-central drawn thicker as the reference, and the non-private
// accuracy as a dashed horizontal line. The legend is right of the data.
func plotFrontier(path, title string, points []*frontierPoint) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "cumulative central ε of the run (log scale)"
	p.Y.Label.Text = "final test accuracy"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = epsTicks{}
	p.Add(plotter.NewGrid())

	type series struct {
		name   string
		xy     plotter.XYs
		approx bool
	}
	var ss []series
	ceiling := math.NaN()
	loX, hiX, loY, hiY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, pt := range points {
		if pt.skip != "" || len(pt.recs) == 0 {
			continue
		}
		acc := pt.sum.FinalAccuracy
		loY, hiY = math.Min(loY, acc), math.Max(hiY, acc)
		if pt.proto == "nonprivate" {
			ceiling = acc
			continue
		}
		last := pt.recs[len(pt.recs)-1]
		if last.CumulativeEpsilon == nil || *last.CumulativeEpsilon <= 0 {
			continue
		}
		x := *last.CumulativeEpsilon
		loX, hiX = math.Min(loX, x), math.Max(hiX, x)
		if n := len(ss); n == 0 || ss[n-1].name != pt.proto {
			ss = append(ss, series{name: pt.proto})
		}
		ss[len(ss)-1].xy = append(ss[len(ss)-1].xy, plotter.XY{X: x, Y: acc})
		ss[len(ss)-1].approx = ss[len(ss)-1].approx || approximate(last)
	}
	if math.IsInf(loX, 1) {
		loX, hiX = 1, 10
	}
	if math.IsInf(loY, 1) {
		loY, hiY = 0, 1
	}
	p.X.Min, p.X.Max = loX/1.5, hiX*1.5
	span := math.Max(hiY-loY, 0.05)
	p.Y.Min, p.Y.Max = math.Max(0, loY-0.05*span), math.Min(1, hiY+0.05*span)

	leg := metrics.NewLegend()
	if !math.IsNaN(ceiling) {
		l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: ceiling}, {X: p.X.Max, Y: ceiling}})
		if err != nil {
			return err
		}
		l.Color = color.Black
		l.Width = vg.Points(1.5)
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(l)
		leg.Add(fmt.Sprintf("nonprivate (ceiling, %.3f)", ceiling), l)
	}
	glyphs := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}
	for i, s := range ss {
		lp, pts, err := plotter.NewLinePoints(s.xy)
		if err != nil {
			return err
		}
		c := frontierColors[i%len(frontierColors)]
		lp.Color, pts.Color = c, c
		lp.Width = vg.Points(1.2)
		pts.Shape = glyphs[i%len(glyphs)]
		pts.Radius = vg.Points(3.5)
		name := s.name
		if s.name == "dp-central" {
			lp.Width = vg.Points(2.5)
			name = "dp-central (trusted analyzer)"
		}
		if s.approx {
			lp.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
			name += " (approximate ε, not a proven bound)"
		}
		p.Add(lp, pts)
		leg.Add(name, lp, pts)
	}

	return metrics.SavePNG(path, p, leg, 6.5*vg.Inch, 4.5*vg.Inch)
}

// epsTicks labels a log axis of epsilons at 1, 2 and 5 times the powers of
// ten, with unlabelled minor ticks at the other integer multiples.
type epsTicks struct{}

// Ticks implements plot.Ticker.
func (epsTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		base := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * base
			if v < lo || v > hi {
				continue
			}
			label := ""
			if m == 1 || m == 2 || m == 5 {
				label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ts = append(ts, plot.Tick{Value: v, Label: label})
		}
	}
	return ts
}
