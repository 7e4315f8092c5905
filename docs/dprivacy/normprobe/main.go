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
// groups, through sim.Hooks (which leave the run bit-identical to
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

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/protocol"
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

// options are the probe's flags.
type options struct {
	nu, lr                            float64
	k, rounds, perRound, clients, spc int
	epochs, every                     int
	model                             string
	perLayer                          bool
	seed                              uint64
}

// parse reads the flags; ok is false after a usage error (already printed).
func parse(args []string, stderr io.Writer) (o options, ok bool) {
	fs := flag.NewFlagSet("normprobe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Float64Var(&o.nu, "nu", 15, "noise multiplier (0: ifca, no sanitization)")
	fs.IntVar(&o.k, "k", 2, "hypotheses")
	fs.IntVar(&o.rounds, "rounds", 20, "rounds")
	fs.IntVar(&o.perRound, "clients-per-round", 50, "clients per round")
	fs.IntVar(&o.clients, "clients", 200, "clients")
	fs.IntVar(&o.spc, "samples-per-client", 50, "samples per client")
	fs.IntVar(&o.epochs, "local-epochs", 1, "local epochs")
	fs.Float64Var(&o.lr, "lr", 0.05, "local learning rate")
	fs.StringVar(&o.model, "model", "mlp", "model: logreg, mlp or cnn")
	fs.BoolVar(&o.perLayer, "per-layer", false, "sanitize each layer separately")
	fs.IntVar(&o.every, "every", 5, "print every this many rounds (and round 1)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed")
	if err := fs.Parse(args); err != nil {
		return o, false
	}
	if o.every < 1 || o.nu < 0 || math.IsNaN(o.nu) {
		fmt.Fprintf(stderr, "normprobe: -every must be >= 1 and -nu >= 0\n")
		return o, false
	}
	return o, true
}

// config is the engine's configuration for the probe's options.
func (o options) config() round.Config {
	cfg := round.DefaultConfig()
	cfg.Dataset, cfg.Model, cfg.Partition, cfg.Groups = "fashion-mnist", o.model, "rotated", 2
	cfg.Clients, cfg.ClientsPerRound, cfg.SamplesPerClient, cfg.Rounds = o.clients, o.perRound, o.spc, o.rounds
	cfg.LocalEpochs, cfg.LR, cfg.Batch, cfg.Workers, cfg.Seed, cfg.Out = o.epochs, o.lr, 10, 1, o.seed, ""
	cfg.TargetEpsilon = 0
	cfg.Protocol, cfg.Options = "ifca-dp", map[string]float64{"k": float64(o.k), "nu": o.nu}
	if o.perLayer {
		cfg.Options["per-layer"] = 1
	}
	if o.nu == 0 {
		cfg.Protocol, cfg.Options = "ifca", map[string]float64{"k": float64(o.k)}
	}
	return cfg
}

// probe observes one round's participants through the engine's hooks.
type probe struct {
	mu     sync.Mutex
	before [][]float64
	per    map[int]*client
}

// hooks records each participant's update and the squared distance from
// its release to the nearest model of the round's start.
func (p *probe) hooks() sim.Hooks {
	return sim.Hooks{
		Update: func(_, c int, u []float64) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.per[c] = &client{update: append([]float64(nil), u...)}
		},
		Report: func(_, c int, rep *protocol.Report) {
			best := math.Inf(1)
			for _, w := range p.before {
				s := 0.0
				for j, x := range rep.Values {
					d := x - w[j]
					s += d * d
				}
				best = math.Min(best, s)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			p.per[c].dist2 = best
		},
	}
}

// start resets the probe before a round over the current models.
func (p *probe) start(models [][]float64) {
	p.before = p.before[:0]
	for _, w := range models {
		p.before = append(p.before, append([]float64(nil), w...))
	}
	p.per = map[int]*client{}
}

func run(args []string, stdout, stderr io.Writer) int {
	o, ok := parse(args, stderr)
	if !ok {
		return 2
	}
	cfg := o.config()
	split, err := data.Load(cfg.Dataset, data.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "normprobe: %v\n", err)
		return 2
	}
	e, err := sim.New(cfg, split, nil)
	if err != nil {
		fmt.Fprintf(stderr, "normprobe: %v\n", err)
		if sim.IsUsageError(err) {
			return 2
		}
		return 1
	}
	p := &probe{}
	e.SetHooks(p.hooks())
	groups := e.Groups()
	fmt.Fprintf(stdout, "# %s nu=%g k=%d clients-per-round=%d samples-per-client=%d local-epochs=%d lr=%g model=%s per-layer=%v seed=%d\n",
		cfg.Protocol, o.nu, o.k, o.perRound, o.spc, o.epochs, o.lr, o.model, o.perLayer, o.seed)
	for e.Round() < cfg.Rounds {
		p.start(e.Models())
		res, err := e.Step()
		if err != nil {
			fmt.Fprintf(stderr, "normprobe: %v\n", err)
			return 1
		}
		if res.Round%o.every != 0 && res.Round != 1 {
			continue
		}
		report(stdout, res, p.per, groups, cfg.Groups, e.Models())
	}
	return 0
}

// report prints one round's line.
func report(stdout io.Writer, res round.RoundResult, per map[int]*client, groups []int, ngroups int, models [][]float64) {
	var upd2, noise2 float64
	sum := make([][]float64, ngroups)
	cnt := make([]int, ngroups)
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
	for h, w := range models {
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
