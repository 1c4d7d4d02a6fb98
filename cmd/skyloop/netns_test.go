package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"skyloop/internal/parquettest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"skyloop/internal/nstest"
	"skyloop/orchestrate"
)

// TestMain lets the tests run this test binary as the skyloop command
// (SKYLOOP_CLI_CHILD=1), to send it real signals.
func TestMain(m *testing.M) {
	if os.Getenv("SKYLOOP_CLI_CHILD") == "1" {
		os.Exit(run(os.Args[1:]))
	}
	// skyloop-parquet writes the Parquet tables of the runs started.
	os.Exit(parquettest.Main(m))
}

func needNetns(t *testing.T) {
	t.Helper()
	nstest.Need(t, orchestrate.CheckPrivileges, "ip")
}

// child is a skyloop process started by a test.
type child struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	code           int
}

func startCLI(t *testing.T, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0], args...), done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), "SKYLOOP_CLI_CHILD=1")
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.cmd.Wait()
		c.code = c.cmd.ProcessState.ExitCode()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

func (c *child) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-c.done:
		return c.code
	case <-time.After(d):
		t.Fatalf("skyloop %v did not end within %v; stderr:\n%s", c.cmd.Args[1:], d, c.stderr.String())
		return 0
	}
}

// startup is how long a test waits for a run to set up its namespaces
// and start its programs, or to end after a signal: far more than they
// take on a quiet machine (about a second), so that a loaded machine
// cannot fail the test; a test only waits that long when something is
// broken.
const startup = 3 * time.Minute

// eventually polls cond every 50 ms for up to d.
func eventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// ours lists what `ip netns list` shows of prefix.
func ours(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], prefix+"-") {
			names = append(names, f[0])
		}
	}
	return names
}

// childPIDs reads every pid file of a run directory being written
// (.<out>.tmp-*/procs/*.pid).
func childPIDs(out string) []int {
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*", "procs", "*.pid"))
	var pids []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(s); err == nil {
				pids = append(pids, p)
			}
		}
	}
	return pids
}

// schedPolicy reads a process's scheduling policy (field 41 of
// /proc/<pid>/stat), or -1.
func schedPolicy(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:])) // field 3 onwards
	if len(f) < 39 {
		return -1
	}
	n, err := strconv.Atoi(f[38])
	if err != nil {
		return -1
	}
	return n
}

func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	// A zombie is dead for our purpose.
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(b), ") Z ")
}

const longNetns = `name: NAME
seed: 1
duration: 120s
tick: 1ms
realtime: 1
isolation: netns
vehicles:
  - name: uav
    kind: pointmass
    count: 3
    spawn: {layout: line, origin: [0, 0, 5], spacing: 5}
processes:
  - name: idle
    command: "exec sleep 1000"
network: {backend: impair, latency: 5ms}
`

// unique returns a scenario name unique to this test process, so that
// test processes running at once never share namespaces.
func unique(name string) string { return fmt.Sprintf("%s-%d", name, os.Getpid()) }

func writeScenario(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(text, "NAME", name)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSIGINTCleansUp: Ctrl-C on a run with namespaces and processes ends it
// with exit code 130, stops the processes, removes the namespaces and keeps
// the partial outputs; a second run of the same scenario meanwhile is
// refused as a name collision without touching the first.
func TestSIGINTCleansUp(t *testing.T) {
	needNetns(t)
	name := unique("cli-sigint")
	prefix := "sl-" + name
	path := writeScenario(t, name, longNetns)
	out := filepath.Join(t.TempDir(), "run")
	c := startCLI(t, "run", path, "--out", out)
	if !eventually(startup, func() bool { return len(ours(t, prefix)) == 3 && len(childPIDs(out)) == 3 }) {
		t.Fatalf("namespaces %v, processes %v; stderr:\n%s", ours(t, prefix), childPIDs(out), c.stderr.String())
	}
	pids := childPIDs(out)
	for _, p := range pids {
		// skyloop's threads may run SCHED_FIFO; the programs it starts
		// must not inherit it.
		if pol := schedPolicy(p); pol != 0 {
			t.Errorf("process %d runs with scheduling policy %d, want 0 (SCHED_NORMAL)", p, pol)
		}
	}

	out2 := filepath.Join(t.TempDir(), "run2")
	c2 := startCLI(t, "run", path, "--out", out2)
	if code := c2.wait(t, startup); code != 2 || !strings.Contains(c2.stderr.String(), "name collision: namespaces "+prefix+"-* belong to a running skyloop") {
		t.Errorf("second run: exit %d, stderr:\n%s", code, c2.stderr.String())
	}
	if _, err := os.Stat(filepath.Dir(out2)); err == nil {
		if ents, _ := os.ReadDir(filepath.Dir(out2)); len(ents) != 0 {
			t.Errorf("the refused run wrote %v", ents)
		}
	}
	if got := ours(t, prefix); len(got) != 3 {
		t.Fatalf("the refused run disturbed the first: namespaces %v", got)
	}

	c.cmd.Process.Signal(os.Interrupt)
	if code := c.wait(t, startup); code != 130 {
		t.Errorf("exit code %d after SIGINT, want 130; stderr:\n%s", code, c.stderr.String())
	}
	if got := ours(t, prefix); len(got) != 0 {
		t.Errorf("ip netns list still shows %v", got)
	}
	for _, p := range pids {
		if alive(p) {
			t.Errorf("process %d survived the run", p)
		}
	}
	if _, err := os.Stat(out + ".incomplete"); err != nil {
		t.Errorf("partial outputs: %v", err)
	}
	if b, err := os.ReadFile("/run/skyloop/" + prefix + ".netns"); err == nil {
		t.Errorf("record left: %q", b)
	}
}

// TestLeftoversOfAKilledRun: after kill -9 the children die with skyloop,
// `netns status` names the leftovers, and the next run removes them and
// cleans up after itself.
func TestLeftoversOfAKilledRun(t *testing.T) {
	needNetns(t)
	name := unique("cli-kill")
	prefix := "sl-" + name
	path := writeScenario(t, name, longNetns)
	out := filepath.Join(t.TempDir(), "run")
	c := startCLI(t, "run", path, "--out", out)
	if !eventually(startup, func() bool { return len(ours(t, prefix)) == 3 && len(childPIDs(out)) == 3 }) {
		t.Fatalf("namespaces %v; stderr:\n%s", ours(t, prefix), c.stderr.String())
	}
	pids := childPIDs(out)
	c.cmd.Process.Kill()
	c.wait(t, startup)
	if !eventually(startup, func() bool {
		for _, p := range pids {
			if alive(p) {
				return false
			}
		}
		return true
	}) {
		t.Errorf("children outlived a killed skyloop: %v", pids)
	}
	if got := ours(t, prefix); len(got) != 3 {
		t.Fatalf("expected the killed run's namespaces to be left, got %v", got)
	}
	code, stdout, stderr := capture(t, "netns", "status")
	if code != 0 || !strings.Contains(stdout, prefix+"-*: 3 namespaces, not held by a running skyloop") {
		t.Errorf("netns status: exit %d\n%s%s", code, stdout, stderr)
	}

	short := strings.Replace(longNetns, "duration: 120s", "duration: 2s", 1)
	short = strings.Replace(short, "exec sleep 1000", "exec sleep 1", 1)
	os.WriteFile(path, []byte(strings.ReplaceAll(short, "NAME", name)), 0o644)
	code, stdout, stderr = capture(t, "run", path, "--out", filepath.Join(t.TempDir(), "again"))
	if code != 0 {
		t.Fatalf("next run: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "processes: 3 x idle exit 0") {
		t.Errorf("summary lacks the processes:\n%s", stdout)
	}
	if got := ours(t, prefix); len(got) != 0 {
		t.Errorf("after the next run: %v", got)
	}
}

// TestNetnsBadInput: misspelt programs, missing privileges and bad
// prefixes are refused with exit code 2, a clear message, and nothing made
// or written.
func TestNetnsBadInput(t *testing.T) {
	needNetns(t)
	bad := strings.Replace(longNetns, "exec sleep 1000", "exec slep 1000", 1)
	path := writeScenario(t, unique("cli-bad"), bad)
	out := filepath.Join(t.TempDir(), "run")
	code, _, stderr := capture(t, "run", path, "--out", out)
	if code != 2 || !strings.Contains(stderr, "processes[0] (idle), vehicle 0: slep: command not found in PATH") {
		t.Errorf("misspelt program: exit %d\n%s", code, stderr)
	}
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 0 {
		t.Errorf("written: %v", ents)
	}
	if got := ours(t, "sl-"+unique("cli-bad")); len(got) != 0 {
		t.Errorf("namespaces made: %v", got)
	}

	code, _, stderr = capture(t, "netns", "up", "--count", "2", "--prefix", "lab")
	if code != 2 || !strings.Contains(stderr, `namespace prefix "lab" must start with sl-`) {
		t.Errorf("bad prefix: exit %d\n%s", code, stderr)
	}

	// Without privileges: the same binary as user nobody.
	dir, err := os.MkdirTemp("", "skyloop-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "skyloop")
	if b, err := os.ReadFile(os.Args[0]); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatal("copying the test binary")
	}
	good := filepath.Join(dir, "cli-priv.yaml")
	os.WriteFile(good, []byte(strings.ReplaceAll(longNetns, "NAME", unique("cli-priv"))), 0o644)
	os.Chmod(dir, 0o777)
	cmd := exec.Command(bin, "run", good, "--out", filepath.Join(dir, "out"))
	cmd.Env = append(os.Environ(), "SKYLOOP_CLI_CHILD=1", "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var se bytes.Buffer
	cmd.Stderr = &se
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(se.String(), "network namespaces need root (or CAP_NET_ADMIN and CAP_SYS_ADMIN)") {
		t.Errorf("as nobody: exit %d\n%s", code, se.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("the unprivileged run wrote its outputs")
	}
}

// TestMAVLinkPortInUse: a run whose MAVLink UDP port is taken stops with
// exit code 2, says which port and what to do, and writes nothing.
func TestMAVLinkPortInUse(t *testing.T) {
	taken, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.LocalAddr().(*net.UDPAddr).Port
	out := filepath.Join(t.TempDir(), "run")
	// Vehicle 1 of mavlink-sitl binds base+1.
	code, _, stderr := capture(t, "run", "mavlink-sitl", "--out", out, "--realtime", "1", "--duration", "1s",
		"--mavlink-udp", "--mavlink-bind-base", strconv.Itoa(port-1), "--mavlink-offboard-base", "30000")
	want := fmt.Sprintf("MAVLink UDP port 127.0.0.1:%d is in use", port)
	if code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "--mavlink-bind-base") {
		t.Errorf("exit %d, want 2 and %q:\n%s", code, want, stderr)
	}
	if _, err := os.Stat(filepath.Dir(out)); err == nil {
		if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 0 {
			t.Errorf("written: %v", ents)
		}
	}
}

// TestNetnsUpDownByHand: `netns up` makes usable namespaces that stay
// after it exits, `status` lists them, `down` removes them, and `up` is
// idempotent.
func TestNetnsUpDownByHand(t *testing.T) {
	needNetns(t)
	prefix := "sl-" + unique("clihand")
	for round := 0; round < 2; round++ {
		code, stdout, stderr := capture(t, "netns", "up", "--count", "2", "--prefix", prefix)
		if code != 0 || !strings.Contains(stdout, prefix+"-1") || !strings.Contains(stdout, "wifi_tap 10.0.0.2") {
			t.Fatalf("up (round %d): exit %d\n%s%s", round, code, stdout, stderr)
		}
	}
	if got := ours(t, prefix); len(got) != 2 {
		t.Fatalf("after up: %v", got)
	}
	out, err := exec.Command("ip", "netns", "exec", prefix+"-0", "ip", "-br", "addr").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "10.0.0.1/24") || !strings.Contains(string(out), "10.100.0.2/24") {
		t.Errorf("inside %s-0: %v\n%s", prefix, err, out)
	}
	code, stdout, _ := capture(t, "netns", "status")
	if code != 0 || !strings.Contains(stdout, prefix+"-*: 2 namespaces, not held by a running skyloop") {
		t.Errorf("status: exit %d\n%s", code, stdout)
	}
	code, stdout, stderr := capture(t, "netns", "down", "--prefix", prefix)
	if code != 0 || !strings.Contains(stdout, "removed "+prefix+"-0, "+prefix+"-1\n") {
		t.Errorf("down: exit %d\n%s%s", code, stdout, stderr)
	}
	if got := ours(t, prefix); len(got) != 0 {
		t.Errorf("after down: %v", got)
	}
}

// TestNetnsKeepsOtherPrefixes: netns down --prefix sl-x, and the start and
// end of a run of scenario x, remove exactly what skyloop made for x: not
// the namespaces of a live run of scenario x-b (whose names start with
// sl-x-), and not namespaces skyloop did not make, whatever their names;
// netns down says what it left and why.
func TestNetnsKeepsOtherPrefixes(t *testing.T) {
	needNetns(t)
	x := unique("clix")
	px := "sl-" + x
	pathB := writeScenario(t, x+"-b", longNetns)
	outB := filepath.Join(t.TempDir(), "runb")
	c := startCLI(t, "run", pathB, "--out", outB)
	if !eventually(startup, func() bool { return len(ours(t, px+"-b")) == 3 && len(childPIDs(outB)) == 3 }) {
		t.Fatalf("namespaces %v; stderr:\n%s", ours(t, px+"-b"), c.stderr.String())
	}
	// Named like one of x's, but made by someone else.
	if out, err := exec.Command("ip", "netns", "add", px+"-9").CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", px+"-9").Run() })
	intact := func(when string) {
		t.Helper()
		if got := ours(t, px+"-b"); len(got) != 3 {
			t.Fatalf("%s: the live run's namespaces are %v", when, got)
		}
		if _, err := os.Stat("/var/run/netns/" + px + "-9"); err != nil {
			t.Fatalf("%s: the namespace skyloop did not make is gone: %v", when, err)
		}
	}

	code, stdout, stderr := capture(t, "netns", "up", "--count", "2", "--prefix", px)
	if code != 0 {
		t.Fatalf("netns up: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = capture(t, "netns", "down", "--prefix", px)
	wantLines := []string{
		"removed " + px + "-0, " + px + "-1\n",
		"left " + px + "-b-0: belongs to prefix " + px + "-b, in use by the running skyloop (pid " + strconv.Itoa(c.cmd.Process.Pid) + ")\n",
		"left " + px + "-9: not made by skyloop",
	}
	for _, w := range wantLines {
		if code != 0 || !strings.Contains(stdout, w) {
			t.Errorf("netns down --prefix %s: exit %d, want %q in\n%s%s", px, code, w, stdout, stderr)
		}
	}
	intact("after netns down --prefix " + px)

	// A live run's namespaces are refused by their own prefix too.
	code, stdout, stderr = capture(t, "netns", "down", "--prefix", px+"-b")
	if code == 0 || !strings.Contains(stderr, "in use by a running skyloop") {
		t.Errorf("netns down of a live run: exit %d\n%s%s", code, stdout, stderr)
	}
	intact("after netns down --prefix " + px + "-b")

	// A run of scenario x removes only its own, at its start and its end.
	short := strings.Replace(longNetns, "duration: 120s", "duration: 2s", 1)
	short = strings.Replace(short, "exec sleep 1000", "exec sleep 1", 1)
	code, _, stderr = capture(t, "run", writeScenario(t, x, short), "--out", filepath.Join(t.TempDir(), "x"))
	if code != 0 {
		t.Fatalf("run of %s: exit %d\n%s", x, code, stderr)
	}
	intact("after a run of " + x)

	c.cmd.Process.Signal(os.Interrupt)
	if code := c.wait(t, startup); code != 130 {
		t.Errorf("the live run: exit %d after SIGINT; stderr:\n%s", code, c.stderr.String())
	}
	if got := ours(t, px+"-b"); len(got) != 0 {
		t.Errorf("the live run left %v", got)
	}
}
