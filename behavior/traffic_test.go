package behavior

import (
	"math"
	"slices"
	"strings"
	"testing"

	"skyloop/agent"
	"skyloop/sim"
)

// TestTrafficFirstInterval: with first: interval a source started at
// (1+i) ms sends packet k at (1+i) ms + (k+1) intervals, as ns-3's
// OnOffApplication does (the netbots paper's background load timing): stepped every tick and
// planned in 10 ms epochs alike; first: start sends packet 0 at the start.
func TestTrafficFirstInterval(t *testing.T) {
	tp := trafficSpec.Params().(*TrafficParams)
	tp.Rate, tp.Size = 1.8e6, 1000 // 4444444.4 ns apart
	tp.Start, tp.Stagger, tp.Phase, tp.Jitter = sim.Millisecond, sim.Millisecond, agent.PhaseZero, agent.Jitter{}
	ivl := float64(8000) / tp.Rate * 1e9
	for _, first := range []string{FirstStart, FirstInterval} {
		tp.First = first
		off := 0
		if first == FirstInterval {
			off = 1
		}
		for _, i := range []int{0, 2} {
			_, stepped := sendTimesOf(t, trafficSpec, tp, 1, i, 0, sim.Second)
			start := sim.Time(sim.Duration(1+i) * sim.Millisecond)
			for k, at := range stepped {
				// floor((k+off) * ivl), the interval in float64 ns as
				// every constant-rate source computes it.
				want := start + sim.Time(math.Floor(float64(k+off)*ivl))
				if at != want {
					t.Fatalf("first %s node %d: packet %d at %v, want %v", first, i, k, at, want)
				}
			}
			if n := len(stepped); n != int((float64(sim.Second)-float64(start))/ivl)+1-off {
				t.Errorf("first %s node %d: %d packets in 1 s", first, i, n)
			}
			if _, planned := sendTimesOf(t, trafficSpec, tp, 1, i, 10*sim.Millisecond, sim.Second); !slices.Equal(planned, stepped) {
				t.Errorf("first %s node %d: planned %v..., stepped %v...", first, i, planned[:2], stepped[:2])
			}
		}
	}
	tp.First = "later"
	if msg := tp.Validate()["first"]; !strings.Contains(msg, `start or interval, got "later"`) {
		t.Errorf("first: later: %q", msg)
	}
}
