package mavlink

import (
	"fmt"
	"math"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"

	"skyloop/geom"
	"skyloop/sim"
)

// ClientHost is what a client needs from its transport.
type ClientHost interface {
	// Send sends a frame to the client's vehicle.
	Send(frame []byte)
	// Event records an event for events.csv.
	Event(name, detail string)
}

// OpKind says what a client operation does.
type OpKind uint8

// Operation kinds.
const (
	// OpConnect waits until the vehicle's position has been heard (the
	// client's heartbeats make the vehicle stream to it).
	OpConnect OpKind = iota
	// OpCommand sends a COMMAND_LONG until it is acknowledged. Arming
	// waits first until the vehicle is ready to arm (Client.Ready).
	OpCommand
	// OpUpload uploads a mission with the mission protocol.
	OpUpload
	// OpSetParam writes a parameter until the vehicle reports the value.
	OpSetParam
	// OpWaitLanded waits until the vehicle, having flown, is on the ground
	// and disarmed.
	OpWaitLanded
	// OpMode switches to custom mode Value (SET_MODE, resent until the
	// heartbeat shows it; ArduPilot does not acknowledge SET_MODE).
	OpMode
	// OpWaitAlt waits until the vehicle is Value metres above its home.
	OpWaitAlt
)

// Op is one step of a client's script.
type Op struct {
	Kind OpKind
	Name string // for results and events
	// OpCommand.
	Cmd    common.MAV_CMD
	Params [7]float32
	// OpUpload: Items (offsets from the vehicle's home, converted when the
	// upload starts) or Raw (ready items; Shift moves them by a local
	// offset first).
	Items []Item
	Raw   []common.MessageMissionItemInt
	Shift func(c *Client) geom.Vec3
	// OpSetParam.
	Param string
	Value float32
	// Only, when set, runs the operation only for that autopilot (from
	// the vehicle's HEARTBEAT): ArduPilot and PX4 start missions
	// differently.
	Only common.MAV_AUTOPILOT
}

// Item is a mission item relative to the vehicle's home.
type Item struct {
	Cmd    common.MAV_CMD
	Offset geom.Vec3    // x east, y north of home; z above home
	Hold   sim.Duration // hold or loiter time
	// Here leaves the position out: the item applies where the vehicle
	// is when it starts (landing or loitering in place).
	Here bool
	// Absolute makes Offset's x and y a position in the scenario's frame
	// rather than an offset from home (z stays above home).
	Absolute bool
}

// OpResult is how one operation went.
type OpResult struct {
	Name       string
	Start, End sim.Time
	Attempts   int // frames sent to get it done (commands, counts, items)
	OK         bool
	Detail     string
}

// Client is the ground-station side of MAVLink for one vehicle: it sends
// heartbeats, tracks the vehicle's telemetry, and runs a script of
// operations, each retried until it succeeds (MAVLink's command and
// mission protocols are acknowledged; lost frames are resent).
type Client struct {
	target uint8
	enc    *Encoder
	host   ClientHost
	origin geom.Geodetic
	retry  sim.Duration
	hbType common.MAV_TYPE
	now    sim.Time
	nextHB sim.Time

	// Telemetry as heard.
	Heard        bool
	LastHeard    sim.Time
	Armed        bool
	Mode         FlightMode
	Landed       common.MAV_LANDED_STATE
	Autopilot    common.MAV_AUTOPILOT // from the HEARTBEAT
	CustomMode   uint32
	heardHB      bool
	Pos          geom.Vec3 // local coordinates
	HasPos       bool
	Home         geom.Vec3 // position when the connection was made
	MissionSeq   int
	MissionState common.MISSION_STATE
	Reached      int // last MISSION_ITEM_REACHED, -1 none
	Params       map[string]float32
	flew         bool

	// Readiness, as the vehicle reports it. HomeReported is set by a
	// HOME_POSITION (HomePos its position). PrearmReported is set when
	// SYS_STATUS lists MAV_SYS_STATUS_PREARM_CHECK as present or enabled
	// (ArduPilot always lists it present, and enabled while any arming
	// check is), PrearmPassed when its health bit is set (ArduPilot:
	// checks passing or armed; PX4 sets only the health bit, when it can
	// arm in its current mode).
	HomeReported   bool
	HomePos        geom.Vec3
	PrearmReported bool
	PrearmPassed   bool
	// ReadyTimeout bounds the wait for the vehicle's readiness (connect
	// and the wait before arming), counted from the script's first step;
	// 0 waits for ever. After it the script fails and Err says what was
	// missing.
	ReadyTimeout sim.Duration
	// Err is set when the vehicle was not ready within ReadyTimeout.
	Err error

	readyFrom  sim.Time // the script's first step
	readyClock bool     // readyFrom is set
	waitFrom   sim.Time // when the current operation began waiting for readiness
	waiting    bool

	ops      []Op
	cur      int
	started  bool
	opStart  sim.Time
	lastSend sim.Time
	attempts int
	confirm  uint8
	upload   []common.MessageMissionItemInt
	upSent   int // last item sent, -1 = only the count

	// Results lists finished operations in order; Failed is set when one
	// failed for good (the script stops there).
	Results []OpResult
	Failed  bool
}

// NewClient returns a client from system sys, component comp, that talks to
// vehicle target. retry is the resend period for unacknowledged frames;
// hb is the heartbeat type it announces (GCS or onboard controller).
func NewClient(sys, comp, target uint8, origin geom.Geodetic, retry sim.Duration, hb common.MAV_TYPE, host ClientHost) *Client {
	return &Client{target: target, enc: NewEncoder(sys, comp), host: host, origin: origin, retry: retry, hbType: hb,
		Reached: -1, Params: map[string]float32{}}
}

// ClientWants reports whether a client reads messages with id: a decoder
// serving only clients can skip the rest (attitude, GPS, battery...).
func ClientWants(id uint32) bool {
	return id == idSysStatus || id == idHomePosition || flightWants(id)
}

// flightWants reports whether a client reads messages with id to fly its
// script, leaving out those that only tell its readiness (SYS_STATUS,
// HOME_POSITION).
func flightWants(id uint32) bool {
	switch id {
	case idHeartbeat, idGlobalPosInt, idExtSysState, idMissionCur, 46 /* MISSION_ITEM_REACHED */, 22, /* PARAM_VALUE */
		77 /* COMMAND_ACK */, 51 /* MISSION_REQUEST_INT */, 40 /* MISSION_REQUEST */, 47 /* MISSION_ACK */ :
		return true
	}
	return false
}

// DefaultReadyTimeout is how long a ground station waits for a vehicle's
// readiness by default: real firmware on a loaded machine has come up
// 15.6 s (simulated) after the start, and ArduCopter passes its pre-arm
// checks about 40 s after boot.
const DefaultReadyTimeout = 120 * sim.Second

// missionStartTries is how often a denied MISSION_START is tried.
const missionStartTries = 5

// armTries is how often a refused arming is tried (once per retry period:
// two minutes at the default 1 s) when the client has no ReadyTimeout;
// with one, a refusal is retried until it has passed.
const armTries = 120

// isArm reports whether op arms the vehicle.
func isArm(op *Op) bool {
	return op.Kind == OpCommand && op.Cmd == common.MAV_CMD_COMPONENT_ARM_DISARM && op.Params[0] == 1
}

// Ready returns what the vehicle still lacks to be armed, or "" when it is
// ready: its link (a heartbeat heard), its home (a position reported:
// GLOBAL_POSITION_INT, which ArduPilot sends as zeros and PX4 not at all
// until their estimators have a global position), and its pre-arm checks
// when its SYS_STATUS reports them (a vehicle that does not, such as the
// stand-in, is ready once heard and positioned).
func (c *Client) Ready() string {
	switch {
	case !c.heardHB:
		return "no heartbeat heard (link down)"
	case !c.HasPos && !c.HomeReported:
		return "no position reported (home not set)"
	case c.PrearmReported && !c.PrearmPassed:
		return "pre-arm checks not passed (SYS_STATUS)"
	}
	return ""
}

// readyDeadline reports whether the wait for readiness has run out.
func (c *Client) readyDeadline() bool {
	return c.ReadyTimeout > 0 && c.now.Sub(c.readyFrom) >= c.ReadyTimeout
}

// notReady fails the current operation for good: the vehicle was not
// ready in time; missing says what it lacked.
func (c *Client) notReady(missing string) {
	c.Err = fmt.Errorf("vehicle %d not ready after %g s: %s", c.target, c.ReadyTimeout.Seconds(), missing)
	op := &c.ops[c.cur]
	start := c.opStart
	if !c.started {
		start = c.waitFrom
	}
	c.Results = append(c.Results, OpResult{Name: op.Name, Start: start, End: c.now, Attempts: c.attempts, Detail: c.Err.Error()})
	c.host.Event("mavlink_failed", c.Err.Error())
	c.Failed = true
	c.cur++
	c.started, c.waiting = false, false
}

// Target returns the vehicle's system id.
func (c *Client) Target() uint8 { return c.target }

// Add appends operations to the script.
func (c *Client) Add(ops ...Op) { c.ops = append(c.ops, ops...) }

// Done reports whether the script has finished (or failed).
func (c *Client) Done() bool { return c.cur >= len(c.ops) || c.Failed }

// Result returns the named operation's result, if it finished.
func (c *Client) Result(name string) (OpResult, bool) {
	for _, r := range c.Results {
		if r.Name == name {
			return r, true
		}
	}
	return OpResult{}, false
}

func (c *Client) send(m interface{ GetID() uint32 }) {
	b, err := c.enc.Encode(m)
	if err != nil {
		panic(err) // every message we send is in the common dialect
	}
	c.host.Send(b)
}

// Step sends heartbeats and starts or retries the current operation.
func (c *Client) Step(now sim.Time) {
	c.now = now
	if now >= c.nextHB {
		c.send(&common.MessageHeartbeat{Type: c.hbType, Autopilot: common.MAV_AUTOPILOT_INVALID, MavlinkVersion: 3,
			SystemStatus: common.MAV_STATE_ACTIVE})
		c.nextHB = now.Add(sim.Second)
	}
	if c.Done() {
		return
	}
	if !c.readyClock {
		c.readyFrom, c.readyClock = now, true
	}
	op := &c.ops[c.cur]
	if op.Only != 0 && !c.heardHB {
		if c.readyDeadline() {
			c.notReady(c.Ready())
		}
		return // which autopilot it is comes with its first HEARTBEAT
	}
	for op.Only != 0 && op.Only != c.Autopilot {
		c.cur++ // for another autopilot: skipped
		if c.Done() {
			return
		}
		op = &c.ops[c.cur]
	}
	if !c.started {
		if isArm(op) {
			if missing := c.Ready(); missing != "" {
				if !c.waiting {
					c.waiting, c.waitFrom = true, now
				}
				if c.readyDeadline() {
					c.notReady(missing)
				}
				return // arming waits for the vehicle's readiness
			}
			if c.waiting && now > c.waitFrom {
				c.host.Event("mavlink_ready", fmt.Sprintf("vehicle %d: ready to arm after waiting %.3f s", c.target, now.Sub(c.waitFrom).Seconds()))
			}
			c.waiting = false
		}
		c.started, c.opStart, c.attempts, c.confirm = true, now, 0, 0
		c.begin(op)
		return
	}
	if now.Sub(c.lastSend) >= c.retry {
		c.resend(op)
	}
	c.check(op)
}

// begin sends an operation's first frame.
func (c *Client) begin(op *Op) {
	switch op.Kind {
	case OpUpload:
		home := c.Home
		c.upload = c.upload[:0]
		if op.Raw != nil {
			var d geom.Vec3
			if op.Shift != nil {
				d = op.Shift(c)
			}
			for _, it := range op.Raw {
				if it.X != 0 || it.Y != 0 {
					p := c.origin.ToLocal(geom.Geodetic{Lat: float64(it.X) / 1e7, Lon: float64(it.Y) / 1e7, Alt: c.origin.Alt}).Add(d)
					g := c.origin.ToGeodetic(p)
					it.X, it.Y = deg7(g.Lat), deg7(g.Lon)
				}
				c.upload = append(c.upload, it)
			}
		} else {
			g := c.origin.ToGeodetic(home)
			lastX, lastY, lastZ := deg7(g.Lat), deg7(g.Lon), float32(0)
			for _, it := range op.Items {
				p := home.Add(geom.V(it.Offset.X, it.Offset.Y, 0))
				if it.Absolute {
					p = geom.V(it.Offset.X, it.Offset.Y, home.Z)
				}
				g := c.origin.ToGeodetic(p)
				mi := common.MessageMissionItemInt{Frame: common.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, Command: it.Cmd,
					Autocontinue: 1, X: deg7(g.Lat), Y: deg7(g.Lon), Z: float32(it.Offset.Z), Param4: float32(math.NaN())}
				if it.Cmd == common.MAV_CMD_NAV_LOITER_TIME || it.Cmd == common.MAV_CMD_NAV_WAYPOINT {
					mi.Param1 = float32(it.Hold.Seconds())
				}
				if it.Cmd == common.MAV_CMD_NAV_LOITER_TIME {
					// Param4 is not a yaw here (the exit for fixed wings):
					// ArduPilot refuses NaN (MAV_MISSION_INVALID_PARAM4).
					mi.Param4 = 0
				}
				if it.Here {
					// Where the previous item left the vehicle. Not 0, 0:
					// PX4 reads that as latitude and longitude 0 and flies
					// there (MISSION_ITEM_INT has no NaN for "here"); and
					// not a NaN altitude, which ArduPilot refuses
					// (MAV_MISSION_INVALID_PARAM7). A landing's altitude
					// is the ground's.
					mi.X, mi.Y, mi.Z = lastX, lastY, lastZ
					if it.Cmd == common.MAV_CMD_NAV_LAND {
						mi.Z = 0
					}
				}
				lastX, lastY, lastZ = mi.X, mi.Y, mi.Z
				if it.Cmd == common.MAV_CMD_NAV_RETURN_TO_LAUNCH {
					mi.Frame, mi.X, mi.Y, mi.Z = common.MAV_FRAME_MISSION, 0, 0, 0
				}
				c.upload = append(c.upload, mi)
			}
		}
		for i := range c.upload {
			c.upload[i].Seq = uint16(i)
			c.upload[i].TargetSystem, c.upload[i].TargetComponent = c.target, 1
		}
		c.upSent = -1
	}
	c.resend(op)
}

// resend (re)transmits the frame an operation waits on.
func (c *Client) resend(op *Op) {
	c.lastSend = c.now
	switch op.Kind {
	case OpConnect:
		if c.heardHB && c.Autopilot == common.MAV_AUTOPILOT_ARDUPILOTMEGA {
			// ArduPilot streams only what a ground station asks for.
			c.send(&common.MessageRequestDataStream{TargetSystem: c.target, TargetComponent: 1,
				ReqStreamId: uint8(common.MAV_DATA_STREAM_ALL), ReqMessageRate: 4, StartStop: 1})
			for _, id := range []uint32{idGlobalPosInt, idExtSysState, idMissionCur} {
				c.send(&common.MessageCommandLong{TargetSystem: c.target, TargetComponent: 1, Command: common.MAV_CMD_SET_MESSAGE_INTERVAL,
					Param1: float32(id), Param2: 200000})
			}
		}
		return // heartbeats do the rest
	case OpWaitLanded, OpWaitAlt:
		return // heartbeats do the work
	case OpMode:
		c.send(&common.MessageSetMode{TargetSystem: c.target, BaseMode: common.MAV_MODE(common.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED), CustomMode: uint32(op.Value)})
	case OpCommand:
		p := op.Params
		c.send(&common.MessageCommandLong{TargetSystem: c.target, TargetComponent: 1, Command: op.Cmd, Confirmation: c.confirm,
			Param1: p[0], Param2: p[1], Param3: p[2], Param4: p[3], Param5: p[4], Param6: p[5], Param7: p[6]})
		c.confirm++
	case OpUpload:
		if c.upSent < 0 {
			c.send(&common.MessageMissionCount{TargetSystem: c.target, TargetComponent: 1, Count: uint16(len(c.upload))})
		} else {
			c.send(&c.upload[c.upSent])
		}
	case OpSetParam:
		c.send(&common.MessageParamSet{TargetSystem: c.target, TargetComponent: 1, ParamId: op.Param, ParamValue: op.Value,
			ParamType: common.MAV_PARAM_TYPE_REAL32})
	}
	c.attempts++
}

// check finishes operations that wait on telemetry.
func (c *Client) check(op *Op) {
	switch op.Kind {
	case OpConnect:
		switch {
		case c.HasPos:
			c.Home = c.Pos
			if c.HomeReported {
				c.Home = c.HomePos // the vehicle's own home, when it has said so
			}
			c.finish(true, fmt.Sprintf("home %.2f %.2f %.2f", c.Home.X, c.Home.Y, c.Home.Z))
		case c.readyDeadline():
			missing := c.Ready()
			if missing == "" {
				missing = "no position reported (home not set)"
			}
			c.notReady(missing)
		}
	case OpWaitLanded:
		if c.flew && !c.Armed && c.Landed == common.MAV_LANDED_STATE_ON_GROUND {
			c.finish(true, "")
		}
	case OpMode:
		if c.CustomMode == uint32(op.Value) {
			c.finish(true, "")
		}
	case OpWaitAlt:
		if c.HasPos && c.Pos.Z-c.Home.Z >= float64(op.Value) {
			c.flew = true
			c.finish(true, fmt.Sprintf("%.2f m", c.Pos.Z-c.Home.Z))
		}
	}
}

func (c *Client) finish(ok bool, detail string) {
	op := &c.ops[c.cur]
	c.Results = append(c.Results, OpResult{Name: op.Name, Start: c.opStart, End: c.now, Attempts: c.attempts, OK: ok, Detail: detail})
	ev := fmt.Sprintf("vehicle %d: %s after %d sends, %.3f s", c.target, op.Name, c.attempts, c.now.Sub(c.opStart).Seconds())
	if detail != "" {
		ev += ": " + detail
	}
	if ok {
		c.host.Event("mavlink_done", ev)
	} else {
		c.host.Event("mavlink_failed", ev)
		c.Failed = true
	}
	c.cur++
	c.started = false
}

// Handle processes a frame heard at time now; frames from other systems
// are ignored.
func (c *Client) Handle(now sim.Time, f frame.Frame) {
	if f.GetSystemID() != c.target {
		return
	}
	c.now = now
	c.Heard, c.LastHeard = true, now
	var op *Op
	if !c.Done() && c.started {
		op = &c.ops[c.cur]
	}
	switch m := f.GetMessage().(type) {
	case *common.MessageHeartbeat:
		if f.GetComponentID() != 1 {
			return
		}
		c.Armed = m.BaseMode&common.MAV_MODE_FLAG_SAFETY_ARMED != 0
		c.Mode = ModeFromCustom(m.CustomMode)
		c.Autopilot, c.CustomMode, c.heardHB = m.Autopilot, m.CustomMode, true
	case *common.MessageSysStatus:
		if f.GetComponentID() != 1 {
			return
		}
		const bit = common.MAV_SYS_STATUS_PREARM_CHECK
		c.PrearmReported = c.PrearmReported || (m.OnboardControlSensorsPresent|m.OnboardControlSensorsEnabled)&bit != 0
		c.PrearmPassed = m.OnboardControlSensorsHealth&bit != 0
	case *common.MessageHomePosition:
		if m.Latitude == 0 && m.Longitude == 0 {
			return
		}
		c.HomePos = c.origin.ToLocal(geom.Geodetic{Lat: float64(m.Latitude) / 1e7, Lon: float64(m.Longitude) / 1e7, Alt: float64(m.Altitude) / 1000})
		c.HomeReported = true
	case *common.MessageGlobalPositionInt:
		if m.Lat == 0 && m.Lon == 0 {
			return // no position yet (ArduPilot sends zeros until its EKF has one)
		}
		c.Pos = c.origin.ToLocal(geom.Geodetic{Lat: float64(m.Lat) / 1e7, Lon: float64(m.Lon) / 1e7, Alt: float64(m.Alt) / 1000})
		c.HasPos = true
	case *common.MessageExtendedSysState:
		c.Landed = m.LandedState
		if m.LandedState == common.MAV_LANDED_STATE_IN_AIR || m.LandedState == common.MAV_LANDED_STATE_TAKEOFF {
			c.flew = true
		}
	case *common.MessageMissionCurrent:
		c.MissionSeq, c.MissionState = int(m.Seq), m.MissionState
	case *common.MessageMissionItemReached:
		c.Reached = int(m.Seq)
	case *common.MessageParamValue:
		c.Params[m.ParamId] = m.ParamValue
		if op != nil && op.Kind == OpSetParam && m.ParamId == op.Param {
			if m.ParamValue == op.Value {
				c.finish(true, "")
			} else {
				c.finish(false, fmt.Sprintf("vehicle kept %s = %g", m.ParamId, m.ParamValue))
			}
		}
	case *common.MessageCommandAck:
		if op == nil || op.Kind != OpCommand || m.Command != op.Cmd {
			return
		}
		switch m.Result {
		case common.MAV_RESULT_ACCEPTED:
			c.finish(true, "")
		case common.MAV_RESULT_TEMPORARILY_REJECTED, common.MAV_RESULT_IN_PROGRESS:
			if isArm(op) && m.Result == common.MAV_RESULT_TEMPORARILY_REJECTED && c.readyDeadline() {
				c.notReady("arming still refused (" + m.Result.String() + ")")
			}
			// otherwise try again at the next retry
		case common.MAV_RESULT_DENIED, common.MAV_RESULT_FAILED:
			if op.Cmd == common.MAV_CMD_MISSION_START && c.attempts < missionStartTries {
				// PX4 checks a new mission's feasibility after the
				// upload and denies a start until it has: try again.
				return
			}
			if isArm(op) {
				// Real firmware refuses to arm until its pre-arm checks
				// pass (ArduCopter: about 40 s after boot, for its
				// position estimate; PX4 does not say in SYS_STATUS
				// that they fail, only that they pass): try again, as a
				// pilot would, until the wait for readiness runs out.
				switch {
				case c.ReadyTimeout > 0 && c.readyDeadline():
					c.notReady("arming still refused (" + m.Result.String() + ")")
				case c.ReadyTimeout > 0 || c.attempts < armTries:
				default:
					c.finish(false, m.Result.String())
				}
				return
			}
			c.finish(false, m.Result.String())
		default:
			c.finish(false, m.Result.String())
		}
	case *common.MessageMissionRequestInt:
		c.itemRequested(op, int(m.Seq), false)
	case *common.MessageMissionRequest:
		c.itemRequested(op, int(m.Seq), true)
	case *common.MessageMissionAck:
		if op == nil || op.Kind != OpUpload || m.MissionType != common.MAV_MISSION_TYPE_MISSION {
			return
		}
		switch m.Type {
		case common.MAV_MISSION_ACCEPTED:
			if c.upSent == len(c.upload)-1 {
				c.finish(true, fmt.Sprintf("%d items", len(c.upload)))
			}
		case common.MAV_MISSION_OPERATION_CANCELLED:
			c.upSent = -1 // the vehicle gave up: start over
			c.resend(op)
		default:
			c.finish(false, m.Type.String())
		}
	}
}

func (c *Client) itemRequested(op *Op, seq int, legacy bool) {
	if op == nil || op.Kind != OpUpload || seq >= len(c.upload) {
		return
	}
	c.upSent = seq
	c.lastSend = c.now
	c.attempts++
	if legacy {
		it := toFloat(&c.upload[seq])
		it.TargetSystem, it.TargetComponent = c.target, 1
		c.send(it)
		return
	}
	c.send(&c.upload[seq])
}
