package shard

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
)

// tag is a test payload: the sender index of a real value, or a dummy's
// value (a negative tag minus the value, so that dummies stay apart).
type tag float64

const dummyBase tag = -1e9

func newProto(t *testing.T, name string, dim, n int, extra map[string]float64) protocol.Protocol {
	t.Helper()
	p, err := protocol.New(name, protocol.Params{Clip: 0.1, Delta: 1e-6, Epsilon: 10, Rounds: 1, SampleRate: 1, Extra: extra,
		Layers: []int{dim}, Population: n})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// submissions returns n senders' messages: sender i sends coordinate j when
// keep(i, j), with the payload tag(i), and one metadata value when meta.
func submissions(n, dim int, keep func(i, j int) bool, meta bool) [][]role.Message[tag] {
	out := make([][]role.Message[tag], n)
	for i := range out {
		for j := range dim {
			if keep(i, j) {
				out[i] = append(out[i], role.Message[tag]{Label: int32(j), Payload: tag(i)})
			}
		}
		if meta {
			out[i] = append(out[i], role.Message[tag]{Label: role.MetaLabel, Payload: tag(i)})
		}
	}
	return out
}

func dummyTag(_ int, v float64) (tag, error) { return dummyBase - tag(v), nil }

// closeBoth runs the same submissions through one role.Shuffler and a
// Coord over ranges, with the given generators.
func closeBoth(t *testing.T, p protocol.Padder, s protocol.Shape, ranges []Range, subs [][]role.Message[tag], pad, perm *rand.Rand, pads, perms []*rand.Rand) (one, sharded *role.Batch[tag]) {
	t.Helper()
	sh, err := role.NewShuffler[tag](p, s, 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCoord[tag](p, s, 1, ranges)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range subs {
		a1, err1 := sh.Accept(fmt.Sprint(i), m)
		a2, err2 := c.Accept(fmt.Sprint(i), m)
		if err1 != nil || err2 != nil || a1 != a2 {
			t.Fatalf("sender %d: one shuffler %v %v, sharded %v %v", i, a1, err1, a2, err2)
		}
	}
	if one, err = sh.Close(pad, perm, dummyTag); err != nil {
		t.Fatal(err)
	}
	if sharded, err = c.Close(pads, perms, dummyTag); err != nil {
		t.Fatal(err)
	}
	return one, sharded
}

// TestCoordOneShardIsTheShuffler: one shard with the shuffler's generators
// releases the very batch role.Shuffler does, padding included.
func TestCoordOneShardIsTheShuffler(t *testing.T) {
	const n, dim = 6, 5
	for _, c := range []struct {
		name  string
		extra map[string]float64
		meta  bool
	}{{"ss-double", map[string]float64{"k": 2}, false}, {"ss-simple", nil, false}, {"apes", nil, true}} {
		p := newProto(t, c.name, dim, n, c.extra)
		s := protocol.Shape{Round: 1, Dim: dim, Population: n}
		keep := func(i, j int) bool { return c.name != "ss-double" || (j+dim-i%dim)%dim < 2 } // k = 2
		one, sharded := closeBoth(t, p, s, []Range{{0, dim}}, submissions(n, dim, keep, c.meta),
			rng.Stream(1, 1), rng.Stream(1, 2), []*rand.Rand{rng.Stream(1, 1)}, []*rand.Rand{rng.Stream(1, 2)})
		if !reflect.DeepEqual(one, sharded) {
			t.Errorf("%s: one shard differs from the shuffler:\n%v\n%v", c.name, one, sharded)
		}
	}
}

// TestCoordSameView: with 2 and 3 shards (own generators), every column
// holds the same real values and the same number of dummies as one
// shuffler's, every dummy is in its own column's range of values, and the
// metadata is the same multiset.
func TestCoordSameView(t *testing.T) {
	const n, dim = 7, 8
	p := newProto(t, "ss-double", dim, n, map[string]float64{"k": 3})
	s := protocol.Shape{Round: 1, Dim: dim, Population: n}
	keep := func(i, j int) bool { return (i*3+j)%dim < 3 }
	for _, shards := range []int{2, 3} {
		ranges, err := Ranges(dim, shards)
		if err != nil {
			t.Fatal(err)
		}
		one, sharded := closeBoth(t, p, s, ranges, submissions(n, dim, keep, false), rng.Stream(2, 1), rng.Stream(2, 2),
			gens(rng.Stream(3, uint64(shards)), shards), gens(rng.Stream(4, uint64(shards)), shards))
		if sharded.Senders != one.Senders || sharded.Dim != one.Dim || sharded.Mode != one.Mode {
			t.Errorf("%d shards: header %d/%d/%v, one shuffler %d/%d/%v", shards, sharded.Senders, sharded.Dim, sharded.Mode, one.Senders, one.Dim, one.Mode)
		}
		dummies := 0
		for j := range dim {
			r1, d1 := split(one.Columns[j])
			dummies += len(d1)
			r2, d2 := split(sharded.Columns[j])
			if fmt.Sprint(r1) != fmt.Sprint(r2) || len(d1) != len(d2) {
				t.Errorf("%d shards, column %d: reals %v and %d dummies; one shuffler %v and %d", shards, j, r2, len(d2), r1, len(d1))
			}
		}
		if dummies == 0 {
			t.Errorf("%d shards: no dummies: the test does not exercise the padding", shards)
		}
	}
}

// split returns a column's real tags, sorted, and its dummy values.
func split(col []tag) (reals []int, dummies []float64) {
	for _, v := range col {
		if v <= dummyBase {
			dummies = append(dummies, float64(dummyBase-v))
		} else {
			reals = append(reals, int(v))
		}
	}
	for i := 1; i < len(reals); i++ {
		for k := i; k > 0 && reals[k] < reals[k-1]; k-- {
			reals[k], reals[k-1] = reals[k-1], reals[k]
		}
	}
	return reals, dummies
}

// TestCoordOrderUniform: with 3 shards, the order of each column (the 4!
// arrival orders of 4 senders, no padding) is uniform, and the order of a
// column of shard 0 is independent of one of shard 2 (the joint position
// of sender 0); a shard that left its columns in arrival order would fail.
func TestCoordOrderUniform(t *testing.T) {
	const n, dim, trials = 4, 3, twoStageTrials
	p := newProto(t, "ss-simple", dim, n, nil)
	s := protocol.Shape{Round: 1, Dim: dim, Population: n}
	ranges, _ := Ranges(dim, 3)
	subs := submissions(n, dim, func(int, int) bool { return true }, false)
	orders := make([][]int, dim)
	for j := range orders {
		orders[j] = make([]int, factorial(n))
	}
	joint := make([]int, n*n)
	r := rng.Stream(5, 0x5a4d)
	for range trials {
		c, err := NewCoord[tag](p, s, 1, ranges)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range subs {
			if _, err := c.Accept(fmt.Sprint(i), m); err != nil {
				t.Fatal(err)
			}
		}
		b, err := c.Close(gens(r, 3), gens(r, 3), dummyTag)
		if err != nil {
			t.Fatal(err)
		}
		pos0 := make([]int, dim)
		for j, col := range b.Columns {
			perm := make([]int, n)
			for k, v := range col {
				perm[k] = int(v)
				if v == 0 {
					pos0[j] = k
				}
			}
			orders[j][rank(perm)]++
		}
		joint[pos0[0]*n+pos0[2]]++
	}
	for j, o := range orders {
		if stat, crit := chiSquare(o); stat > crit {
			t.Errorf("column %d: chi-square %.1f > %.1f", j, stat, crit)
		}
	}
	if stat, crit := chiSquare(joint); stat > crit {
		t.Errorf("columns 0 and 2 (shards 0 and 2): chi-square %.1f > %.1f: not independent", stat, crit)
	}
}

func TestCoordRefusals(t *testing.T) {
	const n, dim = 3, 4
	p := newProto(t, "ss-simple", dim, n, nil)
	s := protocol.Shape{Round: 1, Dim: dim, Population: n}
	if _, err := NewCoord[tag](p, s, 1, []Range{{0, 2}, {3, 4}}); err == nil {
		t.Error("a gap in the ranges was accepted")
	}
	if _, err := NewCoord[tag](p, s, 1, []Range{{0, 3}}); err == nil {
		t.Error("ranges short of the dimension were accepted")
	}
	if _, err := NewCoord[tag](newProto(t, "e-apes", dim, n, nil), s, 1, []Range{{0, dim}}); err == nil {
		t.Error("a whole-report protocol was accepted")
	}
	ranges, _ := Ranges(dim, 2)
	c, err := NewCoord[tag](p, s, 2, ranges)
	if err != nil {
		t.Fatal(err)
	}
	subs := submissions(n, dim, func(int, int) bool { return true }, false)
	if _, err := c.Accept("a", subs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Accept("a", subs[1]); !errors.Is(err, role.ErrDuplicateSender) {
		t.Errorf("second submission: %v", err)
	}
	bad := []role.Message[tag]{{Label: dim, Payload: 1}}
	if _, err := c.Accept("b", bad); !errors.Is(err, role.ErrBadMessage) {
		t.Errorf("label out of range: %v", err)
	}
	if _, err := c.Close(gens(rng.Stream(1), 1), gens(rng.Stream(1), 2), dummyTag); err == nil {
		t.Error("one generator for two shards was accepted")
	}
	if _, err := c.Close(gens(rng.Stream(1), 2), gens(rng.Stream(1), 2), dummyTag); !errors.Is(err, role.ErrTooFew) {
		t.Errorf("one of two senders: %v", err)
	}
	if _, err := c.Close(gens(rng.Stream(1), 2), gens(rng.Stream(1), 2), dummyTag); !errors.Is(err, role.ErrClosed) {
		t.Errorf("second close: %v", err)
	}
}
