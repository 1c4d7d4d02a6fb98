package firmware

import (
	"strings"
	"testing"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// TestGround: the contact at the start is no event; leaving the ground
// and coming back are one event each once held GroundHold, bounces
// included.
func TestGround(t *testing.T) {
	var b Bridge
	var ev vehicle.Events
	s := &vehicle.Sensors{Contact: true, Truth: vehicle.Pose{Pos: geom.V(1, 2, 0)}}
	contact := func(from, to sim.Duration, c bool) {
		for d := from; d < to; d += 4 * sim.Millisecond {
			s.Contact = c
			b.Ground(sim.Time(d), s, &ev)
		}
	}
	contact(0, sim.Second, true)
	contact(sim.Second, 1100*sim.Millisecond, false) // a hop shorter than GroundHold
	contact(1100*sim.Millisecond, 2*sim.Second, true)
	contact(2*sim.Second, 5*sim.Second, false)
	contact(5*sim.Second, 5100*sim.Millisecond, true) // a bounce
	contact(5100*sim.Millisecond, 5200*sim.Millisecond, false)
	contact(5200*sim.Millisecond, 7*sim.Second, true)
	var got []string
	for _, e := range ev.List {
		got = append(got, e.Name+"@"+sim.Duration(e.T).String()+" "+e.Text())
	}
	want := "takeoff@2.3s 1.00 2.00, touchdown@5.5s 1.00 2.00"
	if strings.Join(got, ", ") != want {
		t.Errorf("events %v, want %s", got, want)
	}
}
