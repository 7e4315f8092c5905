package audit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
	"github.com/shufflefl/shufflefl/research/bound"
)

// Scalar is one local randomizer set up for the distinguishing game: two
// inputs X0 and X1 at the mechanism's full sensitivity, a sampler that
// returns a real-valued score of one output (the output itself for
// real-valued mechanisms, an indicator-like score for categorical ones;
// any fixed function of the output is post-processing and cannot raise the
// privacy loss), and the histogram range [Lo, Hi) with Bins bins on which
// thresholds are searched (placing bins only affects the power of the test,
// never its validity).
type Scalar struct {
	Name    string
	Paper   string  // the randomizer's source, as in package mechanism
	Epsilon float64 // the claimed epsilon of one release
	Delta   float64 // the claimed delta (0 for pure DP)
	X0, X1  string  // the two inputs, for the report
	Lo, Hi  float64
	Bins    int
	// Sample returns the score of one output of the mechanism on input
	// world (0 or 1).
	Sample func(r *rand.Rand, world int) float64
}

// MechanismNames lists the randomizers MechanismFor accepts.
func MechanismNames() []string {
	names := make([]string, 0, len(scalars))
	for n := range scalars {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

type scalarSpec struct {
	paper string
	delta bool // takes a delta
	build func(eps, delta, f float64) (Scalar, error)
}

// scalars are the randomizers of package mechanism. f is the
// mis-calibration factor: the noise is f times too small (the Laplace,
// Euclidean-Laplace and Gaussian scales are divided by f; the discrete and
// bounded mechanisms, whose noise is set by epsilon alone, are built for
// f·epsilon, which for Laplace-type noise is the same thing). f = 1 is the
// correct mechanism.
var scalars = map[string]scalarSpec{
	"laplace": {"survey §2.3; LDP-FL baseline", false, func(eps, _, f float64) (Scalar, error) {
		m, err := mechanism.NewLaplace(eps*f, 1)
		lam := 1 / eps
		return Scalar{X0: "0", X1: "1", Lo: -20 * lam, Hi: 1 + 20*lam, Bins: 400,
			Sample: func(r *rand.Rand, w int) float64 { return m.Randomize(r, float64(w)) }}, err
	}},
	"secure-laplace": {"survey §2.3 with Mironov's snapping", false, func(eps, _, f float64) (Scalar, error) {
		m, err := mechanism.NewSecureLaplace(eps*f, 1)
		lam := 1 / eps
		return Scalar{X0: "0", X1: "1", Lo: -20 * lam, Hi: 1 + 20*lam, Bins: 400,
			Sample: func(r *rand.Rand, w int) float64 { return m.Randomize(r, float64(w)) }}, err
	}},
	"gaussian": {"Balle & Wang 2018 (analytic)", true, func(eps, delta, f float64) (Scalar, error) {
		m, err := mechanism.NewGaussian(eps, delta, 1)
		s := m.Sigma
		m.Sigma /= f
		return Scalar{X0: "0", X1: "1", Lo: -8 * s, Hi: 1 + 8*s, Bins: 400,
			Sample: func(r *rand.Rand, w int) float64 { return m.Randomize(r, float64(w)) }}, err
	}},
	"secure-gaussian": {"Balle & Wang 2018 with Mironov's snapping", true, func(eps, delta, f float64) (Scalar, error) {
		m, err := mechanism.NewSecureGaussian(eps, delta, 1)
		s := m.Sigma
		m.Sigma /= f
		return Scalar{X0: "0", X1: "1", Lo: -8 * s, Hi: 1 + 8*s, Bins: 400,
			Sample: func(r *rand.Rand, w int) float64 { return m.Randomize(r, float64(w)) }}, err
	}},
	"clip-laplace": {"APES Def. 4, Thm 1", false, func(eps, _, f float64) (Scalar, error) {
		m, err := mechanism.NewClipLaplace(eps*f, 2, 1)
		return Scalar{X0: "-1", X1: "1", Lo: -1, Hi: 1 + 1e-9, Bins: 400,
			Sample: func(r *rand.Rand, w int) float64 { return m.Sample(r, float64(2*w-1)) }}, err
	}},
	"rr": {"survey Eq. (12)", false, func(eps, _, f float64) (Scalar, error) {
		m, err := mechanism.NewBinaryRR(eps * f)
		return Scalar{X0: "0", X1: "1", Lo: -0.5, Hi: 1.5, Bins: 2,
			Sample: func(r *rand.Rand, w int) float64 { return float64(m.Randomize(r, w)) }}, err
	}},
	"grr": {"survey Eq. (15), k = 10", false, func(eps, _, f float64) (Scalar, error) {
		m, err := mechanism.NewGRR(eps*f, 10)
		// Score: +1 if the output is input 1, -1 if it is input 0, else 0.
		return Scalar{X0: "0", X1: "1", Lo: -1.5, Hi: 1.5, Bins: 3,
			Sample: func(r *rand.Rand, w int) float64 {
				switch m.Randomize(r, w) {
				case 1:
					return 1
				case 0:
					return -1
				}
				return 0
			}}, err
	}},
	"rounding": {"FLAME Alg. 1 R_{gamma,b}, b = 4", false, func(eps, _, f float64) (Scalar, error) {
		m, err := mechanism.NewRandomizedRounding(eps*f, 4)
		return Scalar{X0: "0", X1: "1", Lo: -0.5, Hi: 4.5, Bins: 5,
			Sample: func(r *rand.Rand, w int) float64 { return float64(m.Randomize(r, float64(w))) }}, err
	}},
	"duchi": {"survey Eq. (13)", false, func(eps, _, f float64) (Scalar, error) {
		m, err := mechanism.NewDuchi(eps * f)
		return Scalar{X0: "-1", X1: "1", Lo: -1, Hi: 1, Bins: 2,
			Sample: func(r *rand.Rand, w int) float64 { return math.Copysign(1, m.Randomize(r, float64(2*w-1))) }}, err
	}},
	"piecewise": {"survey Eq. (14)", false, func(eps, _, f float64) (Scalar, error) {
		m, err := mechanism.NewPiecewise(eps * f)
		c := 1.0
		if claim, e2 := mechanism.NewPiecewise(eps); e2 == nil {
			c = claim.C()
		}
		return Scalar{X0: "-1", X1: "1", Lo: -c, Hi: c * (1 + 1e-12), Bins: 400,
			Sample: func(r *rand.Rand, w int) float64 { return m.Randomize(r, float64(2*w-1)) }}, err
	}},
	"harmony": {"survey §2.3, d = 8", false, func(eps, _, f float64) (Scalar, error) {
		m, err := mechanism.NewHarmony(eps*f, 8)
		x := [2][]float64{{-1, -1, -1, -1, -1, -1, -1, -1}, {1, 1, 1, 1, 1, 1, 1, 1}}
		return Scalar{X0: "-1^8", X1: "+1^8", Lo: -1, Hi: 1, Bins: 2,
			Sample: func(r *rand.Rand, w int) float64 {
				_, v, _ := m.Randomize(r, x[w])
				return math.Copysign(1, v)
			}}, err
	}},
	"euclidean-laplace": {"group-privacy Lemma 1, n = 2", false, func(eps, _, f float64) (Scalar, error) {
		m, err := mechanism.NewEuclideanLaplace(eps*f, 1)
		// Score: ||y - x0|| - ||y - x1||, the privacy loss divided by the
		// rate (the Neyman-Pearson statistic).
		return Scalar{X0: "(0,0)", X1: "(1,0)", Lo: -1, Hi: 1 + 1e-12, Bins: 400,
			Sample: func(r *rand.Rand, w int) float64 {
				var x, s [2]float64
				x[0] = float64(w)
				m.PerturbBuf(r, x[:], s[:])
				return math.Hypot(x[0], x[1]) - math.Hypot(x[0]-1, x[1])
			}}, err
	}},
}

// MechanismFor returns the named randomizer for the game at the claimed
// (epsilon, delta), with its noise miscalibrate times too small (1: the
// correct mechanism). delta must be positive for the approximate
// mechanisms (gaussian) and is ignored otherwise.
func MechanismFor(name string, epsilon, delta, miscalibrate float64) (Scalar, error) {
	spec, ok := scalars[name]
	if !ok {
		return Scalar{}, checks.Invalidf("unknown mechanism %q (known: %s)", name, strings.Join(MechanismNames(), ", "))
	}
	if err := checks.Epsilon("epsilon", epsilon); err != nil {
		return Scalar{}, err
	}
	if math.IsNaN(miscalibrate) || miscalibrate < 1 || math.IsInf(miscalibrate, 0) {
		return Scalar{}, checks.Invalidf("miscalibrate must be a finite factor >= 1 (noise that many times too small), got %v", miscalibrate)
	}
	if spec.delta {
		if err := checks.Delta("delta", delta); err != nil {
			return Scalar{}, fmt.Errorf("mechanism %s is (epsilon, delta)-DP: %w", name, err)
		}
	} else {
		delta = 0
	}
	s, err := spec.build(epsilon, delta, miscalibrate)
	if err != nil {
		return Scalar{}, fmt.Errorf("mechanism %s: %w", name, err)
	}
	s.Name, s.Paper, s.Epsilon, s.Delta = name, spec.paper, epsilon, delta
	return s, nil
}

// GameConfig configures a distinguishing game.
type GameConfig struct {
	// Trials is the number of draws per input world; the first half of them
	// chooses the test, the second half measures it.
	Trials int64
	// Confidence of the lower bound (0.95 if zero).
	Confidence float64
	Seed       uint64
	Workers    int // 0: GOMAXPROCS
	// Progress, if set, is called from time to time with the number of
	// trials done (per world) and the total; it must be cheap.
	Progress func(done, total int64)
	// Chunk is the number of trials per parallel chunk, each with its own
	// random stream (0: 32,768, right for cheap scalar mechanisms; costly
	// trials such as whole rounds use small chunks so that every worker
	// gets work and progress is frequent). Results depend on it.
	Chunk int
}

func (c GameConfig) withDefaults() GameConfig {
	if c.Confidence == 0 {
		c.Confidence = 0.95
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.Chunk <= 0 {
		c.Chunk = chunkTrials
	}
	return c
}

// GameResult is the outcome of a distinguishing game.
type GameResult struct {
	Name         string  `json:"name"`
	Paper        string  `json:"paper,omitempty"`
	Inputs       string  `json:"inputs"`
	EpsClaimed   float64 `json:"eps_claimed"`
	Delta        float64 `json:"delta"`
	Miscalibrate float64 `json:"miscalibrate"`
	Trials       int64   `json:"trials_per_input"`
	Confidence   float64 `json:"confidence"`
	// Test is "score >= T guesses input 1" or "score < T guesses input 0".
	Test      string  `json:"test"`
	Threshold float64 `json:"threshold"`
	// Evaluation-half counts: TP of Eval positive-world trials and FP of
	// Eval other-world trials.
	Eval     int64   `json:"eval_trials"`
	TP       int64   `json:"tp"`
	FP       int64   `json:"fp"`
	TPRLo    float64 `json:"tpr_lo"`
	FPRHi    float64 `json:"fpr_hi"`
	EpsLower float64 `json:"eps_lower"`
	// Violation is true when EpsLower exceeds the claim: with the stated
	// confidence, the mechanism is not (EpsClaimed, Delta)-DP.
	Violation bool    `json:"violation"`
	Seconds   float64 `json:"seconds"`
}

// hist holds per-world histograms of scores: bin 0 is below Lo, bin
// Bins+1 at or above Hi.
type hist [2][]int64

func newHist(bins int) hist { return hist{make([]int64, bins+2), make([]int64, bins+2)} }

func (h hist) add(o hist) {
	for w := range h {
		for i, v := range o[w] {
			h[w][i] += v
		}
	}
}

// binner maps scores to bins.
type binner struct {
	lo, inv float64
	bins    int
}

func (b binner) bin(v float64) int {
	if !(v >= b.lo) { // also NaN
		return 0
	}
	i := int((v-b.lo)*b.inv) + 1
	if i > b.bins+1 {
		i = b.bins + 1
	}
	return i
}

// edge is the score threshold at the lower edge of bin i (1 <= i <= bins+1).
func (b binner) edge(i int) float64 { return b.lo + float64(i-1)/b.inv }

// bestTest picks, on histogram h of n trials per world, the threshold bin
// and direction that maximise the lower bound, and returns them. It uses
// Wilson score bounds (closed form, fast for thousands of candidate
// thresholds) instead of Clopper-Pearson: the choice only affects the power
// of the test measured on the other half, never its validity.
func bestTest(h hist, n int64, delta, conf float64) (cut int, high bool, eps float64) {
	nb := len(h[0])
	// above[w][i] = trials of world w in bins >= i.
	var above [2][]int64
	for w := range above {
		above[w] = make([]int64, nb+1)
		for i := nb - 1; i >= 0; i-- {
			above[w][i] = above[w][i+1] + h[w][i]
		}
	}
	cut, high, eps = 1, true, math.Inf(-1)
	for i := 1; i < nb; i++ {
		// High: guess 1 when score >= edge(i).
		if e := wilsonEps(above[1][i], above[0][i], n, delta, conf); e > eps {
			cut, high, eps = i, true, e
		}
		// Low: guess 0 when score < edge(i).
		if e := wilsonEps(n-above[0][i], n-above[1][i], n, delta, conf); e > eps {
			cut, high, eps = i, false, e
		}
	}
	return cut, high, eps
}

// wilsonEps is EpsLower with Wilson score bounds (one-sided z from conf),
// without the clamp at 0 so that tests with weak evidence still rank.
func wilsonEps(tp, fp, n int64, delta, conf float64) float64 {
	z := math.Sqrt2 * math.Erfinv(conf)
	w := func(k int64, sign float64) float64 {
		nn, p := float64(n), float64(k)/float64(n)
		c := (p + z*z/(2*nn) + sign*z*math.Sqrt(p*(1-p)/nn+z*z/(4*nn*nn))) / (1 + z*z/nn)
		return c
	}
	lo, hi := w(tp, -1)-delta, w(fp, 1)
	if lo <= 0 || hi <= 0 {
		return math.Inf(-1) // no evidence: never preferred to a real test
	}
	return math.Log(lo / hi)
}

// tooFew says the game cannot refute the claim with so few trials; it
// wraps checks.ErrInvalid.
func tooFew(trials, need int64, eps, conf float64) error {
	if need >= 1<<50 {
		return checks.Invalidf("a claim of epsilon %s cannot be refuted by a threshold test with any feasible number of trials (it would need about e^epsilon of them): audit a smaller budget", bound.Figure(eps, 4))
	}
	return checks.Invalidf("%d trials per input are too few: even a perfect test on half of them (the other half chooses the test) cannot show eps_lower above the claimed epsilon %s at %.0f%% confidence; use --trials %d or more",
		trials, bound.Figure(eps, 4), 100*conf, 2*need)
}

// CheckTrials returns an error (wrapping checks.ErrInvalid) naming the
// number of trials needed when trials per input (split in two halves) can
// never give a lower bound above eps at confidence conf.
func CheckTrials(trials int64, eps, delta, conf float64) error {
	need := TrialsNeeded(eps, delta, conf)
	if trials/2 < need {
		return tooFew(trials, need, eps, conf)
	}
	return nil
}

// MechanismGame runs the distinguishing game of m: cfg.Trials draws on each
// of the two inputs, in parallel chunks (each chunk with its own
// rng.Stream, so the result does not depend on the number of workers) that
// stream into histograms. The first half of the trials selects the
// threshold test that maximises the lower bound; the second half, drawn
// independently, measures that one test, so the reported bound holds at
// the stated confidence without any correction for the choice.
func MechanismGame(ctx context.Context, m Scalar, miscalibrate float64, cfg GameConfig) (GameResult, error) {
	cfg = cfg.withDefaults()
	if err := checkConf(cfg.Confidence); err != nil {
		return GameResult{}, err
	}
	if cfg.Trials < 2 {
		return GameResult{}, checks.Invalidf("trials must be >= 2, got %d", cfg.Trials)
	}
	if err := CheckTrials(cfg.Trials, m.Epsilon, m.Delta, cfg.Confidence); err != nil {
		return GameResult{}, err
	}
	start := time.Now()
	sampler := func() func(*rand.Rand, int) float64 { return m.Sample }
	res, err := runGame(ctx, sampler, m.Lo, m.Hi, m.Bins, m.Delta, cfg)
	if err != nil {
		return GameResult{}, err
	}
	res.Name, res.Paper, res.Inputs, res.EpsClaimed, res.Delta = m.Name, m.Paper, m.X0+" vs "+m.X1, m.Epsilon, m.Delta
	res.Miscalibrate = miscalibrate
	res.Violation = res.EpsLower > m.Epsilon
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// runGame plays cfg.Trials trials per world of the samplers (one sampler
// per worker, from newSampler) with scores binned on [lo, hi): the first
// half selects the test, the second half measures it.
func runGame(ctx context.Context, newSampler func() func(*rand.Rand, int) float64, lo, hi float64, bins int, delta float64, cfg GameConfig) (GameResult, error) {
	bn := binner{lo: lo, inv: float64(bins) / (hi - lo), bins: bins}
	nSel := cfg.Trials / 2
	nEval := cfg.Trials - nSel
	var done atomic.Int64
	run := func(half uint64, n int64) (hist, error) {
		return streamHist(ctx, cfg, half, n, bins, &done, func() func(r *rand.Rand, h hist, cnt int) {
			sample := newSampler()
			return func(r *rand.Rand, h hist, cnt int) {
				for i := 0; i < cnt; i++ {
					h[0][bn.bin(sample(r, 0))]++
					h[1][bn.bin(sample(r, 1))]++
				}
			}
		})
	}
	sel, err := run(1, nSel)
	if err != nil {
		return GameResult{}, err
	}
	cut, high, _ := bestTest(sel, nSel, delta, cfg.Confidence)
	ev, err := run(2, nEval)
	if err != nil {
		return GameResult{}, err
	}
	res := GameResult{Trials: cfg.Trials, Confidence: cfg.Confidence, Threshold: bn.edge(cut), Eval: nEval}
	var above [2]int64
	for w := range above {
		for i := cut; i < len(ev[w]); i++ {
			above[w] += ev[w][i]
		}
	}
	if high {
		res.Test = "score >= threshold guesses input 1"
		res.TP, res.FP = above[1], above[0]
	} else {
		res.Test = "score < threshold guesses input 0"
		res.TP, res.FP = nEval-above[0], nEval-above[1]
	}
	res.TPRLo, _ = ClopperPearson(res.TP, nEval, cfg.Confidence)
	_, res.FPRHi = ClopperPearson(res.FP, nEval, cfg.Confidence)
	res.EpsLower = EpsLower(res.TP, nEval, res.FP, nEval, delta, cfg.Confidence)
	return res, nil
}

// chunkTrials is the default number of trials per parallel chunk.
const chunkTrials = 1 << 15

// streamHist runs n trials of fill in chunks over cfg.Workers goroutines and
// merges the per-worker histograms.
func streamHist(ctx context.Context, cfg GameConfig, half uint64, n int64, bins int, done *atomic.Int64, newFill func() func(r *rand.Rand, h hist, cnt int)) (hist, error) {
	size := int64(cfg.Chunk)
	chunks := (n + size - 1) / size
	var next atomic.Int64
	var mu sync.Mutex
	total := newHist(bins)
	var wg sync.WaitGroup
	for w := 0; w < cfg.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := newHist(bins)
			fill := newFill()
			for {
				c := next.Add(1) - 1
				if c >= chunks || ctx.Err() != nil {
					break
				}
				cnt := min(size, n-c*size)
				fill(rng.Stream(cfg.Seed, 0xa0d17, half, uint64(c)), local, int(cnt))
				d := done.Add(cnt)
				if cfg.Progress != nil {
					cfg.Progress(d, cfg.Trials)
				}
			}
			mu.Lock()
			total.add(local)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return hist{}, fmt.Errorf("audit interrupted: %w", err)
	}
	return total, nil
}
