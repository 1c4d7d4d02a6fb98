package plan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// problem is a grid's free cells reachable from the start, the start
// first, with the route, length and headings of the leg between every
// two of them.
type problem struct {
	g     *Grid
	cells []Cell
	// d is the price of the leg from i to j in metres: its length, plus
	// the turns inside a detour converted at the energy model's
	// PerDegree/PerMetre.
	d [][]float64
	// out[i*n+j] and in[i*n+j] are the headings (degrees) at which the
	// leg leaves i and arrives at j.
	out, in []float64
	n       int
	// via are the cells a detour turns at (nil for a straight leg).
	via map[[2]int][]int
	// closed orders end with the start again (index 0), which no move
	// shifts.
	closed bool
}

// maxTurnAwareCells bounds the free cells TurnAware plans over: it keeps
// four n x n tables.
const maxTurnAwareCells = 2000

func newProblem(g *Grid, start Cell, tour Tour) (*problem, error) {
	if err := g.Validate(start); err != nil {
		return nil, err
	}
	if err := tour.valid(); err != nil {
		return nil, err
	}
	// The cells reachable from the start by clear steps to one of the
	// eight neighbours, in row order after the start.
	reach := g.reachable(start)
	cells := []Cell{start}
	for _, c := range g.Free() {
		if c != start && reach[c] {
			cells = append(cells, c)
		}
	}
	n := len(cells)
	if n > maxTurnAwareCells {
		return nil, fmt.Errorf("%d free cells: the turn-aware planner plans at most %d (use larger cells, or dls)", n, maxTurnAwareCells)
	}
	p := &problem{g: g, cells: cells, d: make([][]float64, n), out: make([]float64, n*n), in: make([]float64, n*n), n: n, via: map[[2]int][]int{}, closed: tour == Closed}
	for i := range cells {
		p.d[i] = make([]float64, n)
	}
	index := map[Cell]int{}
	for i, c := range cells {
		index[c] = i
	}
	for i := range cells {
		var routes map[Cell][]Cell
		for j := i + 1; j < n; j++ {
			a, b := cells[i], cells[j]
			if len(g.Blocked) == 0 || g.Clear(a, b) {
				h := heading(a, b)
				p.d[i][j], p.d[j][i] = dist(g, a, b), dist(g, a, b)
				p.setHeadings(i, j, h, h)
				continue
			}
			if routes == nil {
				routes = g.routes(a)
			}
			r := g.straighten(routes[b])
			var m, deg float64
			via := make([]int, 0, len(r)-2)
			for k := 1; k < len(r); k++ {
				m += dist(g, r[k-1], r[k])
				if k > 1 {
					deg += turn(r[k-2], r[k-1], r[k])
					via = append(via, index[r[k-1]])
				}
			}
			price := m + deg*g.Energy.PerDegree/g.Energy.PerMetre
			p.d[i][j], p.d[j][i] = price, price
			p.setHeadings(i, j, heading(r[0], r[1]), heading(r[len(r)-2], r[len(r)-1]))
			p.via[[2]int{i, j}] = via
			back := make([]int, len(via))
			for k, v := range via {
				back[len(via)-1-k] = v
			}
			p.via[[2]int{j, i}] = back
		}
	}
	return p, nil
}

// setHeadings sets the headings (rad) of the leg from i to j, and of the
// leg back.
func (p *problem) setHeadings(i, j int, out, in float64) {
	p.out[i*p.n+j], p.in[i*p.n+j] = out*180/math.Pi, in*180/math.Pi
	p.out[j*p.n+i], p.in[j*p.n+i] = reverse(in)*180/math.Pi, reverse(out)*180/math.Pi
}

func heading(a, b Cell) float64 {
	return math.Atan2(float64(b.Row-a.Row), float64(b.Col-a.Col))
}

// reverse returns the opposite heading, in (-pi, pi].
func reverse(h float64) float64 {
	if h > 0 {
		return h - math.Pi
	}
	return h + math.Pi
}

// turnDeg is the heading change at b flying a -> b -> c, degrees.
func (p *problem) turnDeg(a, b, c int) float64 {
	d := math.Abs(p.out[b*p.n+c] - p.in[a*p.n+b])
	if d > 180 {
		d = 360 - d
	}
	return d
}

// cost is the planned energy of visiting the cells in order (order[0] is
// the start; a closed order ends with it again).
func (p *problem) cost(order []int) float64 {
	var m, deg float64
	for k := 1; k < len(order); k++ {
		m += p.d[order[k-1]][order[k]]
		if k > 1 {
			deg += p.turnDeg(order[k-2], order[k-1], order[k])
		}
	}
	return p.g.Energy.Of(m, deg)
}

// plan returns the plan of flying the cells in order, detours included.
func (p *problem) plan(order []int) Plan {
	path := make([]Cell, 0, len(order))
	for i, k := range order {
		if i > 0 {
			for _, v := range p.via[[2]int{order[i-1], k}] {
				path = append(path, p.cells[v])
			}
		}
		path = append(path, p.cells[k])
	}
	return Evaluate(p.g, path)
}

// trivial returns the order of a problem of at most two cells.
func (p *problem) trivial() []int {
	order := make([]int, p.n)
	for i := range order {
		order[i] = i
	}
	if p.closed && p.n > 1 {
		order = append(order, 0)
	}
	return order
}

// TurnAware returns the cheapest coverage path it finds from start (a
// Closed tour returns to it; an Open path ends anywhere), by
// local search from seeded restarts in the manner of chained
// Lin-Kernighan. A turn-aware nearest-neighbour path is improved with
// 2-opt moves (reverse a stretch) and Or-opt moves (move a stretch of 1 to
// 3 cells elsewhere, either way round), taking the best improving move
// until none improves. Then restarts-1 more local optima are sought, taking
// the first improving move each time: odd restarts start from a random
// order, even ones from the best path so far after a random double-bridge
// kick; the cheapest path wins. The same seed gives the same plan. Moves
// are priced in O(1), so a pass costs O(n^2) for n free cells.
func TurnAware(g *Grid, start Cell, seed uint64, restarts int, tour Tour) (Plan, error) {
	p, err := newProblem(g, start, tour)
	if err != nil {
		return Plan{}, err
	}
	n := len(p.cells)
	if n <= 2 {
		return p.plan(p.trivial()), nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x7a1))
	best := p.greedy()
	if p.closed {
		best = append(best, 0)
	}
	bestCost := p.improve(best, false)
	cand := make([]int, len(best)) // a closed order's last stays 0
	for r := 1; r < max(1, restarts); r++ {
		if r%2 == 1 {
			for i := range cand[:n] {
				cand[i] = i
			}
			rng.Shuffle(n-1, func(i, j int) { cand[i+1], cand[j+1] = cand[j+1], cand[i+1] })
		} else {
			p.kick(best[:n], cand[:n], rng)
		}
		if c := p.improve(cand, true); c < bestCost-1e-12 {
			copy(best, cand)
			bestCost = c
		}
	}
	return p.plan(best), nil
}

// kick writes into out a double-bridge perturbation of order: cut it at
// three random positions after the start into A B C D and reorder to A C B
// D, a change 2-opt and Or-opt cannot undo in one move.
func (p *problem) kick(order, out []int, rng *rand.Rand) {
	n := len(order)
	copy(out, order)
	if n < 5 {
		rng.Shuffle(n-1, func(i, j int) { out[i+1], out[j+1] = out[j+1], out[i+1] })
		return
	}
	cuts := [3]int{1 + rng.IntN(n-1), 1 + rng.IntN(n-1), 1 + rng.IntN(n-1)}
	slices.Sort(cuts[:])
	a, b, c := cuts[0], cuts[1], cuts[2]
	k := a
	k += copy(out[k:], order[b:c])
	copy(out[k:], order[a:b])
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
			c := p.g.Energy.PerMetre * p.d[last][j]
			if len(order) > 1 {
				c += p.g.Energy.PerDegree * p.turnDeg(order[len(order)-2], last, j)
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

// span is a stretch of the current order, positions a..b inclusive, flown
// backwards when rev.
type span struct {
	a, b int
	rev  bool
}

// tour is an order with the prefix sums that price a move in O(1): a
// move's candidate is the current order cut into at most four spans, so
// its cost is the spans' inner costs (from the prefix sums; reversing a
// span does not change them, as distances and turn angles are symmetric)
// plus the legs and turns at the joints.
type tour struct {
	p  *problem
	o  []int
	e  []float64 // e[k]: metres flown from position 0 to k
	tc []float64 // tc[k]: degrees turned at positions 1..k-1
	sp [4]span
	ns int
}

func (t *tour) reset() {
	n := len(t.o)
	t.e[0], t.tc[0] = 0, 0
	for k := 1; k < n; k++ {
		t.e[k] = t.e[k-1] + t.p.d[t.o[k-1]][t.o[k]]
		turn := 0.0
		if k > 1 {
			turn = t.p.turnDeg(t.o[k-2], t.o[k-1], t.o[k])
		}
		t.tc[k] = t.tc[k-1] + turn // degrees turned at positions < k
	}
}

func (t *tour) add(a, b int, rev bool) {
	if a <= b {
		t.sp[t.ns] = span{a, b, rev}
		t.ns++
	}
}

// at returns the cell index at position i of span q.
func (t *tour) at(q, i int) int {
	s := t.sp[q]
	if s.rev {
		return t.o[s.b-i]
	}
	return t.o[s.a+i]
}

// cost prices the candidate made of the current spans.
func (t *tour) cost() float64 {
	var m, deg float64
	for q := 0; q < t.ns; q++ {
		s := t.sp[q]
		m += t.e[s.b] - t.e[s.a]
		if s.b-s.a >= 2 {
			deg += t.tc[s.b] - t.tc[s.a+1]
		}
		l := s.b - s.a + 1
		if q > 0 {
			ps := t.sp[q-1]
			m += t.p.d[t.at(q-1, ps.b-ps.a)][t.at(q, 0)]
		}
		// The turns at the span's ends, which see across the joints.
		// A one-cell span has one end.
		for _, i := range ([]int{0, l - 1})[:min(l, 2)] {
			if (q == 0 && i == 0) || (q == t.ns-1 && i == l-1) {
				continue // the path's first and last cells turn nowhere
			}
			deg += t.p.turnDeg(t.neighbour(q, i, -1), t.at(q, i), t.neighbour(q, i, +1))
		}
	}
	return t.p.g.Energy.Of(m, deg)
}

// neighbour returns the cell before (dir -1) or after (dir +1) position i
// of span q in the candidate.
func (t *tour) neighbour(q, i, dir int) int {
	l := t.sp[q].b - t.sp[q].a + 1
	switch {
	case dir < 0 && i > 0, dir > 0 && i < l-1:
		return t.at(q, i+dir)
	case dir < 0:
		ps := t.sp[q-1]
		return t.at(q-1, ps.b-ps.a)
	default:
		return t.at(q+1, 0)
	}
}

// apply makes the candidate of the current spans the order.
func (t *tour) apply(buf []int) {
	buf = buf[:0]
	for q := 0; q < t.ns; q++ {
		s := t.sp[q]
		for i := 0; i <= s.b-s.a; i++ {
			buf = append(buf, t.at(q, i))
		}
	}
	copy(t.o, buf)
	t.reset()
}

// move is a candidate move: a 2-opt reversal of positions i..j, or an
// Or-opt move of the l cells at i to before rest position k.
type move struct {
	or      bool
	i, j, l int
	k       int
	rev     bool
}

// spans sets the spans of mv's candidate.
func (t *tour) spans(mv move) {
	n := len(t.o)
	t.ns = 0
	if !mv.or {
		t.add(0, mv.i-1, false)
		t.add(mv.i, mv.j, true)
		t.add(mv.j+1, n-1, false)
		return
	}
	i, l, k := mv.i, mv.l, mv.k
	if k < i {
		t.add(0, k-1, false)
		t.add(i, i+l-1, mv.rev)
		t.add(k, i-1, false)
		t.add(i+l, n-1, false)
		return
	}
	t.add(0, i-1, false)
	t.add(i+l, k+l-1, false)
	t.add(i, i+l-1, mv.rev)
	t.add(k+l, n-1, false)
}

// improve applies improving 2-opt and Or-opt moves until none improves the
// cost, in place, and returns the final cost: the best move of each pass,
// or with first every improving move as the pass meets it. Each move is priced in O(1)
// from the tour's prefix sums, so a pass over the O(n^2) moves costs
// O(n^2).
func (p *problem) improve(order []int, first bool) float64 {
	n := len(order)
	// hi is the last position a move may shift: a closed order's final
	// return to the start stays.
	hi := n - 1
	if p.closed {
		hi = n - 2
	}
	t := &tour{p: p, o: order, e: make([]float64, n), tc: make([]float64, n)}
	t.reset()
	buf := make([]int, 0, n)
	cur := p.cost(order)
	improved := false
	for {
		bestCost := cur
		var best move
		found := false
		try := func(mv move) {
			t.spans(mv)
			if c := t.cost(); c < bestCost-1e-9 {
				bestCost, best, found = c, mv, true
				if first {
					t.apply(buf)
					cur, bestCost, found = c, c, false
					improved = true
				}
			}
		}
		// 2-opt: reverse order[i..j] (the start stays first).
		for i := 1; i < hi; i++ {
			for j := i + 1; j <= hi; j++ {
				try(move{i: i, j: j})
			}
		}
		// Or-opt: move order[i:i+l] to before position k of the rest,
		// forward or reversed.
		for l := 1; l <= 3; l++ {
			for i := 1; i+l-1 <= hi; i++ {
				for k := 1; k <= hi+1-l; k++ {
					if k == i {
						continue
					}
					try(move{or: true, i: i, l: l, k: k})
					if l > 1 {
						try(move{or: true, i: i, l: l, k: k, rev: true})
					}
				}
			}
		}
		if first {
			if !improved {
				return p.cost(order)
			}
			improved = false
			continue
		}
		if !found {
			return cur
		}
		t.spans(best)
		t.apply(buf)
		cur = p.cost(order)
	}
}
