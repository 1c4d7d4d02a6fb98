package multirotor

import (
	"math"
	"math/rand/v2"
	"testing"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

func iris(t testing.TB) *Model {
	t.Helper()
	p, _ := Preset("iris")
	p.Wind, p.TurbSigma = geom.V(3, 0, 0), 1
	if bad := p.Validate(); len(bad) > 0 {
		t.Fatal(bad)
	}
	return NewModel(&p)
}

// hover returns the motor commands that hold the weight.
func hover(m *Model) *vehicle.Actuators {
	var a vehicle.Actuators
	a.NumMotors = len(m.P.Rotors)
	for i := 0; i < a.NumMotors; i++ {
		a.Motors[i] = math.Sqrt(m.P.HoverThrust())
	}
	return &a
}

// TestStreamsAreSeparate: the turbulence and the sensor noise draw from
// their own streams, so changing a sensor's noise leaves the flight under
// the same commands exactly as it was, and the other way round.
func TestStreamsAreSeparate(t *testing.T) {
	m := iris(t)
	quiet, loud := DefaultSensorParams(), DefaultSensorParams()
	loud.GPSNoise, loud.GyroNoise, loud.BaroNoise = 2, 0.1, 1
	fly := func(sp *SensorParams, turbSeed uint64) (*Physics, []vehicle.Sensors) {
		ph := NewPhysics(m, sp, geom.V(0, 0, 10), 0, sim.Stream(turbSeed, "turbulence", 3), sim.Stream(1, "sensors", 3))
		a := hover(m)
		var s vehicle.Sensors
		var out []vehicle.Sensors
		var ev vehicle.Events
		for t := sim.Time(0); t < sim.Time(2*sim.Second); t = t.Add(sim.Millisecond) {
			ph.Sense(t, &s)
			out = append(out, s)
			ph.Step(t, a, &ev)
		}
		return ph, out
	}
	a, sa := fly(&quiet, 1)
	b, sb := fly(&loud, 1)
	if a.S != b.S {
		t.Fatalf("louder sensors changed the flight:\n%+v\n%+v", a.S, b.S)
	}
	if sa[500].GPS.Pos == sb[500].GPS.Pos || sa[777].IMU.Gyro == sb[777].IMU.Gyro {
		t.Fatal("the noise levels made no difference to the readings")
	}
	c, sc := fly(&quiet, 2)
	if c.S.Gust == a.S.Gust {
		t.Fatal("another turbulence seed gave the same gusts")
	}
	// Same sensor stream: the noise added to the truth is the same draw.
	for _, i := range []int{0, 1, 999, 1999} {
		na, nc := sa[i].IMU.Gyro.Sub(sa[i].Truth.Rates), sc[i].IMU.Gyro.Sub(sc[i].Truth.Rates)
		if na.Dist(nc) > 1e-12 {
			t.Fatalf("step %d: gyro noise %v and %v from the same sensor stream", i, na, nc)
		}
	}
}

// TestSensorsAtRest: a level vehicle resting on the ground facing east,
// with noise off, reads gravity, the Earth's field, sea-level pressure and
// its position, at the instruments' rates.
func TestSensorsAtRest(t *testing.T) {
	m := iris(t)
	sp := SensorParams{GPSPeriod: 100 * sim.Millisecond, BaroPeriod: 20 * sim.Millisecond}
	ph := NewPhysics(m, &sp, geom.V(3, 4, 0), 0, nil, nil)
	var s vehicle.Sensors
	var gps, baro []sim.Time
	var ev vehicle.Events
	var stop vehicle.Actuators
	for t := sim.Time(0); t < sim.Time(sim.Second); t = t.Add(sim.Millisecond) {
		ph.Sense(t, &s)
		if s.GPS.New {
			gps = append(gps, t)
		}
		if s.Baro.New {
			baro = append(baro, t)
		}
		ph.Step(t, &stop, &ev)
	}
	if len(gps) != 10 || gps[1] != sim.Time(100*sim.Millisecond) || len(baro) != 50 || baro[1] != sim.Time(20*sim.Millisecond) {
		t.Fatalf("GPS fixes at %v, barometer samples at %v", gps, baro)
	}
	if !s.Contact || !s.GPS.Fix || s.GPS.Pos != geom.V(3, 4, 0) || s.Truth.Pos != geom.V(3, 4, 0) {
		t.Fatalf("position readings %+v", s)
	}
	if s.IMU.Accel != geom.V(0, 0, Gravity) || s.IMU.Gyro != (geom.Vec3{}) {
		t.Fatalf("IMU at rest %+v", s.IMU)
	}
	// Facing east, level, the body axes are the world's: east forward,
	// north on the left (body +y), down is body -z.
	if d := s.Mag.Field.Dist(vehicle.EarthField); d > 1e-12 {
		t.Fatalf("magnetometer %v", s.Mag.Field)
	}
	if s.Baro.Pressure != 101325 || s.Baro.Alt != 0 || s.Baro.Temperature != 15 {
		t.Fatalf("barometer %+v", s.Baro)
	}
	// A full 3S pack sags a little under the avionics' 5 W.
	if !(s.Battery.Voltage > 12.5 && s.Battery.Voltage < 12.6) || s.Battery.Remaining >= 1 || math.Abs(s.Battery.Energy-5) > 0.01 {
		t.Fatalf("battery %+v", s.Battery)
	}
}

// TestPressureAltitude: the barometer's altitude follows the vehicle, its
// pressure is the ISA pressure of that altitude.
func TestPressureAltitude(t *testing.T) {
	m := iris(t)
	sp := DefaultSensorParams()
	ph := NewPhysics(m, &sp, geom.V(0, 0, 120), 0, nil, rand.New(rand.NewPCG(1, 2)))
	var s vehicle.Sensors
	ph.Sense(0, &s)
	if math.Abs(s.Baro.Alt-120) > 0.3 || s.Baro.Pressure != Pressure(s.Baro.Alt) || math.Abs(s.Baro.Pressure-99892) > 5 {
		t.Fatalf("barometer at 120 m: %+v", s.Baro)
	}
}

func TestUnitMatchesMinMax(t *testing.T) {
	for _, u := range []float64{0, math.Copysign(0, -1), 1e-300, 0.5, 1, 1.5, -1, math.Inf(1), math.Inf(-1), math.NaN()} {
		got, want := unit(u), math.Max(0, math.Min(1, u))
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("unit(%v) = %v, want %v", u, got, want)
		}
	}
}

func TestStepDoesNotAllocate(t *testing.T) {
	m := iris(t)
	sp := DefaultSensorParams()
	ph := NewPhysics(m, &sp, geom.V(0, 0, 10), 0, sim.Stream(1, "turbulence", 0), sim.Stream(1, "sensors", 0))
	a := hover(m)
	var s vehicle.Sensors
	var ev vehicle.Events
	now := sim.Time(0)
	if n := testing.AllocsPerRun(1000, func() {
		ph.Sense(now, &s)
		ph.Step(now, a, &ev)
		now = now.Add(sim.Millisecond)
	}); n != 0 {
		t.Fatalf("%v allocations per step", n)
	}
}

// BenchmarkPhysicsStep is one physics step and one reading of every
// instrument, in turbulent wind.
func BenchmarkPhysicsStep(b *testing.B) {
	m := iris(b)
	sp := DefaultSensorParams()
	ph := NewPhysics(m, &sp, geom.V(0, 0, 10), 0, sim.Stream(1, "turbulence", 0), sim.Stream(1, "sensors", 0))
	a := hover(m)
	var s vehicle.Sensors
	var ev vehicle.Events
	now := sim.Time(0)
	b.ReportAllocs()
	for b.Loop() {
		ph.Sense(now, &s)
		ph.Step(now, a, &ev)
		now = now.Add(sim.Millisecond)
	}
}

// TestTurbulenceStatistics: drawn every turbulence_period with the exact
// transition of the Gauss-Markov process, the gust keeps the asked
// standard deviation and time constant (turbulence_length / air speed)
// whatever the period, and holds between draws.
func TestTurbulenceStatistics(t *testing.T) {
	for _, period := range []sim.Duration{sim.Millisecond, 10 * sim.Millisecond, 50 * sim.Millisecond} {
		p, _ := Preset("iris")
		// A vehicle held still in a 10 m/s wind: air speed 10 m/s, time
		// constant 20 m / 10 m/s = 2 s.
		p.Wind, p.TurbSigma, p.TurbLength, p.TurbPeriod = geom.V(10, 0, 0), 0.8, 20, period
		if bad := p.Validate(); len(bad) > 0 {
			t.Fatal(bad)
		}
		m := NewModel(&p)
		rng := sim.Stream(9, "turbulence", 0)
		s := m.Init(geom.V(0, 0, 10), 0)
		var u [MaxRotors]float64
		var xs []float64
		held := true
		for i := 0; i < 2_000_000; i++ {
			s.Pos, s.Vel, s.Att, s.Omega = geom.V(0, 0, 10), geom.Vec3{}, geom.Identity, geom.Vec3{} // held still
			before := s.Gust
			m.Step(&s, &u, rng)
			if i%int(period/sim.Millisecond) != 0 && s.Gust != before {
				held = false
			}
			if i%10 == 0 {
				xs = append(xs, s.Gust.Y) // across the wind: air speed stays 10 m/s
			}
		}
		if !held {
			t.Errorf("period %v: the gust changed between draws", period)
		}
		var mean, v float64
		for _, x := range xs {
			mean += x
		}
		mean /= float64(len(xs))
		for _, x := range xs {
			v += (x - mean) * (x - mean)
		}
		sd := math.Sqrt(v / float64(len(xs)))
		// Autocorrelation at 1 s (100 samples of 10 ms): exp(-1/2).
		var c float64
		for i := 100; i < len(xs); i++ {
			c += (xs[i] - mean) * (xs[i-100] - mean)
		}
		rho := c / float64(len(xs)-100) / (sd * sd)
		t.Logf("period %v: sd %.3f m/s (want 0.8), autocorrelation at 1 s %.3f (want %.3f)", period, sd, rho, math.Exp(-0.5))
		if math.Abs(sd-0.8) > 0.08 || math.Abs(rho-math.Exp(-0.5)) > 0.08 {
			t.Errorf("period %v: sd %.3f, autocorrelation %.3f", period, sd, rho)
		}
	}
}

// TestAccelFeelsTouchdown drops a vehicle from 2 m with its motors
// stopped and samples the accelerometer every 4 ms (PX4's sensor rate):
// integrating the readings, as an estimator does, must bring the velocity
// from the 6.3 m/s impact back to the truth's rest, with no reading past
// AccelRange. Before the accelerometer felt the ground, the integral kept
// the impact speed.
func TestAccelFeelsTouchdown(t *testing.T) {
	m := iris(t)
	sp := SensorParams{GPSPeriod: 100 * sim.Millisecond, BaroPeriod: 20 * sim.Millisecond}
	ph := NewPhysics(m, &sp, geom.V(0, 0, 2), 0, nil, nil)
	var s vehicle.Sensors
	var ev vehicle.Events
	var stop vehicle.Actuators
	const every = 4 * sim.Millisecond
	var v geom.Vec3 // the integrated velocity
	var impact float64
	for now := sim.Time(0); now < sim.Time(sim.Second); now = now.Add(sim.Millisecond) {
		if now%sim.Time(every) == 0 {
			ph.Sense(now, &s)
			for _, a := range []float64{s.IMU.Accel.X, s.IMU.Accel.Y, s.IMU.Accel.Z} {
				if math.Abs(a) > AccelRange+1e-9 {
					t.Fatalf("at %v the accelerometer read %v, beyond its %.1f m/s^2", now, s.IMU.Accel, AccelRange)
				}
			}
			if now > 0 {
				acc := s.Truth.Att.Rotate(s.IMU.Accel)
				acc.Z -= Gravity
				v = v.Add(acc.Scale(every.Seconds()))
			}
			impact = min(impact, ph.S.Vel.Z)
		}
		ph.Step(now, &stop, &ev)
	}
	if !ph.S.Landed || impact > -6 {
		t.Fatalf("landed %v, impact speed %.2f m/s: the drop did not happen", ph.S.Landed, impact)
	}
	if d := v.Dist(ph.S.Vel); d > 0.05 {
		t.Fatalf("integrated accelerometer velocity %v after a %.2f m/s touchdown, want the truth %v (within 0.05 m/s)", v, impact, ph.S.Vel)
	}
}

// BenchmarkPhysicsSwarm is BenchmarkPhysicsStep for a swarm of 10,000
// vehicles built as a run builds them, stepped one after another: each
// vehicle's state is cold in cache, as in bench-full10000.
func BenchmarkPhysicsSwarm(b *testing.B) {
	m := iris(b)
	sp := DefaultSensorParams()
	const n = 10_000
	phs := make([]*Physics, n)
	for i := range phs {
		phs[i] = NewPhysics(m, &sp, geom.V(float64(i%100)*20, float64(i/100)*20, 10), 0, sim.Stream(1, "turbulence", i), sim.Stream(1, "sensors", i))
	}
	a := hover(m)
	var s vehicle.Sensors
	var ev vehicle.Events
	now := sim.Time(0)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ph := phs[i]
		ph.Sense(now, &s)
		ph.Step(now, a, &ev)
		if i++; i == n {
			i, now = 0, now.Add(sim.Millisecond)
		}
	}
}
