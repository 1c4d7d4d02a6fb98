package mujoco

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/geom"
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
// and its mesh directory is made absolute. No file is read (ParseRobot).
func TestRobotInstance(t *testing.T) {
	dir := "/models"
	path := filepath.Join(dir, "arm.xml")
	m, err := ParseRobot(path, dir, []byte(twoLinks))
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
	dir := "/models"
	for _, c := range []struct{ text, want string }{
		{"<mujoco><worldbody><geom type='plane'/></worldbody></mujoco>", "no <body> in <worldbody>"},
		{"<mujoco><include file='x.xml'/></mujoco>", "<include> is not supported"},
		{"<mujoco><bogus/></mujoco>", "unknown MJCF section <bogus>"},
		{"<robot/>", "the root element is <robot>, want <mujoco>"},
		{"<mujoco><worldbody>", "not MJCF XML"},
	} {
		path := filepath.Join(dir, "r.xml")
		_, err := ParseRobot(path, dir, []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: got %v, want %q with the path", c.text, err, c.want)
		}
	}
	path := filepath.Join(dir, "q.xml")
	m, err := ParseRobot(path, dir, []byte(`<mujoco><worldbody><body name="b" euler="0 0 30"><geom type="sphere" size="1"/></body></worldbody></mujoco>`))
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
