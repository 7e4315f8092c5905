package remote

import (
	"context"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/transport/jetstream"
)

// startWorkers starts n remote workers on srv as goroutines; the returned
// function stops them.
func startWorkers(t *testing.T, srv *jetstream.Server, split data.Split, n int, ackWait time.Duration) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		conn, err := srv.Connect()
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer conn.Close()
			o := WorkerOptions{AckWait: ackWait, Load: func(round.Config) (data.Split, error) { return split, nil }}
			if err := ServeWorker(ctx, conn, o); err != nil {
				t.Errorf("worker: %v", err)
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}

// runRemote runs cfg with its clients on the workers of srv (in process
// when srv is nil) and returns the rounds and the final model.
func runRemote(t *testing.T, cfg round.Config, split data.Split, srv *jetstream.Server) ([]round.RoundResult, []float64) {
	t.Helper()
	e, err := sim.New(cfg, split, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if srv != nil {
		conn, err := srv.Connect()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		r, err := Attach(context.Background(), e, conn, Options{Window: 3, Timeout: time.Minute})
		if err != nil {
			t.Fatalf("Attach: %v", err)
		}
		defer func() {
			if err := r.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if blocks := (cfg.ClientsPerRound + sim.BlockSize - 1) / sim.BlockSize * cfg.Rounds; r.merged != blocks {
				t.Errorf("%d blocks came from the workers, want %d", r.merged, blocks)
			}
		}()
	}
	var out []round.RoundResult
	if _, err := e.Run(func(r round.RoundResult) { out = append(out, r) }); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out, slices.Clone(e.Weights())
}

func sameWeights(t *testing.T, a, b []float64) {
	t.Helper()
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			t.Fatalf("weight %d: %v vs %v", i, a[i], b[i])
		}
	}
}

func TestRemoteWorkersMatchInProcess(t *testing.T) {
	split := loadSample(t)
	srv, err := jetstream.Embedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	for _, proto := range []string{"ss-simple", "apes", "ss-double", "nonprivate"} {
		t.Run(proto, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Protocol = proto
			cfg.Rounds = 2
			cfg.ClientsPerRound = 40 // three blocks, the last one short
			if err := round.ApplyDefaults(&cfg, func(k string) bool { return k != "epsilon" && k != "target-epsilon" && k != "delta" }); err != nil {
				t.Fatal(err)
			}
			want, wantW := runRemote(t, cfg, split, nil)
			for _, n := range []int{1, 2} {
				stop := startWorkers(t, srv, split, n, 30*time.Second)
				got, gotW := runRemote(t, cfg, split, srv)
				stop()
				sameTrajectory(t, want, got)
				sameWeights(t, wantW, gotW)
			}
		})
	}
}

// TestRemoteWorkerDiesMidBlock has a "worker" take a task and die with it
// (it never answers): the task is delivered again after AckWait to a live
// worker, and the results are those of one process.
func TestRemoteWorkerDiesMidBlock(t *testing.T) {
	split := loadSample(t)
	srv, err := jetstream.Embedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	cfg := smallConfig()
	cfg.Rounds = 1
	want, wantW := runRemote(t, cfg, split, nil)

	conn, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tasks, _, _, err := openQueues(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	dead, err := tasks.Consumer(ctx, jetstream.ConsumerConfig{Name: workerGroup, AckWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	took := make(chan uint64, 1)
	go func() { // the dying worker: takes the first task, then nothing
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		msgs, _ := dead.Fetch(fctx, 1)
		if len(msgs) == 1 {
			took <- msgs[0].Sequence()
		}
		close(took)
		conn.Close()
	}()
	time.Sleep(200 * time.Millisecond) // the dying worker asks first
	stop := startWorkers(t, srv, split, 1, time.Second)
	got, gotW := runRemote(t, cfg, split, srv)
	stop()
	if _, ok := <-took; !ok {
		t.Fatal("the dying worker took no task")
	}
	sameTrajectory(t, want, got)
	sameWeights(t, wantW, gotW)
}

func TestBlockResultWire(t *testing.T) {
	agg := protocol.NewAggregate(3)
	for _, rep := range []protocol.Report{{Values: []float64{0.1, -2, math.SmallestNonzeroFloat64}, Meta: []float64{1.5}}, {Coords: []int32{2}, Values: []float64{1e300}}} {
		if err := agg.AddReport(&rep); err != nil {
			t.Fatal(err)
		}
	}
	in := blockResult{Run: "r1", Round: 7, Block: 3, TrainNS: 11, EncodeNS: 12, AggNS: 13, Agg: agg}
	data := in.marshal()
	var out blockResult
	got := protocol.NewAggregate(3)
	if err := out.unmarshal(data, got); err != nil {
		t.Fatal(err)
	}
	if out.Run != in.Run || out.Round != 7 || out.Block != 3 || out.TrainNS != 11 || out.AggNS != 13 || got.Reports != 2 ||
		!slices.Equal(got.Count, agg.Count) || !slices.Equal(got.Meta, agg.Meta) {
		t.Fatalf("round trip: %+v %+v", out, got)
	}
	sameWeights(t, agg.Sum, got.Sum)
	for _, cut := range []int{0, 1, 5, len(data) - 1} {
		if err := out.unmarshal(data[:cut], protocol.NewAggregate(3)); err == nil {
			t.Errorf("a result cut to %d of %d bytes was accepted", cut, len(data))
		}
	}
	if err := out.unmarshal(data, protocol.NewAggregate(4)); err == nil {
		t.Error("a result of dimension 3 was accepted for dimension 4")
	}
	task := blockTask{Run: "r1", Round: 2, Block: 5, Clients: []int{80, 81, 99}}
	var back blockTask
	if err := back.unmarshal(task.marshal()); err != nil || !slices.Equal(back.Clients, task.Clients) || back.Block != 5 {
		t.Fatalf("task round trip: %+v, %v", back, err)
	}
}

// TestRemoteWorkerOtherData has the worker load data that differs from the
// coordinator's in one pixel: the round fails with the reason instead of
// merging blocks trained on other data.
func TestRemoteWorkerOtherData(t *testing.T) {
	split := loadSample(t)
	srv, err := jetstream.Embedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	other := split
	x := *split.Train
	x.X = slices.Clone(x.X)
	x.X[len(x.X)/2] += 0.5
	other.Train = &x
	stop := startWorkers(t, srv, other, 1, 30*time.Second)
	defer stop()
	cfg := smallConfig()
	cfg.Rounds = 1
	e, err := sim.New(cfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, err := Attach(context.Background(), e, conn, Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := e.Run(nil); err == nil || !strings.Contains(err.Error(), "training data differ") {
		t.Fatalf("Run with a worker on other data: %v, want the fingerprint's refusal", err)
	}
}

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
