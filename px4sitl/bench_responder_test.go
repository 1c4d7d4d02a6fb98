package px4sitl

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"skyloop/edge"
	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// BenchmarkPX4Alone measures PX4 SITL's own cost: n instances in lockstep
// for 60 simulated seconds against a trivial responder (this package's
// protocol and nothing else: no physics, no engine, no network; the
// readings of a vehicle at rest with noise). BenchmarkPX4OnSkyloop runs the
// same on skyloop's physics; the difference is what skyloop adds. Run with
// SKYLOOP_PX4_DIR set and -benchtime 1x.
func BenchmarkPX4Alone(b *testing.B) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		b.Skipf("%s is not set: this benchmark runs PX4 SITL", EnvDir)
	}
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("vehicles=%d", n), func(b *testing.B) {
			for range b.N {
				wall := respond(b, n, 60*sim.Second)
				b.ReportMetric(60/wall.Seconds(), "x_realtime")
				b.ReportMetric(wall.Seconds(), "wall_s")
			}
		})
	}
}

// respond runs n PX4 instances against the trivial responder for d of
// simulated time and returns the wall time from launch to the end.
func respond(b *testing.B, n int, d sim.Duration) time.Duration {
	p := DefaultParams()
	if bad := p.Validate(); len(bad) > 0 {
		b.Fatal(bad.Err("px4"))
	}
	start := time.Now()
	env := &edge.Env{Origin: geom.Geodetic{Lat: 47.397742, Lon: 8.545594, Alt: 488},
		TempDir: func(string) (string, func(), error) { return b.TempDir(), func() {}, nil }}
	ctrls := make([]*Controller, n)
	for i := range ctrls {
		ctrls[i] = New(&p, i, fmt.Sprintf("bench-%d", i), 4, 100.0/1100)
		if err := ctrls[i].Open(env); err != nil {
			b.Fatal(err)
		}
		defer ctrls[i].Close()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var s vehicle.Sensors
	var a vehicle.Actuators
	var ev vehicle.Events
	g := func(sigma float64) float64 { return sigma * rng.NormFloat64() }
	for t := sim.Time(0); t < sim.Time(d); t = t.Add(p.Period) {
		s.IMU.Accel = geom.V(g(0.05), g(0.05), 9.80665+g(0.05))
		s.IMU.Gyro = geom.V(g(0.002), g(0.002), g(0.002))
		s.Mag.Field = vehicle.EarthField.Add(geom.V(g(0.002), g(0.002), g(0.002)))
		k := int64(t) / int64(p.Period)
		s.Baro = vehicle.Baro{New: k%5 == 0, Alt: g(0.05)}
		s.GPS = vehicle.GPS{New: k%25 == 0, Fix: true, Pos: geom.V(g(0.05), g(0.05), g(0.1))}
		s.Truth.Att = geom.Quat{W: 1}
		for _, c := range ctrls {
			c.Send(t, &s)
		}
		for _, c := range ctrls {
			c.Control(t, &s, &a, &ev)
			ev.List = ev.List[:0]
			if err := c.Err(); err != nil {
				b.Fatal(err)
			}
		}
	}
	return time.Since(start)
}
