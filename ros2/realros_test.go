package ros2

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"skyloop/internal/runtest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"skyloop/dds"
	"skyloop/engine"
	"skyloop/geom"
	"skyloop/internal/ddstest"
	"skyloop/internal/nstest"
	"skyloop/internal/syncbuf"
	"skyloop/orchestrate"
	"skyloop/runner"
)

// EnvDir names a ROS 2 install (the directory with setup.bash; the
// real-ROS 2 tests skip without it: CI has no ROS 2, docs/ros2-build.md).
const EnvDir = "SKYLOOP_ROS2_DIR"

func needROS2(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(EnvDir)
	if dir == "" {
		t.Skipf("%s is not set: the real-ROS 2 tests need a ROS 2 install with rclpy (scripts/build-ros2.sh, docs/ros2-build.md)", EnvDir)
	}
	if _, err := os.Stat(filepath.Join(dir, "setup.bash")); err != nil {
		t.Fatalf("%s=%s: no setup.bash there: %v", EnvDir, dir, err)
	}
	return dir
}

// rosShell is a bash command line that runs cmd with ROS 2 sourced, on
// Cyclone DDS with configuration uri, in domain.
func rosShell(dir string, domain uint32, uri, cmd string) string {
	return fmt.Sprintf(". %q/setup.bash && export RMW_IMPLEMENTATION=rmw_cyclonedds_cpp ROS_DOMAIN_ID=%d CYCLONEDDS_URI='%s' && exec %s",
		dir, domain, uri, cmd)
}

// rosNode is an rclpy program the test started.
type rosNode struct {
	cmd *exec.Cmd
	out syncbuf.Buffer
}

func (n *rosNode) output() string { return n.out.String() }

// startROS starts cmd (a python3 script of testdata, or a ros2 command)
// with ROS 2 sourced, stopped (SIGINT to its process group) at the test's
// end.
func startROS(t *testing.T, dir string, domain uint32, cmd string) *rosNode {
	t.Helper()
	n := &rosNode{cmd: exec.Command("bash", "-c", rosShell(dir, domain, ddstest.LoopbackURI, cmd))}
	n.cmd.Stdout, n.cmd.Stderr = &n.out, &n.out
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.stop() })
	return n
}

// stop interrupts the node and waits for it (killing it after 5 s).
func (n *rosNode) stop() {
	if n.cmd.ProcessState != nil {
		return
	}
	syscall.Kill(-n.cmd.Process.Pid, syscall.SIGINT)
	done := make(chan struct{})
	go func() { n.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// runROS runs the scenario text with the ros2 behaviour in domain.
func runROS(t *testing.T, text string) (*runner.Result, string) {
	t.Helper()
	reg := engine.Core()
	reg.AddBehavior(Spec)
	return runtest.Run(t, reg, "ros.yaml", text)
}

// TestRclpyFliesASquare: an rclpy node (testdata/square.py) in lockstep
// with the run reads /uav_0/pose and sends a takeoff and four goal poses:
// the vehicle flies the 10 m square, as its own log (vehicles.csv) shows.
func TestRclpyFliesASquare(t *testing.T) {
	dir := needROS2(t)
	domain := ddstest.Need(t)
	node := startROS(t, dir, domain, "/usr/bin/python3 testdata/square.py uav_0")
	res, run := runROS(t, fmt.Sprintf(`
name: ros2-square
seed: 1
duration: 60s
tick: 1ms
vehicles:
  - name: uav
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    behaviors:
      - {type: ros2, domain: %d, lockstep: [square], lockstep_timeout: 60s}
network: {backend: ideal}
outputs: {sample_period: 100ms}
`, domain))
	node.stop()
	if !strings.Contains(node.output(), "square done") {
		t.Errorf("the node did not finish the square:\n%s", node.output())
	}
	track := readTrack(t, run)
	for _, c := range []geom.Vec3{geom.V(10, 0, 5), geom.V(10, 10, 5), geom.V(0, 10, 5)} {
		best := 1e9
		for _, p := range track {
			best = min(best, p.Dist(c))
		}
		if best > 1 {
			t.Errorf("the vehicle came no closer than %.2f m to corner %v", best, c)
		}
	}
	t.Logf("node: %s; final %v", strings.TrimSpace(node.output()), res.Summary.Vehicles[0].Final)
}

// waitSubscribed returns once a reader of topic (a ROS node's
// subscription) is discovered, seen from a participant of the test's own.
func waitSubscribed(t *testing.T, domain uint32, topic string, d *dds.Descriptor) {
	t.Helper()
	p, err := dds.NewParticipant(domain)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tp, err := p.Topic(topic, d)
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.Writer(tp, dds.DefaultQoS)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a subscriber of "+topic, func() bool { n, _ := w.Matched(); return n > 0 })
}

// readTrack reads vehicle 0's positions from vehicles.csv.
func readTrack(t *testing.T, run string) []geom.Vec3 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, "vehicles.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	col := map[string]int{}
	for i, h := range strings.Split(lines[0], ",") {
		col[h] = i
	}
	var tr []geom.Vec3
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		x, _ := strconv.ParseFloat(f[col["x"]], 64)
		y, _ := strconv.ParseFloat(f[col["y"]], 64)
		z, _ := strconv.ParseFloat(f[col["z"]], 64)
		if f[col["id"]] == "0" {
			tr = append(tr, geom.V(x, y, z))
		}
	}
	return tr
}

// TestRos2TopicList: while a run with two bridged vehicles goes, `ros2
// topic list -t` shows the documented topics with their types.
func TestRos2TopicList(t *testing.T) {
	dir := needROS2(t)
	domain := ddstest.Need(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runROS(t, fmt.Sprintf(`
name: ros2-list
duration: 20s
vehicles:
  - {name: uav, kind: multirotor, count: 2, spawn: {layout: line, spacing: 5}, behaviors: [{type: ros2, domain: %d}]}
network: {backend: ideal}
`, domain))
	}()
	want := []string{"/clock [rosgraph_msgs/msg/Clock]"}
	for _, ns := range []string{"uav_0", "uav_1"} {
		want = append(want, "/"+ns+"/pose [geometry_msgs/msg/PoseStamped]", "/"+ns+"/odom [nav_msgs/msg/Odometry]",
			"/"+ns+"/fix [sensor_msgs/msg/NavSatFix]", "/"+ns+"/battery [sensor_msgs/msg/BatteryState]",
			"/"+ns+"/cmd_vel [geometry_msgs/msg/Twist]", "/"+ns+"/goal_pose [geometry_msgs/msg/PoseStamped]",
			"/"+ns+"/takeoff [std_msgs/msg/Float64]", "/"+ns+"/land [std_msgs/msg/Empty]", "/"+ns+"/arm [std_msgs/msg/Bool]")
	}
	var out string
	for i := 0; i < 10; i++ {
		b, _ := exec.Command("bash", "-c", rosShell(dir, domain, ddstest.LoopbackURI, "ros2 topic list -t --no-daemon --spin-time 2")).CombinedOutput()
		out = string(b)
		missing := 0
		for _, w := range want {
			if !strings.Contains(out, w) {
				missing++
			}
		}
		if missing == 0 {
			break
		}
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("ros2 topic list -t lacks %s", w)
		}
	}
	if t.Failed() {
		t.Logf("ros2 topic list -t:\n%s", out)
	}
	// The QoS a node subscribing with rclpy's default profile matches.
	info, _ := exec.Command("bash", "-c", rosShell(dir, domain, ddstest.LoopbackURI, "ros2 topic info -v --no-daemon /uav_0/pose")).CombinedOutput()
	for _, w := range []string{"Type: geometry_msgs/msg/PoseStamped", "Reliability: RELIABLE", "History (Depth): KEEP_LAST (10)", "Durability: VOLATILE"} {
		if !strings.Contains(string(info), w) {
			t.Errorf("ros2 topic info -v /uav_0/pose lacks %q:\n%s", w, info)
		}
	}
	<-done
}

// TestUseSimTimeFollowsClock: an rclpy node with use_sim_time and a 1 s
// timer, beside a run paced at 10x real time for 20 simulated seconds,
// gets about one timer callback per simulated second (its time is
// /clock's), not one per wall-clock second (the run takes about 2).
func TestUseSimTimeFollowsClock(t *testing.T) {
	dir := needROS2(t)
	domain := ddstest.Need(t)
	node := startROS(t, dir, domain, "/usr/bin/python3 testdata/simtime.py")
	waitSubscribed(t, domain, "rt/clock", descClock)
	runROS(t, fmt.Sprintf(`
name: ros2-simtime
duration: 20s
vehicles:
  - {name: uav, kind: multirotor, count: 1, spawn: {layout: line, spacing: 5}, behaviors: [{type: ros2, domain: %d, realtime: 10}]}
network: {backend: ideal}
`, domain))
	node.stop()
	ticks := regexp.MustCompile(`timer \d+ at ([0-9.]+)`).FindAllStringSubmatch(node.output(), -1)
	if len(ticks) < 15 {
		t.Fatalf("%d timer callbacks in 20 simulated seconds at 10x, want about 20:\n%s", len(ticks), node.output())
	}
	last, _ := strconv.ParseFloat(ticks[len(ticks)-1][1], 64)
	if last < 15 || last > 21 {
		t.Errorf("the last callback came at node time %.3f s, want simulated time near 20 s", last)
	}
}

// TestRclpyChatterThroughTheSimulatedNetwork: real rclpy nodes
// (testdata/chatter.py) as talker and listener in two vehicles' network
// namespaces talk through the simulated Wi-Fi while in range, as
// TestDDSThroughTheSimulatedNetwork's DDS participants do.
func TestRclpyChatterThroughTheSimulatedNetwork(t *testing.T) {
	dir := needROS2(t)
	nstest.Need(t, orchestrate.CheckPrivileges, "ip", "bash")
	script, err := filepath.Abs("testdata/chatter.py")
	if err != nil {
		t.Fatal(err)
	}
	run := func(role string) string {
		return "exec bash -c " + shellQuote(rosShell(dir, 0, chatterURI, "/usr/bin/python3 "+script+" "+role))
	}
	chatterAcross(t, "rclpynet", run("talker"), run("listener"))
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestLockstepRepeats flies the rclpy square twice in lockstep: the runs
// write the same vehicles.csv and events.csv, byte for byte. (The node
// decides at each /clock from the poses it has; in lockstep those are the
// same every run. docs/ros2.md says what could still make runs differ.)
func TestLockstepRepeats(t *testing.T) {
	dir := needROS2(t)
	domain := ddstest.Need(t)
	var files [2][]byte
	for i := range files {
		node := startROS(t, dir, domain, "/usr/bin/python3 testdata/square.py uav_0")
		_, run := runROS(t, fmt.Sprintf(`
name: ros2-square
seed: 1
duration: 30s
tick: 1ms
vehicles:
  - name: uav
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    behaviors:
      - {type: ros2, domain: %d, lockstep: [square], lockstep_timeout: 60s}
network: {backend: ideal}
`, domain))
		node.stop()
		for _, f := range []string{"vehicles.csv", "events.csv"} {
			b, err := os.ReadFile(filepath.Join(run, f))
			if err != nil {
				t.Fatal(err)
			}
			files[i] = append(files[i], b...)
		}
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Errorf("two lockstep runs with the same rclpy node differ (%d and %d bytes)", len(files[0]), len(files[1]))
	}
}
