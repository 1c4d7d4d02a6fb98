package engine_test

import (
	"strings"
	"testing"

	"skyloop/components"
	"skyloop/engine"
	"skyloop/fields"
	"skyloop/kind/multirotor"
	"skyloop/scenario"
	"skyloop/scenarios"
	"skyloop/sim"
)

// effective checks text and returns its effective scenario.
func effective(t *testing.T, reg *engine.Registry, name string, text []byte) []byte {
	t.Helper()
	sc, err := scenario.Parse(name, text, reg.Schema())
	if err != nil {
		t.Fatalf("%s:\n%v\n%s", name, err, text)
	}
	r, err := engine.Validate(sc, engine.Options{Registry: reg})
	if err != nil {
		t.Fatalf("%s:\n%v\n%s", name, err, text)
	}
	b, err := r.EffectiveScenario()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixedPoint checks that the effective scenario of text validates and is
// its own effective scenario, and returns it.
func fixedPoint(t *testing.T, reg *engine.Registry, name string, text []byte) string {
	t.Helper()
	once := effective(t, reg, name, text)
	if twice := effective(t, reg, "config.yaml", once); string(twice) != string(once) {
		t.Fatalf("%s: the effective scenario of the effective scenario differs:\n%s\nwas\n%s", name, twice, once)
	}
	return string(once)
}

// fakeParams are the parameters of a controller with a key of its own.
type fakeParams struct {
	Gain float64 `yaml:"gain" json:"gain"`
}

func (p *fakeParams) Validate() fields.Errors { return nil }

// TestEffectiveScenarioShape: the effective scenario writes what the
// engine reads in a scenario's own places: a group's other controller as
// `controller:` and its key, the network's engine keys beside the
// backend's parameters with the backend's inert namesakes (ns-3's own
// epoch) left out, the world's obstacles without the coverage area's
// cells; and it is its own effective scenario.
func TestEffectiveScenarioShape(t *testing.T) {
	reg := components.Registry()
	reg.AddController(engine.ControllerSpec{
		Kind: multirotor.Kind, Name: "fake-ctl", Key: "fake",
		Params: func() fields.Validator { return &fakeParams{Gain: 1} },
		Period: func(fields.Validator) sim.Duration { return 4 * sim.Millisecond },
	})
	text := `name: t
duration: 2s
coverage: {origin: [0, 0], area: [30, 20], cell: 10, obstacles: [[1, 1]], obstacle_height: 5}
world:
  obstacles: [{name: wall, min: [100, 100, 0], max: [101, 101, 3]}]
vehicles:
  - name: q
    kind: multirotor
    count: 2
    spawn: {layout: line, spacing: 5}
    params: {preset: iris, controller: fake-ctl, fake: {gain: 2}}
    behaviors: [{type: beacon, period: 50ms}]
nodes:
  - {name: gcs, position: [0, 0, 1]}
network: {backend: ns3, epoch: 20ms, standard: 80211b, mode: DsssRate11Mbps}
`
	got := fixedPoint(t, reg, "t.yaml", []byte(text))
	for _, want := range []string{
		"\n    params:\n      controller: fake-ctl\n",
		"\n      fake:\n        gain: 2\n",
		"\n      - type: beacon\n        period: 50ms\n",
		"\n  - name: gcs\n    position: [0, 0, 1]\n",
		"\nnetwork:\n  backend: ns3\n  position_period: 10ms\n  epoch: 20ms\n",
		"\n  mode: DsssRate11Mbps\n",
		"\n  obstacles:\n    - name: wall\n",
		"\n  obstacle_height: 5\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	for _, bad := range []string{"params:\n        period", "id:", "cell-1-1", "Min", "\n  epoch: 10ms"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q in\n%s", bad, got)
		}
	}
	if n := strings.Count(got, "epoch:"); n != 1 {
		t.Errorf("%d epoch keys in\n%s", n, got)
	}
}

// TestEffectiveScenarioBuiltins: the effective scenario of every built-in
// scenario validates and is its own effective scenario (runner's
// TestRerunFromConfig runs them).
func TestEffectiveScenarioBuiltins(t *testing.T) {
	names := scenarios.Names()
	for _, c := range scenarios.Collections() {
		names = append(names, scenarios.CollectionScenarios(c)...)
	}
	for _, name := range names {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			text, _ := scenarios.Lookup(name)
			if s := string(text); strings.Contains(s, "controller: ardupilot-sitl") || strings.Contains(s, "controller: px4-sitl") {
				t.Skip("skipping: real firmware, checked against a firmware directory by its bridge's tests")
			}
			if strings.Contains(string(text), "physics: mujoco") {
				if sc, err := scenario.Parse(name+".yaml", text, registry.Schema()); err == nil {
					if _, err := engine.Validate(sc, engine.Options{Registry: registry}); err != nil && strings.Contains(err.Error(), "MuJoCo") {
						t.Skipf("skipping: %v", err)
					}
				}
			}
			fixedPoint(t, registry, name+".yaml", text)
		})
	}
}
