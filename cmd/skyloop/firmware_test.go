package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"skyloop/internal/fwtest"
)

// fwScenario is two ArduCopters whose firmware runs on other hosts.
const fwScenario = `
name: fw-hosts
duration: 10s
vehicles:
  - name: copter
    kind: multirotor
    count: 2
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params:
      preset: iris
      controller: ardupilot-sitl
      ardupilot: {launch: LAUNCH, listen: 0.0.0.0, peer: 10.9.0.0/24, params: {SIM_RATE_HZ: 400}}
`

// TestFirmwareStartsRemoteInstances: skyloop firmware starts, for the
// vehicles asked for only, the firmware found on this host
// ($SKYLOOP_ARDUPILOT_DIR, a stand-in here) as skyloop run would, sending
// to --sim-host: instance number, skyloop's parameter file (with the
// scenario's parameters) in the instance's directory under --out, absolute
// paths. It refuses what cannot work, saying why.
func TestFirmwareStartsRemoteInstances(t *testing.T) {
	t.Chdir(t.TempDir())
	for name, text := range map[string]string{
		"ap/build/sitl/bin/arducopter":                 fwtest.StandIn + "echo \"args $*\" >> \"$SKYLOOP_FAKE_LOG\"\n",
		"ap/Tools/autotest/default_params/copter.parm": "FRAME_CLASS 1\n",
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SKYLOOP_ARDUPILOT_DIR", "ap")
	t.Setenv("SKYLOOP_FAKE_LOG", filepath.Join(t.TempDir(), "fake.log"))
	os.WriteFile("remote.yaml", []byte(strings.Replace(fwScenario, "LAUNCH", "false", 1)), 0o644)
	os.WriteFile("local.yaml", []byte(strings.Replace(fwScenario, "LAUNCH", "true", 1)), 0o644)

	code, _, stderr := capture(t, "firmware", "remote.yaml", "--sim-host", "10.9.0.1", "--vehicles", "1", "--out", "fw")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	log, err := os.ReadFile(os.Getenv("SKYLOOP_FAKE_LOG"))
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := filepath.Abs(filepath.Join("fw", "procs", "ardupilot-1"))
	for _, want := range []string{"cwd " + wd, "--model JSON:10.9.0.1", "-I 1 --sysid 2", "path yes " + filepath.Join(wd, "skyloop.parm")} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the firmware's log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(string(log), "path no") {
		t.Errorf("the firmware was handed a path that does not exist:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join("fw", "procs", "ardupilot-0")); err == nil {
		t.Error("instance 0 was started, though --vehicles named 1 only")
	}
	parm, _ := os.ReadFile(filepath.Join(wd, "skyloop.parm"))
	if !strings.Contains(string(parm), "SIM_RATE_HZ 400") || !strings.Contains(string(parm), "LOG_BACKEND_TYPE 0") {
		t.Errorf("skyloop.parm lacks the scenario's parameters or skyloop's:\n%s", parm)
	}

	// --part 1/2 of two vehicles is vehicle 1 alone.
	os.Remove(os.Getenv("SKYLOOP_FAKE_LOG"))
	if code, _, stderr := capture(t, "firmware", "remote.yaml", "--sim-host", "10.9.0.1", "--part", "1/2", "--out", "fw2"); code != 0 {
		t.Fatalf("--part 1/2: exit %d: %s", code, stderr)
	}
	if log, _ := os.ReadFile(os.Getenv("SKYLOOP_FAKE_LOG")); !strings.Contains(string(log), "-I 1 --sysid 2") {
		t.Errorf("--part 1/2 did not start instance 1:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join("fw2", "procs", "ardupilot-0")); err == nil {
		t.Error("--part 1/2 started instance 0")
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"firmware", "remote.yaml", "--sim-host", "10.9.0.1", "--part", "2/2"}, "want K/N, part K of N"},
		{[]string{"firmware", "remote.yaml", "--sim-host", "10.9.0.1", "--part", "0/2", "--vehicles", "0"}, "give one"},
		{[]string{"firmware", "remote.yaml"}, "--sim-host is required"},
		{[]string{"firmware", "remote.yaml", "--sim-host", "::1"}, "is not an IPv4 address"},
		{[]string{"firmware", "remote.yaml", "--sim-host", "10.9.0.1", "--vehicles", "5"}, "node 5 of fw-hosts is not a vehicle flown by firmware"},
		{[]string{"firmware", "local.yaml", "--sim-host", "10.9.0.1"}, "ardupilot.launch is true"},
		{[]string{"firmware", "quickstart", "--sim-host", "10.9.0.1"}, "quickstart has no vehicle flown by firmware"},
	} {
		code, _, stderr := capture(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %s; want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestFirmwareSlurmRecipe runs deploy/slurm/firmware.sbatch on a real
// one-node Slurm (startSlurm) with real ArduCopter: the batch script runs
// skyloop run, and skyloop firmware, started beside it as a job step
// (--overlap), starts the two ArduCopters; both fly the mission, and the
// firmware step is stopped when the run ends. It needs an ArduCopter
// build ($SKYLOOP_ARDUPILOT_DIR), which CI does not have.
func TestFirmwareSlurmRecipe(t *testing.T) {
	dir := os.Getenv("SKYLOOP_ARDUPILOT_DIR")
	if dir == "" {
		t.Skip("SKYLOOP_ARDUPILOT_DIR is not set: the firmware recipe needs an ArduCopter SITL build (docs/ardupilot.md)")
	}
	s := startSlurm(t)
	work := t.TempDir()
	scn := filepath.Join(work, "swarm.yaml")
	text := strings.Replace(strings.Replace(fwScenario, "LAUNCH", "false", 1), "listen: 0.0.0.0, peer: 10.9.0.0/24, ", "", 1)
	text = strings.Replace(text, "duration: 10s", "duration: 100s\ntick: 1ms", 1) + `    behaviors:
      - {type: mavlink, gcs: [gcs]}
nodes:
  - name: gcs
    position: [-10, 10, 1]
    behaviors:
      - type: mavlink_gcs
        group: copter
        mission:
          - {cmd: takeoff, alt: 5}
          - {cmd: land}
network:
  backend: wifi
`
	if err := os.WriteFile(scn, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(work, "runs")
	cmd := s.command("sbatch", "--parsable", "--nodes=1", "--chdir="+work, filepath.Join(deployDir, "slurm", "firmware.sbatch"))
	cmd.Env = append(slices.Clone(s.env), "SCENARIO="+scn, "OUT="+out, "SIM_HOST=127.0.0.1", "SKYLOOP_ARDUPILOT_DIR="+dir, "HOME="+work)
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("sbatch: %v %s", err, b)
	}
	job := strings.TrimSpace(string(b))
	s.wait(t)
	log, _ := os.ReadFile(filepath.Join(work, "skyloop-firmware-"+job+".out"))
	if st := s.state(t, job, -1); st != "COMPLETED" {
		t.Fatalf("job %s %s:\n%s", job, st, log)
	}
	if n := strings.Count(string(log), "script complete true"); n != 2 {
		t.Errorf("%d of 2 copters completed the mission:\n%s", n, log)
	}
	for _, f := range []string{"run/summary.json", "fw-0/procs/ardupilot-0.out", "fw-0/procs/ardupilot-1.out"} {
		if _, err := os.Stat(filepath.Join(out, "firmware-"+job, f)); err != nil {
			t.Errorf("the recipe wrote no %s: %v\n%s", f, err, log)
		}
	}
	if out, _ := exec.Command("pgrep", "-f", filepath.Join(dir, "build", "sitl", "bin", "arducopter")).Output(); len(out) > 0 {
		t.Errorf("ArduCopter still runs after the job: pids %s", out)
	}
}
