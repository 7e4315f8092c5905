package sim

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/learning/data"
)

func loadSample(t testing.TB) data.Split {
	t.Helper()
	split, err := data.Load("fashion-mnist-sample", data.Options{})
	if err != nil {
		t.Fatalf("loading the committed Fashion-MNIST sample: %v", err)
	}
	return split
}

func smallConfig() round.Config {
	c := round.DefaultConfig()
	c.Dataset = "fashion-mnist-sample"
	c.Clients = 50
	c.ClientsPerRound = 20
	c.Rounds = 3
	c.Out = ""
	return c
}

// runAll runs cfg to completion and returns every round's results.
func runAll(t testing.TB, cfg round.Config, split data.Split) []round.RoundResult {
	t.Helper()
	e, err := New(cfg, split, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var out []round.RoundResult
	if _, err := e.Run(func(r round.RoundResult) { out = append(out, r) }); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out
}

// runSnapshot runs cfg to its end and returns the engine's snapshot.
func runSnapshot(t testing.TB, cfg round.Config, split data.Split) Snapshot {
	t.Helper()
	e, err := New(cfg, split, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := e.Run(nil); err != nil {
		t.Fatalf("Run: %v", err)
	}
	snap, err := e.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return snap
}

// sameTrajectory compares everything but timings bit for bit.
func sameTrajectory(t *testing.T, a, b []round.RoundResult) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d rounds vs %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		x.Seconds, y.Seconds = 0, 0
		x.Timing, y.Timing = round.Timing{}, round.Timing{}
		if math.Float64bits(x.TestAccuracy) != math.Float64bits(y.TestAccuracy) ||
			math.Float64bits(x.TestLoss) != math.Float64bits(y.TestLoss) ||
			x.Participants != y.Participants || x.Reports != y.Reports || x.Dummies != y.Dummies ||
			!reflect.DeepEqual(x.Privacy, y.Privacy) || x.MaxClientEpsilon != y.MaxClientEpsilon {
			t.Fatalf("round %d differs:\n%+v\n%+v", i+1, x, y)
		}
	}
}

func TestReproducibleAcrossWorkers(t *testing.T) {
	split := loadSample(t)
	for _, proto := range []string{"nonprivate", "ldp-laplace", "ldp-gaussian", "dp-central"} {
		t.Run(proto, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Protocol = proto
			cfg.Epsilon = 50
			if proto == "dp-central" {
				cfg.TargetEpsilon = 50
			}
			cfg.Workers = 1
			one := runAll(t, cfg, split)
			cfg.Workers = 2
			two := runAll(t, cfg, split)
			cfg.Workers = 5
			five := runAll(t, cfg, split)
			sameTrajectory(t, one, two)
			sameTrajectory(t, one, five)
		})
	}
}

func TestDifferentSeedsDiffer(t *testing.T) {
	split := loadSample(t)
	cfg := smallConfig()
	cfg.Protocol = "ldp-laplace"
	cfg.Epsilon = 100
	a := runAll(t, cfg, split)
	cfg.Seed = 2
	b := runAll(t, cfg, split)
	if a[len(a)-1].TestLoss == b[len(b)-1].TestLoss {
		t.Fatal("seeds 1 and 2 gave the same final loss")
	}
}

// TestStreamingMatchesFaithful checks that the streaming aggregation of a
// simulation and the faithful shuffler (materialise, pad, permute) give the
// same model for a seed. Summation order differs, so the comparison allows
// floating-point rounding (relative 1e-9), not statistical differences.
func TestStreamingMatchesFaithful(t *testing.T) {
	split := loadSample(t)
	for _, proto := range []string{"nonprivate", "ldp-laplace"} {
		t.Run(proto, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Protocol = proto
			cfg.Epsilon = 100
			cfg.Rounds = 2
			streamingMatchesFaithful(t, cfg, split)
		})
	}
}

// streamingMatchesFaithful runs cfg with the streaming aggregation and with
// the faithful shuffler, compares the models parameter by parameter, and
// returns both runs' round results (streaming first) for further checks.
func streamingMatchesFaithful(t *testing.T, cfg round.Config, split data.Split) (streaming, faithful []round.RoundResult) {
	t.Helper()
	cfg.Faithful = false
	e1, err := New(cfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Faithful = true
	e2, err := New(cfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < cfg.Rounds; r++ {
		r1, err := e1.Step()
		if err != nil {
			t.Fatal(err)
		}
		r2, err := e2.Step()
		if err != nil {
			t.Fatal(err)
		}
		streaming, faithful = append(streaming, r1), append(faithful, r2)
	}
	w1, w2 := e1.Weights(), e2.Weights()
	for j := range w1 {
		if d := math.Abs(w1[j] - w2[j]); d > 1e-9*(1+math.Abs(w1[j])) {
			t.Fatalf("parameter %d: streaming %v faithful %v", j, w1[j], w2[j])
		}
	}
	return streaming, faithful
}

func TestNonPrivateLearns(t *testing.T) {
	split := loadSample(t)
	cfg := smallConfig()
	cfg.ClientsPerRound = 0
	cfg.Rounds = 5
	res := runAll(t, cfg, split)
	if acc := res[len(res)-1].TestAccuracy; acc < 0.6 {
		t.Fatalf("non-private FedAvg reached only %.3f on the Fashion-MNIST sample", acc)
	}
	if !math.IsInf(res[0].Privacy.CentralEpsilon, 1) || res[0].Privacy.Private {
		t.Fatalf("non-private run claims a guarantee: %+v", res[0].Privacy)
	}
}

func TestSampling(t *testing.T) {
	split := loadSample(t)
	cfg := smallConfig()
	e, err := New(cfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for r := 1; r <= 200; r++ {
		p := e.Sample(r)
		if len(p) != cfg.ClientsPerRound {
			t.Fatalf("round %d: %d participants", r, len(p))
		}
		for i, c := range p {
			if c < 0 || c >= cfg.Clients || (i > 0 && p[i-1] >= c) {
				t.Fatalf("round %d: bad participant list %v", r, p)
			}
			seen[c]++
		}
	}
	// Each client is expected 200*20/50 = 80 times; the count is
	// hypergeometric-binomial with sd ~ sqrt(80*0.6) ~ 6.9; 7 sd bounds.
	for c := 0; c < cfg.Clients; c++ {
		if n := seen[c]; n < 80-49 || n > 80+49 {
			t.Fatalf("client %d sampled %d times, want about 80", c, n)
		}
	}
}

func TestLedgerCountsParticipation(t *testing.T) {
	split := loadSample(t)
	cfg := smallConfig()
	cfg.Protocol = "ldp-laplace"
	cfg.Epsilon = 2
	res := runAll(t, cfg, split)
	last := res[len(res)-1]
	// A client can have taken part in at most every round.
	if last.MaxClientEpsilon > 2*float64(cfg.Rounds)+1e-12 || last.MaxClientEpsilon < 2 {
		t.Fatalf("max client epsilon %v after %d rounds at 2 per round", last.MaxClientEpsilon, cfg.Rounds)
	}
	if last.Privacy.CumulativeEpsilon != 2*float64(cfg.Rounds) {
		t.Fatalf("cumulative epsilon %v, want %v", last.Privacy.CumulativeEpsilon, 2*cfg.Rounds)
	}
}

// TestClientCap: at 2 per round and a cap of 5, every client takes part in
// rounds 1 and 2 and refuses round 3 (4 + 2 > 5).
func TestClientCap(t *testing.T) {
	split := loadSample(t)
	cfg := smallConfig()
	cfg.Protocol = "ldp-laplace"
	cfg.Epsilon = 2
	cfg.ClientCap = 5
	cfg.ClientsPerRound = 0
	res := runAll(t, cfg, split)
	for i, want := range []int{0, 0, cfg.Clients} {
		if res[i].Refused != want || res[i].Participants != cfg.Clients-want {
			t.Fatalf("round %d: %d refused, %d took part; want %d refused", i+1, res[i].Refused, res[i].Participants, want)
		}
	}
	if res[2].MaxClientEpsilon != 4 {
		t.Fatalf("max client epsilon %v, want 4", res[2].MaxClientEpsilon)
	}
	cfg.Protocol = "nonprivate"
	if _, err := New(cfg, split, nil); err == nil {
		t.Fatal("a cap was accepted for a protocol without local guarantee")
	}
}

func TestConfigErrors(t *testing.T) {
	split := loadSample(t)
	tests := []struct {
		name string
		mod  func(*round.Config)
		want string
	}{
		{"unknown protocol", func(c *round.Config) { c.Protocol = "nope" }, `unknown protocol "nope"`},
		{"unknown model", func(c *round.Config) { c.Model = "resnet" }, `unknown model "resnet"`},
		{"too many clients", func(c *round.Config) { c.Clients = 1_000_000; c.ClientsPerRound = 0 }, "more clients"},
		{"eps zero", func(c *round.Config) { c.Epsilon = 0 }, "epsilon must be > 0"},
		{"eps nan", func(c *round.Config) { c.Epsilon = math.NaN() }, "epsilon must be a finite number"},
		{"eps inf", func(c *round.Config) { c.Epsilon = math.Inf(1) }, "epsilon must be a finite number"},
		{"lr nan", func(c *round.Config) { c.LR = math.NaN() }, "lr must be a finite number"},
		{"delta", func(c *round.Config) { c.Delta = 1 }, "delta must be in (0, 1)"},
		{"per round", func(c *round.Config) { c.ClientsPerRound = c.Clients + 1 }, "clients-per-round"},
		{"partition", func(c *round.Config) { c.Partition = "zipf" }, `unknown partition "zipf"`},
		{"mode", func(c *round.Config) { c.Mode = "fedx" }, `unknown mode "fedx"`},
		{"both local", func(c *round.Config) { c.LocalSteps = 3 }, "only one of local-epochs"},
		{"protocol option", func(c *round.Config) { c.Options = map[string]float64{"k": 3} }, `option "k" is not used`},
		{"clip", func(c *round.Config) { c.Clip = -1 }, "clip must be > 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig()
			tc.mod(&cfg)
			_, err := New(cfg, split, nil)
			if err == nil {
				t.Fatalf("want error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
			if !IsUsageError(err) {
				t.Fatalf("error %v is not classified as a usage error", err)
			}
		})
	}
}

func TestBudgetsPersonalized(t *testing.T) {
	cfg := smallConfig()
	cfg.EpsDist = "uniform2"
	b, err := round.Budgets(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[float64]bool{}
	for _, x := range b {
		distinct[x.Epsilon] = true
	}
	if len(distinct) < 2 {
		t.Fatalf("uniform2 budgets are all equal: %v", b[:5])
	}
	if _, err := round.Budgets(cfg, []float64{1, 2}); err == nil {
		t.Fatal("a budget list of the wrong length was accepted")
	}
	if _, err := round.Budgets(round.Config{Clients: 2, Delta: 1e-5}, []float64{1, math.NaN()}); err == nil {
		t.Fatal("a NaN budget was accepted")
	}
}

// TestLedgerChargesUserLevel: --epsilon is the whole update's epsilon for
// every protocol; APES spends eps/d per coordinate, so a client at 3,925
// spends 0.5 per dimension and its ledger is charged 3,925.
func TestLedgerChargesUserLevel(t *testing.T) {
	split := loadSample(t)
	for _, proto := range []string{"apes", "ldp-laplace", "pldp", "unis", "s-apes"} {
		cfg := smallConfig()
		cfg.Protocol = proto
		cfg.Epsilon = 3925
		cfg.Rounds = 1
		cfg.ClientsPerRound = 0
		res := runAll(t, cfg, split)
		if want := 3925.0; math.Abs(res[0].MaxClientEpsilon-want) > 1e-9 || res[0].Privacy.LocalEpsilon.Max != want {
			t.Fatalf("%s: max client epsilon %v, local %v, want %v", proto, res[0].MaxClientEpsilon, res[0].Privacy.LocalEpsilon.Max, want)
		}
		if c := res[0].Privacy.LocalCoordEpsilon.Max; math.Abs(c-0.5) > 1e-12 {
			t.Fatalf("%s: local epsilon per coordinate %v, want 0.5", proto, c)
		}
	}
}

// TestRotatedPartition: clients of group g see their images rotated by
// 90°·g, and the test set holds one rotated copy per group.
func TestRotatedPartition(t *testing.T) {
	split := loadSample(t)
	cfg := smallConfig()
	cfg.Partition = "rotated"
	cfg.Groups = 4
	e, err := New(cfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.testEx.Len() != 4*split.Test.Len() {
		t.Fatalf("test set has %d examples, want %d", e.testEx.Len(), 4*split.Test.Len())
	}
	sizes := map[int]int{}
	for c, g := range e.Groups() {
		sizes[g]++
		i := e.part.Shard(c)[0]
		want := data.RotateImages(split.Train.Subset([]int{i}), 28, 28, g).X
		if got := e.trainEx.Row(i); !slices.Equal(got, want) {
			t.Fatalf("client %d (group %d): sample %d is not rotated by %d quarter turns", c, g, i, g)
		}
	}
	for g := 0; g < 4; g++ {
		if sizes[g] < cfg.Clients/4 || sizes[g] > cfg.Clients/4+1 {
			t.Fatalf("group sizes %v", sizes)
		}
	}
	if _, err := e.Step(); err != nil {
		t.Fatal(err)
	}
	cfg.Groups = 0
	if _, err := New(cfg, split, nil); err == nil {
		t.Fatal("0 groups accepted")
	}
}

// TestSampledPartition runs a population larger than the training set
// (partition "sampled": 5,000 clients drawing 3 of the sample's 2,000
// images each), checks that a client's shard is the same on every call
// and that the run is identical across worker counts, and that a
// samples-per-client the data cannot serve is refused.
func TestSampledPartition(t *testing.T) {
	split := loadSample(t)
	cfg := smallConfig()
	cfg.Partition, cfg.SamplesPerClient = "sampled", 3
	cfg.Clients, cfg.ClientsPerRound, cfg.Rounds, cfg.LocalEpochs = 5000, 1000, 2, 1
	cfg.Protocol, cfg.Epsilon = "ldp-laplace", 50
	e, err := New(cfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.nshards != cfg.Clients || e.part.Shards != nil {
		t.Fatalf("%d shards (materialised: %v), want %d drawn on demand", e.nshards, e.part.Shards != nil, cfg.Clients)
	}
	if a, b := e.part.Shard(4321), e.part.Shard(4321); !slices.Equal(a, b) || len(a) != 3 {
		t.Fatalf("shard of client 4321: %v then %v", a, b)
	}
	if slices.Equal(e.part.Shard(1), e.part.Shard(2)) {
		t.Error("clients 1 and 2 drew the same shard")
	}
	cfg.Workers = 1
	one := runAll(t, cfg, split)
	cfg.Workers = 3
	sameTrajectory(t, one, runAll(t, cfg, split))
	cfg.SamplesPerClient = split.Train.Len() + 1
	if _, err := New(cfg, split, nil); err == nil || !strings.Contains(err.Error(), "samples-per-client") {
		t.Errorf("samples-per-client above the training set: %v", err)
	}
}
