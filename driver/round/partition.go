package round

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/learning/ifca"
)

// Partition is how a run's training data is split over its clients, and
// the examples they and the evaluation see.
type Partition struct {
	// Shards are the training-set indexes of every client: the Clients
	// training clients, then the HoldoutClients validation clients. It is
	// nil for partition "sampled", whose shards are drawn on demand
	// (Shard).
	Shards [][]int
	// Groups is the rotation group of every client (partition "rotated";
	// nil otherwise), in the order of Shards.
	Groups []int
	// Train holds the training examples, each client's transformed for its
	// group; Test holds the test set, one transformed copy per group.
	Train, Test fl.Examples
	// TestGroups is the number of copies of the test set in Test (1 unless
	// the partition is "rotated").
	TestGroups int

	// sampled draws client c's shard on demand (partition "sampled"), into
	// buf's storage when it has room.
	sampled func(c int, buf []int) ([]int, error)
	clients int
}

// Clients is the number of shards: training plus validation clients.
func (p Partition) Clients() int {
	if p.sampled != nil {
		return p.clients
	}
	return len(p.Shards)
}

// Shard returns client c's training-set indexes. For partition "sampled"
// it draws them from client c's own stream, so the population's shards
// are never held in memory at once (a run with 10^6 clients keeps only
// the shards being trained).
func (p Partition) Shard(c int) []int { return p.ShardInto(c, nil) }

// ShardInto is Shard drawing a sampled shard into buf's storage when it
// has room (buf's contents are discarded; the result is valid until buf is
// reused). Other partitions return their shard, buf unused: the caller
// must not modify the result.
func (p Partition) ShardInto(c int, buf []int) []int {
	if p.sampled == nil {
		return p.Shards[c]
	}
	s, err := p.sampled(c, buf)
	if err != nil {
		// PartitionData checked samples-per-client against the set.
		panic(fmt.Sprintf("round: sampled shard of client %d: %v", c, err))
	}
	return s
}

// PartitionData splits split's training set as a run of cfg does, from
// the stream rng.Stream(cfg.Seed, rng.LabelPartition): iid or dirichlet
// shards, or for "rotated" iid shards and then rotation groups from the
// same stream. Simulation (New) and deployment (package deploy) both call
// it, so a client's shard is the same in both for the same seed.
func PartitionData(cfg Config, split data.Split) (Partition, error) {
	pr := rng.Stream(cfg.Seed, rng.LabelPartition)
	n := cfg.Clients + cfg.HoldoutClients
	p := Partition{
		Train:      fl.Examples{X: split.Train.X, Y: split.Train.Y, Features: split.Train.Features},
		Test:       fl.Examples{X: split.Test.X, Y: split.Test.Y, Features: split.Test.Features},
		TestGroups: 1,
	}
	var err error
	switch cfg.Partition {
	case "iid", "rotated":
		if split.Train.Len() < n {
			return Partition{}, checks.Invalidf("more clients (%s) than training samples (%d) in %s", clientCount(cfg), split.Train.Len(), cfg.Dataset)
		}
		p.Shards, err = data.PartitionIID(pr, split.Train.Len(), n, cfg.SamplesPerClient)
		if err == nil && cfg.Partition == "rotated" {
			p.Groups = data.RotationGroups(pr, n, cfg.Groups)
			p.Train, p.Test = rotateForGroups(split, p.Shards, p.Groups, cfg.Groups)
			p.TestGroups = cfg.Groups
		}
	case "dirichlet":
		p.Shards, err = data.PartitionDirichlet(pr, split.Train.Y, split.Train.Classes, n, cfg.Alpha, 1)
	case "sampled":
		err = p.sample(cfg, split.Train.Len(), n)
	case NaturalPartition:
		p.Shards, err = naturalShards(pr, split.Train, cfg.Dataset, cfg.Clients, cfg.HoldoutClients)
	default:
		return Partition{}, checks.Invalidf("unknown partition %q", cfg.Partition)
	}
	if err != nil {
		if cfg.HoldoutClients > 0 {
			return Partition{}, fmt.Errorf("partition (%s): %w", clientCount(cfg), err)
		}
		return Partition{}, fmt.Errorf("partition: %w", err)
	}
	return p, nil
}

// sample sets up partition "sampled": client c's shard is
// cfg.SamplesPerClient distinct examples drawn by data.SampleShard from
// the stream (seed, LabelPartition, 1, c), independently of every other
// client's (shards overlap; the population may exceed the training set).
func (p *Partition) sample(cfg Config, train, clients int) error {
	m := cfg.SamplesPerClient
	if m < 1 || m > train {
		return checks.Invalidf("partition sampled needs samples-per-client in [1, %d] (the training set), got %d", train, m)
	}
	p.clients = clients
	p.sampled = func(c int, buf []int) ([]int, error) {
		return data.SampleShardInto(rng.Stream(cfg.Seed, rng.LabelPartition, 1, uint64(c)), train, m, buf)
	}
	return nil
}

// rotateForGroups builds the training examples in which every client's
// samples are transformed for its group (shards are disjoint, so one copy of
// the training set suffices), and a test set holding one transformed copy of
// the test set per group, so that test accuracy averages over the groups.
// Images are rotated by 90°·g; other data by 2πg/k in feature space.
func rotateForGroups(split data.Split, shards [][]int, groups []int, k int) (fl.Examples, fl.Examples) {
	tr, te := split.Train, split.Test
	rot := func(ds *data.Dataset, g int) *data.Dataset {
		if ds.Rows > 0 && ds.Cols > 0 && ds.Rows == ds.Cols {
			return data.RotateImages(ds, ds.Rows, ds.Cols, g)
		}
		return data.RotateFeatures(ds, 2*math.Pi*float64(g)/float64(k))
	}
	x := slices.Clone(tr.X)
	f := tr.Features
	rotated := make([]*data.Dataset, k)
	for g := 0; g < k; g++ {
		rotated[g] = rot(tr, g)
	}
	for c, shard := range shards {
		src := rotated[groups[c]].X
		for _, i := range shard {
			copy(x[i*f:(i+1)*f], src[i*f:(i+1)*f])
		}
	}
	var tx []float32
	var ty []uint8
	for g := 0; g < k; g++ {
		r := rot(te, g)
		tx = append(tx, r.X...)
		ty = append(ty, r.Y...)
	}
	return fl.Examples{X: x, Y: tr.Y, Features: f}, fl.Examples{X: tx, Y: ty, Features: te.Features}
}

// ChooseHypothesis is a clustered-FL client's private choice: the model
// with the lowest loss on its shard (ties to the lowest index; model 0 when
// there is one model or the shard is empty), computed with the model's
// evaluation kernels on a copy of the shard in sub (scratch, reused); the
// argmin is ifca.ChooseHypothesis's (a NaN or +Inf loss is never chosen).
// Simulation and deployment clients both choose with it.
func ChooseHypothesis(model fl.Model, models [][]float64, train fl.Examples, shard []int, sub *fl.Examples) (int, error) {
	if len(models) == 1 || len(shard) == 0 {
		return 0, nil
	}
	f := train.Features
	sub.Features = f
	sub.X, sub.Y = sub.X[:0], sub.Y[:0]
	for _, i := range shard {
		sub.X = append(sub.X, train.X[i*f:(i+1)*f]...)
		sub.Y = append(sub.Y, train.Y[i])
	}
	losses := make([]float64, len(models))
	for h, m := range models {
		_, l, err := fl.Evaluate(model, m, *sub, 1)
		if err != nil {
			return 0, err
		}
		losses[h] = l
	}
	return ifca.ChooseHypothesis(losses), nil
}

// clientCount describes the clients the training set is split over.
func clientCount(cfg Config) string {
	if cfg.HoldoutClients > 0 {
		return fmt.Sprintf("%d training + %d validation clients", cfg.Clients, cfg.HoldoutClients)
	}
	return strconv.Itoa(cfg.Clients)
}

// initSD is the standard deviation of the Gaussian perturbation that makes
// the k initial hypotheses of a clustered protocol differ (IFCA starts from
// random hypotheses; logistic regression's own initialisation is all
// zeros, which would give k identical models and clusters that never
// separate).
const initSD = 0.01

// InitModels returns a run's k initial models (k = 1 for a non-clustered
// protocol): models[0] is the model's initialisation from the stream
// rng.Stream(seed, LabelInit); every other model is initialised from its own
// stream, and when k > 1 every model (the first included) is perturbed by
// N(0, initSD²) noise. With k = 1 the model is untouched, so the one-model
// ablation starts exactly where plain FedAvg does. Both drivers start from
// these models.
func InitModels(cfg Config, model fl.Model, k int) [][]float64 {
	var models [][]float64
	for h := 0; h < max(k, 1); h++ {
		w := make([]float64, model.Dim())
		if h == 0 {
			model.Init(rng.Stream(cfg.Seed, rng.LabelInit), w)
		} else {
			model.Init(rng.Stream(cfg.Seed, rng.LabelInit, uint64(h)), w)
		}
		models = append(models, w)
	}
	if k > 1 {
		for h, w := range models {
			r := rng.Stream(cfg.Seed, rng.LabelInit, 1<<32+uint64(h))
			for j := range w {
				w[j] += initSD * r.NormFloat64()
			}
		}
	}
	return models
}
