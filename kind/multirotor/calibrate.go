package multirotor

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

// Calibration is a planning energy model fitted to calibration flights:
// PerMetre J/m and PerDegree J/deg, and Fixed J per path (the start and
// the stop at its ends, which the planning model leaves out), by least
// squares over Flights.
type Calibration struct {
	Preset    string
	WPNav     string  // the controller's wp_nav
	Speed     float64 // m/s
	Altitude  float64 // m
	PerMetre  float64 // J/m
	PerDegree float64 // J/deg
	Fixed     float64 // J per path
	Flights   []PathFlight
}

// Predict returns the calibrated energy of a path of the given length and
// turns, without the fixed cost of its ends (as the planning model prices
// it).
func (c *Calibration) Predict(metres, deg float64) float64 {
	return c.PerMetre*metres + c.PerDegree*deg
}

// CalibrationPaths returns the calibration flights' turn points at
// altitude m: straight legs of 20, 40, 80 and 160 m; two 40 m legs with a
// turn of 45, 90, 135 or 180 degrees between them; and four 30 m legs
// with three 90 degree turns.
func CalibrationPaths(altitude float64) (names []string, paths [][]geom.Vec3) {
	p := func(x, y float64) geom.Vec3 { return geom.V(x, y, altitude) }
	for _, l := range []float64{20, 40, 80, 160} {
		names = append(names, fmt.Sprintf("straight %g m", l))
		paths = append(paths, []geom.Vec3{p(0, 0), p(l, 0)})
	}
	for _, deg := range []float64{45, 90, 135, 180} {
		r := deg * math.Pi / 180
		names = append(names, fmt.Sprintf("turn %g deg", deg))
		paths = append(paths, []geom.Vec3{p(0, 0), p(40, 0), p(40+40*math.Cos(r), 40*math.Sin(r))})
	}
	names = append(names, "3 turns of 90 deg")
	paths = append(paths, []geom.Vec3{p(0, 0), p(30, 0), p(30, 30), p(0, 30), p(0, 60)})
	return names, paths
}

// Calibrate flies the calibration paths (CalibrationPaths) with a vehicle
// of cfg at speed m/s and the given altitude, arriving within 0.5 m of each
// point (the coverage behaviour's default), and fits the planning energy
// model to the physics battery energy of the flights: the least-squares
// solution of  J = PerMetre m + PerDegree deg + Fixed  over the flights.
func Calibrate(cfg *Config, speed, altitude float64, seed uint64) (Calibration, error) {
	c := Calibration{Preset: cfg.Preset, WPNav: cfg.Autopilot.WPNav, Speed: speed, Altitude: altitude}
	if c.WPNav == "" {
		c.WPNav = "px4"
	}
	names, paths := CalibrationPaths(altitude)
	// Normal equations of the least-squares fit, rows [m, deg, 1].
	var ata [3][3]float64
	var atb [3]float64
	for i, pts := range paths {
		f, err := FlyPath(cfg, pts, speed, 0.5, seed)
		if err != nil {
			return c, fmt.Errorf("calibration flight %q: %w", names[i], err)
		}
		f.Name = names[i]
		c.Flights = append(c.Flights, f)
		row := [3]float64{f.Metres, f.TurnDeg, 1}
		for a := 0; a < 3; a++ {
			for b := 0; b < 3; b++ {
				ata[a][b] += row[a] * row[b]
			}
			atb[a] += row[a] * f.Joules
		}
	}
	x, err := solve3(ata, atb)
	if err != nil {
		return c, fmt.Errorf("fitting the calibration flights: %w", err)
	}
	c.PerMetre, c.PerDegree, c.Fixed = x[0], x[1], x[2]
	return c, nil
}

// solve3 solves the 3x3 system a x = b by Gaussian elimination with
// partial pivoting.
func solve3(a [3][3]float64, b [3]float64) ([3]float64, error) {
	for c := 0; c < 3; c++ {
		p := c
		for r := c + 1; r < 3; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) < 1e-12 {
			return [3]float64{}, fmt.Errorf("singular system (the flights do not tell the coefficients apart)")
		}
		a[c], a[p] = a[p], a[c]
		b[c], b[p] = b[p], b[c]
		for r := c + 1; r < 3; r++ {
			f := a[r][c] / a[c][c]
			for k := c; k < 3; k++ {
				a[r][k] -= f * a[c][k]
			}
			b[r] -= f * b[c]
		}
	}
	var x [3]float64
	for r := 2; r >= 0; r-- {
		s := b[r]
		for k := r + 1; k < 3; k++ {
			s -= a[r][k] * x[k]
		}
		x[r] = s / a[r][r]
	}
	return x, nil
}
