// Package spatial finds the nodes near a point fast: a uniform spatial
// hash of node positions for radio range queries, which hands the nodes
// within a range over in node order whatever its cells, so that a
// network model's results do not depend on how it indexes space.
package spatial

import (
	"math"
	"math/bits"

	"skyloop/geom"
)

// New returns an index with cells of the given size (metres): at least
// the largest range Collect will be asked for.
func New(cell float64) *Index { return &Index{cell: cell} }

// Index is a uniform spatial hash of node positions with cells at least
// as large as the range a query looks at (its limit), so a query looks
// at the 27 neighbouring cells only. Cells hash into
// buckets (at least twice as many as nodes), stored flat: the nodes of
// bucket k are nodes[start[k]:start[k+1]]. Cells that share a bucket
// only add candidates, which Collect's distance test sorts out. Which
// nodes a query finds, and in which order, does not depend on
// the cell size: Collect keeps the nodes within the limit and hands them
// over in node order.
type Index struct {
	cell   float64
	mask   uint32
	start  []int32  // per bucket, and one past the last
	nodes  []int32  // node ids by bucket
	bucket []uint32 // per node: its bucket at the last build
	bits   []uint64 // Collect's node set, one bit per node, zero between calls
}

func (g *Index) key(p geom.Vec3) [3]int32 {
	return [3]int32{int32(math.Floor(p.X / g.cell)), int32(math.Floor(p.Y / g.cell)), int32(math.Floor(p.Z / g.cell))}
}

// bucketOf returns the bucket of cell (x, y, z).
func (g *Index) bucketOf(x, y, z int32) uint32 {
	return (uint32(x)*73856093 ^ uint32(y)*19349663 ^ uint32(z)*83492791) & g.mask
}

// Build indexes the nodes at pos (node i at pos[i]).
func (g *Index) Build(pos []geom.Vec3) {
	if len(g.bucket) != len(pos) {
		size := uint32(16)
		for int(size) < 2*len(pos) {
			size *= 2
		}
		g.mask = size - 1
		g.start = make([]int32, size+1)
		g.nodes = make([]int32, len(pos))
		g.bucket = make([]uint32, len(pos))
		g.bits = make([]uint64, (len(pos)+63)/64)
	}
	// Counting sort of the nodes by bucket, in node order within one.
	clear(g.start)
	for i, p := range pos {
		c := g.key(p)
		k := g.bucketOf(c[0], c[1], c[2])
		g.bucket[i] = k
		g.start[k+1]++
	}
	for k := 1; k < len(g.start); k++ {
		g.start[k] += g.start[k-1]
	}
	for i, k := range g.bucket {
		g.nodes[g.start[k]] = int32(i)
		g.start[k]++
	}
	// Each start now holds the next bucket's: shift them back.
	copy(g.start[1:], g.start[:len(g.start)-1])
	g.start[0] = 0
}

// Collect calls f, in increasing node order, for every node other than
// self whose position in pos lies within sqrt(limSq) of p; limSq must not
// exceed the square of the cell size. The nodes are those of the cells
// around p at the last build.
func (g *Index) Collect(p geom.Vec3, self int32, limSq float64, pos []geom.Vec3, f func(r int32, d2 float64)) {
	lo, hi := g.mark(p, self, limSq, pos)
	for w := lo; w <= hi; w++ {
		b := g.bits[w]
		g.bits[w] = 0
		for b != 0 {
			i := int32(w<<6 + bits.TrailingZeros64(b))
			b &= b - 1
			d := pos[i].Sub(p)
			f(i, d.X*d.X+d.Y*d.Y+d.Z*d.Z)
		}
	}
}

// Near is a node Append found: its id and its squared distance from the
// query point.
type Near struct {
	Node int32
	D2   float64
}

// Append appends to dst the nodes Collect would hand over, in the same
// order, and returns the extended slice: for a caller that visits them
// knowing which come next (to prefetch their records).
func (g *Index) Append(dst []Near, p geom.Vec3, self int32, limSq float64, pos []geom.Vec3) []Near {
	lo, hi := g.mark(p, self, limSq, pos)
	for w := lo; w <= hi; w++ {
		b := g.bits[w]
		g.bits[w] = 0
		for b != 0 {
			i := int32(w<<6 + bits.TrailingZeros64(b))
			b &= b - 1
			d := pos[i].Sub(p)
			dst = append(dst, Near{i, d.X*d.X + d.Y*d.Y + d.Z*d.Z})
		}
	}
	return dst
}

// mark sets the bits of the nodes within sqrt(limSq) of p, self
// excepted, and returns the range of words of g.bits it set bits in
// (lo > hi when none).
func (g *Index) mark(p geom.Vec3, self int32, limSq float64, pos []geom.Vec3) (lo, hi int) {
	k := g.key(p)
	lo, hi = len(g.bits), -1
	for dx := int32(-1); dx <= 1; dx++ {
		for dy := int32(-1); dy <= 1; dy++ {
			for dz := int32(-1); dz <= 1; dz++ {
				bk := g.bucketOf(k[0]+dx, k[1]+dy, k[2]+dz)
				for _, i := range g.nodes[g.start[bk]:g.start[bk+1]] {
					d := pos[i].Sub(p)
					if d.X*d.X+d.Y*d.Y+d.Z*d.Z > limSq || i == self {
						continue
					}
					w := int(i >> 6)
					g.bits[w] |= 1 << (uint(i) & 63)
					lo, hi = min(lo, w), max(hi, w)
				}
			}
		}
	}
	return lo, hi
}
