package metrics

import (
	"encoding/json"
	"fmt"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// testRecords are rounds 1..n with accuracies from lo to hi and growing
// epsilons; private ones carry every epsilon, others none.
func testRecords(n int, lo, hi float64, private bool) []Record {
	recs := make([]Record, n)
	for i := range recs {
		acc := lo
		if n > 1 {
			acc = lo + (hi-lo)*float64(i)/float64(n-1)
		}
		recs[i] = Record{Round: i + 1, TestAccuracy: acc}
		if private {
			round, cum, client := 0.5, 0.5*math.Sqrt(float64(i+1)), 40*float64(i+1)
			recs[i].RoundAloneEpsilon, recs[i].CumulativeEpsilon, recs[i].MaxClientEpsilon = &round, &cum, &client
			recs[i].RoundAloneDelta, recs[i].CumulativeDelta = 1e-5, 1e-5
		}
	}
	return recs
}

// checkPNG fails unless path is a non-empty PNG, and returns its size in
// pixels.
func checkPNG(t *testing.T, path string) (w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := img.Bounds()
	if b.Dx() == 0 || b.Dy() == 0 {
		t.Fatalf("%s is empty", path)
	}
	return b.Dx(), b.Dy()
}

// TestPlotsNonEmpty: every plot writes a PNG for 1, 2 and 12 rounds and
// (PlotCompare) 1, 2 and 12 series. A plot with a legend is wider than its
// axes (6.5 inches at 96 dpi for PlotCompare): the legend is beside them.
func TestPlotsNonEmpty(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{1, 2, 12} {
		recs := testRecords(n, 0.2, 0.8, true)
		acc := filepath.Join(dir, fmt.Sprintf("acc%d.png", n))
		if err := PlotAccuracy(acc, "accuracy", recs); err != nil {
			t.Fatal(err)
		}
		if w, h := checkPNG(t, acc); w != 6*96 || h != 4*96 {
			t.Errorf("accuracy plot (no legend) is %dx%d, want 576x384", w, h)
		}
		priv := filepath.Join(dir, fmt.Sprintf("priv%d.png", n))
		if err := PlotPrivacy(priv, "privacy", recs); err != nil {
			t.Fatal(err)
		}
		if w, _ := checkPNG(t, priv); w <= 6*96 {
			t.Errorf("privacy plot is %d pixels wide: no room for its legend", w)
		}

		var runs []Series
		for i := range n {
			runs = append(runs, Series{fmt.Sprintf("run %d", i), testRecords(5, 0.1+0.05*float64(i), 0.3+0.05*float64(i), false)})
		}
		cmp := filepath.Join(dir, fmt.Sprintf("cmp%d.png", n))
		if err := PlotCompare(cmp, "compare", runs); err != nil {
			t.Fatal(err)
		}
		if w, _ := checkPNG(t, cmp); w <= 624 {
			t.Errorf("comparison of %d series is %d pixels wide: no room for its legend", n, w)
		}
	}
	// A long title widens the image rather than being cut.
	long := filepath.Join(dir, "long.png")
	if err := PlotAccuracy(long, strings.Repeat("a long title ", 12), testRecords(3, 0.1, 0.2, false)); err != nil {
		t.Fatal(err)
	}
	if w, _ := checkPNG(t, long); w <= 6*96 {
		t.Errorf("a long title left the plot %d pixels wide", w)
	}
	// Degenerate inputs still give a PNG.
	for name, f := range map[string]func(string) error{
		"no rounds":  func(p string) error { return PlotAccuracy(p, "t", nil) },
		"no privacy": func(p string) error { return PlotPrivacy(p, "t", testRecords(3, 0.1, 0.2, false)) },
		"no series":  func(p string) error { return PlotCompare(p, "t", nil) },
		"empty run":  func(p string) error { return PlotCompare(p, "t", []Series{{"a", nil}}) },
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".png")
		if err := f(p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkPNG(t, p)
	}
}

func TestHasCumulativeEpsilon(t *testing.T) {
	if HasCumulativeEpsilon(nil) || HasCumulativeEpsilon(testRecords(3, 0, 1, false)) {
		t.Error("non-private records have a cumulative epsilon")
	}
	recs := testRecords(3, 0, 1, false)
	e := 2.0
	recs[2].CumulativeEpsilon = &e
	if !HasCumulativeEpsilon(recs) {
		t.Error("a finite cumulative epsilon missed")
	}
}

func TestFitRange(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		vs                         []float64
		frac, minSpan, floor, ceil float64
		wantLo, wantHi             float64
	}{
		{"margin", []float64{0.3, 0.5, 0.4}, 0.05, 0.05, 0, 1, 0.29, 0.51},
		{"min span", []float64{0.5, 0.51}, 0.05, 0.05, 0, 1, 0.48, 0.53},
		{"one value", []float64{0.7}, 0.05, 0.05, 0, 1, 0.675, 0.725},
		{"clamped high", []float64{0.9, 1}, 0.05, 0.05, 0, 1, 0.895, 1},
		{"clamped low", []float64{0, 0.2}, 0.05, 0.05, 0, 1, 0, 0.21},
		{"min span at the clamp", []float64{0.99, 1}, 0.05, 0.05, 0, 1, 0.95, 1},
		{"no ceiling", []float64{50, 250}, 0.05, 0, 0, math.Inf(1), 40, 260},
		{"infinite values skipped", []float64{math.Inf(1), 0.2, math.NaN(), 0.4}, 0.05, 0, 0, 1, 0.19, 0.41},
		{"nothing", nil, 0.05, 0.05, 0, 1, 0, 1},
	} {
		lo, hi := fitRange(tc.vs, tc.frac, tc.minSpan, tc.floor, tc.ceil)
		if math.Abs(lo-tc.wantLo) > 1e-9 || math.Abs(hi-tc.wantHi) > 1e-9 {
			t.Errorf("%s: fitRange(%v) = [%v, %v], want [%v, %v]", tc.name, tc.vs, lo, hi, tc.wantLo, tc.wantHi)
		}
	}
	// The accuracy plots' range holds the data and is much narrower than
	// [0, 1] for data in a narrow band.
	lo, hi := fitRange([]float64{0.61, 0.64, 0.66}, 0.05, 0.05, 0, 1)
	if lo >= 0.61 || hi <= 0.66 || hi-lo > 0.1 {
		t.Errorf("accuracy range [%v, %v] for data in [0.61, 0.66]", lo, hi)
	}
}

func labels(ticks []plot.Tick) []string {
	var ls []string
	for _, t := range ticks {
		if t.Label != "" {
			ls = append(ls, t.Label)
		}
	}
	return ls
}

func TestNiceTicks(t *testing.T) {
	for _, r := range [][2]float64{{0, 1}, {0.0135, 0.165}, {0.16, 0.68}, {0.5, 0.55}, {118, 262}, {40, 7600}, {0.2, 0.21}} {
		ticks := niceTicks{}.Ticks(r[0], r[1])
		ls := labels(ticks)
		if len(ls) < 5 || len(ls) > 8 {
			t.Errorf("[%v, %v]: %d labelled ticks %v, want 5 to 8", r[0], r[1], len(ls), ls)
		}
		seen := map[string]bool{}
		for _, tk := range ticks {
			if tk.Value < r[0]-1e-12 || tk.Value > r[1]+1e-12 {
				t.Errorf("[%v, %v]: tick %v outside", r[0], r[1], tk.Value)
			}
			if tk.Label != "" && seen[tk.Label] {
				t.Errorf("[%v, %v]: label %s twice: %v", r[0], r[1], tk.Label, ls)
			}
			seen[tk.Label] = true
		}
	}
	if ls := labels(niceTicks{}.Ticks(0, 1)); strings.Join(ls, " ") != "0.0 0.2 0.4 0.6 0.8 1.0" {
		t.Errorf("[0, 1]: %v", ls)
	}
}

func TestRoundAndLogTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{1, 2, "1 2"},
		{1, 5, "1 2 3 4 5"},
		{1, 30, "5 10 15 20 25 30"},
		{1, 100, "10 20 30 40 50 60 70 80 90 100"},
	} {
		if got := strings.Join(labels(roundTicks{}.Ticks(tc.lo, tc.hi)), " "); got != tc.want {
			t.Errorf("round ticks [%v, %v] = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{100, 8000, "100 200 500 1000 2000 5000"},
		{0.05, 0.2, "0.05 0.06 0.07 0.08 0.09 0.1 0.2"},
		{1e-3, 1e9, "0.01 1 100 10000 1e+06 1e+08"},
	} {
		if got := strings.Join(labels(logTicks{}.Ticks(tc.lo, tc.hi)), " "); got != tc.want {
			t.Errorf("log ticks [%v, %v] = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}

// colourDistance is the CIE76 distance of two colours (CIE L*a*b*, D65).
func colourDistance(a, b color.Color) float64 {
	lab := func(c color.Color) [3]float64 {
		r, g, bl, _ := c.RGBA()
		lin := func(v uint32) float64 {
			c := float64(v) / 0xffff
			if c <= 0.04045 {
				return c / 12.92
			}
			return math.Pow((c+0.055)/1.055, 2.4)
		}
		R, G, B := lin(r), lin(g), lin(bl)
		x := (0.4124*R + 0.3576*G + 0.1805*B) / 0.95047
		y := 0.2126*R + 0.7152*G + 0.0722*B
		z := (0.0193*R + 0.1192*G + 0.9505*B) / 1.08883
		f := func(t float64) float64 {
			if t > 0.008856 {
				return math.Cbrt(t)
			}
			return 7.787*t + 16.0/116
		}
		return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
	}
	p, q := lab(a), lab(b)
	return math.Sqrt((p[0]-q[0])*(p[0]-q[0]) + (p[1]-q[1])*(p[1]-q[1]) + (p[2]-q[2])*(p[2]-q[2]))
}

// TestPalette: the colours of up to 20 series are pairwise clearly
// distinct, and all visible on white.
func TestPalette(t *testing.T) {
	for _, n := range []int{12, 20} {
		cs := palette(n)
		if len(cs) != n {
			t.Fatalf("palette(%d) has %d colours", n, len(cs))
		}
		for i := range cs {
			if d := colourDistance(cs[i], color.White); d < 45 {
				t.Errorf("colour %d (%v) is too light on white: %.1f", i, cs[i], d)
			}
			for j := range i {
				if d := colourDistance(cs[i], cs[j]); d < 34 {
					t.Errorf("palette(%d): colours %d and %d (%v, %v) are close: %.1f", n, j, i, cs[j], cs[i], d)
				}
			}
		}
	}
}

func sameColour(a, b color.Color) bool {
	r1, g1, b1, a1 := a.RGBA()
	r2, g2, b2, a2 := b.RGBA()
	return r1 == r2 && g1 == g2 && b1 == b2 && a1 == a2
}

func sameDashes(a, b lineStyle) bool { return fmt.Sprint(a.dashes) == fmt.Sprint(b.dashes) }

func TestSeriesStyles(t *testing.T) {
	// APES Figure 2b: 6 distributions x 2 protocols. One colour per
	// distribution, one dash per protocol.
	var names []string
	for _, d := range []string{"uniform1", "uniform2", "gauss1", "gauss2", "mixgauss1", "mixgauss2"} {
		names = append(names, "apes-"+d, "unis-"+d)
	}
	st := seriesStyles(names)
	for i := 0; i < len(names); i += 2 {
		a, u := st[i], st[i+1]
		if !sameColour(a.color, u.color) || sameDashes(a, u) || a.dashes != nil {
			t.Errorf("%s and %s: colours %v, %v, dashes %v, %v: want one colour, solid and dashed", names[i], names[i+1], a.color, u.color, a.dashes, u.dashes)
		}
		if i > 0 && (!sameDashes(a, st[0]) || !sameDashes(u, st[1])) {
			t.Errorf("%s, %s: not the dashes of the other runs of their protocols", names[i], names[i+1])
		}
		for j := 0; j < i; j += 2 {
			if sameColour(a.color, st[j].color) {
				t.Errorf("%s and %s share a colour", names[i], names[j])
			}
		}
	}
	// Unrelated runs (APES Table 3, FLAME, 12 labels): a colour each, solid.
	var twelve []string
	for i := range 12 {
		twelve = append(twelve, fmt.Sprintf("run%d", i))
	}
	for _, names := range [][]string{
		{"Non-Private", "LDP-Min", "PLDP", "UniS", "APES", "S-APES"},
		{"NP-FL", "DP-FL (= SS-Double's cumulative eps)", "LDP-FL (Laplace)", "SS-Simple", "SS-Double", "SS-Topk"},
		{"Non-Private", "E-APES-uniform1", "E-APES-uniform2", "E-APES-gauss1", "E-APES-gauss2", "E-APES-gauss3", "E-APES-eps100"},
		twelve,
		{"a-x", "a-x"}, // the same name twice is no pair
	} {
		st := seriesStyles(names)
		for i := range st {
			if st[i].dashes != nil {
				t.Errorf("%v: %s is not solid", names, names[i])
			}
			for j := range i {
				if sameColour(st[i].color, st[j].color) {
					t.Errorf("%v: %s and %s share a colour", names, names[j], names[i])
				}
			}
		}
	}
	// Beyond 20 series the colours repeat with another dash.
	var many []string
	for i := range 25 {
		many = append(many, fmt.Sprintf("r%d", i))
	}
	st = seriesStyles(many)
	for i := 20; i < 25; i++ {
		if !sameColour(st[i].color, st[i-20].color) || sameDashes(st[i], st[i-20]) {
			t.Errorf("series %d and %d are not told apart by their dashes", i-20, i)
		}
	}
}

func TestDeltaNote(t *testing.T) {
	for _, tc := range []struct {
		ds   []float64
		want string
	}{
		{nil, ""},
		{[]float64{1e-5, 1e-5}, " (delta = 1e-05)"},
		{[]float64{0}, " (delta = 0)"},
		{[]float64{1e-6, 2e-6}, " (delta = 1e-06 to 2e-06)"},
	} {
		if got := deltaNote(tc.ds); got != tc.want {
			t.Errorf("deltaNote(%v) = %q, want %q", tc.ds, got, tc.want)
		}
	}
}

// TestIdenticalCurvesStayVisible: PLDP and UniS can reach the same
// accuracies; UniS's curve then must not hide PLDP's.
func TestIdenticalCurvesStayVisible(t *testing.T) {
	a, b := accuracyXYs(testRecords(3, 0.3, 0.4, false)), accuracyXYs(testRecords(3, 0.2, 0.5, false))
	st := compareStyles([]string{"PLDP", "UniS", "APES", "Other"}, []plotter.XYs{a, a, b, a})
	if sameDashes(st[0], st[1]) || sameDashes(st[0], st[3]) || sameDashes(st[1], st[3]) {
		t.Errorf("identical curves share a dash pattern: %v, %v, %v", st[0].dashes, st[1].dashes, st[3].dashes)
	}
	if st[2].dashes != nil {
		t.Errorf("a curve of its own is not solid: %v", st[2].dashes)
	}
}

// TestPlotValidation: the validation plot is written from the validation
// rounds, a NaN validation loss is null in JSON and left out of the plot,
// and records without any finite validation loss are an error.
func TestPlotValidation(t *testing.T) {
	var recs []Record
	for r := 1; r <= 12; r++ {
		rec := Record{Round: r, TestLoss: 2 / float64(r)}
		if r%3 == 0 {
			loss := 2.1 / float64(r)
			if r == 9 {
				loss = math.NaN()
			}
			rec.Validation = validation(&round.ValidationRound{Loss: loss, Improved: r != 9, BestRound: r, BestLoss: loss, Clients: 4, Examples: 40})
		}
		recs = append(recs, rec)
	}
	if !HasValidation(recs) || HasValidation(recs[:2]) {
		t.Fatal("HasValidation wrong")
	}
	b, err := json.Marshal(recs[8])
	if err != nil || !strings.Contains(string(b), `"validation":{"loss":null`) {
		t.Fatalf("NaN validation loss: %s, %v", b, err)
	}
	path := filepath.Join(t.TempDir(), "validation.png")
	if err := PlotValidation(path, "test", recs); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() < 1000 {
		t.Fatalf("validation.png: %v", err)
	}
	if err := PlotValidation(path, "test", recs[:2]); err == nil {
		t.Fatal("no validation rounds: want an error")
	}
}

// TestPlotLeakage: the leakage plot is written for d-privacy runs (linear
// and log scale) and refused without any d-privacy round.
func TestPlotLeakage(t *testing.T) {
	for _, growth := range []float64{1, 100} {
		var recs []Record
		for r := 1; r <= 6; r++ {
			lv := growth * float64(r)
			recs = append(recs, Record{Round: r, DPrivacy: &round.DPrivacyRound{Level: 1, MaxCumulative: lv, MedianCumulative: lv / 2},
				Hypotheses: []round.Hypothesis{{Chosen: 3, MaxLeakage: lv}, {Chosen: r % 2, MaxLeakage: lv / 3}}})
		}
		if !HasDPrivacy(recs) {
			t.Fatal("HasDPrivacy false")
		}
		path := filepath.Join(t.TempDir(), "leakage.png")
		if err := PlotLeakage(path, "test", recs); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(path); err != nil || st.Size() < 1000 {
			t.Fatalf("leakage.png: %v", err)
		}
	}
	if err := PlotLeakage(filepath.Join(t.TempDir(), "x.png"), "test", []Record{{Round: 1}}); err == nil || HasDPrivacy([]Record{{Round: 1}}) {
		t.Fatal("no d-privacy rounds: want an error")
	}
}
