package pld

import (
	"math"
	"sync"
)

// cloneRows evaluates the outcomes of the clone pair (clonesDir), one row
// per clone count c = cLo + i of weight pc[i]: the first-type count y =
// A + D over the window of A ~ Bin(c, 1/2). Rows are evaluated on any
// goroutine; their grid additions are applied in row order, so the grid,
// the +Inf atom and every sum are the same, bit for bit, whatever the
// number of goroutines.
type cloneRows struct {
	cells
	eps0, al, be float64 // al = e^eps0/(1+e^eps0), be = 1 - al
	em1, ee      float64 // expm1(eps0), exp(eps0)
	cLo          int
	pc           []float64
}

// rowsOut is what a range of rows contributes, in order: the placed atoms,
// each row's mass trimmed from its first-type window (w alost 2, for the
// +Inf atom), and the longest window; xs, ps and ks are one row's scratch.
type rowsOut struct {
	adds   []gridAdd
	lost   []float64
	steps  int
	xs, ps []float64
	ks     []int
}

// rows evaluates rows [i0, i1) into out, reusing its buffers and bb's.
func (cr *cloneRows) rows(i0, i1 int, bb *binomBuf, out *rowsOut) {
	out.adds, out.lost, out.steps = out.adds[:0], out.lost[:0], 0
	for i := i0; i < i1; i++ {
		w, c := cr.pc[i], cr.cLo+i
		// A ~ Bin(c, 1/2) on its window
		alo, aw, alost := bb.window(c, 0.5, 0.5)
		out.steps = max(out.steps, len(aw))
		out.lost = append(out.lost, w*alost*2)
		cr.row(c, w, alo, aw, out)
	}
}

// row appends to out.adds the placed outcomes of clone count c (weight w,
// aw the Bin(c, 1/2) window from alo), in increasing first-type count y.
// It makes four passes over the row (masses and ratios, losses, cells,
// splits): divisions' latency dominates, and short loops let the processor
// overlap more outcomes than one loop doing everything (a quarter less CPU,
// docs/PERFORMANCE.md); each outcome's arithmetic is the same.
func (cr *cloneRows) row(c int, w float64, alo int, aw []float64, out *rowsOut) {
	xs, ps, ks := out.xs[:0], out.ps[:0], out.ks[:0]
	// y = a + D ranges over [alo, alo+len(aw)]; P0(y) = al B(y-1) +
	// be B(y), B zero outside the window
	for y := alo; y <= alo+len(aw); y++ {
		var b1, b0 float64
		if j := y - 1 - alo; j >= 0 {
			b1 = aw[j]
		}
		if j := y - alo; j < len(aw) {
			b0 = aw[j]
		}
		pm := w * (cr.al*b1 + cr.be*b0)
		if pm <= 0 {
			continue
		}
		var r float64
		switch {
		case y == 0:
			r = 0
		case y == c+1:
			r = math.Inf(1)
		default:
			r = float64(y) / float64(c-y+1)
		}
		xs, ps = append(xs, r), append(ps, pm)
	}
	// xs: the ratio r, then the loss
	for k, r := range xs {
		l := cloneLoss(cr.eps0, cr.em1, cr.ee, r)
		l += 8 * unitRoundoff * (math.Abs(l) + 1)
		if l > cr.eps0 {
			l = cr.eps0 // the loss never exceeds eps0 (post-processing of RR)
		}
		xs[k] = l
	}
	// xs: the loss, then its offset in its grid cell ks[k]
	for k, l := range xs {
		cell, d := cr.cell(l)
		ks, xs[k] = append(ks, cell), d
	}
	for k, cell := range ks {
		out.adds = append(out.adds, cr.split(cell, xs[k], ps[k]))
	}
	out.xs, out.ps, out.ks = xs, ps, ks
}

// cloneChunkAtoms is about how many outcomes a chunk of rows holds (24
// bytes each).
const cloneChunkAtoms = 1 << 15

// chunks splits the rows into consecutive ranges of about cloneChunkAtoms
// outcomes (a row of clone count c has about 14.4 sqrt(c) + 3), returning
// the range boundaries.
func (cr *cloneRows) chunks() []int {
	bounds := []int{0}
	acc := 0.0
	for i := range cr.pc {
		acc += math.Sqrt(float64(cr.cLo+i)+1)*math.Sqrt(2*math.Log(1/binomFloor)) + 3
		if acc >= cloneChunkAtoms {
			bounds = append(bounds, i+1)
			acc = 0
		}
	}
	if bounds[len(bounds)-1] != len(cr.pc) {
		bounds = append(bounds, len(cr.pc))
	}
	return bounds
}

// run evaluates every row on up to workers goroutines and applies them to
// b in row order; it returns lost plus the rows' trimmed masses (summed in
// row order) and the longest first-type window.
func (cr *cloneRows) run(b *builder, lost float64, workers int) (inf float64, steps int) {
	inf = lost
	apply := func(o *rowsOut) {
		for _, a := range o.adds {
			b.apply(a)
		}
		for _, v := range o.lost {
			inf += v
		}
		steps = max(steps, o.steps)
	}
	bounds := cr.chunks()
	nc := len(bounds) - 1
	if workers = min(workers, nc); workers <= 1 {
		var bb binomBuf
		var o rowsOut
		for j := range nc {
			cr.rows(bounds[j], bounds[j+1], &bb, &o)
			apply(&o)
		}
		return inf, steps
	}
	// Chunks are handed out in order, each with a buffer from free, and
	// applied in order: the chunk applied next always holds a buffer, so
	// the 2 workers buffers never run out.
	type job struct {
		j   int
		out *rowsOut
	}
	jobs := make(chan job)
	done := make([]chan *rowsOut, nc)
	for j := range done {
		done[j] = make(chan *rowsOut, 1)
	}
	free := make(chan *rowsOut, 2*workers)
	for range 2 * workers {
		free <- new(rowsOut)
	}
	go func() {
		for j := range nc {
			jobs <- job{j, <-free}
		}
		close(jobs)
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var bb binomBuf
			for jb := range jobs {
				cr.rows(bounds[jb.j], bounds[jb.j+1], &bb, jb.out)
				done[jb.j] <- jb.out
			}
		})
	}
	for j := range nc {
		o := <-done[j]
		apply(o)
		free <- o
	}
	wg.Wait()
	return inf, steps
}
