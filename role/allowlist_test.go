package role

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/protocol"
)

// batchFields is the allow-list of what a shuffled batch may carry to the
// analyzer, type by type: every struct type of this module reachable from
// role.Batch (as the simulation and the deployment instantiate it) and from
// protocol.Shuffled, with its fields and their types. The shuffler knows
// which sender submitted what; nothing of it may reach the analyzer, so a
// new field (a sender id, an arrival index) fails TestBatchAllowList until
// it is argued for and added here by hand.
var batchFields = map[string][]string{
	// Batch: the round, the protocol's mode and dimension, the number of
	// real senders (the accountant's reporters), and the three groups.
	"role.Batch[github.com/shufflefl/shufflefl/role.Plain]": {"Round int", "Mode protocol.ShuffleMode", "Dim int", "Senders int",
		"Columns [][]role.Plain", "Reports []role.Plain", "Meta []role.Plain"},
	"role.Batch[[]uint8]": {"Round int", "Mode protocol.ShuffleMode", "Dim int", "Senders int",
		"Columns [][][]uint8", "Reports [][]uint8", "Meta [][]uint8"},
	// Plain: one value, or one whole report.
	"role.Plain": {"Value float64", "Report *protocol.Report"},
	// Report: the randomized values and their coordinates; Meta travels
	// in the batch's own group (the shuffler splits it off).
	"protocol.Report":   {"Coords []int32", "Values []float64", "Meta []float64"},
	"protocol.Shuffled": {"Mode protocol.ShuffleMode", "Dim int", "Columns [][]float64", "Reports []protocol.Report", "Meta []float64"},
}

// structFields walks the struct types of module shufflefl reachable from
// roots and returns each one's fields as "Name type".
func structFields(roots ...reflect.Type) map[string][]string {
	out := map[string][]string{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(t.Elem())
			return
		case reflect.Map:
			walk(t.Key())
			walk(t.Elem())
			return
		case reflect.Struct:
		default:
			return
		}
		if !strings.HasPrefix(t.PkgPath(), "github.com/shufflefl/shufflefl/") {
			return
		}
		if _, done := out[t.String()]; done {
			return
		}
		fields := []string{}
		out[t.String()] = fields
		for f := range t.Fields() {
			fields = append(fields, f.Name+" "+f.Type.String())
			walk(f.Type)
		}
		out[t.String()] = fields
	}
	for _, r := range roots {
		walk(r)
	}
	return out
}

// allowListViolations compares what the roots can carry with batchFields.
func allowListViolations(roots ...reflect.Type) []string {
	var bad []string
	for typ, fields := range structFields(roots...) {
		allowed, ok := batchFields[typ]
		if !ok {
			bad = append(bad, fmt.Sprintf("type %s (fields %v) is not in the allow-list", typ, fields))
			continue
		}
		for _, f := range fields {
			if !slices.Contains(allowed, f) {
				bad = append(bad, fmt.Sprintf("%s.%s is not in the allow-list", typ, f))
			}
		}
		for _, f := range allowed {
			if !slices.Contains(fields, f) {
				bad = append(bad, fmt.Sprintf("%s no longer has field %s (update the allow-list)", typ, f))
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// TestBatchAllowList: a batch (the simulation's, the deployment's and
// protocol.Shuffle's) carries exactly the allow-listed fields.
func TestBatchAllowList(t *testing.T) {
	roots := []reflect.Type{
		reflect.TypeFor[Batch[Plain]](),
		reflect.TypeFor[Batch[[]byte]](),
		reflect.TypeFor[protocol.Shuffled](),
	}
	for _, v := range allowListViolations(roots...) {
		t.Error(v)
	}
}

// TestBatchAllowListRejectsSenderID: a payload type with a sender id (a
// stand-in for role.Plain with one more field; the planted fault of a
// SenderIDs field in role.Batch fails TestBatchAllowList itself) fails the
// check.
func TestBatchAllowListRejectsSenderID(t *testing.T) {
	type Plain struct {
		Value  float64
		Report *protocol.Report
		Sender string
	}
	bad := allowListViolations(reflect.TypeFor[Plain]())
	if len(bad) != 1 || !strings.Contains(bad[0], "role.Plain.Sender string is not in the allow-list") {
		t.Fatalf("a payload with its sender: %v", bad)
	}
}
