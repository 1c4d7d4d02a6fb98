package engine

import (
	"fmt"
	"runtime"
	"testing"
)

// benchYAML is the speed target of the core: 100 point-mass vehicles, each
// broadcasting its state at 10 Hz over the impaired network with everyone in
// range (about 99,000 deliveries per simulated second), for 60 s.
const benchYAML = `
name: bench100
seed: 1
duration: %s
tick: 1ms
vehicles:
  - name: uav
    kind: pointmass
    count: 100
    spawn: {layout: grid, origin: [0, 0, 10], spacing: 5}
    behaviors:
      - {type: waypoints, relative: true, loop: true, points: [[20, 0, 0], [20, 20, 5], [0, 20, 0], [0, 0, 0]]}
      - {type: beacon, period: 100ms, stagger: 1ms}
network:
  backend: impair
  latency: 5ms
  jitter: 2ms
  loss: 0.05
  range: 1000
`

// BenchmarkSwarm100 reports the whole-run speed: x real time, ns per
// vehicle-tick, ns per delivery and allocations per tick, with per-packet
// files off (files=off) and on (files=on).
func BenchmarkSwarm100(b *testing.B) {
	for _, files := range []bool{false, true} {
		b.Run(fmt.Sprintf("files=%v", map[bool]string{false: "off", true: "on"}[files]), func(b *testing.B) {
			text := fmt.Sprintf(benchYAML, "60s")
			var deliveries uint64
			var ticks int64
			var mallocs uint64
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				r := buildYAML(b, text, Options{NoFiles: !files, Workers: 1})
				dir := ""
				if files {
					dir = b.TempDir() + "/run"
				}
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				res, err := r.Execute(dir, nil)
				runtime.ReadMemStats(&ms1)
				if err != nil {
					b.Fatal(err)
				}
				deliveries += res.Summary.Network.Total.Rx
				ticks += res.Summary.Ticks
				mallocs += ms1.Mallocs - ms0.Mallocs
			}
			sec := b.Elapsed().Seconds()
			simSec := float64(ticks) / 1000
			b.ReportMetric(simSec/sec, "x_realtime")
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(ticks*100), "ns/vehicle-tick")
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(deliveries), "ns/delivery")
			b.ReportMetric(float64(mallocs)/float64(ticks), "allocs/tick")
		})
	}
}
