package metrics

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/protocol"
)

func TestInfiniteEpsilonIsNull(t *testing.T) {
	r := round.RoundResult{Round: 1, TestAccuracy: 0.5, Privacy: protocol.NonPrivate(), MaxClientEpsilon: math.Inf(1)}
	var buf bytes.Buffer
	if err := NewJSONL(&buf).Write(FromResult(r)); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.String())
	}
	for _, k := range []string{"round_central_epsilon", "round_alone_epsilon", "cumulative_epsilon", "local_epsilon_max", "local_coord_epsilon_median", "max_client_epsilon"} {
		if v, ok := m[k]; !ok || v != nil {
			t.Errorf("%s = %v, want null", k, v)
		}
	}
	if !strings.HasSuffix(buf.String(), "}\n") || strings.Count(buf.String(), "\n") != 1 {
		t.Errorf("not one object per line: %q", buf.String())
	}
}

func TestFiniteValuesKept(t *testing.T) {
	p := protocol.Privacy{Private: true, LocalEpsilon: protocol.Stats{Min: 1, Median: 2, Max: 3}, CentralEpsilon: 0.5, CentralDelta: 1e-6, CumulativeEpsilon: 1.5}
	rec := FromResult(round.RoundResult{Round: 2, Privacy: p, MaxClientEpsilon: 6})
	if *rec.LocalEpsilonMin != 1 || *rec.LocalEpsilonMedian != 2 || *rec.LocalEpsilonMax != 3 || *rec.RoundCentralEpsilon != 0.5 ||
		rec.RoundCentralDelta != 1e-6 || *rec.CumulativeEpsilon != 1.5 || *rec.MaxClientEpsilon != 6 {
		t.Fatalf("%+v", rec)
	}
}

func TestPlotsWritePNG(t *testing.T) {
	dir := t.TempDir()
	var recs []Record
	for i := 1; i <= 3; i++ {
		e := float64(i)
		recs = append(recs, Record{Round: i, TestAccuracy: 0.1 * e, RoundAloneEpsilon: &e, CumulativeEpsilon: &e})
	}
	for name, f := range map[string]func(string) error{
		"acc.png":    func(p string) error { return PlotAccuracy(p, "t", recs) },
		"priv.png":   func(p string) error { return PlotPrivacy(p, "t", recs) },
		"nopriv.png": func(p string) error { return PlotPrivacy(p, "t", []Record{{Round: 1}}) },
		"logpriv.png": func(p string) error {
			small, big := 0.3, 400.0
			return PlotPrivacy(p, "t", []Record{{Round: 1, RoundAloneEpsilon: &small, MaxClientEpsilon: &big}, {Round: 2, RoundAloneEpsilon: &small, MaxClientEpsilon: &big}})
		},
		"compare.png": func(p string) error { return PlotCompare(p, "t", []Series{{"a", recs}, {"b", recs}}) },
	} {
		p := filepath.Join(dir, name)
		if err := f(p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := os.ReadFile(p)
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Fatalf("%s is not a PNG (%v)", name, err)
		}
	}
}

// TestRecordPrivacyRoundTrip: Record.Privacy inverts FromResult for the
// fields a record keeps, for a private round and a non-private one.
func TestRecordPrivacyRoundTrip(t *testing.T) {
	private := protocol.Privacy{Private: true, LocalEpsilon: protocol.Stats{Min: 1, Median: 2, Max: 3},
		LocalCoordEpsilon: protocol.Stats{Min: 0.1, Median: 0.2, Max: 0.3}, LocalDelta: 1e-9,
		CentralEpsilon: 0.5, CentralDelta: 1e-7, CentralCoordEpsilon: 0.01, CentralCoordDelta: 1e-10,
		CumulativeEpsilon: 2.5, CumulativeDelta: 1e-6, CumulativeMethod: "PLD", CumulativeApproximate: true,
		Bound: "flame", Approximate: true}
	for _, p := range []protocol.Privacy{private, protocol.NonPrivate()} {
		rec := FromResult(round.RoundResult{Round: 3, Privacy: p})
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		var back Record
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if got := back.Privacy(); !reflect.DeepEqual(got, p) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, p)
		}
	}
}

// TestSummaryGuaranteeInWords: summary.json says in words what its
// cumulative figure is: a proven upper bound, approximate (S-APES, whose
// statement is flagged approximate), or none.
func TestSummaryGuaranteeInWords(t *testing.T) {
	cfg := round.DefaultConfig()
	for _, tc := range []struct {
		name string
		p    protocol.Privacy
		plan round.Plan
		want string
	}{
		{"bound", protocol.Privacy{Private: true, CumulativeEpsilon: 2}, round.Plan{}, GuaranteeBound},
		{"approximate round", protocol.Privacy{Private: true, CumulativeEpsilon: 2, Approximate: true}, round.Plan{}, GuaranteeApproximate},
		{"approximate composition", protocol.Privacy{Private: true, CumulativeEpsilon: 2, CumulativeApproximate: true}, round.Plan{}, GuaranteeApproximate},
		{"approximate plan", protocol.Privacy{Private: true, CumulativeEpsilon: 2}, round.Plan{Approximate: true}, GuaranteeApproximate},
		{"none", protocol.NonPrivate(), round.Plan{}, GuaranteeNone},
	} {
		s := NewSummary(cfg, round.Summary{Privacy: tc.p, Plan: tc.plan})
		if s.Guarantee != tc.want {
			t.Errorf("%s: guarantee %q, want %q", tc.name, s.Guarantee, tc.want)
		}
	}
}

// TestClusterAccuracyRecorded: a clustered round's cluster-assignment
// accuracy reaches metrics.jsonl and summary.json under cluster_accuracy,
// and is absent for runs without one.
func TestClusterAccuracyRecorded(t *testing.T) {
	ca := &round.ClusterAccuracy{Accuracy: 0.75, Matched: 15, Participants: 20, Relabel: []int{1, 0}}
	for _, tc := range []struct {
		name string
		ca   *round.ClusterAccuracy
	}{{"clustered", ca}, {"none", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			r := round.RoundResult{Round: 3, Privacy: protocol.NonPrivate(), ClusterAccuracy: tc.ca}
			var buf bytes.Buffer
			if err := NewJSONL(&buf).Write(FromResult(r)); err != nil {
				t.Fatal(err)
			}
			sb, err := json.Marshal(NewSummary(round.DefaultConfig(), round.Summary{Rounds: 3, ClusterAccuracy: tc.ca}))
			if err != nil {
				t.Fatal(err)
			}
			for name, b := range map[string][]byte{"metrics.jsonl": buf.Bytes(), "summary.json": sb} {
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatal(err)
				}
				got, ok := m["cluster_accuracy"]
				if tc.ca == nil {
					if ok {
						t.Errorf("%s: cluster_accuracy = %v, want absent", name, got)
					}
					continue
				}
				want := map[string]any{"accuracy": 0.75, "matched": 15.0, "participants": 20.0, "relabel": []any{1.0, 0.0}}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: cluster_accuracy = %v, want %v", name, got, want)
				}
			}
		})
	}
}
