package plan

import (
	"math"
	"math/rand/v2"
	"testing"
)

// brute returns the least energy over every visiting order from start
// (back to it, for a Closed tour).
func brute(g *Grid, start Cell, tour Tour) float64 {
	p, _ := newProblem(g, start, tour)
	n := len(p.cells)
	order := make([]int, n, n+1)
	for i := range order {
		order[i] = i
	}
	best := math.Inf(1)
	var perm func(k int)
	perm = func(k int) {
		if k == n {
			if tour == Closed {
				best = min(best, p.cost(append(order, 0)))
			} else {
				best = min(best, p.cost(order))
			}
			return
		}
		for i := k; i < n; i++ {
			order[k], order[i] = order[i], order[k]
			perm(k + 1)
			order[k], order[i] = order[i], order[k]
		}
	}
	perm(1)
	return best
}

func randomGrid(rng *rand.Rand, cols, rows, maxFree int) (*Grid, Cell) {
	for {
		g := &Grid{Cols: cols, Rows: rows, Size: 10, Blocked: map[Cell]bool{}, Energy: DefaultEnergy}
		free := cols * rows
		for free > maxFree || rng.IntN(3) == 0 {
			c := Cell{rng.IntN(cols), rng.IntN(rows)}
			if !g.Blocked[c] {
				g.Blocked[c] = true
				free--
			}
			if free <= 2 {
				break
			}
		}
		fr := g.Free()
		if len(fr) >= 3 {
			return g, fr[rng.IntN(len(fr))]
		}
	}
}

// TestOptimalIsExact: the dynamic programme finds the least energy that
// trying every order finds, for open paths and closed tours.
func TestOptimalIsExact(t *testing.T) {
	for _, tour := range []Tour{Open, Closed} {
		rng := rand.New(rand.NewPCG(1, 2))
		for trial := 0; trial < 60; trial++ {
			g, s := randomGrid(rng, 3, 3, 8)
			opt, err := optimal(g, s, tour)
			if err != nil {
				t.Fatal(err)
			}
			if want := brute(g, s, tour); math.Abs(opt.Energy-want) > 1e-9 {
				t.Fatalf("%v trial %d: Optimal %v J, every order %v J", tour, trial, opt.Energy, want)
			}
			if opt.Covered != len(g.reachable(s)) {
				t.Fatalf("%v trial %d: covered %d of %d", tour, trial, opt.Covered, len(g.reachable(s)))
			}
			if last := opt.Path[len(opt.Path)-1]; (last == s) != (tour == Closed) {
				t.Fatalf("%v trial %d: the path ends at %v, starting at %v", tour, trial, last, s)
			}
		}
	}
}

// TestTurnAwareFindsTheOptimum: on every one of 150 random grids of at
// most 12 free cells, the local search finds the exact optimum, of open
// paths and of closed tours.
func TestTurnAwareFindsTheOptimum(t *testing.T) {
	for _, tour := range []Tour{Open, Closed} {
		testTurnAwareOptimum(t, tour)
	}
}

func testTurnAwareOptimum(t *testing.T, tour Tour) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 150; trial++ {
		g, s := randomGrid(rng, 4, 4, 12)
		opt, err := optimal(g, s, tour)
		if err != nil {
			t.Fatal(err)
		}
		got, err := TurnAware(g, s, uint64(trial), 20, tour)
		if err != nil {
			t.Fatal(err)
		}
		if got.Energy > opt.Energy+1e-9 {
			t.Fatalf("%v trial %d (%d free cells): TurnAware %.4f J, the optimum %.4f J\n%v\n%v", tour, trial, len(g.Free()), got.Energy, opt.Energy, got.Path, opt.Path)
		}
		if got.Crossings != 0 {
			t.Fatalf("trial %d: %d legs cross obstacles: %v", trial, got.Crossings, got.Path)
		}
		if got.Covered != len(g.reachable(s)) {
			t.Fatalf("trial %d: covered %d of %d", trial, got.Covered, len(g.reachable(s)))
		}
	}
}

// surveyGrid is UB-ANC's coverage planning 8 x 15 grid with its 8 obstacle cells.
func surveyGrid() *Grid {
	g := &Grid{Cols: 15, Rows: 8, Size: 10, Blocked: map[Cell]bool{}, Energy: DefaultEnergy}
	for _, c := range []Cell{{4, 2}, {4, 3}, {4, 4}, {10, 4}, {10, 5}, {11, 4}, {11, 5}, {7, 7}} {
		g.Blocked[c] = true
	}
	return g
}

// TestSurveyGrid: UB-ANC's coverage planning 8 x 15 grid with obstacles: both
// planners cover every reachable cell without crossing an obstacle, a
// closed tour ends at the start and an open path elsewhere, the
// turn-aware plan costs less than the depth-limited search's, DLS flies
// less than 10% farther (it backtracks straight to the next cell, not back
// over its stack: 24% farther before), and the same seed gives the same
// plan.
func TestSurveyGrid(t *testing.T) {
	g := surveyGrid()
	start := Cell{0, 0}
	for _, tour := range []Tour{Closed, Open} {
		ta, err := TurnAware(g, start, 1, 20, tour)
		if err != nil {
			t.Fatal(err)
		}
		dls, err := DLS(g, start, 0, tour)
		if err != nil {
			t.Fatal(err)
		}
		free := len(g.Free())
		if ta.Covered != free || dls.Covered != free {
			t.Fatalf("%v: covered %d and %d of %d", tour, ta.Covered, dls.Covered, free)
		}
		if ta.Crossings != 0 || dls.Crossings != 0 {
			t.Fatalf("%v: the plans cross obstacles: turn-aware %d legs, DLS %d", tour, ta.Crossings, dls.Crossings)
		}
		for name, p := range map[string]Plan{"turn-aware": ta, "DLS": dls} {
			if last := p.Path[len(p.Path)-1]; (last == start) != (tour == Closed) {
				t.Errorf("%v %s: the path ends at %v", tour, name, last)
			}
		}
		t.Logf("%v: turn-aware: %.1f m, %d turns (%.0f deg), %.1f J; DLS: %.1f m, %d turns (%.0f deg), %.1f J; DLS/turn-aware %.3f in distance",
			tour, ta.Distance, ta.Turns, ta.TurnDeg, ta.Energy, dls.Distance, dls.Turns, dls.TurnDeg, dls.Energy, dls.Distance/ta.Distance)
		if ta.Energy >= dls.Energy {
			t.Errorf("%v: turn-aware %.1f J, DLS %.1f J: the planner should beat the baseline", tour, ta.Energy, dls.Energy)
		}
		if dls.Distance >= 1.10*ta.Distance {
			t.Errorf("%v: DLS flies %.1f m, turn-aware %.1f m: want DLS less than 10%% farther", tour, dls.Distance, ta.Distance)
		}
		again, _ := TurnAware(g, start, 1, 20, tour)
		if again.Energy != ta.Energy || len(again.Path) != len(ta.Path) {
			t.Errorf("%v: the same seed gave another plan", tour)
		}
	}
	if _, err := TurnAware(g, Cell{4, 2}, 1, 1, Open); err == nil {
		t.Error("a start on an obstacle was accepted")
	}
	if _, err := DLS(g, start, 0, Tour(7)); err == nil {
		t.Error("tour 7 was accepted")
	}
}

// TestDLSTours: on random grids, DLS covers every cell the four
// neighbours reach from the start, never crosses an obstacle (its
// backtracking legs are clear), and a closed tour ends at the start.
func TestDLSTours(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 200; trial++ {
		g, s := randomGrid(rng, 7, 6, 30)
		reach := map[Cell]bool{s: true}
		queue := []Cell{s}
		for len(queue) > 0 {
			c := queue[0]
			queue = queue[1:]
			for _, d := range []Cell{{1, 0}, {0, 1}, {-1, 0}, {0, -1}} {
				if n := (Cell{c.Col + d.Col, c.Row + d.Row}); g.in(n) && !g.Blocked[n] && !reach[n] {
					reach[n] = true
					queue = append(queue, n)
				}
			}
		}
		for _, tour := range []Tour{Closed, Open} {
			p, err := DLS(g, s, 0, tour)
			if err != nil {
				t.Fatal(err)
			}
			if p.Covered != len(reach) || p.Crossings != 0 {
				t.Fatalf("%v trial %d: covered %d of %d, %d crossings: %v", tour, trial, p.Covered, len(reach), p.Crossings, p.Path)
			}
			if tour == Closed && len(reach) > 1 && p.Path[len(p.Path)-1] != s {
				t.Fatalf("closed trial %d: ends at %v, not the start %v", trial, p.Path[len(p.Path)-1], s)
			}
		}
	}
}

// TestMovePricing: the O(1) price of every 2-opt and Or-opt move equals
// the full evaluation of the order it makes, for open paths and for
// closed tours (whose final return to the start no move shifts).
func TestMovePricing(t *testing.T) {
	for _, kind := range []Tour{Open, Closed} {
		rng := rand.New(rand.NewPCG(5, 6))
		for trial := 0; trial < 20; trial++ {
			g, s := randomGrid(rng, 5, 4, 20)
			p, _ := newProblem(g, s, kind)
			n := len(p.cells)
			order := make([]int, n)
			for i := range order {
				order[i] = i
			}
			rng.Shuffle(n-1, func(i, j int) { order[i+1], order[j+1] = order[j+1], order[i+1] })
			hi := n - 1
			if kind == Closed {
				order = append(order, 0)
			}
			m := len(order)
			tr := &tour{p: p, o: order, e: make([]float64, m), tc: make([]float64, m)}
			tr.reset()
			check := func(mv move) {
				tr.spans(mv)
				var cand []int
				for q := 0; q < tr.ns; q++ {
					for i := 0; i <= tr.sp[q].b-tr.sp[q].a; i++ {
						cand = append(cand, tr.at(q, i))
					}
				}
				if len(cand) != m {
					t.Fatalf("%v: move %+v makes %d cells of %d", kind, mv, len(cand), m)
				}
				if cand[0] != 0 || (kind == Closed && cand[m-1] != 0) {
					t.Fatalf("%v: move %+v moves the start: %v", kind, mv, cand)
				}
				if got, want := tr.cost(), p.cost(cand); math.Abs(got-want) > 1e-9 {
					t.Fatalf("%v: move %+v: priced %v J, costs %v J", kind, mv, got, want)
				}
			}
			for i := 1; i < hi; i++ {
				for j := i + 1; j <= hi; j++ {
					check(move{i: i, j: j})
				}
			}
			for l := 1; l <= 3; l++ {
				for i := 1; i+l-1 <= hi; i++ {
					for k := 1; k <= hi+1-l; k++ {
						if k != i {
							check(move{or: true, i: i, l: l, k: k})
							check(move{or: true, i: i, l: l, k: k, rev: true})
						}
					}
				}
			}
		}
	}
}

// BenchmarkSurveyGrid plans UB-ANC's coverage planning 8 x 15 grid with 20 restarts.
func BenchmarkSurveyGrid(b *testing.B) {
	g := surveyGrid()
	for b.Loop() {
		if _, err := TurnAware(g, Cell{0, 0}, 1, 20, Open); err != nil {
			b.Fatal(err)
		}
	}
}

// TestClear: legs between neighbours are clear, a leg through or past the
// corner of an obstacle is not, and the survey plan crosses no obstacle.
func TestClear(t *testing.T) {
	g := &Grid{Cols: 4, Rows: 4, Size: 10, Blocked: map[Cell]bool{{1, 1}: true}, Energy: DefaultEnergy}
	for _, c := range []struct {
		a, b Cell
		want bool
	}{
		{Cell{0, 0}, Cell{1, 0}, true},  // neighbours beside the obstacle
		{Cell{0, 0}, Cell{3, 0}, true},  // along the row below it
		{Cell{0, 1}, Cell{2, 1}, false}, // through it
		{Cell{0, 0}, Cell{2, 2}, false}, // diagonally through it
		{Cell{1, 0}, Cell{2, 1}, false}, // past its corner
		{Cell{0, 2}, Cell{1, 3}, true},  // a diagonal one cell away
		{Cell{0, 0}, Cell{0, 3}, true},  // the column beside it
		{Cell{0, 0}, Cell{3, 1}, false}, // a long leg grazing it
	} {
		if got := g.Clear(c.a, c.b); got != c.want {
			t.Errorf("Clear(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestEnergyModelSteersThePlan: pricing turns at nothing gives a path no
// longer than the default model's, pricing them ten times higher one with
// no more turning; a bad model is refused.
func TestEnergyModelSteersThePlan(t *testing.T) {
	grid := func(e Energy) *Grid {
		g := &Grid{Cols: 15, Rows: 8, Size: 10, Blocked: map[Cell]bool{}, Energy: e}
		for _, c := range []Cell{{4, 2}, {4, 3}, {4, 4}, {10, 4}, {10, 5}, {11, 4}, {11, 5}, {7, 7}} {
			g.Blocked[c] = true
		}
		return g
	}
	def, _ := TurnAware(grid(DefaultEnergy), Cell{0, 0}, 1, 20, Open)
	flat, _ := TurnAware(grid(Energy{PerMetre: JoulesPerMetre}), Cell{0, 0}, 1, 20, Open)
	steep, _ := TurnAware(grid(Energy{PerMetre: JoulesPerMetre, PerDegree: 10 * JoulesPerDegree}), Cell{0, 0}, 1, 20, Open)
	t.Logf("default %.0f m, %.0f deg; turns free %.0f m, %.0f deg; turns x10 %.0f m, %.0f deg",
		def.Distance, def.TurnDeg, flat.Distance, flat.TurnDeg, steep.Distance, steep.TurnDeg)
	if flat.Distance > def.Distance+1e-9 || steep.TurnDeg > def.TurnDeg+1e-9 {
		t.Error("the energy model does not steer the plan")
	}
	if flat.Energy != JoulesPerMetre*flat.Distance {
		t.Errorf("a model without turn costs priced the plan at %v J for %v m", flat.Energy, flat.Distance)
	}
	if _, err := TurnAware(grid(Energy{PerMetre: 0, PerDegree: 1}), Cell{0, 0}, 1, 1, Open); err == nil {
		t.Error("a model with no cost per metre was accepted")
	}
}
