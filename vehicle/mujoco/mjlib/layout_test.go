package mjlib_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"skyloop/internal/mjtest"
	"skyloop/vehicle/mujoco/mjlib"
)

// TestLayout compiles a C program against MuJoCo's own headers that prints
// the offsets of the mjModel and mjData fields this package reads, and the
// mjtObj values it uses, and compares them with the package's: a MuJoCo
// whose structures differ would be read wrongly.
func TestLayout(t *testing.T) {
	mjtest.Require(t)
	cc, err := exec.LookPath("gcc")
	if err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_MUJOCO") != "" {
			t.Fatal("gcc is needed to compare the layouts (CI installs g++)")
		}
		t.Skip("skipped: no gcc to compile against MuJoCo's headers")
	}
	if _, err := os.Stat("/usr/include/mujoco/mujoco.h"); err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_MUJOCO") != "" {
			t.Fatal("MuJoCo's headers are missing: apt-get install -y libmujoco-dev")
		}
		t.Skip("skipped: no MuJoCo headers (apt-get install -y libmujoco-dev)")
	}
	dir := t.TempDir()
	src := `#include <stdio.h>
#include <stddef.h>
#include <mujoco/mujoco.h>
#define M(f) printf("model.%s %zu\n", #f, offsetof(mjModel, f));
#define D(f) printf("data.%s %zu\n", #f, offsetof(mjData, f));
int main(void) {
  M(nq) M(nv) M(nu) M(na) M(nbody) M(njnt) M(ngeom) M(nsensordata) M(opt.timestep) M(jnt_qposadr) M(jnt_dofadr) M(sensor_adr) M(sensor_dim)
  M(geom_bodyid) M(geom_rbound) M(geom_margin) M(njmax) M(nconmax) D(warning)
  D(time) D(qpos) D(qvel) D(ctrl) D(act) D(qacc_warmstart) D(geom_xpos) D(sensordata) D(xpos) D(xquat) D(actuator_velocity) D(actuator_force)
  printf("warn.contactfull %d\nwarn.cnstrfull %d\n", mjWARN_CONTACTFULL, mjWARN_CNSTRFULL);
  printf("obj.body %d\nobj.joint %d\nobj.geom %d\nobj.actuator %d\nobj.sensor %d\nversion %d\nmjtNum %zu\n",
    mjOBJ_BODY, mjOBJ_JOINT, mjOBJ_GEOM, mjOBJ_ACTUATOR, mjOBJ_SENSOR, mjVERSION_HEADER, sizeof(mjtNum));
  return 0;
}
`
	if err := os.WriteFile(filepath.Join(dir, "off.c"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "off")
	if out, err := exec.Command(cc, filepath.Join(dir, "off.c"), "-o", bin).CombinedOutput(); err != nil {
		t.Fatalf("compiling against MuJoCo's headers: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("line %q", line)
		}
		got[k] = n
	}
	for k, want := range mjlib.Layout() {
		if got[k] != want {
			t.Errorf("%s: the headers say %d, the package uses %d", k, got[k], want)
		}
	}
	if len(got) != len(mjlib.Layout()) {
		t.Errorf("compared %d of the %d values printed", len(mjlib.Layout()), len(got))
	}
}
