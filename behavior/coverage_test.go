package behavior

import (
	"strings"
	"testing"

	"skyloop/geom"
	"skyloop/plan"
)

// TestCoverCheck: a cell counts as covered only when the track passes
// within the radius of its centre. A track that passes 3 m off the middle
// cell's centre misses it at 2.5 m and covers it at 3.5 m; one that passes
// 2 m off covers it; a single long leg over the row covers every cell
// (the check looks at the cells along a segment, not only its ends).
func TestCoverCheck(t *testing.T) {
	g := &plan.Grid{Cols: 3, Rows: 2, Size: 10, Blocked: map[plan.Cell]bool{}, Energy: plan.DefaultEnergy}
	path := []plan.Cell{{Col: 0, Row: 0}, {Col: 1, Row: 0}, {Col: 2, Row: 0}}
	fly := func(pts ...geom.Vec3) *coverCheck {
		k := newCoverCheck(g, [2]float64{100, 200})
		for _, p := range pts {
			k.add(p.Add(geom.V(100, 200, 10)))
		}
		return &k
	}
	off3 := fly(geom.V(5, 5, 0), geom.V(10, 8, 0), geom.V(20, 8, 0), geom.V(25, 5, 0))
	r := off3.result(path, 2.5, true)
	if r["cells"] != 2 || r["planned"] != 3 || len(r["missed"].([][2]int)) != 1 || r["missed"].([][2]int)[0] != [2]int{1, 0} {
		t.Errorf("3 m off the middle cell, radius 2.5 m: %v, want it missed", r)
	}
	if w := r["worst_m"].(float64); w != 3 {
		t.Errorf("worst miss %v m, want 3", w)
	}
	if r := off3.result(path, 3.5, true); r["cells"] != 3 {
		t.Errorf("3 m off, radius 3.5 m: %v, want all covered", r)
	}
	if r := fly(geom.V(5, 5, 0), geom.V(10, 7, 0), geom.V(20, 7, 0), geom.V(25, 5, 0)).result(path, 2.5, true); r["cells"] != 3 || len(r["missed"].([][2]int)) != 0 {
		t.Errorf("2 m off, radius 2.5 m: %v, want all covered", r)
	}
	if r := fly(geom.V(-3, 6, 0), geom.V(33, 6, 0)).result(path, 2.5, false); r["cells"] != 3 || r["track"] != "estimate" {
		t.Errorf("one leg over the row: %v, want all covered (by the estimate)", r)
	}
	// A cell never approached is missed, and a track that stays away
	// from the grid leaves no worst miss to report.
	if r := fly(geom.V(500, 500, 0)).result(path, 2.5, true); r["cells"] != 0 || r["worst_m"] != nil {
		t.Errorf("a track far away: %v", r)
	}
}

// TestCoverRadiusDefault: cover_radius 0 is a quarter of the cell, and a
// negative radius or one beyond half a cell is refused naming the key.
func TestCoverRadiusDefault(t *testing.T) {
	p := DefaultCoverageParams()
	p.Area = [2]float64{30, 20}
	if r := p.coverRadius(); r != 2.5 {
		t.Errorf("default radius %v m for 10 m cells, want 2.5", r)
	}
	for _, bad := range []float64{-1, 5.01} {
		p.CoverRadius = bad
		if msg := p.Validate()["cover_radius"]; !strings.Contains(msg, "half the 10 m cell") {
			t.Errorf("cover_radius %v: %q", bad, msg)
		}
	}
	p.CoverRadius = 5
	if msg, ok := p.Validate()["cover_radius"]; ok {
		t.Errorf("cover_radius 5 refused: %s", msg)
	}
}
