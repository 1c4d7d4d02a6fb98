package runner

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"skyloop/engine"
	"skyloop/plan"
)

// TestCalibratedEnergyPredictsFlight: with a preset's calibrated planning
// model (plan.EnergyModel, fitted by `skyloop calibrate`), the planned
// energy of a short coverage survey predicts the physics battery energy
// of its flight within 15%, for both planners and both waypoint modes
// (UB-ANC's 0.1164 J/m model, plan's spec, predicts about 0.4% of it).
func TestCalibratedEnergyPredictsFlight(t *testing.T) {
	for _, tc := range []struct{ model, wpNav string }{{"iris", "px4"}, {"iris-arducopter", "arducopter"}} {
		m, err := plan.EnergyModel(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		for _, planner := range []string{"turn-aware", "dls"} {
			yaml := fmt.Sprintf(`name: energy-check
seed: 1
duration: 300s
tick: 1ms
coverage: {origin: [0, 0], area: [60, 40], cell: 10, obstacles: [[2, 1]]}
vehicles:
  - name: uav
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [5, 5, 10], spacing: 1}
    params: {preset: iris, autopilot: {wp_nav: %s}}
    behaviors:
      - {type: coverage, start: [0, 0], altitude: %g, speed: %g, planner: %s, energy_per_m: %g, energy_per_deg: %g}
network: {backend: ideal}
outputs: {trace: false, deliveries: false}
`, tc.wpNav, m.Altitude, m.Speed, planner, m.PerMetre, m.PerDegree)
			s := runYAML(t, yaml, engine.Options{Registry: registry}, filepath.Join(t.TempDir(), planner)).Summary
			c, _ := s.Agents["uav-0"]["coverage"].(map[string]any)
			fl, ok := c["flown"].(map[string]any)
			if !ok {
				t.Fatalf("%s %s: the flight did not finish: %v", tc.model, planner, c)
			}
			planned := c["planned"].(map[string]any)["energy_j"].(float64)
			flown := fl["energy_j"].(float64)
			t.Logf("%s %s: planned %.0f J, flown (physics) %.0f J (%+.1f%%)", tc.model, planner, planned, flown, 100*(planned/flown-1))
			if math.Abs(planned-flown) > 0.15*flown {
				t.Errorf("%s %s: planned %.0f J, flown %.0f J: more than 15%% apart", tc.model, planner, planned, flown)
			}
		}
	}
}
