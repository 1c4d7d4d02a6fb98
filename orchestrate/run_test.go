package orchestrate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"skyloop/components"
	"skyloop/scenario/scenariofile"

	"skyloop/engine"
	"skyloop/internal/nstest"
	"skyloop/orchestrate"
	"skyloop/runner"
)

// registry has every component skyloop ships with.
var registry = components.Registry()

func needRoot(t *testing.T) {
	t.Helper()
	nstest.Need(t, orchestrate.CheckPrivileges, "ip", "python3")
}

const echoScenario = `
name: NAME
seed: 1
duration: 8s
tick: 1ms
realtime: 1
isolation: netns
vehicles:
  - name: uav
    kind: pointmass
    count: 4
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    behaviors:
      - {type: waypoints, points: [[0, 20, 5], [20, 20, 5]]}
processes:
  - name: echo
    command: "python3 echo.py --ready READY/{i} --ip {ip} --peer 10.0.0.$(( ({i} + 1) % 4 + 1 ))EXTRA"
    restart: RESTART
network:
  backend: impair
  latency: 10ms
`

// startup is how long a test waits for programs to start: far more than
// they take on a quiet machine (a fraction of a second), so that a loaded
// machine cannot fail the test; it only waits that long when something is
// broken.
const startup = 3 * time.Minute

// unique returns a scenario name unique to this test process, so that
// test processes running at once never share namespaces.
func unique(name string) string { return fmt.Sprintf("%s-%d", name, os.Getpid()) }

// readyFiles holds the files the test programs append a line to once they
// listen (--ready READY/{i}), one per vehicle.
type readyFiles struct {
	dir string
	n   int
}

func newReady(t *testing.T, n int) *readyFiles { return &readyFiles{dir: t.TempDir(), n: n} }

// starts returns how many times each vehicle's program became ready.
func (r *readyFiles) starts() []int {
	out := make([]int, r.n)
	for i := range out {
		b, _ := os.ReadFile(filepath.Join(r.dir, strconv.Itoa(i)))
		out[i] = strings.Count(string(b), "ready")
	}
	return out
}

// waitFor returns a runner.Options.Started hook: the run's first tick
// waits until every vehicle's program has become ready at least min
// times, so that the run's simulated seconds all have the programs
// running however long they took to start. A program that never gets
// there fails the test (the run then goes on and ends normally).
func (r *readyFiles) waitFor(t *testing.T, min int) func() {
	return func() {
		deadline := time.Now().Add(startup)
		for {
			all := true
			for _, n := range r.starts() {
				all = all && n >= min
			}
			if all {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("the programs did not become ready %d times within %v: %v", min, startup, r.starts())
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func runEcho(t *testing.T, name, extra, restart string, starts int) (*runner.Result, string) {
	t.Helper()
	ready := newReady(t, 4)
	text := strings.NewReplacer("NAME", name, "EXTRA", extra, "RESTART", restart, "READY", ready.dir).Replace(echoScenario)
	return runScenario(t, name, text, runner.Options{Started: ready.waitFor(t, starts)})
}

// runScenario runs a scenario written into testdata (where the test
// programs are) and checks that its namespaces are gone afterwards.
func runScenario(t *testing.T, name, text string, opt runner.Options) (*runner.Result, string) {
	t.Helper()
	path := filepath.Join("testdata", name+".yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	sc, err := scenariofile.Load(path, registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	res, err := runner.Execute(r, dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := orchestrate.Namespaces(orchestrate.Prefix(name)); len(left) != 0 {
		t.Fatalf("namespaces left after the run: %v", left)
	}
	return res, dir
}

// TestEchoThroughTheSimulator: a UDP echo program in every namespace talks
// to the next vehicle through the simulated network while the UAVs fly.
func TestEchoThroughTheSimulator(t *testing.T) {
	needRoot(t)
	res, dir := runEcho(t, unique("orch-echo"), "", "none", 1)
	for i := 0; i < 4; i++ {
		out, err := os.ReadFile(filepath.Join(dir, "procs", strings.Replace("I-echo.out", "I", string(rune('0'+i)), 1)))
		if err != nil {
			t.Fatal(err)
		}
		var sent, replies, echoed int
		if _, err := fmtSscanf(string(out), &sent, &replies, &echoed); err != nil || replies < sent/2 || echoed == 0 {
			t.Errorf("vehicle %d's echo program: %q", i, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "procs", string(rune('0'+i))+"-echo.pid")); err != nil {
			t.Error(err)
		}
	}
	if len(res.Summary.Processes) != 4 {
		t.Fatalf("process results %+v", res.Summary.Processes)
	}
	for _, p := range res.Summary.Processes {
		// Stopped at the end with SIGTERM: the shell dies of it, or the
		// program exits 0 after printing its counts.
		if !p.StoppedByRun || !(p.ExitCode == 0 || p.Signal == "terminated") || p.Starts != 1 {
			t.Errorf("process %+v", p)
		}
	}
	trace, _ := os.ReadFile(filepath.Join(dir, "trace.csv"))
	if n := strings.Count(string(trace), ",tap,"); n < 100 {
		t.Fatalf("trace.csv has %d tap events", n)
	}
	for _, v := range res.Summary.Vehicles {
		if v.DistanceM < 10 {
			t.Errorf("%s did not fly (%.1f m)", v.Name, v.DistanceM)
		}
	}
}

// TestCrashingChildIsRestartedAndCleanedUp: a process that keeps crashing
// is restarted (restart: on-failure), the run completes, and nothing is
// left behind. (The run starts once every program has been started three
// times, so two crashes each, however slow the machine.)
func TestCrashingChildIsRestartedAndCleanedUp(t *testing.T) {
	needRoot(t)
	res, dir := runEcho(t, unique("orch-crash"), " --crash-after 0.2", "on-failure", 3)
	for _, p := range res.Summary.Processes {
		if p.Starts < 2 || (p.ExitCode != 1 && !p.StoppedByRun) {
			t.Errorf("process %+v: want several starts after crashes", p)
		}
	}
	errs, _ := os.ReadFile(filepath.Join(dir, "procs", "2-echo.err"))
	if strings.Count(string(errs), "crashing on purpose") < 2 {
		t.Errorf("vehicle 2's stderr: %q", errs)
	}
	pids, _ := os.ReadFile(filepath.Join(dir, "procs", "2-echo.pid"))
	if n := len(strings.Fields(string(pids))); n < 2 {
		t.Errorf("pid file lists %d starts: %q", n, pids)
	}
}

// fmtSscanf reads the counts line an echo program prints when stopped.
func fmtSscanf(s string, sent, replies, echoed *int) (int, error) {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "sent ") {
			return fmtSscan(strings.TrimSpace(l), sent, replies, echoed)
		}
	}
	return 0, fmt.Errorf("no counts in %q", s)
}

const mavScenario = `
name: NAME
seed: 1
duration: 12s
tick: 1ms
realtime: 1
isolation: netns
vehicles:
  - name: drone
    kind: multirotor
    count: 2
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    behaviors:
      - {type: mavlink}
processes:
  - name: arm
    command: "python3 mavarm.py --ready READY/{i} --sysid {sysid}"
network:
  backend: impair
  latency: 10ms
`

// TestCompanionArmsItsDroneOverHostVeth: an unmodified MAVLink program in
// each vehicle's namespace hears its own autopilot's heartbeat on UDP
// 14540 over host_veth and arms it.
func TestCompanionArmsItsDroneOverHostVeth(t *testing.T) {
	needRoot(t)
	name := unique("orch-mav")
	ready := newReady(t, 2)
	text := strings.NewReplacer("NAME", name, "READY", ready.dir).Replace(mavScenario)
	res, dir := runScenario(t, name, text, runner.Options{Started: ready.waitFor(t, 1)})
	for _, p := range res.Summary.Processes {
		out, _ := os.ReadFile(filepath.Join(dir, "procs", fmt.Sprintf("%d-arm.out", p.Vehicle)))
		want := fmt.Sprintf("heartbeat from system %d at 10.100.%d.1:14580", p.Vehicle+1, p.Vehicle)
		if p.ExitCode != 0 || !strings.Contains(string(out), want) || !strings.Contains(string(out), "arm acknowledged, result 0") {
			t.Errorf("vehicle %d: %+v\n%s", p.Vehicle, p, out)
		}
	}
	events, _ := os.ReadFile(filepath.Join(dir, "events.csv"))
	for i := 0; i < 2; i++ {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^\d+,%d,[^,]*,ARM`, i)).Match(events) {
			t.Errorf("events.csv has no ARM for vehicle %d", i)
		}
	}
}
