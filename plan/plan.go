// Package plan plans coverage paths over a grid of cells by energy: the
// path visits the centre of every free cell once, starting from a given
// cell, and costs SPEC.md D's empirical planning model, 0.1164 J per metre
// flown plus 0.0173 J per degree turned (autopilot.PlanningEnergy's
// constants). TurnAware searches for the cheapest such path (a generalised
// travelling-salesman path whose cost depends on consecutive triples) with
// 2-opt and Or-opt moves from seeded random restarts; DLS is the
// depth-limited search with backtracking it is compared with.
package plan

import (
	"errors"
	"fmt"
	"math"
)

// Energy model constants (SPEC.md D (4)).
const (
	JoulesPerMetre  = 0.1164
	JoulesPerDegree = 0.0173
)

// Cell is a grid cell by column and row.
type Cell struct{ Col, Row int }

// Grid is a rectangular area of square cells; Blocked cells (obstacles)
// are not visited and cannot be flown over by DLS's moves.
type Grid struct {
	Cols, Rows int
	Size       float64 // cell side, m
	Blocked    map[Cell]bool
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

// Plan is a coverage path and its figures.
type Plan struct {
	Path     []Cell  // the cells in visiting order (DLS: with the cells flown back over)
	Covered  int     // distinct cells visited
	Distance float64 // m
	Turns    int     // heading changes
	TurnDeg  float64 // sum of the heading changes, degrees
	Energy   float64 // J
}

// Evaluate returns the plan figures of flying path on g.
func Evaluate(g *Grid, path []Cell) Plan {
	p := Plan{Path: path}
	seen := map[Cell]bool{}
	for i, c := range path {
		seen[c] = true
		if i > 0 {
			p.Distance += dist(g, path[i-1], c)
		}
		if i > 1 {
			if a := turn(path[i-2], path[i-1], c); a > 1e-9 {
				p.Turns++
				p.TurnDeg += a
			}
		}
	}
	p.Covered = len(seen)
	p.Energy = JoulesPerMetre*p.Distance + JoulesPerDegree*p.TurnDeg
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
