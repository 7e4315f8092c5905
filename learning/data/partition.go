package data

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"

	"github.com/shufflefl/shufflefl/checks"
)

// PartitionIID splits the indices 0..n-1 of a training set among clients,
// disjoint and drawn uniformly without replacement: FLAME's setting of n
// users holding m samples each (Liu et al., AAAI 2021, Section 5). Client c
// receives perClient indices; perClient = 0 splits all n indices as equally
// as possible (sizes differ by at most one, the first n mod clients clients
// getting one more). Asking for more than n indices in total is an error
// ("more clients than samples"), as are clients < 1 and perClient < 0; the
// errors wrap checks.ErrInvalid.
func PartitionIID(r *rand.Rand, n, clients, perClient int) ([][]int, error) {
	sizes, err := shardSizes(n, clients, perClient)
	if err != nil {
		return nil, err
	}
	return cut(r.Perm(n), sizes), nil
}

// PartitionContiguous is PartitionIID without the shuffle: client c receives
// the next block of consecutive indices. It recovers the users of a set
// whose rows are already grouped by user, such as synthetic-clusters.
func PartitionContiguous(n, clients, perClient int) ([][]int, error) {
	sizes, err := shardSizes(n, clients, perClient)
	if err != nil {
		return nil, err
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return cut(idx, sizes), nil
}

func shardSizes(n, clients, perClient int) ([]int, error) {
	if err := checks.IntAtLeast("clients", clients, 1); err != nil {
		return nil, err
	}
	if err := checks.IntAtLeast("samples per client", perClient, 0); err != nil {
		return nil, err
	}
	if err := checks.IntAtLeast("training set size", n, 0); err != nil {
		return nil, err
	}
	if perClient == 0 {
		if clients > n {
			return nil, checks.Invalidf("more clients than samples: %d clients but the training set has %d samples", clients, n)
		}
		sizes := make([]int, clients)
		for c := range sizes {
			sizes[c] = n / clients
			if c < n%clients {
				sizes[c]++
			}
		}
		return sizes, nil
	}
	if clients > n/perClient { // clients*perClient > n, without overflow
		return nil, checks.Invalidf("more clients than samples: %d clients × %d samples each need %s samples, but the training set has %d",
			clients, perClient, product(clients, perClient), n)
	}
	sizes := make([]int, clients)
	for c := range sizes {
		sizes[c] = perClient
	}
	return sizes, nil
}

// product formats a*b exactly, even when it overflows int.
func product(a, b int) string {
	return new(big.Int).Mul(big.NewInt(int64(a)), big.NewInt(int64(b))).String()
}

// cut splits idx into consecutive parts of the given sizes (which sum to at
// most len(idx)). Each part has its own backing array.
func cut(idx []int, sizes []int) [][]int {
	parts := make([][]int, len(sizes))
	at := 0
	for c, s := range sizes {
		parts[c] = append([]int(nil), idx[at:at+s]...)
		at += s
	}
	return parts
}

// PartitionDirichlet splits a training set with labels in [0, classes)
// among clients with Dirichlet label skew, following Hsu, Qi and Brown
// (2019, "Measuring the effects of non-identical data distribution",
// Section 3) in its balanced client-wise form (as in FedLab): each client c
// draws class proportions q_c ~ Dir(alpha, ..., alpha) and is dealt
// n/clients examples (sizes differ by at most one, as in PartitionIID with
// perClient = 0), each of a class drawn from q_c among the classes that still
// have unassigned examples. Clients are served one example at a time in
// random order, so no client is favoured when a class runs out. Small alpha
// gives each client few classes; alpha → ∞ approaches an IID split. (Hsu et
// al. write Dir(α'·p) with p the class prior: for balanced classes that is
// this procedure with α' = classes·alpha.)
//
// Every example is assigned to exactly one client and every client receives
// at least floor(n/clients) >= minSize >= 1 examples; asking for more is a
// "more clients than samples" error. Each client's indices come in the order
// dealt. Errors (alpha not in (0, ∞), minSize < 1, a label >= classes, ...)
// wrap checks.ErrInvalid.
func PartitionDirichlet(r *rand.Rand, labels []uint8, classes, clients int, alpha float64, minSize int) ([][]int, error) {
	if err := checks.Positive("alpha", alpha); err != nil {
		return nil, err
	}
	if err := checks.IntInRange("classes", classes, 1, 256); err != nil {
		return nil, err
	}
	if err := checks.IntAtLeast("clients", clients, 1); err != nil {
		return nil, err
	}
	if err := checks.IntAtLeast("minimum client size", minSize, 1); err != nil {
		return nil, err
	}
	n := len(labels)
	if clients > n/minSize { // clients*minSize > n, without overflow
		return nil, checks.Invalidf("more clients than samples: %d clients × at least %d samples each need %s samples, but the training set has %d",
			clients, minSize, product(clients, minSize), n)
	}
	byClass := make([][]int, classes)
	for i, y := range labels {
		if int(y) >= classes {
			return nil, checks.Invalidf("label %d of example %d is not below classes = %d", y, i, classes)
		}
		byClass[y] = append(byClass[y], i)
	}
	for _, idx := range byClass {
		r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	}
	sizes, err := shardSizes(n, clients, 0)
	if err != nil {
		return nil, err
	}
	q := make([]float64, clients*classes)
	for c := range clients {
		dirichlet(r, alpha, q[c*classes:(c+1)*classes])
	}
	parts := make([][]int, clients)
	active := make([]int, clients) // clients still owed examples
	for c := range active {
		active[c] = c
		parts[c] = make([]int, 0, sizes[c])
	}
	for len(active) > 0 {
		a := r.IntN(len(active))
		c := active[a]
		k := drawClass(r, q[c*classes:(c+1)*classes], byClass)
		last := len(byClass[k]) - 1
		parts[c] = append(parts[c], byClass[k][last])
		byClass[k] = byClass[k][:last]
		if len(parts[c]) == sizes[c] {
			active[a] = active[len(active)-1]
			active = active[:len(active)-1]
		}
	}
	return parts, nil
}

// drawClass draws a class from the proportions q restricted to the classes
// with examples left. If q puts no mass on any of them (possible for tiny
// alpha, whose proportions underflow to 0), it draws a class in proportion
// to the examples left. The caller guarantees some class has examples left.
func drawClass(r *rand.Rand, q []float64, left [][]int) int {
	total := 0.0
	for k, w := range q {
		if len(left[k]) > 0 {
			total += w
		}
	}
	if total > 0 {
		u := r.Float64() * total
		last := -1
		for k, w := range q {
			if len(left[k]) == 0 || w == 0 {
				continue
			}
			last = k
			if u < w {
				return k
			}
			u -= w
		}
		return last // rounding: u landed just past the end
	}
	remaining := 0
	for _, l := range left {
		remaining += len(l)
	}
	u := r.IntN(remaining)
	for k, l := range left {
		if u < len(l) {
			return k
		}
		u -= len(l)
	}
	panic("unreachable: no examples left")
}

// dirichlet fills p with a draw from Dir(alpha, ..., alpha). It works with
// log-gamma variates so that tiny alpha, whose gamma variates underflow to
// 0, still yields a valid distribution.
func dirichlet(r *rand.Rand, alpha float64, p []float64) {
	hi := math.Inf(-1)
	for i := range p {
		p[i] = logGamma(r, alpha)
		hi = max(hi, p[i])
	}
	sum := 0.0
	for i := range p {
		p[i] = math.Exp(p[i] - hi)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
}

// logGamma returns the logarithm of a Gamma(shape, 1) variate, by
// Marsaglia and Tsang (2000) for shape >= 1 and the boost
// G(a) = G(a+1)·U^(1/a) for shape < 1.
func logGamma(r *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := 1 - r.Float64() // in (0, 1]
		return logGamma(r, shape+1) + math.Log(u)/shape
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := 1 - r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return math.Log(d * v)
		}
	}
}

// LabelSkew measures the label skew of a partition: the mean, over
// non-empty clients, of the total-variation distance between a client's
// label distribution and that of the whole set: 0 when every client
// mirrors the whole set, 1 − 1/classes when the classes are balanced and
// every client holds a single class. Indices must be valid for labels, and
// labels below classes.
func LabelSkew(labels []uint8, classes int, parts [][]int) float64 {
	global := make([]float64, classes)
	for _, y := range labels {
		global[y]++
	}
	for k := range global {
		global[k] /= float64(len(labels))
	}
	local := make([]float64, classes)
	total, clients := 0.0, 0
	for _, part := range parts {
		if len(part) == 0 {
			continue
		}
		clear(local)
		for _, i := range part {
			local[labels[i]]++
		}
		tv := 0.0
		for k := range local {
			tv += math.Abs(local[k]/float64(len(part)) - global[k])
		}
		total += tv / 2
		clients++
	}
	if clients == 0 {
		return 0
	}
	return total / float64(clients)
}

// SampleShard draws one client's shard for a sampled partition: perClient
// distinct indices of a training set of n examples, uniformly without
// replacement (Floyd's algorithm, in the order drawn), from r. Shards of
// different clients are drawn independently and may overlap: the
// partition for populations larger than the data, where each client
// holds a random sample of it (cross-device simulation). Memory and time
// are O(perClient), whatever n.
func SampleShard(r *rand.Rand, n, perClient int) ([]int, error) {
	return SampleShardInto(r, n, perClient, nil)
}

// SampleShardInto is SampleShard drawing into buf's storage when it has
// room (buf's contents are discarded): a worker that trains client after
// client draws every shard into one buffer.
func SampleShardInto(r *rand.Rand, n, perClient int, buf []int) ([]int, error) {
	if err := checks.IntInRange("samples per client", perClient, 1, n); err != nil {
		return nil, err
	}
	out := buf[:0]
	if cap(out) < perClient {
		out = make([]int, 0, perClient)
	}
	var seen map[int]struct{} // for large shards; small ones scan out
	if perClient > 64 {
		seen = make(map[int]struct{}, perClient)
	}
	drawn := func(t int) bool {
		if seen != nil {
			_, ok := seen[t]
			return ok
		}
		return slices.Contains(out, t)
	}
	for j := n - perClient; j < n; j++ {
		t := r.IntN(j + 1)
		if drawn(t) {
			t = j
		}
		if seen != nil {
			seen[t] = struct{}{}
		}
		out = append(out, t)
	}
	return out, nil
}
