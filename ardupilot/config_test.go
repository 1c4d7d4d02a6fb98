package ardupilot_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/ardupilot"
	"skyloop/engine"
	"skyloop/scenario"
	"skyloop/scenarios"
)

func parse(t *testing.T, params string) error {
	t.Helper()
	text := `
name: t
duration: 1s
vehicles:
  - name: copter
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params: ` + params + `
`
	sc, err := scenario.Parse("t.yaml", []byte(text), registry.Schema())
	if err != nil {
		return err
	}
	_, err = engine.Validate(sc, engine.Options{Registry: registry})
	return err
}

// fakeTree makes a directory shaped like an ArduPilot tree with ArduCopter
// SITL built.
func fakeTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"build/sitl/bin", "Tools/autotest/default_params"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, mode := range map[string]os.FileMode{"build/sitl/bin/arducopter": 0o755, "Tools/autotest/default_params/copter.parm": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestConfigErrors(t *testing.T) {
	t.Setenv(ardupilot.EnvDir, "")
	tree := fakeTree(t)
	for _, c := range []struct{ params, want string }{
		{`{preset: iris, controller: ardupilot-sitl}`, "vehicles[0].params.ardupilot.dir: ArduCopter SITL not found: build ArduCopter SITL with scripts/build-ardupilot-sitl.sh"},
		{`{preset: iris, controller: ardupilot-sitl, ardupilot: {dir: /nonexistent}}`, "/nonexistent is not a directory"},
		{`{preset: iris, controller: ardupilot-sitl, ardupilot: {dir: ` + tree + `, defaults: [/no/such.parm]}}`, "defaults[0]: no parameter file /no/such.parm"},
		{`{preset: iris, controller: ardupilot-sitl, ardupilot: {launch: false, frame: hexa}}`, "must be quad"},
		{`{preset: iris, controller: ardupilot-sitl, ardupilot: {launch: false, period: 2500us}}`, "must be a multiple of physics_period"},
		{`{preset: iris, controller: ardupilot-sitl, ardupilot: {launch: false, params: {frame_class: 1}}}`, "not an ArduPilot parameter name"},
		{`{preset: iris, ardupilot: {launch: false}}`, "only read with controller: ardupilot-sitl"},
		{`{preset: iris, controller: ardupilot}`, "want one of px4like, ardupilot-sitl, px4-sitl"},
	} {
		err := parse(t, c.params)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("params %s: got %v, want an error with %q", c.params, err, c.want)
		}
	}
	if err := parse(t, `{preset: iris, controller: ardupilot-sitl, ardupilot: {dir: `+tree+`}}`); err != nil {
		t.Errorf("an ArduPilot tree: %v", err)
	}
	t.Setenv(ardupilot.EnvDir, tree)
	if err := parse(t, `{preset: iris, controller: ardupilot-sitl}`); err != nil {
		t.Errorf("ArduPilot from %s: %v", ardupilot.EnvDir, err)
	}
}

// TestScenarioFilesAreValid checks the repository's ArduPilot scenarios
// against a directory shaped like an ArduPilot tree, so that they do not
// rot where ArduPilot is not built.
func TestScenarioFilesAreValid(t *testing.T) {
	t.Setenv(ardupilot.EnvDir, fakeTree(t))
	text, ok := scenarios.Lookup("ubanc-chain-ardupilot")
	if !ok {
		t.Fatal("no built-in ubanc-chain-ardupilot")
	}
	sc, err := scenario.Parse("ubanc-chain-ardupilot.yaml", text, registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Validate(sc, engine.Options{Registry: registry}); err != nil {
		t.Fatal(err)
	}
}
