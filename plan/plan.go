// Package plan plans coverage paths over a grid of cells by energy: the
// path visits the centre of every free cell once, starting from a given
// cell and by default returning to it (a Closed tour, as the paper's
// paths; Open paths end anywhere), and costs a planning energy model
// (Energy; by default UB-ANC's empirical one, 0.1164 J per metre flown
// plus 0.0173 J per degree turned, the PlanningEnergy constants of kind/multirotor).
// TurnAware searches for the cheapest such path (a generalised
// travelling-salesman tour whose cost depends on consecutive triples) with
// 2-opt and Or-opt moves from seeded random restarts; DLS is the
// depth-limited search with backtracking it is compared with.
package plan

import (
	"errors"
	"fmt"
	"math"
)

// The planning energy model of UB-ANC's coverage planning experiment for a
// small quadrotor (docs/calibration.md).
const (
	JoulesPerMetre  = 0.1164
	JoulesPerDegree = 0.0173
)

// Energy is a planning energy model: the energy of a path is PerMetre
// times its length plus PerDegree times the degrees it turns.
type Energy struct {
	PerMetre  float64 // J/m
	PerDegree float64 // J/deg
}

// DefaultEnergy is UB-ANC's model: 0.1164 J/m and 0.0173 J/deg.
var DefaultEnergy = Energy{PerMetre: JoulesPerMetre, PerDegree: JoulesPerDegree}

// Of returns the energy of a path of the given length and turns.
func (e Energy) Of(metres, degrees float64) float64 { return e.PerMetre*metres + e.PerDegree*degrees }

// Tour says whether a coverage path returns to its start cell.
type Tour uint8

// The tours: Closed (the default, as the paper's paths: the last cell is
// the start again) and Open (the path ends where its last new cell is).
const (
	Closed Tour = iota
	Open
)

// String returns closed or open.
func (t Tour) String() string {
	if t == Open {
		return "open"
	}
	return "closed"
}

func (t Tour) valid() error {
	if t > Open {
		return fmt.Errorf("tour %d: want Closed or Open", t)
	}
	return nil
}

// Cell is a grid cell by column and row.
type Cell struct{ Col, Row int }

// Grid is a rectangular area of square cells; Blocked cells (obstacles)
// are neither visited nor flown over: a leg between two cells is Clear
// when it keeps out of every blocked cell grown by a quarter of a cell on
// each side. DLS moves between neighbours only; TurnAware flies a leg
// that is not clear along the shortest route of clear steps between
// neighbouring cells (diagonal ones included), straightened, and prices
// it with the route's length and turns. Cells that no such route reaches
// from the start are not covered.
type Grid struct {
	Cols, Rows int
	Size       float64 // cell side, m
	Blocked    map[Cell]bool
	Energy     Energy // prices the plans
}

// Validate checks the grid and a start cell.
func (g *Grid) Validate(start Cell) error {
	switch {
	case g.Cols < 1 || g.Rows < 1:
		return fmt.Errorf("grid of %dx%d cells: want at least 1x1", g.Cols, g.Rows)
	case g.Cols*g.Rows > 10000:
		return fmt.Errorf("grid of %dx%d cells: at most 10000 cells", g.Cols, g.Rows)
	case !(g.Size > 0) || math.IsInf(g.Size, 0):
		return fmt.Errorf("cell size must be a positive number of metres, got %v", g.Size)
	case !(g.Energy.PerMetre > 0) || math.IsInf(g.Energy.PerMetre, 0) || !(g.Energy.PerDegree >= 0) || math.IsInf(g.Energy.PerDegree, 0):
		return fmt.Errorf("energy model %v J/m, %v J/deg: want a positive finite cost per metre and a finite cost per degree >= 0", g.Energy.PerMetre, g.Energy.PerDegree)
	case !g.in(start):
		return fmt.Errorf("start cell %v is outside the %dx%d grid", start, g.Cols, g.Rows)
	case g.Blocked[start]:
		return fmt.Errorf("start cell %v is an obstacle", start)
	}
	return nil
}

func (g *Grid) in(c Cell) bool { return c.Col >= 0 && c.Row >= 0 && c.Col < g.Cols && c.Row < g.Rows }

// Free returns the free cells, row by row.
func (g *Grid) Free() []Cell {
	var out []Cell
	for r := 0; r < g.Rows; r++ {
		for c := 0; c < g.Cols; c++ {
			if !g.Blocked[Cell{c, r}] {
				out = append(out, Cell{c, r})
			}
		}
	}
	return out
}

// Clear reports whether the straight leg between the centres of a and b
// keeps out of every blocked cell grown by a quarter cell on each side.
// Legs between neighbouring cells always are.
func (g *Grid) Clear(a, b Cell) bool {
	ax, ay := float64(a.Col)+0.5, float64(a.Row)+0.5
	bx, by := float64(b.Col)+0.5, float64(b.Row)+0.5
	for c := range g.Blocked {
		if segmentHitsBox(ax, ay, bx, by, float64(c.Col)-0.25, float64(c.Row)-0.25, float64(c.Col)+1.25, float64(c.Row)+1.25) {
			return false
		}
	}
	return true
}

// segmentHitsBox reports whether the segment (ax,ay)-(bx,by) enters the
// open box (x0,y0)-(x1,y1) (Liang-Barsky clipping).
func segmentHitsBox(ax, ay, bx, by, x0, y0, x1, y1 float64) bool {
	t0, t1 := 0.0, 1.0
	dx, dy := bx-ax, by-ay
	for _, e := range [4][2]float64{{-dx, ax - x0}, {dx, x1 - ax}, {-dy, ay - y0}, {dy, y1 - ay}} {
		p, q := e[0], e[1]
		if p == 0 {
			if q <= 0 {
				return false
			}
			continue
		}
		r := q / p
		if p < 0 {
			t0 = max(t0, r)
		} else {
			t1 = min(t1, r)
		}
	}
	return t1-t0 > 1e-12
}

// Plan is a coverage path and its figures.
type Plan struct {
	Path      []Cell  // the cells in visiting order (DLS: with the cells flown back over)
	Covered   int     // distinct cells visited
	Crossings int     // legs that are not clear of the obstacles
	Distance  float64 // m
	Turns     int     // heading changes
	TurnDeg   float64 // sum of the heading changes, degrees
	Energy    float64 // J
}

// Evaluate returns the plan figures of flying path on g.
func Evaluate(g *Grid, path []Cell) Plan {
	p := Plan{Path: path}
	seen := map[Cell]bool{}
	for i, c := range path {
		seen[c] = true
		if i > 0 {
			p.Distance += dist(g, path[i-1], c)
			if !g.Clear(path[i-1], c) {
				p.Crossings++
			}
		}
		if i > 1 {
			if a := turn(path[i-2], path[i-1], c); a > 1e-9 {
				p.Turns++
				p.TurnDeg += a
			}
		}
	}
	p.Covered = len(seen)
	p.Energy = g.Energy.Of(p.Distance, p.TurnDeg)
	return p
}

func dist(g *Grid, a, b Cell) float64 {
	return g.Size * math.Hypot(float64(a.Col-b.Col), float64(a.Row-b.Row))
}

// turn returns the heading change at b between a->b and b->c, degrees in
// [0, 180].
func turn(a, b, c Cell) float64 {
	h1 := math.Atan2(float64(b.Row-a.Row), float64(b.Col-a.Col))
	h2 := math.Atan2(float64(c.Row-b.Row), float64(c.Col-b.Col))
	d := math.Abs(h2-h1) * 180 / math.Pi
	if d > 180 {
		d = 360 - d
	}
	return d
}

// ErrNoCells is returned for a grid without free cells to visit.
var ErrNoCells = errors.New("no free cells")

// neighbours8 are the steps to the eight neighbouring cells, in a fixed
// order.
var neighbours8 = [8]Cell{{1, 0}, {0, 1}, {-1, 0}, {0, -1}, {1, 1}, {-1, 1}, {-1, -1}, {1, -1}}

// step reports whether the step from c by d lands on a free cell of the
// grid along a clear leg.
func (g *Grid) step(c, d Cell) (Cell, bool) {
	n := Cell{c.Col + d.Col, c.Row + d.Row}
	if !g.in(n) || g.Blocked[n] {
		return n, false
	}
	if d.Col != 0 && d.Row != 0 && !g.Clear(c, n) {
		return n, false
	}
	return n, true
}

// reachable returns the free cells reachable from start by clear steps.
func (g *Grid) reachable(start Cell) map[Cell]bool {
	seen := map[Cell]bool{start: true}
	queue := []Cell{start}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for _, d := range neighbours8 {
			if n, ok := g.step(c, d); ok && !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	return seen
}

// routes returns, for every cell reachable from a, a shortest route of
// clear steps from a to it (Dijkstra; ties go to the first found, so the
// routes are deterministic).
func (g *Grid) routes(a Cell) map[Cell][]Cell {
	type item struct {
		c Cell
		d float64
	}
	distTo := map[Cell]float64{a: 0}
	parent := map[Cell]Cell{}
	done := map[Cell]bool{}
	open := []item{{a, 0}}
	for len(open) > 0 {
		k := 0
		for i := range open {
			if open[i].d < open[k].d {
				k = i
			}
		}
		it := open[k]
		open = append(open[:k], open[k+1:]...)
		if done[it.c] {
			continue
		}
		done[it.c] = true
		for _, d := range neighbours8 {
			n, ok := g.step(it.c, d)
			if !ok || done[n] {
				continue
			}
			nd := it.d + math.Hypot(float64(d.Col), float64(d.Row))
			if old, seen := distTo[n]; !seen || nd < old-1e-12 {
				distTo[n], parent[n] = nd, it.c
				open = append(open, item{n, nd})
			}
		}
	}
	out := make(map[Cell][]Cell, len(done))
	for c := range done {
		var r []Cell
		for x := c; x != a; x = parent[x] {
			r = append(r, x)
		}
		r = append(r, a)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		out[c] = r
	}
	return out
}

// straighten shortens a route to its turn points: from each kept cell it
// jumps to the farthest later cell of the route that a clear leg reaches.
func (g *Grid) straighten(r []Cell) []Cell {
	out := []Cell{r[0]}
	for cur := 0; cur < len(r)-1; {
		next := cur + 1
		for m := len(r) - 1; m > cur+1; m-- {
			if g.Clear(r[cur], r[m]) {
				next = m
				break
			}
		}
		out = append(out, r[next])
		cur = next
	}
	return out
}
