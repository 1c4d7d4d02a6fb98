package runner

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/scenarios"
)

// BenchmarkSwarm100 runs scenarios/bench-swarm100.yaml (100 point-mass
// vehicles broadcasting state at 10 Hz over impair, all in range, 60 s) and
// reports the whole-run speed: x real time, ns per
// vehicle-tick, ns per delivery and allocations per tick, with per-packet
// files off (files=off) and on (files=on).
func BenchmarkSwarm100(b *testing.B) {
	for _, files := range []bool{false, true} {
		b.Run(fmt.Sprintf("files=%v", map[bool]string{false: "off", true: "on"}[files]), func(b *testing.B) {
			text, _ := scenarios.Lookup("bench-swarm100")
			var deliveries uint64
			var ticks int64
			var mallocs uint64
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				r := buildYAML(b, string(text), engine.Options{Registry: registry, NoFiles: !files, Workers: 1})
				dir := ""
				if files {
					dir = b.TempDir() + "/run"
				}
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				res, err := Execute(r, dir, Options{})
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

// BenchmarkPlatoon runs scenarios/netbots/platoon.yaml (the netbots
// impairment study's baseline: 3 robots, 60 s, coupled 10 ms epochs; load=on adds 2.1 Mbit/s
// of background traffic per robot) with per-packet files off, as a sweep
// runs it without files.
func BenchmarkPlatoon(b *testing.B) {
	text, _ := scenarios.Lookup("netbots/platoon")
	for _, load := range []bool{false, true} {
		b.Run(fmt.Sprintf("load=%v", map[bool]string{false: "off", true: "on"}[load]), func(b *testing.B) {
			t := string(text)
			if load {
				t = strings.Replace(t, "rate: 0\n", "rate: 2.1e6\n", 1)
			}
			for b.Loop() {
				if _, err := Execute(buildYAML(b, t, engine.Options{Registry: registry, NoFiles: true, Workers: 1}), "", Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
