package engine_test

import (
	"encoding/json"
	"testing"

	"skyloop/components"
	"skyloop/engine"
	"skyloop/scenario"
	"skyloop/sim"
)

// gatherScenario is a swarm whose world checks and position updates come
// at periods (3 and 7 ticks) that are multiples neither of each other nor
// of the control period, in two columns flying through each other head
// on, over native Wi-Fi: the closest approach, the speeds and the
// receptions depend on reading each vehicle at the right tick.
const gatherScenario = `name: gather
duration: 8s
tick: 1ms
workers: 2
world: {check_period: 3ms}
vehicles:
  - name: east
    kind: multirotor
    count: 4
    spawn: {layout: line, origin: [0, 0, 10], step: [0, 3, 0]}
    params: {preset: iris, wind: [3, 0, 0], turbulence_sigma: 0.5}
    behaviors:
      - {type: waypoints, relative: true, loop: true, points: [[30, 1, 0], [0, 0, 0]]}
      - {type: beacon, period: 20ms, format: planar}
  - name: west
    kind: multirotor
    count: 4
    spawn: {layout: line, origin: [30, 0, 10], step: [0, 3, 0]}
    params: {preset: iris, wind: [3, 0, 0], turbulence_sigma: 0.5}
    behaviors:
      - {type: waypoints, relative: true, loop: true, points: [[-30, 0, 0], [0, 1, 0]]}
      - {type: beacon, period: 20ms, format: planar}
network:
  backend: wifi
  position_period: 7ms
`

// TestGatheredReadsMatchPhases: the vehicle step reads, right after each
// vehicle's step, what the next world check and the position update read
// (engine runPar.gather); the results equal those of a run whose phases
// read every vehicle themselves. A first phase turns gathering off (and
// the network's step ahead, which changes no output), so the two runs
// differ only in who reads the vehicles.
func TestGatheredReadsMatchPhases(t *testing.T) {
	run := func(first ...sim.Phase) string {
		t.Helper()
		reg := components.Registry()
		sc, err := scenario.Parse("gather.yaml", []byte(gatherScenario), reg.Schema())
		if err != nil {
			t.Fatal(err)
		}
		r, err := engine.Build(sc, engine.Options{Registry: reg, NoFiles: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		if err := r.Start(first...); err != nil {
			t.Fatal(err)
		}
		if err := r.Run(); err != nil {
			t.Fatal(err)
		}
		s, err := r.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if s.Separation == nil || s.Network.Total.Rx == 0 {
			t.Fatalf("the run measured no separation or received nothing: %+v", s)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	gathered := run()
	read := run(sim.Phase{Name: "nothing", Every: 1, Run: func(sim.Time) error { return nil }})
	if gathered != read {
		t.Fatalf("gathered reads changed the results:\ngathered: %s\nread by the phases: %s", gathered, read)
	}
}
