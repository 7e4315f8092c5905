package audit

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/research/bound"
)

// InversionConfig configures the gradient-inversion study: each target
// example is one client's whole local dataset, its update the model delta
// of one SGD step from the global model W (the setting of DLG and of the
// group-privacy paper's Figure 5).
type InversionConfig struct {
	Model   fl.Model
	W       []float64     // global model the clients start from
	Data    *data.Dataset // images; the first Targets are attacked, the next Clients-1 fill a round
	Targets int
	LR      float64 // client SGD step size (public to the server)
	Clip    float64 // protocols' clipping bound C
	Delta   float64 // protocols' central delta
	Clients int     // participants of a round for shuffled protocols and dp-central
	// Settings are the releases attacked, in order (see Setting).
	Settings []Setting
	Sanitize Sanitizer // per-layer sanitizer for Setting.Nu (EuclideanPerLayer if nil)
	DLG      DLGConfig
	Seed     uint64
}

// Setting is one release of the client's update: through a protocol at a
// budget (Protocol, Epsilon; "nonprivate" sends it as is), or, with
// Protocol empty, the group-privacy sanitizer at noise multiplier Nu.
type Setting struct {
	Protocol string  `json:"protocol,omitempty"`
	Epsilon  float64 `json:"epsilon,omitempty"`
	Nu       float64 `json:"nu,omitempty"`
}

// Label is the setting's name in reports.
func (s Setting) Label() string {
	switch {
	case s.Protocol == "":
		if s.Nu == 0 {
			return "no noise (nu = 0)"
		}
		return fmt.Sprintf("per-layer Euclidean Laplace nu=%s", bound.Figure(s.Nu, -1))
	case s.Protocol == "nonprivate":
		return "nonprivate"
	case s.Protocol == "dp-central":
		return fmt.Sprintf("dp-central eps=%s (central)", bound.Figure(s.Epsilon, -1))
	}
	return fmt.Sprintf("%s eps=%s", s.Protocol, bound.Figure(s.Epsilon, -1))
}

// InversionRow is the outcome of one setting.
type InversionRow struct {
	Setting  Setting `json:"setting"`
	Name     string  `json:"name"`
	View     string  `json:"view"` // what the attacker inverts
	Analytic Quality `json:"analytic"`
	DLG      Quality `json:"dlg"`
	// LabelAcc is the fraction of targets whose label RecoverLabel found.
	LabelAcc float64 `json:"label_accuracy"`
	// Skipped, if set, says why the setting could not be run (the
	// protocol rejects its parameters); the qualities are then zero.
	Skipped string `json:"skipped,omitempty"`
	// Images are the reconstructions (analytic, then DLG) per target.
	AnalyticImages [][]float64 `json:"-"`
	DLGImages      [][]float64 `json:"-"`
}

// InversionStudy runs both attacks on every target under every setting.
func InversionStudy(cfg InversionConfig) ([]InversionRow, error) {
	m := cfg.Model
	if cfg.Data.Rows*cfg.Data.Cols != cfg.Data.Features || cfg.Data.Rows == 0 {
		return nil, checks.Invalidf("dataset %s is not made of images: the inversion study measures image quality", cfg.Data.Name)
	}
	layer, err := InputLayer(m)
	if err != nil {
		return nil, err
	}
	if cfg.Targets+cfg.Clients-1 > cfg.Data.Len() {
		return nil, checks.Invalidf("%d targets and %d clients need more than the %d examples", cfg.Targets, cfg.Clients, cfg.Data.Len())
	}
	if cfg.Sanitize == nil {
		cfg.Sanitize = EuclideanPerLayer
	}
	ex := fl.Examples{X: cfg.Data.X, Y: cfg.Data.Y, Features: cfg.Data.Features}
	update := func(i int) []float64 {
		g := make([]float64, m.Dim())
		m.Gradient(g, cfg.W, ex, []int{i})
		for j := range g {
			g[j] *= -cfg.LR
		}
		return g
	}
	// Updates of the filler clients of a round.
	fillers := make([][]float64, max(0, cfg.Clients-1))
	for j := range fillers {
		fillers[j] = update(cfg.Targets + j)
	}
	var rows []InversionRow
	for si, s := range cfg.Settings {
		row := InversionRow{Setting: s, Name: s.Label()}
		var qa, qd Quality
		for t := 0; t < cfg.Targets; t++ {
			r := rng.Stream(cfg.Seed, 0x1a7e, uint64(si), uint64(t))
			u := update(t)
			view, desc, err := release(r, cfg, s, u, fillers)
			if errors.Is(err, checks.ErrInvalid) {
				row.Skipped = oneLineErr(err)
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.Label(), err)
			}
			row.View = desc
			xa, err := InvertFC(view, layer)
			if err != nil { // a zero bias gradient (everything clipped away): nothing recovered
				xa = make([]float64, m.Features())
			}
			y, _ := RecoverLabel(view, m)
			if y == int(cfg.Data.Y[t]) {
				row.LabelAcc++
			}
			xd, err := Optimize(r, m, cfg.W, view, y, cfg.DLG)
			if err != nil {
				xd = make([]float64, m.Features())
			}
			truth := cfg.Data.Row(t)
			a := Measure(truth, xa, cfg.Data.Rows, cfg.Data.Cols)
			d := Measure(truth, xd, cfg.Data.Rows, cfg.Data.Cols)
			qa.MSE += a.MSE
			qa.SSIM += a.SSIM
			qd.MSE += d.MSE
			qd.SSIM += d.SSIM
			row.AnalyticImages = append(row.AnalyticImages, clamp01(xa))
			row.DLGImages = append(row.DLGImages, clamp01(xd))
		}
		if row.Skipped != "" {
			row.AnalyticImages, row.DLGImages = nil, nil
			rows = append(rows, row)
			continue
		}
		k := float64(cfg.Targets)
		row.Analytic = meanQuality(qa, k)
		row.DLG = meanQuality(qd, k)
		row.LabelAcc /= k
		rows = append(rows, row)
	}
	return rows, nil
}

func oneLineErr(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// meanQuality averages MSE and SSIM over k targets; PSNR is that of the
// mean MSE.
func meanQuality(q Quality, k float64) Quality {
	q.MSE /= k
	q.SSIM /= k
	q.PSNR = 999
	if q.MSE > 0 {
		q.PSNR = math.Min(999, 10*math.Log10(1/q.MSE))
	}
	return q
}

func clamp01(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		if !math.IsNaN(v) {
			out[i] = min(1, max(0, v))
		}
	}
	return out
}

// release returns what the attacker observes of update u under setting s:
// without a shuffler (LDP baselines) or with whole-report shuffling the
// client's own report, decoded as the analyzer decodes it (the Estimate of
// that one report); with per-coordinate shuffling (which unlinks the
// coordinates of a report) and for dp-central (whose trusted analyzer
// releases only the noisy mean) the round's released estimate, with the
// target among cfg.Clients clients.
func release(r *rand.Rand, cfg InversionConfig, s Setting, u []float64, fillers [][]float64) ([]float64, string, error) {
	if s.Protocol == "" {
		v := append([]float64(nil), u...)
		if err := cfg.Sanitize(r, v, cfg.Model.Layers(), s.Nu); err != nil {
			return nil, "", err
		}
		return v, "the client's sanitized update", nil
	}
	params := protocol.Params{Clip: cfg.Clip, Delta: cfg.Delta, Epsilon: s.Epsilon, Rounds: 1, SampleRate: 1}
	if s.Protocol == "ldp-min" { // every client at the (common) minimum budget
		params.Extra = map[string]float64{"min-epsilon": s.Epsilon}
	}
	p, err := protocol.New(s.Protocol, params)
	if err != nil {
		return nil, "", err
	}
	d := cfg.Model.Dim()
	own := p.Mode() != protocol.PerCoordinate && s.Protocol != "dp-central"
	n := 1
	if !own {
		n = cfg.Clients
	}
	shape := protocol.Shape{Round: 1, Dim: d, Population: n, Participants: n}
	b := protocol.Budget{Epsilon: s.Epsilon, Delta: account.RoundDelta(cfg.Delta, 1)}
	reports := make([]protocol.Report, n)
	for i := range reports {
		x := u
		if i > 0 {
			x = fillers[i-1]
		}
		x = append([]float64(nil), x...)
		if err := p.Encode(r, shape, x, b, &reports[i]); err != nil {
			return nil, "", err
		}
	}
	sh, err := protocol.Shuffle(r, r, p, shape, reports)
	if err != nil {
		return nil, "", err
	}
	agg, err := sh.Aggregate()
	if err != nil {
		return nil, "", err
	}
	est := make([]float64, d)
	estP, err := protocol.Estimating(p)
	if err != nil {
		return nil, "", err
	}
	if err := estP.Estimate(r, shape, agg, est); err != nil {
		return nil, "", err
	}
	if own {
		return est, "the client's own report, decoded", nil
	}
	return est, fmt.Sprintf("the released mean of a round of %d clients", n), nil
}

// GridPNG writes the images as a grid (one slice of images per row, each
// image rows×cols in [0, 1]) scaled by scale, with a 2-pixel gray gutter.
func GridPNG(w io.Writer, grid [][][]float64, rows, cols, scale int) error {
	nc := 0
	for _, r := range grid {
		nc = max(nc, len(r))
	}
	const gut = 2
	W := nc*(cols*scale+gut) + gut
	H := len(grid)*(rows*scale+gut) + gut
	img := image.NewGray(image.Rect(0, 0, W, H))
	for i := range img.Pix {
		img.Pix[i] = 128
	}
	for gi, r := range grid {
		for gj, im := range r {
			ox, oy := gut+gj*(cols*scale+gut), gut+gi*(rows*scale+gut)
			for y := 0; y < rows*scale; y++ {
				for x := 0; x < cols*scale; x++ {
					v := im[(y/scale)*cols+x/scale]
					img.SetGray(ox+x, oy+y, color.Gray{Y: uint8(math.Round(255 * min(1, max(0, v))))})
				}
			}
		}
	}
	return png.Encode(w, img)
}

// InversionGrid returns a writer of the PNG of a study's reconstructions:
// row 1 the first targets images of ds (twice: analytic, then DLG columns),
// then one row per release of rows that was not skipped.
func InversionGrid(rows []InversionRow, ds *data.Dataset, targets int) func(io.Writer) error {
	var truth [][]float64
	for t := 0; t < targets; t++ {
		x := make([]float64, ds.Features)
		for i, v := range ds.Row(t) {
			x[i] = float64(v)
		}
		truth = append(truth, x)
	}
	grid := [][][]float64{append(append([][]float64{}, truth...), truth...)}
	for _, r := range rows {
		if r.Skipped != "" {
			continue
		}
		grid = append(grid, append(append([][]float64{}, r.AnalyticImages...), r.DLGImages...))
	}
	return func(w io.Writer) error { return GridPNG(w, grid, ds.Rows, ds.Cols, 2) }
}
