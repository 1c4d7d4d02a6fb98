package mavlink

import (
	"testing"

	"github.com/bluenviron/gomavlib/v3/pkg/frame"

	"skyloop/geom"
	"skyloop/kind/multirotor"
	"skyloop/sim"
	"skyloop/vehicle"
)

// fixedAutopilot reports a flying vehicle and ignores commands, so that
// the benchmarks measure MAVLink alone.
type fixedAutopilot struct{ tel vehicle.Telemetry }

func (a *fixedAutopilot) Estimate() vehicle.Telemetry { return a.tel }
func (a *fixedAutopilot) Command(vehicle.Command)     {}

// sinkHost discards frames, or decodes them as a ground station would.
type sinkHost struct {
	dec    *Decoder
	frames int
	bytes  int
}

func (h *sinkHost) Send(_ Peer, b []byte) { h.Broadcast(b) }
func (h *sinkHost) Broadcast(b []byte) {
	h.frames++
	h.bytes += len(b)
	if h.dec != nil {
		h.dec.Decode(b, func(frame.Frame) {})
	}
}
func (h *sinkHost) Event(string, string) {}

func flying() *fixedAutopilot {
	return &fixedAutopilot{tel: vehicle.Telemetry{Pos: geom.V(12, -3, 15), Vel: geom.V(3, 1, 0.2), Yaw: 0.3, Roll: 0.05, Pitch: -0.1,
		Mode: vehicle.ModeGoto, Armed: true, BatteryV: 15.8, BatteryA: 12, BatteryRemaining: 0.8, Throttle: 0.5}}
}

// benchTelemetry runs one vehicle endpoint for a simulated second per
// iteration at the default stream rates (10 ms steps) and reports the cost
// per simulated second.
func benchTelemetry(b *testing.B, decode bool) {
	h := &sinkHost{}
	if decode {
		h.dec = NewDecoder()
	}
	v := NewVehicle(VehicleConfig{SysID: 1, Origin: testOrigin}, flying(), nil, h)
	var now sim.Time
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < 100; i++ {
			v.Step(now)
			now = now.Add(10 * sim.Millisecond)
		}
	}
	b.ReportMetric(float64(h.frames)/float64(b.N), "frames/sim-s")
	b.ReportMetric(float64(h.bytes)/float64(b.N), "bytes/sim-s")
}

// BenchmarkTelemetryEncode: one vehicle's default telemetry streams for one
// simulated second (ns/op = ns per vehicle per simulated second).
func BenchmarkTelemetryEncode(b *testing.B) { benchTelemetry(b, false) }

// BenchmarkTelemetryEncodeDecode adds decoding every frame, as the ground
// station end of an in-simulation link does.
func BenchmarkTelemetryEncodeDecode(b *testing.B) { benchTelemetry(b, true) }

// BenchmarkPhysicsControlSecond is the budget MAVLink is measured against:
// one simulated second of the multirotor's physics and autopilot at 1 kHz.
func BenchmarkPhysicsControlSecond(b *testing.B) {
	cfg, _ := multirotor.PresetConfig("iris")
	mr := multirotor.New(multirotor.NewShared(&cfg), geom.V(0, 0, 10), 0, sim.Stream(1, "turbulence", 0), sim.Stream(1, "sensors", 0))
	var ev vehicle.Events
	var now sim.Time
	for b.Loop() {
		for i := 0; i < 1000; i++ {
			mr.Control(now, &ev)
			mr.Step(now, &ev)
			now = now.Add(sim.Millisecond)
		}
		ev.List = ev.List[:0]
	}
}

// BenchmarkTelemetryEncodeClientDecode decodes at the ground station only
// what a client reads (ClientWants), as the mavlink_gcs behaviour does.
func BenchmarkTelemetryEncodeClientDecode(b *testing.B) {
	h := &sinkHost{dec: NewDecoder()}
	h.dec.Want = ClientWants
	v := NewVehicle(VehicleConfig{SysID: 1, Origin: testOrigin}, flying(), nil, h)
	var now sim.Time
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < 100; i++ {
			v.Step(now)
			now = now.Add(10 * sim.Millisecond)
		}
	}
}
