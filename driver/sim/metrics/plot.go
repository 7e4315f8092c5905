package metrics

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The plots share one layout: the title over the whole image, the axes and
// data area on the left, and the legend (when there is one) in a column of
// its own to the right of the data area, so that it never covers a curve.
// The image grows to the right by the legend's width (and in height if the
// legend is taller than the data area); the data area keeps its size.
//
// Axes: the x axis shows rounds with integer ticks; the y axis is fitted to
// the data with a small margin (fitRange) and has 5 to 8 labelled ticks
// (niceTicks). Accuracy axes are clamped to [0, 1], epsilon axes to [0, ∞),
// and epsilons that differ by more than a factor of 10 get a log scale
// (logTicks).
//
// Styles: series take their colours from palette, 20 colours that are
// pairwise distinct on a white background (the first 8 are Tableau 10's).
// Comparison plots pair related series: see seriesStyles.

// PlotAccuracy writes a PNG of test accuracy over rounds. One series needs
// no legend: the y axis names it.
func PlotAccuracy(path, title string, recs []Record) error {
	p := newPlot("test accuracy")
	acc := accuracyXYs(recs)
	lo, hi := fitRange(ys(acc), 0.05, 0.05, 0, 1)
	p.Y.Min, p.Y.Max = lo, hi
	setRounds(p, acc)
	if err := addSeries(p, nil, "", acc, lineStyle{color: palette(1)[0], glyphs: len(acc) <= maxGlyphRounds}); err != nil {
		return err
	}
	return savePlot(path, title, p, nil, 6*vg.Inch, 4*vg.Inch)
}

// HasCumulativeEpsilon reports whether some record has a finite cumulative
// epsilon, that is whether the run has a privacy guarantee to plot.
func HasCumulativeEpsilon(recs []Record) bool {
	for _, r := range recs {
		if r.CumulativeEpsilon != nil {
			return true
		}
	}
	return false
}

// PlotPrivacy writes a PNG of the cumulative central epsilon of the run so
// far, of each round alone stated the same way (the run's accountant at
// the run's delta: round_alone_epsilon, never a contradiction of the
// cumulative curve, unlike the protocol's own per-round analysis at the
// round's delta share, which the plot leaves to metrics.jsonl), and of the
// largest local epsilon a client has spent. The legend entries of the
// central epsilons carry their delta (the last round's, or the range when
// it changed). When a figure is approximate (S-APES) the title and the
// legend say so. Rounds without a finite guarantee are left out; if none
// has one, the plot says so in its title (callers skip the plot then: see
// HasCumulativeEpsilon).
func PlotPrivacy(path, title string, recs []Record) error {
	p := newPlot("epsilon")
	var round, cum, client plotter.XYs
	var roundDelta, cumDelta []float64
	approx := false
	add := func(xy *plotter.XYs, round int, v *float64) bool {
		if v != nil && *v > 0 {
			*xy = append(*xy, plotter.XY{X: float64(round), Y: *v})
			return true
		}
		return false
	}
	for _, r := range recs {
		if add(&round, r.Round, r.RoundAloneEpsilon) {
			roundDelta = append(roundDelta, r.RoundAloneDelta)
		}
		if add(&cum, r.Round, r.CumulativeEpsilon) {
			cumDelta = append(cumDelta, r.CumulativeDelta)
		}
		add(&client, r.Round, r.MaxClientEpsilon)
		approx = approx || r.CumulativeApproximate || r.Approximate
	}
	central := "central epsilon"
	if approx {
		title += ": APPROXIMATE central epsilons (not proven bounds)"
		central = "approximate central epsilon"
	}
	var all plotter.XYs
	all = append(append(append(all, round...), cum...), client...)
	if len(all) == 0 {
		title += " (no privacy guarantee)"
		p.Y.Min, p.Y.Max = 0, 1
		p.X.Min, p.X.Max = 0, math.Max(1, float64(len(recs)))
		p.X.Tick.Marker = roundTicks{}
		return savePlot(path, title, p, nil, 6*vg.Inch, 4*vg.Inch)
	}
	setRounds(p, all)
	v := ys(all)
	lo, hi := minMax(v)
	if hi > 10*lo {
		// Local and central epsilons often differ by orders of magnitude:
		// a log scale keeps every curve readable.
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		p.Y.Label.Text = "epsilon (log scale)"
		p.Y.Min, p.Y.Max = lo/1.25, hi*1.25
	} else {
		p.Y.Min, p.Y.Max = fitRange(v, 0.05, 0.01*hi, 0, math.Inf(1))
	}
	glyphs := len(recs) <= maxGlyphRounds
	col := palette(3)
	lines := []struct {
		name string
		xy   plotter.XYs
		sty  lineStyle
	}{
		{"whole run so far: " + central + deltaNote(cumDelta), cum, lineStyle{color: col[1], glyphs: glyphs, shape: draw.BoxGlyph{}, width: 2.5}},
		{"each round alone, same accounting" + deltaNote(roundDelta), round, lineStyle{color: col[0], glyphs: glyphs, shape: draw.CircleGlyph{}}},
		// Dashed: for protocols without shuffling the cumulative central
		// epsilon is the clients' local one, and both curves stay visible.
		{"largest local epsilon a client spent", client, lineStyle{color: col[2], glyphs: glyphs, shape: draw.TriangleGlyph{}, dashes: dashStyles[1]}},
	}
	leg := newLegend()
	for _, l := range lines {
		if len(l.xy) == 0 {
			continue
		}
		if err := addSeries(p, leg, l.name, l.xy, l.sty); err != nil {
			return err
		}
	}
	return savePlot(path, title, p, leg, 6*vg.Inch, 4*vg.Inch)
}

// deltaNote is the legend's note of the deltas ds of a curve: " (delta =
// x)", or a range when they differ.
func deltaNote(ds []float64) string {
	if len(ds) == 0 {
		return ""
	}
	lo, hi := minMax(ds)
	if lo == hi {
		return fmt.Sprintf(" (delta = %.3g)", hi)
	}
	return fmt.Sprintf(" (delta = %.3g to %.3g)", lo, hi)
}

// Series is one named run for comparison plots.
type Series struct {
	Name    string
	Records []Record
}

// PlotCompare writes a PNG overlaying the test accuracy of several runs,
// styled by seriesStyles: related runs (names "PROTO-SETTING" sharing
// SETTING) share a colour and differ by dash and marker. A run whose curve
// is identical to an earlier one's is drawn with another dash pattern, so
// that it does not hide the earlier one.
func PlotCompare(path, title string, runs []Series) error {
	p := newPlot("test accuracy")
	names := make([]string, len(runs))
	xys := make([]plotter.XYs, len(runs))
	var all plotter.XYs
	maxRounds := 0
	for i, r := range runs {
		names[i] = r.Name
		xys[i] = accuracyXYs(r.Records)
		all = append(all, xys[i]...)
		maxRounds = max(maxRounds, len(r.Records))
	}
	if len(all) == 0 {
		p.Y.Min, p.Y.Max = 0, 1
		p.X.Min, p.X.Max = 0, 1
		p.X.Tick.Marker = roundTicks{}
	} else {
		p.Y.Min, p.Y.Max = fitRange(ys(all), 0.05, 0.05, 0, 1)
		setRounds(p, all)
	}
	leg := newLegend()
	for i, sty := range compareStyles(names, xys) {
		sty.glyphs = maxRounds <= maxGlyphRounds
		if err := addSeries(p, leg, names[i], xys[i], sty); err != nil {
			return err
		}
	}
	return savePlot(path, title, p, leg, 6.5*vg.Inch, 4.5*vg.Inch)
}

// compareStyles are the styles of the curves xys of the series names:
// seriesStyles, except that a curve identical to an earlier one of the same
// dash pattern, which it would hide, takes another dash pattern so that
// both colours show.
func compareStyles(names []string, xys []plotter.XYs) []lineStyle {
	styles := seriesStyles(names)
	for i := range styles {
		used := map[string]bool{}
		for j := range i {
			if slices.Equal(xys[i], xys[j]) {
				used[fmt.Sprint(styles[j].dashes)] = true
			}
		}
		for d := 0; used[fmt.Sprint(styles[i].dashes)] && d < len(dashStyles); d++ {
			styles[i].dashes = dashStyles[d]
		}
	}
	return styles
}

// maxGlyphRounds is the largest number of rounds whose points are marked;
// longer curves are plain lines.
const maxGlyphRounds = 30

// lineStyle is how one series is drawn.
type lineStyle struct {
	color  color.Color
	dashes []vg.Length
	width  vg.Length // in points; 0 means 1.5
	glyphs bool      // mark each point
	shape  draw.GlyphDrawer
}

// dashStyles are the dash patterns of related series: solid, dashed,
// dotted, dash-dotted.
var dashStyles = [][]vg.Length{
	nil,
	{vg.Points(6), vg.Points(3)},
	{vg.Points(1.5), vg.Points(2.5)},
	{vg.Points(7), vg.Points(2.5), vg.Points(1.5), vg.Points(2.5)},
}

// glyphShapes are the point markers, in the order series take them.
var glyphShapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{},
	draw.RingGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
}

// paletteHex are 20 colours pairwise distinct on white (CIE76 distance at
// least 34 between any two, at least 48 from white): Tableau 10 without its
// pink and grey (too near its purple and brown), then colours chosen
// greedily to be farthest from those before.
var paletteHex = []uint32{
	0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0x17becf, 0xbcbd22, 0x0000f2, 0xf200f2,
	0xf23d97, 0x000000, 0x000080, 0x00593b, 0x59003c, 0x595900, 0xccaa66, 0x001e59, 0x3d5bf2, 0xf27979,
}

// palette returns the colours of n series: distinct for n <= 20, repeating
// after that.
func palette(n int) []color.Color {
	cs := make([]color.Color, n)
	for i := range cs {
		h := paletteHex[i%len(paletteHex)]
		cs[i] = color.RGBA{R: uint8(h >> 16), G: uint8(h >> 8), B: uint8(h), A: 255}
	}
	return cs
}

// seriesStyles gives each named series its colour, dash pattern and marker.
//
// Related series are paired: a name "PROTO-SETTING" (split at its first
// '-') belongs to the family SETTING and the protocol PROTO. When every
// name has that form, the names are distinct, some family holds two or
// more series (say "apes-uniform1" and "unis-uniform1") and there are at
// most 4 protocols, every family gets one colour and every protocol one
// dash pattern and marker: solid circles for the first protocol named,
// dashed triangles for the second, dotted squares for the third, and so
// on. Otherwise every series gets a colour of its own (distinct up to 20
// series, then the colours repeat with the next dash pattern) and a marker
// of its own, solid.
func seriesStyles(names []string) []lineStyle {
	styles := make([]lineStyle, len(names))
	family := map[string]int{} // family -> colour index
	proto := map[string]int{}  // protocol -> dash index
	famSize := map[string]int{}
	fam := make([]string, len(names))
	pro := make([]string, len(names))
	seen := map[string]bool{}
	paired, split := false, true
	for i, n := range names {
		p, f, ok := strings.Cut(n, "-")
		if !ok || p == "" || f == "" || seen[n] {
			split = false
			break
		}
		seen[n] = true
		pro[i], fam[i] = p, f
		famSize[f]++
		paired = paired || famSize[f] > 1
		if _, ok := proto[p]; !ok {
			proto[p] = len(proto)
		}
	}
	if split && paired && len(proto) <= len(dashStyles) {
		for _, f := range fam {
			if _, ok := family[f]; !ok {
				family[f] = len(family)
			}
		}
		cols := palette(len(family))
		for i := range names {
			d := proto[pro[i]]
			styles[i] = lineStyle{color: cols[family[fam[i]]], dashes: dashStyles[d], shape: glyphShapes[d]}
		}
		return styles
	}
	cols := palette(len(names))
	for i := range names {
		styles[i] = lineStyle{
			color:  cols[i],
			dashes: dashStyles[(i/len(paletteHex))%len(dashStyles)],
			shape:  glyphShapes[i%len(glyphShapes)],
		}
	}
	return styles
}

// newPlot returns a plot with the shared axes: rounds on x, ylabel on y,
// and a grid. The title is drawn by savePlot over the whole image.
func newPlot(ylabel string) *plot.Plot {
	p := plot.New()
	p.X.Label.Text = "round"
	p.Y.Label.Text = ylabel
	p.Y.Tick.Marker = niceTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// newLegend returns a legend whose entries savePlot lays out right of the
// data area.
func newLegend() *legend {
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.TextStyle.Font = font.From(plot.DefaultFont, 11)
	l.ThumbnailWidth = vg.Points(28)
	l.Padding = vg.Points(2)
	return &legend{Legend: l}
}

// legend is a plot.Legend that remembers its entries' names, to size its
// column.
type legend struct {
	plot.Legend
	names []string
}

func (l *legend) add(name string, thumbs ...plot.Thumbnailer) {
	l.Legend.Add(name, thumbs...)
	l.names = append(l.names, name)
}

// size is the extent of the legend's entries.
func (l *legend) size() (w, h vg.Length) {
	sty := l.TextStyle
	var entry vg.Length
	for _, n := range l.names {
		r := sty.Rectangle(" " + n)
		w = max(w, l.ThumbnailWidth+r.Max.X)
		entry = max(entry, r.Max.Y)
	}
	n := vg.Length(len(l.names))
	return w, n*entry + max(n-1, 0)*l.Padding + sty.FontExtents().Descent
}

// addSeries adds one curve (and its entry in leg, when leg is not nil).
func addSeries(p *plot.Plot, leg *legend, name string, xy plotter.XYs, sty lineStyle) error {
	if len(xy) == 0 {
		return nil
	}
	ln, err := plotter.NewLine(xy)
	if err != nil {
		return fmt.Errorf("plot %s: %w", name, err)
	}
	ln.Color = sty.color
	ln.Width = vg.Points(1.5)
	if sty.width > 0 {
		ln.Width = vg.Points(float64(sty.width))
	}
	ln.Dashes = sty.dashes
	p.Add(ln)
	thumbs := []plot.Thumbnailer{ln}
	if sty.glyphs {
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		sc.Color = sty.color
		sc.Radius = vg.Points(3)
		sc.Shape = sty.shape
		if sc.Shape == nil {
			sc.Shape = draw.CircleGlyph{}
		}
		p.Add(sc)
		thumbs = append(thumbs, sc)
	}
	if leg != nil {
		leg.add(name, thumbs...)
	}
	return nil
}

// savePlot writes p as a PNG of a w×h data-and-axes area, with title over
// the whole image and leg (if not nil) right of the data area.
func savePlot(path, title string, p *plot.Plot, leg *legend, w, h vg.Length) error {
	const gap, margin = vg.Length(10), vg.Length(8)
	tsty := text.Style{
		Color:   color.Black,
		Font:    font.From(plot.DefaultFont, 12),
		XAlign:  draw.XCenter,
		YAlign:  draw.YTop,
		Handler: plot.DefaultTextHandler,
	}
	var lw, lh vg.Length
	if leg != nil && len(leg.names) > 0 {
		lw, lh = leg.size()
		lw += gap + margin
	}
	var th, tw vg.Length
	W := w + lw
	if title != "" {
		r := tsty.Rectangle(title)
		th, tw = r.Size().Y+vg.Points(6), r.Size().X+2*margin
		W = max(W, tw)
	}
	// The data area is roughly the plot's height less the axes and title;
	// grow the image when the legend would not fit beside it.
	H := max(h, lh+th+vg.Points(60))

	img := vgimg.New(W, H)
	c := draw.New(img)
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	if title != "" {
		// Centred over the axes when it fits there, else over the image.
		x := c.Min.X + w/2
		if tw > w {
			x = c.Center().X
		}
		c.FillText(tsty, vg.Point{X: x, Y: c.Max.Y - vg.Points(3)}, title)
	}
	pc := draw.Crop(c, 0, -(W - w), 0, -th)
	p.Draw(pc)
	if lw > 0 {
		da := p.DataCanvas(pc)
		lc := draw.Crop(c, pc.Max.X+gap, 0, 0, 0)
		lc.Min.X = pc.Max.X + gap
		lc.Max.X = c.Max.X - margin
		lc.Min.Y, lc.Max.Y = c.Min.Y, da.Max.Y
		leg.Legend.Draw(lc)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: saving %s: %w", path, err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot: saving %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plot: saving %s: %w", path, err)
	}
	return nil
}

// accuracyXYs are the test accuracies of recs against their rounds.
func accuracyXYs(recs []Record) plotter.XYs {
	xy := make(plotter.XYs, len(recs))
	for i, r := range recs {
		xy[i] = plotter.XY{X: float64(r.Round), Y: r.TestAccuracy}
	}
	return xy
}

func ys(xy plotter.XYs) []float64 {
	v := make([]float64, len(xy))
	for i, p := range xy {
		v[i] = p.Y
	}
	return v
}

// minMax returns the smallest and largest of the finite values of vs
// (+Inf, -Inf when there is none).
func minMax(vs []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return lo, hi
}

// setRounds sets the x axis to the rounds of xy, with integer ticks.
func setRounds(p *plot.Plot, xy plotter.XYs) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pt := range xy {
		lo, hi = math.Min(lo, pt.X), math.Max(hi, pt.X)
	}
	if lo == hi {
		lo, hi = lo-0.5, hi+0.5
	}
	p.X.Min, p.X.Max = lo, hi
	p.X.Tick.Marker = roundTicks{}
}

// fitRange returns the axis range of the values vs: from their smallest to
// their largest widened by frac of their spread on each side, at least
// minSpan wide (centred on the values), and clamped to [floor, ceil]
// (keeping minSpan where the clamp allows). Without finite values it
// returns [floor, ceil] when both are finite, else [0, 1].
func fitRange(vs []float64, frac, minSpan, floor, ceil float64) (lo, hi float64) {
	lo, hi = minMax(vs)
	if lo > hi {
		if math.IsInf(floor, 0) || math.IsInf(ceil, 0) {
			return 0, 1
		}
		return floor, ceil
	}
	m := frac * (hi - lo)
	if span := hi - lo + 2*m; span < minSpan {
		m = (minSpan - (hi - lo)) / 2
	}
	lo, hi = lo-m, hi+m
	if lo < floor {
		lo, hi = floor, math.Min(ceil, math.Max(hi, floor+minSpan))
	}
	if hi > ceil {
		lo, hi = math.Max(floor, math.Min(lo, ceil-minSpan)), ceil
	}
	return lo, hi
}

// niceTicks is a linear ticker with 5 to 8 labelled ticks at multiples of
// 1, 2, 2.5 or 5 times a power of ten, and a minor tick between each two.
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	step, dec := niceStep(lo, hi)
	var ticks []plot.Tick
	first := math.Ceil(lo/step - 1e-9)
	for k := first - 1; k*step <= hi+step*1e-9; k++ {
		v := k * step
		if v >= lo-step*1e-9 {
			if v == 0 {
				v = 0 // no "-0"
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', dec, 64)})
		}
		if m := v + step/2; m >= lo && m <= hi {
			ticks = append(ticks, plot.Tick{Value: m})
		}
	}
	return ticks
}

// niceStep returns the tick step for [lo, hi] giving the number of ticks
// nearest to 6 (ties to the larger step), and the decimals its labels need.
func niceStep(lo, hi float64) (step float64, decimals int) {
	best, bestDiff := 0.0, math.Inf(1)
	bestDec := 0
	mag := math.Floor(math.Log10(hi - lo))
	for e := mag - 2; e <= mag+1; e++ {
		for _, m := range []float64{5, 2.5, 2, 1} {
			s := m * math.Pow(10, e)
			n := math.Floor(hi/s+1e-9) - math.Ceil(lo/s-1e-9) + 1
			if diff := math.Abs(n - 6); diff < bestDiff || (diff == bestDiff && s > best) {
				best, bestDiff = s, diff
				bestDec = max(0, int(-e))
				if m == 2.5 {
					bestDec = max(0, int(-e)+1)
				}
			}
		}
	}
	return best, bestDec
}

// roundTicks labels whole rounds: every round, or every 2, 5, 10, 20, 50,
// ... rounds so that at most 10 are labelled.
type roundTicks struct{}

// Ticks implements plot.Ticker.
func (roundTicks) Ticks(lo, hi float64) []plot.Tick {
	step := 1.0
	for i := 1; (hi-lo)/step > 10; i++ {
		step = []float64{1, 2, 5}[i%3] * math.Pow(10, float64(i/3))
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	minor := step / 2
	if minor != math.Trunc(minor) {
		minor = 1 // steps of 5: a minor tick per round
	}
	if step > 1 {
		for v := math.Ceil(lo/minor) * minor; v <= hi; v += minor {
			if math.Mod(v, step) != 0 {
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
	}
	return ticks
}

// logTicks is a log-scale ticker with at least 5 labelled ticks where the
// range allows: at 1, 2, 5 or every mantissa 1 to 9 times the powers of ten
// over ranges of few decades, at every decade (or every 2nd, 3rd, ...) over
// wide ones; unlabelled minor ticks at the other mantissas 1 to 9.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 0) {
		return niceTicks{}.Ticks(lo, hi)
	}
	e0, e1 := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	in := func(v float64) bool { return v >= lo*(1-1e-9) && v <= hi*(1+1e-9) }
	count := func(ms []float64, every int) int {
		n := 0
		for e := e0; e <= e1; e++ {
			if e%every != 0 {
				continue
			}
			for _, m := range ms {
				if in(m * math.Pow10(e)) {
					n++
				}
			}
		}
		return n
	}
	all := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	labelled, every := all, 1
	for _, ms := range [][]float64{{1}, {1, 2, 5}, {1, 2, 3, 5, 7}} {
		if count(ms, 1) >= 5 {
			labelled = ms
			break
		}
	}
	if count([]float64{1}, 1) > 8 {
		labelled = []float64{1}
		for count(labelled, every) > 8 {
			every++
		}
	}
	var ticks []plot.Tick
	for e := e0; e <= e1; e++ {
		for _, m := range all {
			v := m * math.Pow10(e)
			if !in(v) {
				continue
			}
			t := plot.Tick{Value: v}
			if e%every == 0 && slices.Contains(labelled, m) {
				t.Label = logLabel(v)
			}
			if t.Label != "" || every == 1 {
				ticks = append(ticks, t)
			}
		}
	}
	return ticks
}

// logLabel writes a tick value of a log axis: plainly from 1e-4 to 1e6, in
// exponent form beyond.
func logLabel(v float64) string {
	if v >= 1e-4 && v < 1e6 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Legend collects the entries of a plot's legend, which SavePNG draws right
// of the data area so that it never covers a curve.
type Legend struct{ l *legend }

// NewLegend returns an empty legend.
func NewLegend() *Legend { return &Legend{newLegend()} }

// Add adds an entry with its thumbnails (the curve's line, glyphs).
func (l *Legend) Add(name string, thumbs ...plot.Thumbnailer) { l.l.add(name, thumbs...) }

// SavePNG writes p as a PNG whose data-and-axes area is w×h, with p's title
// over the whole image and leg (if not nil) right of the data area, in the
// project's plot style. p's own title and legend are not drawn.
func SavePNG(path string, p *plot.Plot, leg *Legend, w, h vg.Length) error {
	title := p.Title.Text
	p.Title.Text = ""
	defer func() { p.Title.Text = title }()
	var l *legend
	if leg != nil {
		l = leg.l
	}
	return savePlot(path, title, p, l, w, h)
}

// HasValidation reports whether some record has a validation on held-out
// clients.
func HasValidation(recs []Record) bool {
	for _, r := range recs {
		if r.Validation != nil {
			return true
		}
	}
	return false
}

// PlotValidation writes a PNG of the validation loss on the held-out
// clients (the group-privacy paper's Figure 1c/f/i) beside the test loss,
// with the best validation round marked. Rounds without a validation, or
// with a non-finite loss, are left out.
func PlotValidation(path, title string, recs []Record) error {
	p := newPlot("loss")
	var val, test, best plotter.XYs
	for _, r := range recs {
		if !math.IsNaN(r.TestLoss) && !math.IsInf(r.TestLoss, 0) {
			test = append(test, plotter.XY{X: float64(r.Round), Y: r.TestLoss})
		}
		if v := r.Validation; v != nil && v.Loss != nil {
			val = append(val, plotter.XY{X: float64(r.Round), Y: *v.Loss})
			if v.Improved {
				best = plotter.XYs{{X: float64(r.Round), Y: *v.Loss}}
			}
		}
	}
	if len(val) == 0 {
		return fmt.Errorf("plot %s: no finite validation loss", path)
	}
	all := append(ys(val), ys(test)...)
	lo, hi := fitRange(all, 0.05, 0.01, 0, math.Inf(1))
	p.Y.Min, p.Y.Max = lo, hi
	setRounds(p, test)
	leg := newLegend()
	cs := palette(3)
	if err := addSeries(p, leg, "validation loss (held-out clients)", val, lineStyle{color: cs[0], glyphs: true}); err != nil {
		return err
	}
	if err := addSeries(p, leg, "test loss", test, lineStyle{color: cs[1], dashes: []vg.Length{vg.Points(4), vg.Points(3)}}); err != nil {
		return err
	}
	if len(best) > 0 {
		sc, err := plotter.NewScatter(best)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		sc.Color, sc.Radius, sc.Shape = cs[2], vg.Points(6), draw.RingGlyph{}
		p.Add(sc)
		leg.add(fmt.Sprintf("best validation (round %.0f)", best[0].X), sc)
	}
	return savePlot(path, title, p, leg, 6*vg.Inch, 4*vg.Inch)
}

// HasDPrivacy reports whether some record has a d-privacy statement
// (protocols whose guarantee is d-privacy, ifca-dp).
func HasDPrivacy(recs []Record) bool {
	for _, r := range recs {
		if r.DPrivacy != nil {
			return true
		}
	}
	return false
}

// PlotLeakage writes a PNG of the clients' composed d-privacy leakage over
// rounds (the group-privacy paper's Figure 2): per hypothesis, the largest
// leakage of the clients that chose it in the round, and over all clients
// the largest and the median. A log scale is used when the values span
// more than a factor of 10.
func PlotLeakage(path, title string, recs []Record) error {
	p := newPlot("composed d-privacy leakage")
	var maxAll, medAll plotter.XYs
	var perH []plotter.XYs
	for _, r := range recs {
		if r.DPrivacy == nil {
			continue
		}
		x := float64(r.Round)
		maxAll = append(maxAll, plotter.XY{X: x, Y: r.DPrivacy.MaxCumulative})
		medAll = append(medAll, plotter.XY{X: x, Y: r.DPrivacy.MedianCumulative})
		for h, hy := range r.Hypotheses {
			for len(perH) <= h {
				perH = append(perH, nil)
			}
			if hy.Chosen > 0 {
				perH[h] = append(perH[h], plotter.XY{X: x, Y: hy.MaxLeakage})
			}
		}
	}
	if len(maxAll) == 0 {
		return fmt.Errorf("plot %s: no round has a d-privacy statement", path)
	}
	all := append(ys(maxAll), ys(medAll)...)
	lo, hi := minMax(all)
	if lo > 0 && hi > 10*lo {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		p.Y.Min, p.Y.Max = lo/1.2, hi*1.2
	} else {
		p.Y.Min, p.Y.Max = fitRange(all, 0.05, 1, 0, math.Inf(1))
	}
	setRounds(p, maxAll)
	leg := newLegend()
	cs := palette(2 + len(perH))
	if err := addSeries(p, leg, "max over clients", maxAll, lineStyle{color: cs[0], width: 2.5}); err != nil {
		return err
	}
	if err := addSeries(p, leg, "median over clients", medAll, lineStyle{color: cs[1], dashes: []vg.Length{vg.Points(4), vg.Points(3)}}); err != nil {
		return err
	}
	for h, xy := range perH {
		if err := addSeries(p, leg, fmt.Sprintf("max, clients choosing model %d", h), xy, lineStyle{color: cs[2+h], glyphs: len(xy) <= maxGlyphRounds}); err != nil {
			return err
		}
	}
	return savePlot(path, title, p, leg, 6*vg.Inch, 4*vg.Inch)
}
