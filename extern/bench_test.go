package extern_test

import (
	"fmt"
	"testing"

	"skyloop/engine"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/sim"
)

// benchRoundTrip runs n external agents (Go clients in one helper process,
// one Unix-socket connection each) that step at every tick and do nothing
// else, and reports the wall time per tick: the protocol's round-trip
// overhead with n agents stepping in parallel.
func benchRoundTrip(b *testing.B, n int) {
	const ticks = 2000
	text := fmt.Sprintf(`
name: extern-bench
seed: 1
duration: %dms
tick: 1ms
vehicles:
  - name: uav
    kind: pointmass
    count: %d
    spawn: {layout: grid, origin: [0, 0, 0], spacing: 2, columns: 10}
    behaviors:
      - {type: extern, command: "SKYLOOP_HELPER=bench exec %s"}
outputs: {trace: false, deliveries: false, vehicles: false, plots: false}
network:
  backend: ideal
`, ticks, n, exe(b))
	sc, err := scenario.Parse("bench.yaml", []byte(text), registry.Schema())
	if err != nil {
		b.Fatal(err)
	}
	var total sim.Duration
	b.ResetTimer()
	for b.Loop() {
		r, err := engine.Build(sc, engine.Options{Registry: registry, NoFiles: true})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := runner.Execute(r, "", runner.Options{})
		if err != nil {
			b.Fatal(err)
		}
		total += sim.Duration(res.Summary.DurationNs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/ticks, "ns/tick")
}

func exe(b *testing.B) string {
	c := helperCommand(b, "bench")
	return c[len("SKYLOOP_HELPER=bench SKYLOOP_VEHICLE={id} exec "):]
}

func BenchmarkRoundTrip1(b *testing.B)   { benchRoundTrip(b, 1) }
func BenchmarkRoundTrip10(b *testing.B)  { benchRoundTrip(b, 10) }
func BenchmarkRoundTrip100(b *testing.B) { benchRoundTrip(b, 100) }
