package plan

import (
	"math"
	"math/rand/v2"
	"testing"
)

// brute returns the least energy over every visiting order from start.
func brute(g *Grid, start Cell) float64 {
	p, _ := newProblem(g, start)
	n := len(p.cells)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	best := math.Inf(1)
	var perm func(k int)
	perm = func(k int) {
		if k == n {
			best = min(best, p.cost(order))
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
// trying every order finds.
func TestOptimalIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 60; trial++ {
		g, s := randomGrid(rng, 3, 3, 8)
		opt, err := Optimal(g, s)
		if err != nil {
			t.Fatal(err)
		}
		if want := brute(g, s); math.Abs(opt.Energy-want) > 1e-9 {
			t.Fatalf("trial %d: Optimal %v J, every order %v J", trial, opt.Energy, want)
		}
		if opt.Covered != len(g.reachable(s)) {
			t.Fatalf("trial %d: covered %d of %d", trial, opt.Covered, len(g.reachable(s)))
		}
	}
}

// TestTurnAwareFindsTheOptimum: on every one of 150 random grids of at
// most 12 free cells, the local search finds the exact optimum.
func TestTurnAwareFindsTheOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 150; trial++ {
		g, s := randomGrid(rng, 4, 4, 12)
		opt, err := Optimal(g, s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := TurnAware(g, s, uint64(trial), 20)
		if err != nil {
			t.Fatal(err)
		}
		if got.Energy > opt.Energy+1e-9 {
			t.Fatalf("trial %d (%d free cells): TurnAware %.4f J, the optimum %.4f J\n%v\n%v", trial, len(g.Free()), got.Energy, opt.Energy, got.Path, opt.Path)
		}
		if got.Crossings != 0 {
			t.Fatalf("trial %d: %d legs cross obstacles: %v", trial, got.Crossings, got.Path)
		}
		if got.Covered != len(g.reachable(s)) {
			t.Fatalf("trial %d: covered %d of %d", trial, got.Covered, len(g.reachable(s)))
		}
	}
}

// TestSurveyGrid: SPEC.md D (4)'s 8 x 15 grid with obstacles: both
// planners cover every reachable cell, the turn-aware plan costs less
// than the depth-limited search's, and the same seed gives the same plan.
func TestSurveyGrid(t *testing.T) {
	g := &Grid{Cols: 15, Rows: 8, Size: 10, Blocked: map[Cell]bool{}, Energy: DefaultEnergy}
	for _, c := range []Cell{{4, 2}, {4, 3}, {4, 4}, {10, 4}, {10, 5}, {11, 4}, {11, 5}, {7, 7}} {
		g.Blocked[c] = true
	}
	start := Cell{0, 0}
	ta, err := TurnAware(g, start, 1, 20)
	if err != nil {
		t.Fatal(err)
	}
	dls, err := DLS(g, start, 0)
	if err != nil {
		t.Fatal(err)
	}
	free := len(g.Free())
	if ta.Covered != free || dls.Covered != free {
		t.Fatalf("covered %d and %d of %d", ta.Covered, dls.Covered, free)
	}
	if ta.Crossings != 0 || dls.Crossings != 0 {
		t.Fatalf("the plans cross obstacles: turn-aware %d legs, DLS %d", ta.Crossings, dls.Crossings)
	}
	t.Logf("turn-aware: %.1f m, %d turns (%.0f deg), %.1f J; DLS: %.1f m, %d turns (%.0f deg), %.1f J",
		ta.Distance, ta.Turns, ta.TurnDeg, ta.Energy, dls.Distance, dls.Turns, dls.TurnDeg, dls.Energy)
	if ta.Energy >= dls.Energy {
		t.Errorf("turn-aware %.1f J, DLS %.1f J: the planner should beat the baseline", ta.Energy, dls.Energy)
	}
	again, _ := TurnAware(g, start, 1, 20)
	if again.Energy != ta.Energy || len(again.Path) != len(ta.Path) {
		t.Error("the same seed gave another plan")
	}
	if _, err := TurnAware(g, Cell{4, 2}, 1, 1); err == nil {
		t.Error("a start on an obstacle was accepted")
	}
}

// TestMovePricing: the O(1) price of every 2-opt and Or-opt move equals
// the full evaluation of the order it makes.
func TestMovePricing(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 20; trial++ {
		g, s := randomGrid(rng, 5, 4, 20)
		p, _ := newProblem(g, s)
		n := len(p.cells)
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		rng.Shuffle(n-1, func(i, j int) { order[i+1], order[j+1] = order[j+1], order[i+1] })
		tr := &tour{p: p, o: order, e: make([]float64, n), tc: make([]float64, n)}
		tr.reset()
		check := func(mv move) {
			tr.spans(mv)
			var cand []int
			for q := 0; q < tr.ns; q++ {
				for i := 0; i <= tr.sp[q].b-tr.sp[q].a; i++ {
					cand = append(cand, tr.at(q, i))
				}
			}
			if len(cand) != n {
				t.Fatalf("move %+v makes %d cells of %d", mv, len(cand), n)
			}
			if got, want := tr.cost(), p.cost(cand); math.Abs(got-want) > 1e-9 {
				t.Fatalf("move %+v: priced %v J, costs %v J", mv, got, want)
			}
		}
		for i := 1; i < n-1; i++ {
			for j := i + 1; j < n; j++ {
				check(move{i: i, j: j})
			}
		}
		for l := 1; l <= 3; l++ {
			for i := 1; i+l <= n; i++ {
				for k := 1; k <= n-l; k++ {
					if k != i {
						check(move{or: true, i: i, l: l, k: k})
						check(move{or: true, i: i, l: l, k: k, rev: true})
					}
				}
			}
		}
	}
}

// BenchmarkSurveyGrid plans SPEC.md D (4)'s 8 x 15 grid with 20 restarts.
func BenchmarkSurveyGrid(b *testing.B) {
	g := &Grid{Cols: 15, Rows: 8, Size: 10, Blocked: map[Cell]bool{}, Energy: DefaultEnergy}
	for _, c := range []Cell{{4, 2}, {4, 3}, {4, 4}, {10, 4}, {10, 5}, {11, 4}, {11, 5}, {7, 7}} {
		g.Blocked[c] = true
	}
	for b.Loop() {
		if _, err := TurnAware(g, Cell{0, 0}, 1, 20); err != nil {
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
	def, _ := TurnAware(grid(DefaultEnergy), Cell{0, 0}, 1, 20)
	flat, _ := TurnAware(grid(Energy{PerMetre: JoulesPerMetre}), Cell{0, 0}, 1, 20)
	steep, _ := TurnAware(grid(Energy{PerMetre: JoulesPerMetre, PerDegree: 10 * JoulesPerDegree}), Cell{0, 0}, 1, 20)
	t.Logf("default %.0f m, %.0f deg; turns free %.0f m, %.0f deg; turns x10 %.0f m, %.0f deg",
		def.Distance, def.TurnDeg, flat.Distance, flat.TurnDeg, steep.Distance, steep.TurnDeg)
	if flat.Distance > def.Distance+1e-9 || steep.TurnDeg > def.TurnDeg+1e-9 {
		t.Error("the energy model does not steer the plan")
	}
	if flat.Energy != JoulesPerMetre*flat.Distance {
		t.Errorf("a model without turn costs priced the plan at %v J for %v m", flat.Energy, flat.Distance)
	}
	if _, err := TurnAware(grid(Energy{PerMetre: 0, PerDegree: 1}), Cell{0, 0}, 1, 1); err == nil {
		t.Error("a model with no cost per metre was accepted")
	}
}
