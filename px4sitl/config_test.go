package px4sitl_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/px4sitl"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/scenario/scenariofile"
)

func parse(t *testing.T, params string) error {
	t.Helper()
	text := `
name: t
duration: 1s
vehicles:
  - name: iris
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

// fakeFirmware makes a directory shaped like PX4's SITL build.
func fakeFirmware(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"bin", "etc/init.d-posix/airframes"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, mode := range map[string]os.FileMode{"bin/px4": 0o755, "etc/init.d-posix/rcS": 0o644, "etc/init.d-posix/airframes/10016_none_iris": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestControllerChoiceErrors(t *testing.T) {
	t.Setenv(px4sitl.EnvDir, "")
	fw := fakeFirmware(t)
	for _, c := range []struct{ params, want string }{
		{`{preset: iris, controller: px4-sitl}`, "vehicles[0].params.px4.dir: PX4 SITL not found: build PX4 SITL with scripts/build-px4-sitl.sh"},
		{`{preset: iris, controller: px4-sitl, px4: {dir: /nonexistent}}`, "/nonexistent is not a directory"},
		{`{preset: iris, controller: px4-sitl, px4: {bin: /bin/true, rootfs: /tmp}}`, "has no init.d-posix/rcS"},
		{`{preset: iris, controller: px4-sitl, px4: {dir: ` + fw + `, airframe: 4001}}`, "PX4 has no airframe 4001"},
		{`{preset: iris, controller: px4sitl}`, `unknown multirotor controller "px4sitl": want one of px4like, ardupilot-sitl, px4-sitl`},
		{`{preset: iris, px4: {launch: false}}`, "vehicles[0].params.px4: only read with controller: px4-sitl (the group is flown by px4like)"},
		{`{preset: iris, controller: px4-sitl, px4: {launch: false, period: 2500us}}`, "must be a multiple of physics_period"},
		{`{preset: iris, controller: px4-sitl, px4: {launch: false, params: {nav_acc_rad: 2}}}`, "not a PX4 parameter name"},
		{`{preset: iris, controller: px4-sitl, px4: {launch: false}, autopilot: {mag_noise: 0}}`, "autopilot.mag_noise: must be > 0 for PX4"},
		{`{preset: iris, controller: px4-sitl, px4: {launch: false, speed: 3}}`, "speed"},
	} {
		err := parse(t, c.params)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("params %s: got %v, want an error with %q", c.params, err, c.want)
		}
	}
	if err := parse(t, `{preset: iris, controller: px4-sitl, px4: {dir: `+fw+`}}`); err != nil {
		t.Errorf("a firmware directory with bin/px4 and etc/: %v", err)
	}
	t.Setenv(px4sitl.EnvDir, fw)
	if err := parse(t, `{preset: iris, controller: px4-sitl}`); err != nil {
		t.Errorf("firmware from %s: %v", px4sitl.EnvDir, err)
	}
	if err := parse(t, `{preset: iris, controller: px4like}`); err != nil {
		t.Errorf("the kind's own controller by name: %v", err)
	}
}

func TestPX4StartsOnTheGround(t *testing.T) {
	text := `
name: t
duration: 1s
vehicles:
  - name: iris
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 10], spacing: 5}
    params: {preset: iris, controller: px4-sitl, px4: {launch: false}}
`
	sc, err := scenario.Parse("t.yaml", []byte(text), registry.Schema())
	if err == nil {
		_, err = engine.Validate(sc, engine.Options{Registry: registry})
	}
	if err == nil || !strings.Contains(err.Error(), "boots on the ground") {
		t.Fatalf("got %v", err)
	}
}

// TestBehaviourCommandsAreRefused: a behaviour that commands the vehicle
// directly cannot fly real PX4; the run ends at once with an error saying
// how to command it.
func TestBehaviourCommandsAreRefused(t *testing.T) {
	text := fmt.Sprintf(`
name: t
duration: 5s
vehicles:
  - name: iris
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params: {preset: iris, controller: px4-sitl, px4: {launch: false, port: %d, connect_timeout: 2s}}
    behaviors:
      - {type: waypoints, points: [[0, 0, 5]]}
`, freePort(t))
	sc, err := scenario.Parse("t.yaml", []byte(text), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	_, err = runner.Execute(r, "", runner.Options{})
	if err == nil || !strings.Contains(err.Error(), "real PX4 takes commands over MAVLink only") || !strings.Contains(err.Error(), "iris-0") {
		t.Fatalf("got %v", err)
	}
}

// TestScenarioFilesAreValid checks the PX4 scenarios of the repository
// against a directory shaped like PX4's build, so that they do not rot
// where PX4 is not built.
func TestScenarioFilesAreValid(t *testing.T) {
	t.Setenv(px4sitl.EnvDir, fakeFirmware(t))
	for _, f := range []string{"../examples/px4/mission.yaml", "../examples/px4/qgc.yaml", "testdata/takeoff-land.yaml"} {
		if _, err := scenariofile.Load(f, registry.Schema()); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
