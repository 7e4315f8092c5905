// Command normprobe measures what sets the noise of an ifca-dp run
// (docs/DPRIVACY.md, "Table 4"): every few rounds it prints the test
// accuracy, the root mean square of the participants' update norms
// ||δ_c||, of their noise norms ||ρ_c|| (the distance from each released
// vector to the nearest model it could have started from, less the
// update), the norm of each rotation group's mean update, the models'
// norms ||θ_j|| and, for each model whose k-means cluster got m > 0
// releases, κ = rms||ρ_c||/(sqrt(m)·||θ_j||) ≈ ν·rms||δ_c||/(sqrt(m)·||θ_j||):
// the noise of the cluster's mean in that round relative to the model.
//
// It runs the engine on Fashion-MNIST under --partition rotated with two
// groups, through runtime.Hooks (which leave the run bit-identical to
// shufflefl run with the same settings). It is a diagnostic, not part of
// the shufflefl command:
//
//	go run ./docs/dprivacy/normprobe -nu 15 -rounds 20
//
// Bad flags exit with status 2.
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sync"

	"shufflefl/data"
	"shufflefl/protocol"
	"shufflefl/runtime"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// client is one participant's round: its update and the squared distance
// from its release to the nearest model.
type client struct {
	update []float64
	dist2  float64
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("normprobe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nu := fs.Float64("nu", 15, "noise multiplier (0: ifca, no sanitization)")
	k := fs.Int("k", 2, "hypotheses")
	rounds := fs.Int("rounds", 20, "rounds")
	perRound := fs.Int("clients-per-round", 50, "clients per round")
	clients := fs.Int("clients", 200, "clients")
	spc := fs.Int("samples-per-client", 50, "samples per client")
	epochs := fs.Int("local-epochs", 1, "local epochs")
	lr := fs.Float64("lr", 0.05, "local learning rate")
	model := fs.String("model", "mlp", "model: logreg, mlp or cnn")
	perLayer := fs.Bool("per-layer", false, "sanitize each layer separately")
	every := fs.Int("every", 5, "print every this many rounds (and round 1)")
	seed := fs.Uint64("seed", 1, "seed")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *every < 1 || *nu < 0 || math.IsNaN(*nu) {
		fmt.Fprintf(stderr, "normprobe: -every must be >= 1 and -nu >= 0\n")
		return 2
	}
	cfg := runtime.DefaultConfig()
	cfg.Dataset, cfg.Model, cfg.Partition, cfg.Groups = "fashion-mnist", *model, "rotated", 2
	cfg.Clients, cfg.ClientsPerRound, cfg.SamplesPerClient, cfg.Rounds = *clients, *perRound, *spc, *rounds
	cfg.LocalEpochs, cfg.LR, cfg.Batch, cfg.Workers, cfg.Seed, cfg.Out = *epochs, *lr, 10, 1, *seed, ""
	cfg.TargetEpsilon = 0
	cfg.Protocol, cfg.Options = "ifca-dp", map[string]float64{"k": float64(*k), "nu": *nu}
	if *perLayer {
		cfg.Options["per-layer"] = 1
	}
	if *nu == 0 {
		cfg.Protocol, cfg.Options = "ifca", map[string]float64{"k": float64(*k)}
	}
	split, err := data.Load(cfg.Dataset, data.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "normprobe: %v\n", err)
		return 2
	}
	e, err := runtime.New(cfg, split, nil)
	if err != nil {
		fmt.Fprintf(stderr, "normprobe: %v\n", err)
		if runtime.IsUsageError(err) {
			return 2
		}
		return 1
	}
	var (
		mu     sync.Mutex
		before [][]float64
		per    map[int]*client
	)
	e.SetHooks(runtime.Hooks{
		Update: func(_, c int, u []float64) {
			mu.Lock()
			defer mu.Unlock()
			per[c] = &client{update: append([]float64(nil), u...)}
		},
		Report: func(_, c int, rep *protocol.Report) {
			best := math.Inf(1)
			for _, w := range before {
				s := 0.0
				for j, x := range rep.Values {
					d := x - w[j]
					s += d * d
				}
				best = math.Min(best, s)
			}
			mu.Lock()
			defer mu.Unlock()
			per[c].dist2 = best
		},
	})
	groups := e.Groups()
	fmt.Fprintf(stdout, "# %s nu=%g k=%d clients-per-round=%d samples-per-client=%d local-epochs=%d lr=%g model=%s per-layer=%v seed=%d\n",
		cfg.Protocol, *nu, *k, *perRound, *spc, *epochs, *lr, *model, *perLayer, *seed)
	for e.Round() < cfg.Rounds {
		before = before[:0]
		for _, w := range e.Models() {
			before = append(before, append([]float64(nil), w...))
		}
		per = map[int]*client{}
		res, err := e.Step()
		if err != nil {
			fmt.Fprintf(stderr, "normprobe: %v\n", err)
			return 1
		}
		if res.Round%*every != 0 && res.Round != 1 {
			continue
		}
		var upd2, noise2 float64
		sum := make([][]float64, cfg.Groups)
		cnt := make([]int, cfg.Groups)
		for c, p := range per {
			g := groups[c]
			if sum[g] == nil {
				sum[g] = make([]float64, len(p.update))
			}
			for j, x := range p.update {
				sum[g][j] += x
			}
			cnt[g]++
			n2 := norm(p.update)
			upd2 += n2 * n2
			noise2 += p.dist2 - n2*n2 // ||δ+ρ||² − ||δ||², ≈ ||ρ||² (ρ ⟂ δ)
		}
		m := float64(len(per))
		fmt.Fprintf(stdout, "round %d: accuracy %.4f, rms|delta_c| %.3g, rms|rho_c| %.3g", res.Round, res.TestAccuracy,
			math.Sqrt(upd2/m), math.Sqrt(math.Max(noise2, 0)/m))
		for g := range sum {
			if cnt[g] > 0 {
				for j := range sum[g] {
					sum[g][j] /= float64(cnt[g])
				}
				fmt.Fprintf(stdout, ", |mean delta| group %d %.3g (%d clients)", g, norm(sum[g]), cnt[g])
			}
		}
		rho := math.Sqrt(math.Max(noise2, 0) / m)
		for h, w := range e.Models() {
			fmt.Fprintf(stdout, ", |theta_%d| %.3g", h, norm(w))
			// The noise of the cluster's mean, relative to its model.
			if size := res.Hypotheses[h].Size; size > 0 {
				fmt.Fprintf(stdout, " (%d releases, kappa %.3g)", size, rho/(math.Sqrt(float64(size))*norm(w)))
			}
		}
		if ca := res.ClusterAccuracy; ca != nil {
			fmt.Fprintf(stdout, ", cluster accuracy %.2f", ca.Accuracy)
		}
		fmt.Fprintln(stdout)
	}
	return 0
}
