package ros2

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
	"unsafe"

	"skyloop/agent"
	"skyloop/dds"
	"skyloop/edge"
	"skyloop/fields"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Params are the parameters of the ros2 behaviour.
type Params struct {
	// Domain is the DDS domain (ROS_DOMAIN_ID), 0-232.
	Domain int `yaml:"domain" json:"domain"`
	// Namespace is the vehicle's ROS namespace; {name} stands for the
	// node's name with every character ROS names do not allow made '_'
	// ("uav-0" becomes "uav_0").
	Namespace string `yaml:"namespace" json:"namespace"`
	// PoseRate, OdomRate, FixRate and BatteryRate are the publishing
	// rates in simulated time (Hz; 0: not published).
	PoseRate    float64 `yaml:"pose_rate" json:"pose_rate"`
	OdomRate    float64 `yaml:"odom_rate" json:"odom_rate"`
	FixRate     float64 `yaml:"fix_rate" json:"fix_rate"`
	BatteryRate float64 `yaml:"battery_rate" json:"battery_rate"`
	// ClockPeriod is how often /clock is published (simulated time; 0:
	// never). Every ros2 behaviour of a run must give the same.
	ClockPeriod sim.Duration `yaml:"clock_period" json:"clock_period"`
	// CommandPeriod is how often the command topics are read.
	CommandPeriod sim.Duration `yaml:"command_period" json:"command_period"`
	// Lockstep names the ROS nodes the run waits for: at every /clock it
	// publishes, it waits until each has published a time at least as
	// late on /skyloop/ack/<node> (rosgraph_msgs/Clock). Every ros2
	// behaviour of a run must give the same list.
	Lockstep []string `yaml:"lockstep" json:"lockstep"`
	// LockstepTimeout bounds the wait for the acknowledgements (wall
	// clock): a node that does not answer fails the run.
	LockstepTimeout sim.Duration `yaml:"lockstep_timeout" json:"lockstep_timeout"`
	// Realtime is the real-time factor the run is paced at without
	// lockstep, unless the scenario or --realtime sets one: ROS 2 nodes
	// run on the wall clock, and an unpaced run would race ahead of them.
	// 0 leaves the run unpaced.
	Realtime float64 `yaml:"realtime" json:"realtime"`
}

// Pace implements agent.Pacer: Realtime, or 0 in lockstep (the nodes set
// the pace by acknowledging).
func (p *Params) Pace() float64 {
	if len(p.Lockstep) > 0 {
		return 0
	}
	return p.Realtime
}

// DefaultParams returns the defaults: domain 0, namespace {name}, pose and
// odometry at 50 Hz, the fix at 10 Hz, the battery at 1 Hz, /clock every
// 10 ms, commands read every 10 ms, no lockstep (10 s timeout): paced at
// real time.
func DefaultParams() *Params {
	return &Params{Namespace: "{name}", PoseRate: 50, OdomRate: 50, FixRate: 10, BatteryRate: 1,
		ClockPeriod: 10 * sim.Millisecond, CommandPeriod: 10 * sim.Millisecond, LockstepTimeout: 10 * sim.Second, Realtime: 1}
}

// rosName is what a ROS 2 name token may hold.
var rosName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*(/[A-Za-z][A-Za-z0-9_]*)*$`)

// Validate implements fields.Validator.
func (p *Params) Validate() fields.Errors {
	bad := fields.Errors{}
	if p.Domain < 0 || p.Domain > 232 {
		bad["domain"] = fmt.Sprintf("must be a ROS_DOMAIN_ID, 0-232, got %d", p.Domain)
	}
	if ns := strings.ReplaceAll(p.Namespace, "{name}", "x"); !rosName.MatchString(strings.Trim(ns, "/")) {
		bad["namespace"] = fmt.Sprintf("must be a ROS name (letters, digits, _ and /, not starting with a digit; {name} for the node's), got %q", p.Namespace)
	}
	for k, r := range map[string]float64{"pose_rate": p.PoseRate, "odom_rate": p.OdomRate, "fix_rate": p.FixRate, "battery_rate": p.BatteryRate} {
		if !(r >= 0 && r <= 1000) {
			bad[k] = fmt.Sprintf("must be 0-1000 Hz (0: not published), got %v", r)
		}
	}
	if p.ClockPeriod < 0 || p.ClockPeriod > sim.Second {
		bad["clock_period"] = fmt.Sprintf("must be 0 (no /clock) to 1s, got %v", p.ClockPeriod)
	}
	if p.CommandPeriod <= 0 || p.CommandPeriod > sim.Second {
		bad["command_period"] = fmt.Sprintf("must be more than 0 and at most 1s, got %v", p.CommandPeriod)
	}
	for i, n := range p.Lockstep {
		if !rosName.MatchString(n) {
			bad[fmt.Sprintf("lockstep[%d]", i)] = fmt.Sprintf("must be a ROS name (letters, digits, _), got %q", n)
		}
	}
	if len(p.Lockstep) > 0 && p.ClockPeriod == 0 {
		bad["lockstep"] = "needs /clock: set clock_period"
	}
	if !(p.Realtime >= 0 && p.Realtime <= 1000) {
		bad["realtime"] = fmt.Sprintf("must be a real-time factor, 0 (unpaced) to 1000, got %v", p.Realtime)
	}
	if p.LockstepTimeout <= 0 || p.LockstepTimeout > sim.Duration(time.Hour) {
		bad["lockstep_timeout"] = fmt.Sprintf("must be more than 0 and at most 1h, got %v", p.LockstepTimeout)
	}
	return bad
}

// Spec is the ros2 behaviour type.
var Spec = agent.Spec{
	Name: "ros2",
	Doc: "Bridges the vehicle to ROS 2 over DDS (Cyclone DDS, loaded at run time; docs/ros2.md): publishes, in simulated time, " +
		"/<ns>/pose (geometry_msgs/PoseStamped), /<ns>/odom (nav_msgs/Odometry), /<ns>/fix (sensor_msgs/NavSatFix) and /<ns>/battery " +
		"(sensor_msgs/BatteryState) at `pose_rate`, `odom_rate`, `fix_rate`, `battery_rate`, and /clock (rosgraph_msgs/Clock) every `clock_period`; " +
		"takes /<ns>/cmd_vel (geometry_msgs/Twist), /<ns>/goal_pose (geometry_msgs/PoseStamped), /<ns>/takeoff (std_msgs/Float64, m), " +
		"/<ns>/land (std_msgs/Empty) and /<ns>/arm (std_msgs/Bool) every `command_period`. Frames: ENU world \"map\", FLU body. " +
		"With `lockstep`, the run waits at every /clock for the named ROS nodes' acknowledgements on /skyloop/ack/<node>.",
	Vehicle: true,
	Params:  func() agent.Params { return DefaultParams() },
	New:     func(p agent.Params) agent.Behavior { return &Bridge{p: p.(*Params)} },
}

// Bridge is one vehicle's ROS 2 bridge.
type Bridge struct {
	p   *Params
	ctx *agent.Context
	svc *service
	ns  string

	pose, odom, fix, battery *publisher
	cmdVel, goal, takeoff    *dds.Reader
	land, arm                *dds.Reader
	nextCmd                  sim.Time
	ground                   bool
	rejected                 int // commands refused (bad frame)

	poseMsg    cPoseStamped
	odomMsg    cOdometry
	fixMsg     cNavSatFix
	batteryMsg cBatteryState
	frame      []byte // "map\0"
	child      []byte // "<ns>/base_link\0"
	empty      []byte // "\0"
}

// publisher is a writer publishing at a period in simulated time.
type publisher struct {
	w      *dds.Writer
	period sim.Duration
	next   sim.Time
}

func (p *publisher) due(now sim.Time) bool {
	if p == nil || now < p.next {
		return false
	}
	for p.next <= now {
		p.next = p.next.Add(p.period)
	}
	return true
}

// Namespace returns the ROS namespace of the node called name under
// template (Params.Namespace): {name} with the characters ROS names do
// not allow made '_', and a leading '_' before a leading digit.
func Namespace(template, name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	s := string(b)
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "_" + s
	}
	return strings.Trim(strings.ReplaceAll(template, "{name}", s), "/")
}

// Start implements agent.Behavior.
func (b *Bridge) Start(ctx *agent.Context) error {
	b.ctx = ctx
	b.ns = Namespace(b.p.Namespace, ctx.Ref().Name)
	_, b.ground = ctx.ForwardSpeed()
	return nil
}

// Schedule implements agent.Behavior: every tick (each topic keeps its
// own period).
func (b *Bridge) Schedule() (period, offset sim.Duration) { return b.ctx.Tick(), 0 }

// Open implements edge.Component: it joins the run's DDS participant and
// makes the vehicle's writers and readers.
func (b *Bridge) Open(env *edge.Env) error {
	b.svc = env.Service(serviceKey, func() edge.Service { return &service{} }).(*service)
	if err := b.svc.open(b.p); err != nil {
		return fmt.Errorf("%s: ros2: %w", b.ctx.Ref().Name, err)
	}
	b.frame, b.child, b.empty = cString0(WorldFrame), cString0(b.ns+"/"+BodyFrame), cString0("")
	var err error
	pub := func(topic string, d *dds.Descriptor, rate float64) *publisher {
		if err != nil || rate == 0 {
			return nil
		}
		var w *dds.Writer
		w, err = b.svc.writer("rt/"+b.ns+"/"+topic, d)
		return &publisher{w: w, period: sim.Duration(math.Round(1e9 / rate))}
	}
	sub := func(topic string, d *dds.Descriptor) *dds.Reader {
		if err != nil {
			return nil
		}
		var r *dds.Reader
		r, err = b.svc.reader("rt/"+b.ns+"/"+topic, d)
		return r
	}
	b.pose = pub("pose", descPoseStamped, b.p.PoseRate)
	b.odom = pub("odom", descOdometry, b.p.OdomRate)
	b.fix = pub("fix", descNavSatFix, b.p.FixRate)
	b.battery = pub("battery", descBatteryState, b.p.BatteryRate)
	b.cmdVel = sub("cmd_vel", descTwist)
	b.goal = sub("goal_pose", descPoseStamped)
	b.takeoff = sub("takeoff", descFloat64)
	b.land = sub("land", descEmpty)
	b.arm = sub("arm", descBool)
	if err != nil {
		return fmt.Errorf("%s: ros2: %w", b.ctx.Ref().Name, err)
	}
	return nil
}

// Close implements edge.Component (the service closes the participant).
func (b *Bridge) Close() error { return nil }

// cString0 returns s as a NUL-terminated C string.
func cString0(s string) []byte { return append([]byte(s), 0) }

// Step implements agent.Behavior: /clock (and the lockstep wait) once per
// tick for the run, the vehicle's due topics, then its commands.
func (b *Bridge) Step(ctx *agent.Context) {
	now := ctx.Now()
	if err := b.svc.tick(now); err != nil {
		ctx.Fail(err)
		return
	}
	if err := b.publish(ctx, now); err != nil {
		ctx.Fail(fmt.Errorf("ros2: %w", err))
		return
	}
	if now >= b.nextCmd {
		b.nextCmd = now.Add(b.p.CommandPeriod)
		if err := b.commands(ctx); err != nil {
			ctx.Fail(fmt.Errorf("ros2: %w", err))
		}
	}
}

// publish writes the topics whose time has come.
func (b *Bridge) publish(ctx *agent.Context, now sim.Time) error {
	var tel vehicle.Telemetry
	read := false
	get := func() *vehicle.Telemetry {
		if !read {
			tel, read = ctx.Telemetry(), true
		}
		return &tel
	}
	hdr := cHeader{stamp: stamp(now), frameID: &b.frame[0]}
	if b.pose.due(now) {
		m := &b.poseMsg
		m.header, m.pose = hdr, pose(get())
		if err := b.pose.w.Write(unsafe.Pointer(m)); err != nil {
			return err
		}
	}
	if b.odom.due(now) {
		m := &b.odomMsg
		m.header, m.childFrameID = hdr, &b.child[0]
		m.pose.pose, m.twist.twist = pose(get()), twist(get())
		if err := b.odom.w.Write(unsafe.Pointer(m)); err != nil {
			return err
		}
	}
	if b.fix.due(now) {
		t := get()
		g := ctx.Origin().ToGeodetic(t.Pos)
		m := &b.fixMsg
		m.header = hdr
		m.status = cNavSatStatus{status: 0, service: 1} // STATUS_FIX, SERVICE_GPS
		m.latitude, m.longitude, m.altitude = g.Lat, g.Lon, g.Alt
		m.positionCovarianceType = 0 // COVARIANCE_TYPE_UNKNOWN: the truth, no error model
		if err := b.fix.w.Write(unsafe.Pointer(m)); err != nil {
			return err
		}
	}
	if b.battery.due(now) {
		t := get()
		m := &b.batteryMsg
		m.header = hdr
		m.voltage, m.current = float32(t.BatteryV), -float32(t.BatteryA) // ROS: negative while discharging
		m.temperature, m.charge, m.capacity, m.designCapacity = unknown, unknown, unknown, unknown
		m.percentage = float32(t.BatteryRemaining)
		m.present = t.BatteryV > 0
		m.powerSupplyStatus = 0 // UNKNOWN
		if m.present {
			m.powerSupplyStatus = 2 // DISCHARGING
		}
		m.location, m.serialNumber = &b.empty[0], &b.empty[0]
		if err := b.battery.w.Write(unsafe.Pointer(m)); err != nil {
			return err
		}
	}
	return nil
}

// commands applies what arrived on the command topics, in a fixed order
// (arm, takeoff, goal, velocity, land), each sample as it came. Every
// value comes from another process: a goal in another frame is refused
// (logged once), and ctx.Command drops implausible numbers.
func (b *Bridge) commands(ctx *agent.Context) error {
	return errors.Join(drain(b.arm, b.onArm), drain(b.takeoff, b.onTakeoff), drain(b.goal, b.onGoal),
		drain(b.cmdVel, b.onCmdVel), drain(b.land, b.onLand))
}

// drain takes r's samples and hands each one with data to fn.
func drain(r *dds.Reader, fn func(unsafe.Pointer)) error {
	n, err := r.Take()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if s, ok := r.Sample(i); ok {
			fn(s)
		}
	}
	return r.Return()
}

func (b *Bridge) onArm(s unsafe.Pointer) {
	k := vehicle.CmdDisarm
	if (*cBool)(s).data {
		k = vehicle.CmdArm
	}
	b.ctx.Command(vehicle.Command{Kind: k})
}

func (b *Bridge) onTakeoff(s unsafe.Pointer) {
	b.ctx.Command(vehicle.Command{Kind: vehicle.CmdTakeoff, Alt: (*cFloat64)(s).data})
}

func (b *Bridge) onGoal(s unsafe.Pointer) {
	m := (*cPoseStamped)(s)
	if f := goString(m.header.frameID, 256); f != "" && f != WorldFrame && f != "/"+WorldFrame {
		if b.rejected++; b.rejected == 1 {
			b.ctx.Event("ros2_refused", fmt.Sprintf("goal_pose in frame %q: only %q (ENU about the origin) is known", f, WorldFrame))
		}
		return
	}
	b.ctx.Command(goalCommand(&m.pose))
}

func (b *Bridge) onCmdVel(s unsafe.Pointer) {
	b.ctx.Command(velocityCommand((*cTwist)(s), b.ctx.Telemetry().Yaw, b.ground))
}

func (b *Bridge) onLand(unsafe.Pointer) { b.ctx.Command(vehicle.Command{Kind: vehicle.CmdLand}) }

// goString copies a C string of at most max bytes (a longer one is cut).
func goString(p *byte, max int) string {
	if p == nil {
		return ""
	}
	n := 0
	for n < max && *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
