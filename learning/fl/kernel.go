package fl

import "math"

// kernel is the kern of the dense models (logreg, mlp). It owns the scratch
// buffers of one goroutine and grows them on first use, so that a steady
// state of training does not allocate. forward keeps the non-zero inputs, the
// non-zero hidden activations and the deltas of both layers.
type kernel struct {
	m *dense
	n int // examples of the last forward pass

	// Non-zero input features of example b: nzIdx/nzVal[nzStart[b]:nzStart[b+1]].
	nzIdx   []int32
	nzVal   []float32
	nzStart []int
	// Non-zero hidden activations (after ReLU) of example b, same scheme.
	hIdx   []int32
	hVal   []float32
	hStart []int
	h      []float32 // hidden pre-activations: n·hidden
	dh     []float32 // hidden deltas ∂ℓ_b/∂(pre-activation): n·hidden
	dz     []float32 // logits, then softmax − onehot: n·classes

	// logreg with 10 classes on AVX-512 (see useDense10): the dense path
	// reads the examples' rows of x directly.
	dense bool
	x     []float32 // ex.X of the last forward pass
	rows  []int     // offsets in x of the examples of the last forward pass
	part  []float32 // 80 partial logits
	tile  []float32 // s·δ_b tiled eight times: n·80

	// MLP only.
	w2t  []float32 // W2 transposed (classes×hidden), for the hidden deltas
	iota []int32   // 0, 1, …, classes−1
	tmp  []float32 // hidden
	// The non-zero inputs of example b in feature block q are
	// nzIdx[seg[b·(blocks+1)+q] : seg[b·(blocks+1)+q+1]].
	blocks int
	seg    []int
}

// featureBlock is the number of input features (rows of W1) that the MLP
// kernels process together: every example of the batch visits the block's
// rows of W1 (featureBlock·hidden floats, 16 KiB for 128 hidden units) while
// they are in the L1 cache, instead of streaming all of W1 from L2 once per
// example.
const featureBlock = 32

func newKernel(m *dense) *kernel { return &kernel{m: m} }

func (k *kernel) chunk() int { return maxChunk }

// reserve sizes the scratch buffers for batches of n examples.
func (k *kernel) reserve(n int) {
	if len(k.nzStart) >= n+1 {
		return
	}
	m := k.m
	k.nzIdx = make([]int32, n*m.in)
	k.nzVal = make([]float32, n*m.in)
	k.nzStart = make([]int, n+1)
	k.hIdx = make([]int32, n*m.hidden)
	k.hVal = make([]float32, n*m.hidden)
	k.hStart = make([]int, n+1)
	k.h = make([]float32, n*m.hidden)
	k.dh = make([]float32, n*m.hidden)
	k.dz = make([]float32, n*m.out)
	if m.hidden == 0 && m.out == 10 {
		k.rows = make([]int, n)
		k.part = make([]float32, 80)
		k.tile = make([]float32, n*80)
	}
	if m.hidden > 0 {
		k.w2t = make([]float32, m.out*m.hidden)
		k.iota = make([]int32, m.out)
		for c := range k.iota {
			k.iota[c] = int32(c)
		}
		k.tmp = make([]float32, m.hidden)
		k.blocks = (m.in + featureBlock - 1) / featureBlock
		k.seg = make([]int, n*(k.blocks+1))
	}
}

// forward evaluates the model with parameters w on the examples batch of ex
// and returns the sum (not the mean) of their losses and how many are
// classified correctly. If back is set it also computes the deltas that
// accumulate needs. Shapes are the caller's responsibility.
func (k *kernel) forward(w []float32, ex Examples, batch []int, back bool) (loss float64, correct int) {
	m := k.m
	k.reserve(len(batch))
	k.n = len(batch)
	k.dense = m.hidden == 0 && useDense10(m.in, m.out)
	switch {
	case k.dense:
		return k.forwardDense10(w, ex, batch, back)
	case m.hidden == 0:
		k.sparsifyBatch(ex, batch)
		return k.forwardLinear(w, ex, batch, back)
	default:
		k.sparsifyBatch(ex, batch)
		return k.forwardMLP(w, ex, batch, back)
	}
}

// forwardDense10 is forward for a linear model with 10 classes on dense
// rows (dense10Fwd).
func (k *kernel) forwardDense10(w []float32, ex Examples, batch []int, back bool) (loss float64, correct int) {
	m := k.m
	in, out := m.in, m.out
	W, bias := w[m.w1:m.b1], w[m.b1:m.b1+out]
	k.x = ex.X
	part := k.part
	for b, i := range batch {
		k.rows[b] = i * in
		dense10Fwd(part, W, ex.X[i*in:(i+1)*in])
		z := k.dz[b*out : (b+1)*out]
		for c := range z {
			v := bias[c]
			for r := range 8 {
				v += part[10*r+c]
			}
			z[c] = v
		}
		l, ok := softmaxDelta(z, int(ex.Y[i]), back)
		loss += l
		if ok {
			correct++
		}
	}
	return loss, correct
}

// sparsifyBatch stores the non-zero features of the batch's rows in nzIdx
// and nzVal, row b's at nzStart[b]:nzStart[b+1].
func (k *kernel) sparsifyBatch(ex Examples, batch []int) {
	in := k.m.in
	nzIdx, nzVal := k.nzIdx, k.nzVal
	nnz := 0
	for b, i := range batch {
		nnz += sparsify(nzIdx[nnz:], nzVal[nnz:], ex.X[i*in:(i+1)*in], false)
		k.nzStart[b+1] = nnz
	}
	k.nzStart[0] = 0
}

// forwardLinear is forward for a linear model on the sparsified batch.
func (k *kernel) forwardLinear(w []float32, ex Examples, batch []int, back bool) (loss float64, correct int) {
	m := k.m
	out := m.out
	nzIdx, nzVal := k.nzIdx, k.nzVal
	W, bias := w[m.w1:m.b1], w[m.b1:m.b1+out]
	for b, i := range batch {
		s, e := k.nzStart[b], k.nzStart[b+1]
		z := k.dz[b*out : (b+1)*out]
		copy(z, bias)
		gatherAxpy(z, W, out, nzIdx[s:e], nzVal[s:e])
		l, ok := softmaxDelta(z, int(ex.Y[i]), back)
		loss += l
		if ok {
			correct++
		}
	}
	return loss, correct
}

// forwardMLP is forward for a model with a hidden ReLU layer on the
// sparsified batch.
func (k *kernel) forwardMLP(w []float32, ex Examples, batch []int, back bool) (loss float64, correct int) {
	m := k.m
	hid, out := m.hidden, m.out
	nzIdx, nzVal := k.nzIdx, k.nzVal
	W1, b1 := w[m.w1:m.b1], w[m.b1:m.w2]
	W2, b2 := w[m.w2:m.b2], w[m.b2:m.b2+out]
	if back {
		for j := range hid {
			for c := range out {
				k.w2t[c*hid+j] = W2[j*out+c]
			}
		}
	}
	// Hidden pre-activations h_b = b1 + Σ_f x_bf·W1[f,:], by feature block.
	k.segment()
	nb := k.blocks
	for b := range batch {
		copy(k.h[b*hid:(b+1)*hid], b1)
	}
	for q := range nb {
		for b := range batch {
			seg := k.seg[b*(nb+1) : (b+1)*(nb+1)]
			if s, e := seg[q], seg[q+1]; s < e {
				gatherAxpy(k.h[b*hid:(b+1)*hid], W1, hid, nzIdx[s:e], nzVal[s:e])
			}
		}
	}
	hIdx, hVal := k.hIdx, k.hVal
	nh := 0
	k.hStart[0] = 0
	for b, i := range batch {
		h := k.h[b*hid : (b+1)*hid]
		// ReLU: keep the positive pre-activations as a sparse vector.
		hs := nh
		nh += sparsify(hIdx[nh:], hVal[nh:], h, true)
		k.hStart[b+1] = nh
		z := k.dz[b*out : (b+1)*out]
		copy(z, b2)
		gatherAxpy(z, W2, out, hIdx[hs:nh], hVal[hs:nh])
		l, ok := softmaxDelta(z, int(ex.Y[i]), back)
		loss += l
		if ok {
			correct++
		}
		if !back {
			continue
		}
		// dh_j = [h_j > 0]·Σ_c W2[j,c]·dz_c.
		t := k.tmp
		clear(t)
		gatherAxpy(t, k.w2t, hid, k.iota, z)
		dh := k.dh[b*hid : (b+1)*hid]
		clear(dh)
		for _, j := range hIdx[hs:nh] {
			dh[j] = t[j]
		}
	}
	return loss, correct
}

// accumulate adds s·Σ_b ∇ℓ_b, the sum of the per-example gradients of the last
// forward pass (which must have been run with back set), to target.
func (k *kernel) accumulate(target []float32, s float32) {
	m := k.m
	out, hid := m.out, m.hidden
	if k.dense {
		W, bias := target[m.w1:m.b1], target[m.b1:m.b1+out]
		for b := range k.n {
			dz := k.dz[b*out : (b+1)*out]
			t := k.tile[b*80 : (b+1)*80]
			for e := range t {
				t[e] = s * dz[e%10]
			}
			for c, d := range dz {
				bias[c] += s * d
			}
		}
		dense10Back(W, k.x, k.rows[:k.n], k.tile[:k.n*80])
		return
	}
	if hid == 0 {
		W, bias := target[m.w1:m.b1], target[m.b1:m.b1+out]
		for b := range k.n {
			dz := k.dz[b*out : (b+1)*out]
			for c, d := range dz {
				bias[c] += s * d
			}
			st, e := k.nzStart[b], k.nzStart[b+1]
			scatterAxpy(W, out, k.nzIdx[st:e], k.nzVal[st:e], s, dz)
		}
		return
	}
	W1, b1 := target[m.w1:m.b1], target[m.b1:m.w2]
	W2, b2 := target[m.w2:m.b2], target[m.b2:m.b2+out]
	for b := range k.n {
		dz := k.dz[b*out : (b+1)*out]
		for c, d := range dz {
			b2[c] += s * d
		}
		hs, he := k.hStart[b], k.hStart[b+1]
		scatterAxpy(W2, out, k.hIdx[hs:he], k.hVal[hs:he], s, dz)
		dh := k.dh[b*hid : (b+1)*hid]
		for _, j := range k.hIdx[hs:he] {
			b1[j] += s * dh[j]
		}
	}
	// W1[f,:] += s·x_bf·dh_b, by feature block (see featureBlock).
	nb := k.blocks
	for q := range nb {
		for b := range k.n {
			seg := k.seg[b*(nb+1) : (b+1)*(nb+1)]
			if st, e := seg[q], seg[q+1]; st < e {
				scatterAxpy(W1, hid, k.nzIdx[st:e], k.nzVal[st:e], s, k.dh[b*hid:(b+1)*hid])
			}
		}
	}
}

// segment splits the non-zero inputs of each example of the last forward
// pass into feature blocks (seg). The indices are sorted, so the end of block
// q is one past its last entry: every entry stores its successor's position
// into its block's end (branch-free, the last store wins), and a running
// maximum fills the empty blocks.
func (k *kernel) segment() {
	nb := k.blocks
	for b := range k.n {
		seg := k.seg[b*(nb+1) : (b+1)*(nb+1)]
		s, e := k.nzStart[b], k.nzStart[b+1]
		for q := range seg {
			seg[q] = s
		}
		for j, f := range k.nzIdx[s:e] {
			seg[uint32(f)/featureBlock+1] = s + j + 1
		}
		for q := 1; q <= nb; q++ {
			seg[q] = max(seg[q], seg[q-1])
		}
	}
}

// softmaxDelta returns the cross-entropy −log softmax(z)_y and whether the
// arg max of z (the lowest index among ties) is y. If back is set it
// overwrites z with softmax(z) − onehot(y), the gradient of the loss with
// respect to z. The normalisation runs in float64; a NaN or infinite logit
// gives a NaN or infinite loss.
func softmaxDelta(z []float32, y int, back bool) (float64, bool) {
	zmax, arg := z[0], 0
	for c, v := range z[1:] {
		if v > zmax {
			zmax, arg = v, c+1
		}
	}
	mx := float64(zmax)
	var sum float64
	if !back {
		for _, v := range z {
			sum += math.Exp(float64(v) - mx)
		}
		return math.Log(sum) - (float64(z[y]) - mx), arg == y
	}
	// Keep exp(z_c − max) in z (as float32) to compute each exponential once.
	zy := float64(z[y])
	for c, v := range z {
		e := math.Exp(float64(v) - mx)
		sum += e
		z[c] = float32(e)
	}
	loss := math.Log(sum) - (zy - mx)
	inv := 1 / sum
	for c, e := range z {
		z[c] = float32(float64(e) * inv)
	}
	z[y]--
	return loss, arg == y
}
