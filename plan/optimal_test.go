package plan

import (
	"fmt"
	"math"
)

// optimal returns a cheapest coverage path (or Closed tour) from start
// exactly, by dynamic programming over the visited set, the last cell and
// the one before it (the turn cost needs both): for grids of at most 16
// free cells, as a reference for TurnAware in the tests.
func optimal(g *Grid, start Cell, tour Tour) (Plan, error) {
	p, err := newProblem(g, start, tour)
	if err != nil {
		return Plan{}, err
	}
	n := len(p.cells)
	if n > 16 {
		return Plan{}, fmt.Errorf("exact search over %d cells: at most 16", n)
	}
	if n <= 2 {
		return p.plan(p.trivial()), nil
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
		f[at(1|1<<j, j, 0)] = p.g.Energy.PerMetre * p.d[0][j]
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
					nc := c + p.g.Energy.Of(p.d[last][next], p.turnDeg(prev, last, next))
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
			c := f[at(full, last, prev)]
			if p.closed && !math.IsInf(c, 1) {
				c += p.g.Energy.Of(p.d[last][0], p.turnDeg(prev, last, 0))
			}
			if c < bestC {
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
	if p.closed {
		order = append(order, 0)
	}
	return p.plan(order), nil
}
