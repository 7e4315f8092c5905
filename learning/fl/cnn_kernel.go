package fl

// cnnChunk is the largest minibatch the cnn kernel trains on at once; larger
// minibatches are summed chunk by chunk (see Trainer). It bounds the scratch
// memory kept for the backward pass (about 130 KB per example on 28×28
// images: pooled activations, their window positions and deltas, twice)
// and the width of the transposed deltas (at most four vectors).
const cnnChunk = 64

// cnnKernel is the float32 kernel of the cnn. Per example, it runs the two
// convolutions and the pool with the tiles of gemm.go and keeps only the
// pooled activations and the positions of their maxima; the fully connected
// layers then run on the whole minibatch (one pass over fc1's weights for
// all examples). The backward pass of conv2 exploits the pool: at most one
// position in four of a window receives a gradient, so the weight gradient
// and the input gradient of conv2 are sparse sums (gatherPatch) over the
// non-zero deltas instead of dense products. conv1's output is recomputed in
// the backward pass rather than kept.
//
// forward with back set computes every delta and the gradients of the
// convolutions (into private buffers), since those need per-example
// activations that are not kept; accumulate adds them and the gradients of
// the fully connected layers (from the kept pooled activations and deltas)
// to the target.
type cnnKernel struct {
	m   *cnn
	n   int // examples of the last forward pass
	cap int // examples the forward buffers hold
	// examples the backward buffers hold
	backCap int
	npad    int // n rounded up to a multiple of 16

	x    []float32 // ex.X of the last forward pass
	rows []int     // offsets in x of its examples

	a1 []float32 // conv1 output of one example: c1²·32
	a2 []float32 // two rows of conv2 output: 2·c2·64
	pl []float32 // pooled activations: n rows of flat values, pls apart
	// pls is flat plus one cache line, so that the rows of pl, which the fc1
	// tiles read together, do not all fall into one set of the L1 cache
	// (flat is a multiple of 4 KB on 28×28 images).
	pls int
	arg []uint8   // position of each pooled maximum in its window (0..3)
	h   []float32 // fc1 output after ReLU: n·128
	dz  []float32 // logits, then softmax − onehot: n·classes
	dh  []float32 // fc1 deltas: n·128
	sdh []float32 // s·dh, for accumulate
	dhT []float32 // dh transposed: 128·npad
	dpT []float32 // deltas of the pooled activations, transposed: flat·npad
	dp  []float32 // the same, one example after the other: n·flat

	w2t []float32 // conv2 weights transposed: [co][ky][kx][ci], 64·288
	da1 []float32 // deltas of conv1's output (then of its pre-activation)
	// Non-zero deltas of conv2's output by channel: row indices into a1 and
	// values, chN[c] of them for channel c (at most pool² each).
	chIdx []int32
	chVal []float32
	chN   [CNNConv2]int
	// Non-zero deltas of the four positions of one pool window: channels
	// and values (see scanCell).
	wIdx [4][winCap]int32
	wVal [4][winCap]float32

	// Gradients of the convolutions, summed over the examples of the last
	// forward pass: conv1 weights and bias, conv2 weights (transposed like
	// w2t) and bias.
	g1, gb1, g2t, gb2 []float32
}

func newCNNKernel(m *cnn) *cnnKernel {
	const C1, C2 = CNNConv1, CNNConv2
	return &cnnKernel{
		m:     m,
		pls:   m.flat + 16,
		a1:    make([]float32, m.c1*m.c1*C1),
		a2:    make([]float32, 2*m.c2*C2),
		w2t:   make([]float32, C2*9*C1),
		da1:   make([]float32, m.c1*m.c1*C1),
		chIdx: make([]int32, C2*m.pool*m.pool),
		chVal: make([]float32, C2*m.pool*m.pool),
		g1:    make([]float32, 9*C1),
		gb1:   make([]float32, C1),
		g2t:   make([]float32, C2*9*C1),
		gb2:   make([]float32, C2),
	}
}

func (k *cnnKernel) chunk() int { return cnnChunk }

// reserve sizes the per-example buffers for n examples, and those of the
// backward pass too if back is set (evaluation does not need them).
func (k *cnnKernel) reserve(n int, back bool) {
	m := k.m
	if n > k.cap {
		k.cap = n
		k.rows = make([]int, n)
		k.pl = make([]float32, n*k.pls)
		k.arg = make([]uint8, n*m.flat)
		k.h = make([]float32, n*CNNFC)
		k.dz = make([]float32, n*m.classes)
	}
	if back && n > k.backCap {
		k.backCap = n
		np := (n + 15) &^ 15
		k.dh = make([]float32, n*CNNFC)
		k.sdh = make([]float32, n*CNNFC)
		k.dhT = make([]float32, CNNFC*np)
		k.dpT = make([]float32, m.flat*np)
		k.dp = make([]float32, n*m.flat)
	}
}

// conv1 computes the first convolution and its ReLU for the image at offset
// xo of k.x into k.a1.
func (k *cnnKernel) conv1(w []float32, xo int) {
	m := k.m
	const C1 = CNNConv1
	W, b := w[m.cw1:m.cb1], w[m.cb1:m.cw2]
	t, base, extra := tiles(m.c1, maxTileRows[2])
	for oy := range m.c1 {
		ox := 0
		for i := range t {
			h := base
			if i < extra {
				h++
			}
			convTile(k.a1[(oy*m.c1+ox)*C1:], k.x[xo+oy*m.side+ox:], W, b, h, 2, 3, 3, m.side, 1, C1, C1, tileBias|tileReLU)
			ox += h
		}
	}
}

// conv2Pool computes the second convolution, its ReLU and the pool of k.a1
// into the pooled activations pl and window positions arg of one example.
func (k *cnnKernel) conv2Pool(w []float32, pl []float32, arg []uint8) {
	m := k.m
	const C1, C2 = CNNConv1, CNNConv2
	W, b := w[m.cw2:m.cb2], w[m.cb2:m.fw1]
	t, base, extra := tiles(m.c2, maxTileRows[4])
	for pi := range m.pool {
		for r := range 2 {
			oy := 2*pi + r
			ox := 0
			for i := range t {
				h := base
				if i < extra {
					h++
				}
				convTile(k.a2[(r*m.c2+ox)*C2:], k.a1[(oy*m.c1+ox)*C1:], W, b, h, 4, 3, 3*C1, m.c1*C1, C1, C2, C2, tileBias|tileReLU)
				ox += h
			}
		}
		pool2(pl[pi*m.pool*C2:(pi+1)*m.pool*C2], arg[pi*m.pool*C2:(pi+1)*m.pool*C2], k.a2[:m.c2*C2], k.a2[m.c2*C2:])
	}
}

// pool2Go max-pools two rows r0, r1 of channel-last activations (64
// channels) into one row of len(dst)/64 pooled pixels, recording in arg which
// of the window's positions (0: r0 left, 1: r0 right, 2: r1 left, 3: r1 right)
// holds the first maximum. The reference for pool2AVX512.
func pool2Go(dst []float32, arg []uint8, r0, r1 []float32) {
	const C = CNNConv2
	for pj := range len(dst) / C {
		d := dst[pj*C : (pj+1)*C]
		g := arg[pj*C : (pj+1)*C]
		a, b := r0[2*pj*C:(2*pj+1)*C], r0[(2*pj+1)*C:(2*pj+2)*C]
		c, e := r1[2*pj*C:(2*pj+1)*C], r1[(2*pj+1)*C:(2*pj+2)*C]
		for j := range C {
			v, p := a[j], uint8(0)
			if b[j] > v {
				v, p = b[j], 1
			}
			if c[j] > v {
				v, p = c[j], 2
			}
			if e[j] > v {
				v, p = e[j], 3
			}
			d[j], g[j] = v, p
		}
	}
}

func (k *cnnKernel) forward(w []float32, ex Examples, batch []int, back bool) (loss float64, correct int) {
	m := k.m
	n := len(batch)
	k.reserve(n, back)
	k.n = n
	k.npad = (n + 15) &^ 15
	k.x = ex.X
	flat, out := m.flat, m.classes
	for b, i := range batch {
		k.rows[b] = i * ex.Features
		k.conv1(w, k.rows[b])
		k.conv2Pool(w, k.pl[b*k.pls:b*k.pls+flat], k.arg[b*flat:(b+1)*flat])
	}
	k.fc1(w)

	W2, b2 := w[m.fw2:m.fb2], w[m.fb2:m.fb2+out]
	for b, i := range batch {
		z := k.dz[b*out : (b+1)*out]
		copy(z, b2)
		for j, hj := range k.h[b*CNNFC : (b+1)*CNNFC] {
			if hj != 0 {
				axpyGo(z, hj, W2[j*out:(j+1)*out])
			}
		}
		l, ok := softmaxDelta(z, int(ex.Y[i]), back)
		loss += l
		if ok {
			correct++
		}
	}
	if back {
		k.backward(w)
	}
	return loss, correct
}

// fc1 computes the hidden layer h = relu(pl·W + b) of all examples, in
// blocks of rows of W that stay in the L2 cache while every tile of examples
// passes over them.
func (k *cnnKernel) fc1(w []float32) {
	m := k.m
	const H, kb = CNNFC, 256
	W, bias := w[m.fw1:m.fb1], w[m.fb1:m.fw2]
	t, base, extra := tiles(k.n, maxTileRows[4])
	for k0 := 0; k0 < m.flat; k0 += kb {
		kl := min(kb, m.flat-k0)
		flags := tileAccum
		if k0 == 0 {
			flags = tileBias
		}
		if k0+kl == m.flat {
			flags |= tileReLU
		}
		for ct := 0; ct < H; ct += 64 {
			r0 := 0
			for i := range t {
				h := base
				if i < extra {
					h++
				}
				convTile(k.h[r0*H+ct:], k.pl[r0*k.pls+k0:], W[k0*H+ct:], bias[ct:], h, 4, 1, kl, 0, k.pls, H, H, flags)
				r0 += h
			}
		}
	}
}

// backward computes the deltas of every layer and the gradients of the
// convolutions of the examples of the last forward pass.
func (k *cnnKernel) backward(w []float32) {
	m := k.m
	const C1, C2, H = CNNConv1, CNNConv2, CNNFC
	n, np, out, flat := k.n, k.npad, m.classes, m.flat

	// fc2 → fc1 deltas, and their transpose (padded with zero columns).
	W2 := w[m.fw2:m.fb2]
	clear(k.dhT[:H*np])
	for b := range n {
		dz := k.dz[b*out : (b+1)*out]
		h := k.h[b*H : (b+1)*H]
		dh := k.dh[b*H : (b+1)*H]
		for j := range dh {
			var d float32
			if h[j] > 0 {
				for c, v := range W2[j*out : (j+1)*out] {
					d += v * dz[c]
				}
			}
			dh[j] = d
			k.dhT[j*np+b] = d
		}
	}
	// Deltas of the pooled activations: dpT = W1·dhT (flat × np).
	W1 := w[m.fw1:m.fb1]
	nv := np / 16
	t, base, extra := tiles(flat, maxTileRows[nv])
	r0 := 0
	for i := range t {
		h := base
		if i < extra {
			h++
		}
		convTile(k.dpT[r0*np:], W1[r0*H:], k.dhT, nil, h, nv, 1, H, 0, H, np, np, 0)
		r0 += h
	}
	// Transpose in blocks of 16 rows of dpT, so that every example's row of
	// dp is written a whole cache line at a time (rows of dp are a multiple
	// of 4 KB apart on 28×28 images, so writing them one value at a time
	// thrashes one set of the L1 cache).
	for q0 := 0; q0 < flat; q0 += 16 {
		blk := k.dpT[q0*np : min(q0+16, flat)*np]
		for b := range n {
			row := k.dp[b*flat+q0 : b*flat+min(q0+16, flat)]
			for i := range row {
				row[i] = blk[i*np+b]
			}
		}
	}

	// conv2 weights transposed to [co][ky][kx][ci] for the input deltas.
	W2c := w[m.cw2:m.cb2]
	for kk := range 9 * C1 {
		for co := range C2 {
			k.w2t[co*9*C1+kk] = W2c[kk*C2+co]
		}
	}
	clear(k.g1)
	clear(k.gb1)
	clear(k.g2t)
	clear(k.gb2)
	for b := range n {
		k.backwardExample(w, b)
	}
}

// backwardExample runs the backward pass of the convolutions of example b,
// adding to the convolution gradients.
func (k *cnnKernel) backwardExample(w []float32, b int) {
	m := k.m
	const C1, C2 = CNNConv1, CNNConv2
	flat, c1, pool := m.flat, m.c1, m.pool
	k.conv1(w, k.rows[b])
	clear(k.da1)
	clear(k.chN[:])
	pl := k.pl[b*k.pls : b*k.pls+flat]
	arg := k.arg[b*flat : (b+1)*flat]
	pp := pool * pool
	dp := k.dp[b*flat : (b+1)*flat]
	for pi := range pool {
		for pj := range pool {
			q := (pi*pool + pj) * C2
			var cnt [4]int
			scanCell(pl[q:q+C2], dp[q:q+C2], arg[q:q+C2], &k.wIdx, &k.wVal, &cnt, k.gb2)
			for a := range 4 {
				if cnt[a] == 0 {
					continue
				}
				oy, ox := 2*pi+a>>1, 2*pj+a&1
				// The channel lists: (position in a1, delta).
				pos := int32(oy*c1 + ox)
				for j, c := range k.wIdx[a][:cnt[a]] {
					i := int(c)*pp + k.chN[c]
					k.chIdx[i] = pos
					k.chVal[i] = k.wVal[a][j]
					k.chN[c]++
				}
				// Input deltas: the 3×3×32 patch of the position receives
				// Σ_c δ_c·W2[·,·,·,c] (kernel rows c1·32 apart in da1).
				gatherPatch(k.da1[pos*C1:], c1*C1, k.w2t, 9*C1, 3*C1, k.wIdx[a][:cnt[a]], k.wVal[a][:cnt[a]])
			}
		}
	}
	// conv2 weight gradient, channel by channel: row c of g2t gets
	// Σ δ·(patch of a1), again one kernel row at a time.
	for c := range C2 {
		if k.chN[c] == 0 {
			continue
		}
		idx := k.chIdx[c*pp : c*pp+k.chN[c]]
		val := k.chVal[c*pp : c*pp+k.chN[c]]
		gatherPatch(k.g2t[c*9*C1:], 3*C1, k.a1, C1, c1*C1, idx, val)
	}
	// Through conv1's ReLU, then conv1's gradients.
	reluMask(k.da1, k.a1, k.gb1)
	for ky := range 3 {
		gradTile(k.g1[ky*3*C1:], k.x[k.rows[b]+ky*m.side:], k.da1, 3, 2, c1, c1, m.side, 1, c1*C1, C1, C1)
	}
}

// reluMaskGo sets d[i] = 0 where !(a[i] > 0), for pixels of 32 channels,
// and adds the masked d of each channel to sum, pixel by pixel. The
// reference for reluMaskAVX512.
func reluMaskGo(d, a, sum []float32) {
	const C1 = CNNConv1
	for p := 0; p+C1 <= len(d); p += C1 {
		dp, ap := d[p:p+C1], a[p:p+C1]
		for c := range C1 {
			if !(ap[c] > 0) {
				dp[c] = 0
			}
			sum[c] += dp[c]
		}
	}
}

func (k *cnnKernel) accumulate(target []float32, s float32) {
	m := k.m
	const C1, C2, H = CNNConv1, CNNConv2, CNNFC
	n, out, flat := k.n, m.classes, m.flat
	for i, g := range k.g1 {
		target[m.cw1+i] += s * g
	}
	for i, g := range k.gb1 {
		target[m.cb1+i] += s * g
	}
	W2c := target[m.cw2:m.cb2]
	for kk := range 9 * C1 {
		row := W2c[kk*C2 : (kk+1)*C2]
		for co := range row {
			row[co] += s * k.g2t[co*9*C1+kk]
		}
	}
	for i, g := range k.gb2 {
		target[m.cb2+i] += s * g
	}

	// fc1: W += pl_bᵀ·(s·dh_b) summed over b, tile by tile of W's rows.
	for i, d := range k.dh[:n*H] {
		k.sdh[i] = s * d
	}
	W1 := target[m.fw1:m.fb1]
	t, base, extra := tiles(flat, maxTileRows[4])
	r0 := 0
	for i := range t {
		h := base
		if i < extra {
			h++
		}
		for ct := 0; ct < H; ct += 64 {
			gradTile(W1[r0*H+ct:], k.pl[r0:], k.sdh[ct:], h, 4, 1, n, 0, k.pls, 0, H, H)
		}
		r0 += h
	}
	b1 := target[m.fb1:m.fw2]
	W2, b2 := target[m.fw2:m.fb2], target[m.fb2:m.fb2+out]
	for b := range n {
		for j, d := range k.sdh[b*H : (b+1)*H] {
			b1[j] += d
		}
		dz := k.dz[b*out : (b+1)*out]
		for c, d := range dz {
			b2[c] += s * d
		}
		for j, hj := range k.h[b*H : (b+1)*H] {
			if hj != 0 {
				axpyGo(W2[j*out:(j+1)*out], s*hj, dz)
			}
		}
	}
}
