package plan

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// problem is a grid's free cells with their distances and headings, the
// start first.
type problem struct {
	g     *Grid
	cells []Cell
	d     [][]float64 // m
	h     [][]float64 // heading from i to j, rad
}

func newProblem(g *Grid, start Cell) (*problem, error) {
	if err := g.Validate(start); err != nil {
		return nil, err
	}
	cells := []Cell{start}
	for _, c := range g.Free() {
		if c != start {
			cells = append(cells, c)
		}
	}
	n := len(cells)
	p := &problem{g: g, cells: cells, d: make([][]float64, n), h: make([][]float64, n)}
	for i := range cells {
		p.d[i], p.h[i] = make([]float64, n), make([]float64, n)
		for j := range cells {
			p.d[i][j] = dist(g, cells[i], cells[j])
			p.h[i][j] = math.Atan2(float64(cells[j].Row-cells[i].Row), float64(cells[j].Col-cells[i].Col))
		}
	}
	return p, nil
}

// turnDeg is the heading change at b flying a -> b -> c, degrees.
func (p *problem) turnDeg(a, b, c int) float64 {
	d := math.Abs(p.h[b][c]-p.h[a][b]) * 180 / math.Pi
	if d > 180 {
		d = 360 - d
	}
	return d
}

// cost is the planned energy of visiting the cells in order (order[0] is
// the start).
func (p *problem) cost(order []int) float64 {
	var m, deg float64
	for k := 1; k < len(order); k++ {
		m += p.d[order[k-1]][order[k]]
		if k > 1 {
			deg += p.turnDeg(order[k-2], order[k-1], order[k])
		}
	}
	return JoulesPerMetre*m + JoulesPerDegree*deg
}

func (p *problem) plan(order []int) Plan {
	path := make([]Cell, len(order))
	for i, k := range order {
		path[i] = p.cells[k]
	}
	return Evaluate(p.g, path)
}

// TurnAware returns the cheapest coverage path it finds from start: a
// turn-aware nearest-neighbour path, then, from it and from restarts-1
// random paths (seeded), 2-opt moves (reverse a stretch) and Or-opt moves
// (move a stretch of 1 to 3 cells elsewhere, either way round), taking the
// best improving move until none improves; the best local optimum wins.
// The same seed gives the same plan. Each move is evaluated in full
// (O(n) per move, O(n^3) per pass): fine for the hundreds of cells of a
// survey area.
func TurnAware(g *Grid, start Cell, seed uint64, restarts int) (Plan, error) {
	p, err := newProblem(g, start)
	if err != nil {
		return Plan{}, err
	}
	n := len(p.cells)
	if n <= 2 {
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		return p.plan(order), nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x7a1))
	var best []int
	bestCost := math.Inf(1)
	for r := 0; r < max(1, restarts); r++ {
		var order []int
		if r == 0 {
			order = p.greedy()
		} else {
			order = make([]int, n)
			for i := range order {
				order[i] = i
			}
			rng.Shuffle(n-1, func(i, j int) { order[i+1], order[j+1] = order[j+1], order[i+1] })
		}
		c := p.improve(order)
		if c < bestCost-1e-12 {
			best, bestCost = append([]int(nil), order...), c
		}
	}
	return p.plan(best), nil
}

// greedy builds a path from the start, always flying to the unvisited
// cell whose leg (distance and turn) costs least.
func (p *problem) greedy() []int {
	n := len(p.cells)
	order := []int{0}
	used := make([]bool, n)
	used[0] = true
	for len(order) < n {
		last := order[len(order)-1]
		bestJ, bestC := -1, math.Inf(1)
		for j := 0; j < n; j++ {
			if used[j] {
				continue
			}
			c := JoulesPerMetre * p.d[last][j]
			if len(order) > 1 {
				c += JoulesPerDegree * p.turnDeg(order[len(order)-2], last, j)
			}
			if c < bestC-1e-12 {
				bestJ, bestC = j, c
			}
		}
		used[bestJ] = true
		order = append(order, bestJ)
	}
	return order
}

// improve applies the best 2-opt or Or-opt move until none improves the
// cost, in place, and returns the final cost.
func (p *problem) improve(order []int) float64 {
	n := len(order)
	cur := p.cost(order)
	cand := make([]int, n)
	for {
		bestCost := cur
		var best []int
		try := func() {
			if c := p.cost(cand); c < bestCost-1e-9 {
				bestCost = c
				best = append(best[:0], cand...)
			}
		}
		// 2-opt: reverse order[i..j] (the start stays first).
		for i := 1; i < n-1; i++ {
			for j := i + 1; j < n; j++ {
				copy(cand, order)
				for a, b := i, j; a < b; a, b = a+1, b-1 {
					cand[a], cand[b] = cand[b], cand[a]
				}
				try()
			}
		}
		// Or-opt: move order[i:i+l] to before position k, forward or
		// reversed.
		for l := 1; l <= 3; l++ {
			for i := 1; i+l <= n; i++ {
				seg := order[i : i+l]
				rest := make([]int, 0, n-l)
				rest = append(rest, order[:i]...)
				rest = append(rest, order[i+l:]...)
				for k := 1; k <= len(rest); k++ {
					if k == i {
						continue
					}
					for _, rev := range []bool{false, true} {
						cand = cand[:0]
						cand = append(cand, rest[:k]...)
						if rev {
							for x := len(seg) - 1; x >= 0; x-- {
								cand = append(cand, seg[x])
							}
						} else {
							cand = append(cand, seg...)
						}
						cand = append(cand, rest[k:]...)
						try()
					}
				}
			}
		}
		if best == nil {
			return cur
		}
		copy(order, best)
		cur = bestCost
	}
}

// Optimal returns a cheapest coverage path from start exactly, by dynamic
// programming over the visited set, the last cell and the one before it
// (the turn cost needs both): for grids of at most 16 free cells, as a
// reference for TurnAware.
func Optimal(g *Grid, start Cell) (Plan, error) {
	p, err := newProblem(g, start)
	if err != nil {
		return Plan{}, err
	}
	n := len(p.cells)
	if n > 16 {
		return Plan{}, fmt.Errorf("exact search over %d cells: at most 16", n)
	}
	if n <= 2 {
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		return p.plan(order), nil
	}
	// f[set][last][prev]: cheapest cost of a path from the start visiting
	// set (start included), ending ... prev -> last.
	size := 1 << n
	inf := math.Inf(1)
	f := make([]float64, size*n*n)
	from := make([]int16, size*n*n)
	for i := range f {
		f[i] = inf
	}
	at := func(set, last, prev int) int { return (set*n+last)*n + prev }
	for j := 1; j < n; j++ {
		f[at(1|1<<j, j, 0)] = JoulesPerMetre * p.d[0][j]
		from[at(1|1<<j, j, 0)] = -1
	}
	for set := 0; set < size; set++ {
		if set&1 == 0 {
			continue
		}
		for last := 1; last < n; last++ {
			if set&(1<<last) == 0 {
				continue
			}
			for prev := 0; prev < n; prev++ {
				c := f[at(set, last, prev)]
				if math.IsInf(c, 1) {
					continue
				}
				for next := 1; next < n; next++ {
					if set&(1<<next) != 0 {
						continue
					}
					nc := c + JoulesPerMetre*p.d[last][next] + JoulesPerDegree*p.turnDeg(prev, last, next)
					k := at(set|1<<next, next, last)
					if nc < f[k] {
						f[k], from[k] = nc, int16(prev)
					}
				}
			}
		}
	}
	full := size - 1
	bestC, bestLast, bestPrev := inf, -1, -1
	for last := 1; last < n; last++ {
		for prev := 0; prev < n; prev++ {
			if c := f[at(full, last, prev)]; c < bestC {
				bestC, bestLast, bestPrev = c, last, prev
			}
		}
	}
	order := make([]int, n)
	set, last, prev := full, bestLast, bestPrev
	for k := n - 1; k >= 1; k-- {
		order[k] = last
		pp := int(from[at(set, last, prev)])
		set &^= 1 << last
		last, prev = prev, pp
	}
	order[0] = 0
	return p.plan(order), nil
}
