package ros2

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"skyloop/dds"
	"skyloop/edge"
	"skyloop/engine"
	"skyloop/internal/ddstest"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/sim"
)

// tester is a ROS 2 node in Go for the tests: it follows /clock, reads a
// vehicle's pose, sends commands and acknowledges each /clock on
// /skyloop/ack/tester.
type tester struct {
	p                  *dds.Participant
	clock, pose        *dds.Reader
	ack, takeoff, goal *dds.Writer
	frame, body        []byte
}

func newTester(t *testing.T, domain uint32, ns string) *tester {
	t.Helper()
	p, err := dds.NewParticipant(domain)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	x := &tester{p: p, frame: cString0("map"), body: cString0("uav_0/base_link")}
	rd := func(name string, d *dds.Descriptor) *dds.Reader {
		tp, err := p.Topic(name, d)
		if err != nil {
			t.Fatal(err)
		}
		r, err := p.Reader(tp, dds.DefaultQoS)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	wr := func(name string, d *dds.Descriptor) *dds.Writer {
		tp, err := p.Topic(name, d)
		if err != nil {
			t.Fatal(err)
		}
		w, err := p.Writer(tp, dds.DefaultQoS)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	x.clock, x.pose = rd("rt/clock", descClock), rd("rt/"+ns+"/pose", descPoseStamped)
	x.ack, x.takeoff, x.goal = wr("rt/skyloop/ack/tester", descClock), wr("rt/"+ns+"/takeoff", descFloat64), wr("rt/"+ns+"/goal_pose", descPoseStamped)
	return x
}

// TestBridgeFliesAGoalInLockstep runs a multirotor with the ros2 behaviour
// in lockstep with a Go ROS 2 node: the node sees /clock advance in 10 ms
// steps, reads the pose, sends a takeoff to 5 m at 1 s and a goal pose at
// 4 s, and acknowledges every /clock; the vehicle flies to the goal, and
// the last pose the node read is where the run says the vehicle was.
func TestBridgeFliesAGoalInLockstep(t *testing.T) {
	domain := ddstest.Need(t)
	x := newTester(t, domain, "uav_0")
	text := strings.ReplaceAll(`
name: ros2-goal
seed: 1
duration: 20s
tick: 1ms
vehicles:
  - name: uav
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    behaviors:
      - {type: ros2, domain: DOMAIN, lockstep: [tester], lockstep_timeout: 60s}
network: {backend: ideal}
`, "DOMAIN", strconv.Itoa(int(domain)))
	reg := engine.Core()
	reg.AddBehavior(Spec)
	sc, err := scenario.Parse("ros2.yaml", []byte(text), reg.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	var clocks, poses atomic.Int64
	var last cPose
	var lastStamp cTime
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var ack cClock
		for {
			select {
			case <-done:
				return
			default:
			}
			drain(x.pose, func(s unsafe.Pointer) {
				m := (*cPoseStamped)(s)
				last, lastStamp = m.pose, m.header.stamp
				poses.Add(1)
			})
			drain(x.clock, func(s unsafe.Pointer) {
				c := (*cClock)(s).clock
				now := sim.Time(int64(c.sec)*1e9 + int64(c.nanosec))
				clocks.Add(1)
				switch now {
				case sim.Time(sim.Second):
					m := cFloat64{data: 5}
					x.takeoff.Write(unsafe.Pointer(&m))
				case sim.Time(2 * sim.Second):
					// From another process, so untrusted: a goal in a
					// frame the bridge does not know is refused.
					m := cPoseStamped{header: cHeader{frameID: &x.body[0]},
						pose: cPose{position: cPoint{100, 100, 5}, orientation: cQuaternion{w: 1}}}
					x.goal.Write(unsafe.Pointer(&m))
				case sim.Time(4 * sim.Second):
					m := cPoseStamped{header: cHeader{frameID: &x.frame[0]},
						pose: cPose{position: cPoint{10, 5, 5}, orientation: cQuaternion{w: 1}}}
					x.goal.Write(unsafe.Pointer(&m))
				}
				ack.clock = c
				x.ack.Write(unsafe.Pointer(&ack))
			})
		}
	}()
	dir := filepath.Join(t.TempDir(), "run")
	res, err := runner.Execute(r, dir, runner.Options{})
	close(done)
	<-stopped
	if err != nil {
		t.Fatal(err)
	}
	v := res.Summary.Vehicles[0]
	if d := math.Hypot(math.Hypot(v.Final.X-10, v.Final.Y-5), v.Final.Z-5); d > 0.5 {
		t.Errorf("the vehicle ended at %v, %.2f m from the goal (10, 5, 5)", v.Final, d)
	}
	if ev, _ := os.ReadFile(filepath.Join(dir, "events.csv")); !strings.Contains(string(ev), `ros2_refused,"goal_pose in frame ""uav_0/base_link""`) {
		t.Errorf("no ros2_refused event for the goal in the body frame in %s:\n%s", dir, ev)
	}
	if n := clocks.Load(); n < 2000 {
		t.Errorf("the node saw %d /clock messages, want one per 10 ms of the 20 s", n)
	}
	if n := poses.Load(); n < 900 {
		t.Errorf("the node read %d poses, want about 50 Hz over 20 s", n)
	}
	if d := math.Hypot(math.Hypot(last.position.x-v.Final.X, last.position.y-v.Final.Y), last.position.z-v.Final.Z); d > 0.05 || lastStamp.sec < 19 {
		t.Errorf("the last pose read (%v at %d s) is %.3f m from the run's final position %v", last.position, lastStamp.sec, d, v.Final)
	}
}

// TestPacing: a run with the bridge is paced at real time unless it is in
// lockstep, the bridge says otherwise (realtime: 0 or another factor), or
// the scenario sets its own factor.
func TestPacing(t *testing.T) {
	reg := engine.Core()
	reg.AddBehavior(Spec)
	for _, c := range []struct {
		bridge, top string
		want        float64
	}{
		{"{type: ros2}", "", 1},
		{"{type: ros2, lockstep: [planner]}", "", 0},
		{"{type: ros2, realtime: 0}", "", 0},
		{"{type: ros2, realtime: 4}", "", 4},
		{"{type: ros2}", "realtime: 10\n", 10},
	} {
		text := "name: p\nduration: 1s\n" + c.top + "vehicles:\n  - {name: uav, kind: multirotor, count: 1, spawn: {layout: line, spacing: 5}, behaviors: [" + c.bridge + "]}\n"
		sc, err := scenario.Parse("p.yaml", []byte(text), reg.Schema())
		if err != nil {
			t.Fatal(err)
		}
		r, err := engine.Build(sc, engine.Options{Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		if got := r.Realtime(); got != c.want {
			t.Errorf("%s %s: paced at %v, want %v", c.bridge, c.top, got, c.want)
		}
	}
}

// BenchmarkBridge100 steps 100 multirotors with the bridge (pose and
// odometry at 50 Hz, fix at 10 Hz, battery at 1 Hz, /clock every 10 ms,
// commands read every 10 ms, nobody subscribed, unpaced) for one
// simulated second per iteration; ns/op divided by 100 000 is the cost per
// vehicle-tick.
func BenchmarkBridge100(b *testing.B) {
	domain := ddstest.Need(b)
	reg := engine.Core()
	reg.AddBehavior(Spec)
	text := `
name: bench
duration: 1000s
tick: 1ms
vehicles:
  - name: uav
    kind: multirotor
    count: 100
    spawn: {layout: grid, origin: [0, 0, 0], spacing: 5}
    behaviors:
      - {type: ros2, realtime: 0, domain: ` + strconv.Itoa(int(domain)) + `}
network: {backend: ideal}
`
	sc, err := scenario.Parse("bench.yaml", []byte(text), reg.Schema())
	if err != nil {
		b.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: reg, NoFiles: true})
	if err != nil {
		b.Fatal(err)
	}
	env := &edge.Env{Tick: r.Tick(), Nodes: r.Nodes(), Origin: sc.World.Origin}
	for _, c := range r.Components() {
		if err := c.Open(env); err != nil {
			b.Fatal(err)
		}
	}
	defer func() {
		for _, s := range env.Services() {
			s.Close(nil)
		}
		r.Close()
	}()
	if err := r.Start(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	t := sim.Time(0)
	for b.Loop() {
		t = t.Add(sim.Second)
		if err := r.RunUntil(t); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParamsErrors: bad ros2 parameters are refused, each naming its key.
func TestParamsErrors(t *testing.T) {
	p := DefaultParams()
	p.Domain, p.Namespace, p.PoseRate, p.ClockPeriod, p.Lockstep, p.Realtime = 300, "9bad-ns", -1, 0, []string{"ok", "not ok"}, math.NaN()
	bad := p.Validate()
	for _, k := range []string{"domain", "namespace", "pose_rate", "lockstep[1]", "lockstep", "realtime"} {
		if _, ok := bad[k]; !ok {
			t.Errorf("no problem reported for %s: %v", k, bad)
		}
	}
	if bad := DefaultParams().Validate(); len(bad) != 0 {
		t.Errorf("the defaults are refused: %v", bad)
	}
}
