package autopilot

import (
	"fmt"
	"math"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// PathFlight is what flying one path of turn points cost: its planned
// length and turns (the planning model's inputs) and the flight's time
// and physics battery energy, from the first goto to the arrival at the
// last point.
type PathFlight struct {
	Name    string  // what the path is, e.g. "straight 40 m" or "turn 90 deg"
	Metres  float64 // the path's length, m
	TurnDeg float64 // the sum of its heading changes, degrees
	Turns   int     // heading changes
	Seconds float64 // flight time, s
	Joules  float64 // physics battery energy, J
}

// FlyPath flies one vehicle of cfg (which must be valid, with physics and
// control periods whole multiples of 1 ms) through points
// as the coverage behaviour flies its turn points: it starts hovering over
// points[0], settles for 3 s, then is sent to each next point in turn
// (facing it, at speed m/s) once its position is within accept m of the
// previous one, checked every 20 ms. seed drives the sensor noise and the
// turbulence.
func FlyPath(cfg *Config, points []geom.Vec3, speed, accept float64, seed uint64) (PathFlight, error) {
	if len(points) < 2 {
		return PathFlight{}, fmt.Errorf("a path needs at least 2 points, got %d", len(points))
	}
	var f PathFlight
	for i := 1; i < len(points); i++ {
		f.Metres += points[i].Sub(points[i-1]).Norm()
		if i > 1 {
			if d := turnDeg(points[i-2], points[i-1], points[i]); d > 1e-9 {
				f.TurnDeg += d
				f.Turns++
			}
		}
	}
	sh := NewShared(cfg)
	v := New(sh, points[0], 0, sim.Stream(seed, "turbulence", 0), sim.Stream(seed, "sensors", 0))
	var ev vehicle.Events
	var t sim.Time
	// As a run steps it: the controller every control period, the
	// physics every physics period, both multiples of 1 ms.
	tm := v.Timing()
	ctrlEvery, physEvery := int64(tm.Control/sim.Millisecond), int64(tm.Physics/sim.Millisecond)
	step := func() {
		k := int64(t) / int64(sim.Millisecond)
		if k%ctrlEvery == 0 {
			v.Control(t, &ev)
		}
		if k%physEvery == 0 {
			v.Step(t, &ev)
		}
		t = t.Add(sim.Millisecond)
	}
	for t < sim.Time(3*sim.Second) {
		step()
	}
	send := func(i int) {
		d := points[i].Sub(v.Telemetry().Pos)
		yaw := math.NaN()
		if d.NormXY() > accept {
			yaw = math.Atan2(d.Y, d.X)
		}
		v.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: points[i], Speed: speed, Yaw: yaw})
	}
	t0, e0 := t, v.Telemetry().Energy
	next := 1
	send(next)
	const check = 20 * sim.Millisecond
	limit := t.Add(sim.Duration(10*f.Metres/speed+120) * sim.Second)
	for {
		for k := 0; k < int(check/sim.Millisecond); k++ {
			step()
		}
		tel := v.Telemetry()
		if tel.Pos.Dist(points[next]) <= accept {
			next++
			if next == len(points) {
				f.Seconds = sim.Duration(t - t0).Seconds()
				f.Joules = tel.Energy - e0
				return f, nil
			}
			send(next)
		}
		if t > limit {
			return f, fmt.Errorf("the vehicle did not reach point %d of %d (%v) in %.0f s", next, len(points)-1, points[next], sim.Duration(t-t0).Seconds())
		}
	}
}

// turnDeg returns the heading change at b between a->b and b->c in the
// horizontal plane, degrees in [0, 180].
func turnDeg(a, b, c geom.Vec3) float64 {
	h1 := math.Atan2(b.Y-a.Y, b.X-a.X)
	h2 := math.Atan2(c.Y-b.Y, c.X-b.X)
	return math.Abs(geom.WrapAngle(h2-h1)) * 180 / math.Pi
}
