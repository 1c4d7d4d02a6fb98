package behavior

import (
	"slices"
	"testing"

	"skyloop/geom"
)

// gcsWith returns a station whose vehicles fly from the first to the second
// of their positions.
func gcsWith(clearance float64, legs ...[]geom.Vec3) *GCS {
	g := &GCS{p: &GCSParams{Clearance: clearance, Legs: make([]geom.Layout, len(legs[0]))}}
	g.v = make([]gcsVehicle, len(legs))
	for i, l := range legs {
		g.v[i] = gcsVehicle{targets: l, sentLeg: -1}
	}
	g.orderStarts()
	return g
}

// TestGCSOrdersStartsOnASharedLine: three vehicles on one line flying
// outwards (munils-50's row through the centre) leave outermost first, so a
// lost command delays the one behind instead of letting it overtake; a
// vehicle that is not in anyone's way waits for nobody.
func TestGCSOrdersStartsOnASharedLine(t *testing.T) {
	g := gcsWith(2,
		[]geom.Vec3{{X: -13.5, Z: 8}, {X: -67.5, Z: 15}}, // outermost
		[]geom.Vec3{{X: -10.5, Z: 8}, {X: -52.5, Z: 15}},
		[]geom.Vec3{{X: -7.5, Z: 8}, {X: -37.5, Z: 15}},
		[]geom.Vec3{{X: -7.5, Y: 6, Z: 8}, {X: -37.5, Y: 30, Z: 15}}, // another ray
	)
	want := [][]int{nil, {0}, {0, 1}, nil}
	for i := range want {
		if got := g.v[i].waitFor[1]; !slices.Equal(got, want[i]) {
			t.Errorf("vehicle %d waits for %v, want %v", i, got, want[i])
		}
	}
	if !g.blocked(2, 1) {
		t.Error("the innermost vehicle may leave before those ahead of it")
	}
	g.v[0].hasTelem, g.v[0].telem.Leg = true, 1
	g.v[1].hasTelem, g.v[1].telem.Leg = true, 0
	if !g.blocked(2, 1) || g.blocked(1, 1) {
		t.Error("vehicle 1 must go once vehicle 0 left, and vehicle 2 only after vehicle 1")
	}
	g.v[1].telem.Leg = 1
	if g.blocked(2, 1) {
		t.Error("vehicle 2 still blocked after both ahead of it left")
	}
}

// TestGCSOrderNeverDeadlocks: vehicles that swap places pass through each
// other's start; no order helps, so neither waits (and the station never
// stops commanding them).
func TestGCSOrderNeverDeadlocks(t *testing.T) {
	g := gcsWith(2,
		[]geom.Vec3{{X: 0, Z: 10}, {X: 20, Z: 10}},
		[]geom.Vec3{{X: 20, Z: 10}, {X: 0, Z: 10}},
		[]geom.Vec3{{X: 10, Y: 1, Z: 10}, {X: 10, Y: 30, Z: 10}}, // on both paths
	)
	for i := range g.v {
		t.Logf("vehicle %d waits for %v", i, g.v[i].waitFor[1])
	}
	if len(g.v[0].waitFor[1]) != 1 || len(g.v[1].waitFor[1]) != 1 || g.v[0].waitFor[1][0] != 2 || g.v[1].waitFor[1][0] != 2 {
		t.Errorf("the swapping vehicles must wait only for the one in both their ways")
	}
	// A three-cycle: each one's start lies on the next one's path.
	g = gcsWith(2,
		[]geom.Vec3{{X: 0, Y: 0}, {X: 20, Y: 0}},
		[]geom.Vec3{{X: 10, Y: 0}, {X: 10, Y: 20}},
		[]geom.Vec3{{X: 10, Y: 10}, {X: -10, Y: -10}},
	)
	for i := range g.v {
		if len(g.v[i].waitFor[1]) != 0 {
			t.Errorf("vehicle %d in a cycle waits for %v", i, g.v[i].waitFor[1])
		}
	}
}
