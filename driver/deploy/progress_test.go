package deploy

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestProgressMeter: within a stage the meter passes the first and the
// last event and at most one intermediate event per interval, never a
// stale one; a new stage or round always passes.
func TestProgressMeter(t *testing.T) {
	recv := func(round, done int64) Progress {
		return Progress{Role: "shuffler", Round: round, Stage: StageReceiving, Done: done, Total: 10}
	}
	type step struct {
		after time.Duration // since the previous event
		p     Progress
		want  bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"first and last pass", []step{{0, recv(1, 0), true}, {0, recv(1, 1), false}, {0, recv(1, 10), true}}},
		{"one per interval", []step{{0, recv(1, 1), true}, {100 * time.Millisecond, recv(1, 2), false}, {200 * time.Millisecond, recv(1, 3), true}}},
		{"stale and repeated dropped", []step{{0, recv(1, 5), true}, {time.Second, recv(1, 4), false}, {time.Second, recv(1, 10), true}, {time.Second, recv(1, 10), false}}},
		{"new stage passes", []step{{0, recv(1, 10), true}, {0, Progress{Role: "shuffler", Round: 1, Stage: StageShuffling, Total: 4}, true},
			{0, Progress{Role: "shuffler", Round: 1, Stage: StageShuffling, Done: 4, Total: 4}, true}}},
		{"new round passes", []step{{0, recv(1, 10), true}, {0, recv(2, 0), true}}},
		{"empty stage passes once", []step{{0, Progress{Round: 1, Stage: StageReleased}, true}, {0, Progress{Round: 1, Stage: StageReleased}, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Progress
			m := newMeter(func(p Progress) { got = append(got, p) }, 250*time.Millisecond)
			now := time.Unix(0, 0)
			m.now = func() time.Time { return now }
			for i, s := range tt.steps {
				now = now.Add(s.after)
				n := len(got)
				m.report(s.p)
				if passed := len(got) > n; passed != s.want {
					t.Fatalf("step %d (%v): passed %v, want %v", i, s.p, passed, s.want)
				}
			}
		})
	}
	var nilMeter *meter
	nilMeter.report(recv(1, 1)) // does nothing
	if newMeter(nil, 0) != nil {
		t.Fatal("newMeter(nil) is not nil")
	}
}

// TestProgressString: the lines the drivers show.
func TestProgressString(t *testing.T) {
	tests := []struct {
		p    Progress
		want string
	}{
		{Progress{Role: "shuffler", Round: 2, Stage: StageReceiving, Done: 12, Total: 20}, "round 2: shuffler: receiving 12/20 reports (60%)"},
		{Progress{Role: "shuffler", Round: 2, Stage: StageShuffling, Reports: 20, Done: 5, Total: 10}, "round 2: shuffler: shuffling 20 reports, 5/10 dummies sealed (50%)"},
		{Progress{Role: "shuffler", Round: 2, Stage: StageRouting, Reports: 20, Done: 500, Total: 1000}, "round 2: shuffler: routing 20 reports, 500/1000 messages to the shards (50%)"},
		{Progress{Role: "shuffler", Round: 2, Stage: StageForwarding, Done: 1, Total: 4}, "round 2: shuffler: forwarding 1/4 chunks (25%)"},
		{Progress{Role: "analyzer", Round: 2, Stage: StageOpening, Done: 3, Total: 3}, "round 2: analyzer: opening 3/3 messages (100%)"},
		{Progress{Role: "analyzer", Round: 2, Stage: StageReleased}, "round 2: analyzer: released"},
		{Progress{Role: "analyzer", Round: 2, Stage: StageVoid}, "round 2: analyzer: void"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.p, got, tt.want)
		}
	}
}

// TestLocalProgress runs a small deployment in test mode with a progress
// observer that passes every event: each role's events arrive in stage
// order round after round, reports received never exceed the expected
// count and reach it, each stage's count is monotone and ends at its
// total, and the model is the simulation's (observing changes nothing).
func TestLocalProgress(t *testing.T) {
	cfg := testConfig("ss-double", 20, 2)
	split := testSplit(t, cfg)
	eng, _ := simulate(t, cfg, split)
	st, err := NewSetup(cfg, split, "test-progress")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []Progress
	seed := cfg.Seed
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := RunLocal(ctx, st, LocalOptions{Dir: t.TempDir(), TestSeed: &seed, RoundTimeout: time.Minute, Workers: 1, Logf: t.Logf,
		ProgressEvery: time.Nanosecond, Progress: func(p Progress) {
			mu.Lock()
			events = append(events, p)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"shuffler", "analyzer"} {
		checkProgress(t, role, events, cfg.Clients, cfg.Rounds)
	}
	want := eng.Weights()
	for j := range want {
		if d := math.Abs(res.Model[j]-want[j]) / math.Max(1, math.Abs(want[j])); d > 1e-9 {
			t.Fatalf("parameter %d: relative difference %.3g from the simulation", j, d)
		}
	}
}

// checkProgress checks one role's events of a run of rounds in which all
// clients report.
func checkProgress(t *testing.T, role string, all []Progress, clients, rounds int) {
	t.Helper()
	order := map[string][]Stage{"shuffler": {StageReceiving, StageShuffling, StageForwarding}, "analyzer": {StageOpening, StageReleased}}[role]
	var last Progress
	var stages []Stage
	var seen []int64
	for i, p := range all {
		if p.Role != role {
			continue
		}
		if p.Done < 0 || p.Done > p.Total || (p.Stage == StageReceiving && p.Total != int64(clients)) {
			t.Fatalf("event %d: %v: counts out of range", i, p)
		}
		if p.Round == last.Round && p.Stage == last.Stage {
			if p.Done <= last.Done {
				t.Fatalf("event %d: %v after %v: not monotone", i, p, last)
			}
		} else {
			if last.Stage != "" && last.Done != last.Total {
				t.Fatalf("event %d: %v ended at %v (%.0f%%), not 100%%", i, last.Stage, last, last.Percent())
			}
			if len(seen) == 0 || seen[len(seen)-1] != p.Round {
				if len(seen) > 0 && !slices.Equal(stages, order) {
					t.Fatalf("%s round %d: stages %v, want %v", role, seen[len(seen)-1], stages, order)
				}
				seen, stages = append(seen, p.Round), nil
			}
			stages = append(stages, p.Stage)
		}
		last = p
	}
	if !slices.Equal(stages, order) || last.Done != last.Total {
		t.Fatalf("%s's last round: stages %v ending at %v, want %v to 100%%", role, stages, last, order)
	}
	want := make([]int64, rounds)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("%s reported rounds %v, want %v", role, seen, want)
	}
}
