package mujoco

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"skyloop/geom"
	"skyloop/internal/untrusted"
)

const twoLinks = `<mujoco model="arm">
  <compiler angle="radian" meshdir="meshes"/>
  <default><geom rgba="1 0 0 1"/></default>
  <option timestep="0.01"/>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1"/>
    <light pos="0 0 3"/>
    <body name="base" pos="1 0 0.5">
      <freejoint/>
      <geom name="g" type="box" size="0.1 0.1 0.1"/>
      <body name="link"><joint name="j" type="hinge"/><geom type="sphere" size="0.05"/></body>
    </body>
  </worldbody>
  <actuator><velocity name="m" joint="j"/></actuator>
  <sensor><framepos name="p" objtype="body" objname="link"/></sensor>
  <contact><exclude body1="base" body2="link"/></contact>
</mujoco>`

// TestRobotInstance: a robot read from MJCF is copied with every name and
// every reference to a name prefixed, its top-level body moved and turned
// to the spawn pose; the file's own floor, light and options are left out,
// and its mesh directory is made absolute.
func TestRobotInstance(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "arm.xml")
	if err := os.WriteFile(path, []byte(twoLinks), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := ReadRobot(path)
	if err != nil {
		t.Fatal(err)
	}
	if !m.HasBody("link") || m.HasBody("floor") || !m.HasActuator("m") || m.HasActuator("j") {
		t.Error("HasBody/HasActuator disagree with the file")
	}
	head := m.Head()
	if !strings.Contains(head, `meshdir="`+filepath.Join(dir, "meshes")+`"`) || !strings.Contains(head, "<default>") {
		t.Errorf("head: %s", head)
	}
	bodies, acts, others, err := m.Instance("r3_", geom.Vec3{X: 10, Y: 20, Z: 0}, math.Pi/2)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`name="r3_base"`, `name="r3_link"`, `name="r3_j"`, `name="r3_g"`, `pos="10 21 0.5"`, `quat="0.7071067811865476 0 0 0.7071067811865475"`} {
		if !strings.Contains(bodies, want) {
			t.Errorf("bodies lack %s:\n%s", want, bodies)
		}
	}
	for _, bad := range []string{"floor", "light", "timestep"} {
		if strings.Contains(bodies+acts+others, bad) {
			t.Errorf("the robot's copy has its file's %s:\n%s%s%s", bad, bodies, acts, others)
		}
	}
	if !strings.Contains(acts, `name="r3_m"`) || !strings.Contains(acts, `joint="r3_j"`) {
		t.Errorf("actuators: %s", acts)
	}
	if !strings.Contains(others, `objname="r3_link"`) || !strings.Contains(others, `body1="r3_base" body2="r3_link"`) || !strings.Contains(others, "<sensor>") {
		t.Errorf("sensors and contacts: %s", others)
	}
	if !strings.Contains(bodies, `type="box"`) {
		t.Errorf("geometry lost: %s", bodies)
	}
}

// TestRobotInstanceRefusals: bad files and orientations the spawn would
// overwrite are refused with the file's name.
func TestRobotInstanceRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ text, want string }{
		{"<mujoco><worldbody><geom type='plane'/></worldbody></mujoco>", "no <body> in <worldbody>"},
		{"<mujoco><include file='x.xml'/></mujoco>", "<include> is not supported"},
		{"<mujoco><bogus/></mujoco>", "unknown MJCF section <bogus>"},
		{"<robot/>", "the root element is <robot>, want <mujoco>"},
		{"<mujoco><worldbody>", "not MJCF XML"},
	} {
		path := filepath.Join(dir, "r.xml")
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadRobot(path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: got %v, want %q with the path", c.text, err, c.want)
		}
	}
	path := filepath.Join(dir, "q.xml")
	if err := os.WriteFile(path, []byte(`<mujoco><worldbody><body name="b" euler="0 0 30"><geom type="sphere" size="1"/></body></worldbody></mujoco>`), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := ReadRobot(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := m.Instance("a_", geom.Vec3{}, 0); err != nil {
		t.Errorf("yaw 0 keeps the body's own orientation: %v", err)
	}
	if _, _, _, err := m.Instance("a_", geom.Vec3{}, 1); err == nil || !strings.Contains(err.Error(), "sets its own orientation (euler)") {
		t.Errorf("yaw 1: got %v", err)
	}
}

// TestReadRobotBounds: reading a robot's model (when the world is built,
// after validate) refuses a device or a file over the cap without reading
// it, and so do the asset files the model names, one by one and together;
// the errors name the files and wrap untrusted's.
func TestReadRobotBounds(t *testing.T) {
	dir := t.TempDir()
	sparse := func(name string, size int64) string {
		t.Helper()
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		return p
	}
	robot := func(name, compiler, assets string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		text := `<mujoco>` + compiler + `<asset>` + assets + `</asset><worldbody><body name="b"><geom type="sphere" size="1"/></body></worldbody></mujoco>`
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("sparse 600 MB model", func(t *testing.T) {
		p := sparse("big.xml", 600<<20)
		_, err := ReadRobot(p)
		if !errors.Is(err, untrusted.ErrTooLarge) || !strings.Contains(err.Error(), p) {
			t.Fatalf("got %v, want ErrTooLarge naming %s", err, p)
		}
	})
	t.Run("device model", func(t *testing.T) {
		_, err := ReadRobot("/dev/zero")
		if !errors.Is(err, untrusted.ErrNotRegular) || !strings.Contains(err.Error(), "/dev/zero") {
			t.Fatalf("got %v, want ErrNotRegular naming /dev/zero", err)
		}
	})
	t.Run("assets", func(t *testing.T) {
		os.Mkdir(filepath.Join(dir, "m"), 0o755)
		os.Mkdir(filepath.Join(dir, "a"), 0o755)
		sparse("m/huge.stl", 600<<20)
		for i := 0; i < 5; i++ {
			sparse(fmt.Sprintf("m/part%d.stl", i), 60<<20)
		}
		sparse("a/ok.stl", 10)
		if err := syscall.Mkfifo(filepath.Join(dir, "m", "pipe.png"), 0o644); err != nil {
			t.Fatal(err)
		}
		parts := ""
		for i := 0; i < 5; i++ {
			parts += fmt.Sprintf(`<mesh name="p%d" file="part%d.stl"/>`, i, i)
		}
		for _, c := range []struct {
			compiler, assets string
			want             error
			text             string
		}{
			{`<compiler meshdir="m"/>`, `<mesh file="huge.stl"/>`, untrusted.ErrTooLarge, `<mesh file="huge.stl">: ` + filepath.Join(dir, "m", "huge.stl")},
			{`<compiler meshdir="m"/>`, `<mesh file="/dev/zero"/>`, untrusted.ErrNotRegular, `<mesh file="/dev/zero">`},
			{`<compiler texturedir="m"/>`, `<texture type="cube" fileup="pipe.png"/>`, untrusted.ErrNotRegular, `<texture fileup="pipe.png">`},
			{`<compiler meshdir="m"/>`, `<hfield name="h" file="m/huge.stl" size="1 1 1 1"/>`, nil, "no such file"},
			{`<compiler meshdir="m" strippath="true"/>`, `<hfield name="h" file="x/y/huge.stl" size="1 1 1 1"/>`, untrusted.ErrTooLarge, `<hfield file="x/y/huge.stl">`},
			{`<compiler meshdir="m"/>`, parts, nil, "the model and its asset files take more than the 256 MiB allowed"},
			{`<compiler assetdir="a"/>`, `<mesh file="ok.stl"/>`, nil, ""},
			{``, `<mesh file="a/ok.stl"/>`, nil, ""},
		} {
			p := robot("r.xml", c.compiler, c.assets)
			_, err := ReadRobot(p)
			if c.text == "" {
				if err != nil {
					t.Errorf("%s %s: %v", c.compiler, c.assets, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), c.text) || !strings.Contains(err.Error(), p) || (c.want != nil && !errors.Is(err, c.want)) {
				t.Errorf("%s %s: got %v, want %v with %q", c.compiler, c.assets, err, c.want, c.text)
			}
		}
	})
}
