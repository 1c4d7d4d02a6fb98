package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"skyloop/components"
	"skyloop/engine"
	"skyloop/internal/mjtest"
	"skyloop/scenario/scenariofile"
)

// robotScenario is a scenario with one MJCF robot whose model is MODEL
// (line 10).
const robotScenario = `name: models
duration: 1s
tick: 2ms
vehicles:
  - name: bot
    kind: mujoco
    count: 1
    spawn: {layout: line, spacing: 1}
    params:
      model: MODEL
      body: base
      left: lm
      right: rm
network: {backend: ideal}
`

// robotXML is a robot with ASSETS in its <asset> section.
const robotXML = `<mujoco>
  <compiler meshdir="meshes"/>
  <asset>ASSETS</asset>
  <worldbody>
    <body name="base" pos="0 0 0.1"><freejoint/><geom type="box" size="0.1 0.1 0.05"/>
      <body name="w"><joint name="l" type="hinge"/><joint name="r" type="hinge"/><geom type="sphere" size="0.02"/></body>
    </body>
  </worldbody>
  <actuator><velocity name="lm" joint="l"/><velocity name="rm" joint="r"/></actuator>
</mujoco>`

// TestValidateRefusesUnboundedModels: a MuJoCo model that is a device, a
// pipe or a huge (sparse) file, or that names such an asset file, is
// refused when the scenario is checked (skyloop validate), with the
// scenario file, the line and the field path, before anything reads it;
// a good model passes.
func TestValidateRefusesUnboundedModels(t *testing.T) {
	mjtest.Require(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sparse := func(name string, size int64) {
		t.Helper()
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(dir, "meshes"), 0o755)
	sparse("big.xml", 600<<20)
	sparse("meshes/huge.stl", 600<<20)
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.png"), 0o644); err != nil {
		t.Fatal(err)
	}
	write("meshes/ok.stl", "solid x\nendsolid x\n")
	write("good.xml", strings.Replace(robotXML, "ASSETS", `<mesh name="m" file="ok.stl"/>`, 1))
	write("zeromesh.xml", strings.Replace(robotXML, "ASSETS", `<mesh name="m" file="/dev/zero"/>`, 1))
	write("hugemesh.xml", strings.Replace(robotXML, "ASSETS", `<mesh name="m" file="huge.stl"/>`, 1))
	write("pipetex.xml", strings.Replace(strings.Replace(robotXML, `meshdir="meshes"`, `texturedir="."`, 1), "ASSETS", `<texture name="t" type="2d" file="pipe.png"/>`, 1))
	for _, c := range []struct{ model, want string }{
		{"/dev/zero", "read /dev/zero: not a regular file (a device)"},
		{"big.xml", "file too large: 600.0 MiB, more than the 64.0 MiB allowed"},
		{"zeromesh.xml", `<mesh file="/dev/zero">: /dev/zero: not a regular file`},
		{"hugemesh.xml", `<mesh file="huge.stl">: ` + filepath.Join(dir, "meshes", "huge.stl") + ": file too large"},
		{"pipetex.xml", `<texture file="pipe.png">: ` + filepath.Join(dir, "pipe.png") + ": not a regular file"},
		{"good.xml", ""},
	} {
		path := write("s.yaml", strings.Replace(robotScenario, "MODEL", c.model, 1))
		reg := components.Registry()
		sc, err := scenariofile.Load(path, reg.Schema())
		if err == nil {
			_, err = engine.Validate(sc, engine.Options{Registry: reg})
		}
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.model, err)
			}
			continue
		}
		prefix := "s.yaml:10: vehicles[0].params.model: "
		if err == nil || !strings.Contains(err.Error(), prefix) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("model %s: got %v, want %q and %q", c.model, err, prefix, c.want)
		}
	}
}
