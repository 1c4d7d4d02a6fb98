package mavlink

import (
	"fmt"
	"math"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"
	"github.com/bluenviron/gomavlib/v3/pkg/message"

	"skyloop/autopilot/px4like"
	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Autopilot is what a vehicle endpoint drives: the vehicle's own state
// estimate and its command input (vehicle.Vehicle and agent.Context both
// fit).
type Autopilot interface {
	Estimate() vehicle.Telemetry
	Command(c vehicle.Command)
}

// Tunable is an autopilot whose parameters can change during a run.
type Tunable interface {
	Params() px4like.Params
	SetParams(p px4like.Params) error
}

// Peer identifies the other end of a frame, as a transport knows it: the
// link it came in on and an address within that link.
type Peer struct {
	Link, Addr int32
}

// Host is what an endpoint needs from its transport.
type Host interface {
	// Send sends a frame to one peer.
	Send(to Peer, frame []byte)
	// Broadcast sends a frame to every peer (telemetry streams).
	Broadcast(frame []byte)
	// Event records an event for events.csv.
	Event(name, detail string)
}

// VehicleConfig configures a vehicle endpoint.
type VehicleConfig struct {
	SysID  uint8         // MAVLink system id (component 1)
	Origin geom.Geodetic // WGS84 position of the local origin
	Home   geom.Vec3     // launch point in local coordinates (x east, y north, z up)
	// Rates overrides stream rates (Hz) by message id; 0 turns a stream off.
	Rates map[uint32]float64
	// EpochUs is the Unix time (µs) of simulated time zero, for GPS time.
	EpochUs int64
}

// Message ids of the telemetry streams.
const (
	idHeartbeat     = 0
	idSysStatus     = 1
	idGPSRawInt     = 24
	idAttitude      = 30
	idLocalPosNED   = 32
	idGlobalPosInt  = 33
	idMissionCur    = 42
	idVFRHUD        = 74
	idBatteryStatus = 147
	idAutopilotVer  = 148
	idExtSysState   = 245
	idHomePosition  = 242
	idProtocolVer   = 300
)

// DefaultRates are the telemetry stream rates (Hz) of PX4's "normal"
// MAVLink mode, the one its ground-station link uses.
var DefaultRates = map[uint32]float64{
	idHeartbeat: 1, idSysStatus: 1, idBatteryStatus: 0.5, idGlobalPosInt: 5, idLocalPosNED: 1,
	idAttitude: 15, idGPSRawInt: 1, idVFRHUD: 4, idExtSysState: 1, idMissionCur: 1,
}

// StreamNames maps the stream message names accepted in scenario files to
// their ids.
var StreamNames = map[string]uint32{
	"HEARTBEAT": idHeartbeat, "SYS_STATUS": idSysStatus, "BATTERY_STATUS": idBatteryStatus,
	"GLOBAL_POSITION_INT": idGlobalPosInt, "LOCAL_POSITION_NED": idLocalPosNED, "ATTITUDE": idAttitude,
	"GPS_RAW_INT": idGPSRawInt, "VFR_HUD": idVFRHUD, "EXTENDED_SYS_STATE": idExtSysState,
	"MISSION_CURRENT": idMissionCur, "HOME_POSITION": idHomePosition,
}

type stream struct {
	id       uint32
	interval sim.Duration // 0 = off
	next     sim.Time
}

// Vehicle is the MAVLink endpoint of one simulated multirotor: it streams
// telemetry, answers commands, runs uploaded missions and serves
// parameters, like a PX4 autopilot. It is a pure state machine: frames in
// through Handle, time through Step, frames out through its Host.
type Vehicle struct {
	cfg  VehicleConfig
	ap   Autopilot
	tun  Tunable // nil when the autopilot has no parameters
	host Host
	enc  *Encoder
	ep   endpointParams

	streams []stream
	tel     vehicle.Telemetry // estimate at the last Step or Handle
	now     sim.Time

	// Mode requested by the operator; the reported mode derives from it
	// and the autopilot's own mode.
	//
	// keep is reported instead of AUTO.LOITER while the autopilot holds,
	// idles or is disarmed: POSCTL or ALTCTL set by the operator, or the
	// mode the vehicle landed in (PX4 stays in AUTO.LAND, AUTO.RTL or
	// AUTO.MISSION after touching down). Zero: none.
	keep FlightMode
	// rtlLand is set while the autopilot's landing is the descent at the
	// end of a return to launch, which PX4 reports as AUTO.RTL.
	rtlLand     bool
	offboard    bool
	offboardPos bool // offboard position (not velocity) setpoints
	lastSP      sim.Time
	hasSP       bool
	sp          setpoint // the newest offboard setpoint
	spDenied    bool     // the last setpoint was ignored

	mission missionState
	upload  uploadState

	// Flight phase tracking for the milestone events.
	prevArmed bool
	prevMode  vehicle.Mode

	// Disarming after landing (PX4's COM_DISARM_LAND).
	flown       bool     // off the ground since arming
	onGround    bool     // reporting ON_GROUND after flying...
	groundSince sim.Time // ...since this time
	disarmAsked sim.Time // when the endpoint last asked to disarm; 0 = not yet
	disarmReq   bool     // the operator asked to disarm

	// Data-link loss failsafe.
	gcsSeen  bool
	lastGCS  sim.Time
	dlLost   bool
	speedLim float64 // DO_CHANGE_SPEED, m/s; 0 = default

	// Stats.
	FramesIn, FramesOut, Commands int
	// Milestones records when the vehicle first armed, started a takeoff,
	// started a loiter item, started landing and disarmed (-1 = never).
	Milestones map[string]sim.Time
	// OnLoiter, when set, is called when a mission loiter item begins
	// holding (companion logic hooks here).
	OnLoiter func(now sim.Time)
}

// NewVehicle returns the endpoint of a vehicle.
func NewVehicle(cfg VehicleConfig, ap Autopilot, tun Tunable, host Host) *Vehicle {
	v := &Vehicle{cfg: cfg, ap: ap, tun: tun, host: host, enc: NewEncoder(cfg.SysID, compAutopilot), ep: defaultEndpointParams(),
		Milestones: map[string]sim.Time{}}
	v.mission.cur = -1
	for id, hz := range DefaultRates {
		v.setRate(id, hz)
	}
	for id, hz := range cfg.Rates {
		v.setRate(id, hz)
	}
	v.tel = ap.Estimate()
	v.prevArmed, v.prevMode = v.tel.Armed, v.tel.Mode
	return v
}

// setRate sets a stream's rate in Hz (0 = off), keeping the streams in
// message-id order so output order is deterministic.
func (v *Vehicle) setRate(id uint32, hz float64) {
	var iv sim.Duration
	if hz > 0 {
		iv = sim.Duration(math.Round(1e9 / hz))
	}
	for i := range v.streams {
		if v.streams[i].id == id {
			v.streams[i].interval = iv
			v.streams[i].next = v.now // the new rate starts now
			return
		}
	}
	// Spread the streams of a vehicle, and the vehicles, over the
	// interval so that a swarm does not send every message at once.
	s := stream{id: id, interval: iv, next: v.now}
	if iv > 0 {
		s.next = v.now.Add(sim.Duration(int64(v.cfg.SysID)*7+int64(id)*3) * sim.Millisecond % iv)
	}
	i := 0
	for i < len(v.streams) && v.streams[i].id < id {
		i++
	}
	v.streams = append(v.streams, stream{})
	copy(v.streams[i+1:], v.streams[i:])
	v.streams[i] = s
}

// SysID returns the endpoint's system id.
func (v *Vehicle) SysID() uint8 { return v.cfg.SysID }

// Mission returns a copy of the stored mission.
func (v *Vehicle) Mission() []common.MessageMissionItemInt {
	return append([]common.MessageMissionItemInt(nil), v.mission.items...)
}

// Home returns the launch point in local coordinates.
func (v *Vehicle) Home() geom.Vec3 { return v.cfg.Home }

// VehicleWants reports whether a vehicle endpoint handles messages with id;
// a decoder feeding only endpoints can skip the rest (other vehicles'
// telemetry).
func VehicleWants(id uint32) bool {
	switch id {
	case idHeartbeat, 11 /* SET_MODE */, 20 /* PARAM_REQUEST_READ */, 21 /* PARAM_REQUEST_LIST */, 23, /* PARAM_SET */
		39 /* MISSION_ITEM */, 40 /* MISSION_REQUEST */, 41 /* MISSION_SET_CURRENT */, 43, /* MISSION_REQUEST_LIST */
		44 /* MISSION_COUNT */, 45 /* MISSION_CLEAR_ALL */, 47 /* MISSION_ACK */, 51, /* MISSION_REQUEST_INT */
		73 /* MISSION_ITEM_INT */, 75 /* COMMAND_INT */, 76 /* COMMAND_LONG */, 84, /* SET_POSITION_TARGET_LOCAL_NED */
		86 /* SET_POSITION_TARGET_GLOBAL_INT */ :
		return true
	}
	return false
}

// Mode returns the flight mode the vehicle reports.
func (v *Vehicle) Mode() FlightMode {
	t := &v.tel
	switch {
	case v.mission.active:
		return ModeMission
	case v.offboard:
		return ModeOffboard
	}
	switch t.Mode {
	case vehicle.ModeTakeoff:
		return ModeTakeoff
	case vehicle.ModeLand:
		if v.rtlLand {
			return ModeRTL
		}
		return ModeLand
	case vehicle.ModeRTL:
		return ModeRTL
	case vehicle.ModeVelocity:
		return ModeOffboard
	case vehicle.ModeHold, vehicle.ModeIdle, vehicle.ModeDisarmed:
		if v.keep != (FlightMode{}) {
			return v.keep
		}
	}
	return ModeHold
}

func (v *Vehicle) send(to *Peer, m message.Message) {
	b, err := v.enc.Encode(m)
	if err != nil {
		panic(err) // every message we send is in the common dialect
	}
	v.FramesOut++
	if to == nil {
		v.host.Broadcast(b)
	} else {
		v.host.Send(*to, b)
	}
}

func (v *Vehicle) statusText(to *Peer, sev common.MAV_SEVERITY, format string, args ...any) {
	txt := fmt.Sprintf(format, args...)
	if len(txt) > 50 {
		txt = txt[:50]
	}
	v.send(to, &common.MessageStatustext{Severity: sev, Text: txt})
}

// command hands c to the autopilot. Its numbers come from a ground station,
// a network peer: every path checks them with plausible first and denies
// the request; this last check drops an implausible command that slipped
// through (a mission item, say) rather than fly it.
func (v *Vehicle) command(c vehicle.Command) {
	if err := c.Validate(); err != nil {
		v.host.Event("command_denied", err.Error())
		return
	}
	v.ap.Command(c)
}

// plausible reports whether c, built from a ground station's numbers, is
// within vehicle.Command's plausible ranges (finite, within the world, at
// most MaxCommandSpeed); if not, it tells the ground station why and
// records a command_denied event.
func (v *Vehicle) plausible(to *Peer, c vehicle.Command) bool {
	err := c.Validate()
	if err == nil {
		return true
	}
	v.host.Event("command_denied", err.Error())
	v.statusText(to, common.MAV_SEVERITY_CRITICAL, "Denied: %v", err)
	return false
}

// Step runs the endpoint at time now: milestone events, the data-link
// failsafe, offboard timeouts, mission progress and the telemetry
// streams.
func (v *Vehicle) Step(now sim.Time) {
	v.now = now
	v.tel = v.ap.Estimate()
	v.milestones()
	v.landDisarm()
	v.failsafes()
	v.runMission()
	v.upload.retry(v, now)
	for i := range v.streams {
		s := &v.streams[i]
		if s.interval == 0 || now < s.next {
			continue
		}
		v.emit(nil, s.id)
		s.next = s.next.Add(s.interval)
		if s.next <= now {
			s.next = now.Add(s.interval)
		}
	}
}

func (v *Vehicle) milestone(name string) {
	if _, ok := v.Milestones[name]; !ok {
		v.Milestones[name] = v.now
	}
	v.host.Event(name, "")
}

// milestones turns changes of the autopilot state into the ARM, TAKEOFF,
// LAND and DISARM events (LOITER comes from the mission).
func (v *Vehicle) milestones() {
	t := &v.tel
	if t.Armed && !v.prevArmed {
		v.milestone("ARM")
		v.disarmReq = false
	}
	if t.Mode != v.prevMode {
		switch t.Mode {
		case vehicle.ModeTakeoff:
			v.milestone("TAKEOFF")
		case vehicle.ModeLand:
			v.milestone("LAND")
		}
		switch t.Mode {
		case vehicle.ModeIdle, vehicle.ModeDisarmed:
			if v.prevMode == vehicle.ModeLand {
				// Touchdown: PX4 stays in the mode it landed in.
				v.keep = ModeLand
				switch {
				case v.mission.active:
					v.keep = ModeMission
				case v.rtlLand:
					v.keep = ModeRTL
				}
			}
		case vehicle.ModeHold:
			// Holding: POSCTL and ALTCTL stay.
		default:
			v.keep = FlightMode{} // the autopilot moved on (a mission item, its own failsafe)
		}
		// The autopilot ends a return to launch with a landing.
		v.rtlLand = t.Mode == vehicle.ModeLand && v.prevMode == vehicle.ModeRTL
		if v.offboard && t.Mode != vehicle.ModeVelocity && t.Mode != vehicle.ModeGoto && v.prevMode == vehicle.ModeVelocity {
			v.offboard = false // the autopilot's failsafe left offboard
		}
	}
	if !t.Armed && v.prevArmed {
		v.milestone("DISARM")
		// Disarmed, PX4 reports AUTO.LOITER again, whatever mode it
		// landed in.
		v.keep = FlightMode{}
		if v.flown && t.Landed && !v.disarmReq {
			// The endpoint's landing disarm below, or the autopilot's own.
			v.statusText(nil, common.MAV_SEVERITY_INFO, "Disarmed by landing")
		}
		v.disarmReq = false
		v.offboard = false
	}
	v.prevArmed, v.prevMode = t.Armed, t.Mode
}

// minTakeoffAlt is the lowest takeoff altitude above home the endpoint
// commands (the vehicle's command needs a positive one).
const minTakeoffAlt = 0.05

// defaultDisarmDelay is PX4's COM_DISARM_LAND, for autopilots without
// parameters.
const defaultDisarmDelay = 2 * sim.Second

// landDisarm disarms the vehicle COM_DISARM_LAND after it landed, as PX4's
// commander does ("Disarmed by landing"): the landing counts from when the
// endpoint reports ON_GROUND, having flown since arming. A delay of 0
// turns it off.
func (v *Vehicle) landDisarm() {
	t := &v.tel
	if !t.Armed {
		v.flown, v.onGround, v.disarmAsked = false, false, 0
		return
	}
	if !t.Landed {
		v.flown = true
	}
	if !v.flown || v.landedState() != common.MAV_LANDED_STATE_ON_GROUND {
		v.onGround, v.disarmAsked = false, 0
		return
	}
	if !v.onGround {
		v.onGround, v.groundSince = true, v.now
	}
	delay := defaultDisarmDelay
	if v.tun != nil {
		delay = v.tun.Params().DisarmDelay
	}
	// Ask again every second if the autopilot did not disarm (a bounce).
	if delay > 0 && v.now.Sub(v.groundSince) >= delay && (v.disarmAsked == 0 || v.now.Sub(v.disarmAsked) >= sim.Second) {
		v.disarmAsked = v.now
		v.command(vehicle.Command{Kind: vehicle.CmdDisarm})
	}
}

// failsafes runs PX4's data-link loss action and the offboard position
// setpoint timeout (velocity setpoints time out in the autopilot itself).
func (v *Vehicle) failsafes() {
	if v.gcsSeen && v.ep.DLLAct != 0 && v.tel.Armed && !v.tel.Landed && !v.dlLost && v.now.Sub(v.lastGCS) > v.ep.DLLossT {
		v.dlLost = true
		act := map[int32]vehicle.CommandKind{1: vehicle.CmdHold, 2: vehicle.CmdRTL, 3: vehicle.CmdLand}[v.ep.DLLAct]
		v.host.Event("failsafe", "data link lost: "+act.String())
		v.takeOver()
		v.command(vehicle.Command{Kind: act})
	}
	if v.offboard && v.offboardPos && v.tun != nil {
		if to := v.tun.Params().FailsafeTimeout; to > 0 && v.now.Sub(v.lastSP) > to {
			v.host.Event("failsafe", "offboard setpoints lost: hold")
			v.offboard = false
			v.command(vehicle.Command{Kind: vehicle.CmdHold})
		}
	}
}

// Handle processes one frame from peer at time now.
func (v *Vehicle) Handle(now sim.Time, from Peer, f frame.Frame) {
	v.now = now
	v.tel = v.ap.Estimate()
	v.FramesIn++
	to := &from
	sender, senderComp := f.GetSystemID(), f.GetComponentID()
	mine := v.forAutopilot
	switch m := f.GetMessage().(type) {
	case *common.MessageHeartbeat:
		if m.Type == common.MAV_TYPE_GCS {
			v.gcsSeen, v.lastGCS = true, now
			if v.dlLost {
				v.dlLost = false
				v.host.Event("failsafe", "data link regained")
			}
		}
	case *common.MessageCommandLong:
		if !v.commandForMe(m.Command, m.TargetSystem, m.TargetComponent) {
			return
		}
		p := [7]float64{float64(m.Param1), float64(m.Param2), float64(m.Param3), float64(m.Param4),
			float64(m.Param5), float64(m.Param6), float64(m.Param7)}
		v.ack(to, sender, senderComp, m.Command, v.doCommand(to, m.Command, p, false, common.MAV_FRAME_GLOBAL))
	case *common.MessageCommandInt:
		if !v.commandForMe(m.Command, m.TargetSystem, m.TargetComponent) {
			return
		}
		p := [7]float64{float64(m.Param1), float64(m.Param2), float64(m.Param3), float64(m.Param4),
			float64(m.X) / 1e7, float64(m.Y) / 1e7, float64(m.Z)}
		v.ack(to, sender, senderComp, m.Command, v.doCommand(to, m.Command, p, true, m.Frame))
	case *common.MessageSetMode:
		// SET_MODE has no target component.
		if !mine(m.TargetSystem, compAutopilot) {
			return
		}
		res := v.setMode(to, ModeFromCustom(m.CustomMode))
		v.ack(to, sender, senderComp, common.MAV_CMD_DO_SET_MODE, res)
	case *common.MessageSetPositionTargetLocalNed:
		if mine(m.TargetSystem, m.TargetComponent) {
			v.localSetpoint(m)
		}
	case *common.MessageSetPositionTargetGlobalInt:
		if mine(m.TargetSystem, m.TargetComponent) {
			v.globalSetpoint(m)
		}
	case *common.MessageParamRequestList:
		if mine(m.TargetSystem, m.TargetComponent) {
			for i := range paramTable {
				v.paramValue(to, i)
			}
		}
	case *common.MessageParamRequestRead:
		if !mine(m.TargetSystem, m.TargetComponent) {
			return
		}
		i := int(m.ParamIndex)
		if m.ParamIndex < 0 {
			i = paramIndex(m.ParamId)
		}
		if i >= 0 && i < len(paramTable) {
			v.paramValue(to, i)
		}
	case *common.MessageParamSet:
		if mine(m.TargetSystem, m.TargetComponent) {
			v.paramSet(to, m)
		}
	default:
		v.handleMission(to, sender, senderComp, f.GetMessage())
	}
}

// compAutopilot is the endpoint's component id, MAV_COMP_ID_AUTOPILOT1.
const compAutopilot = 1

// forAutopilot reports whether a message for system sys and component comp
// is the autopilot's: PX4's autopilot takes messages for its own system or
// for system 0 (broadcast), and for its component or component 0
// (MAV_COMP_ID_ALL); it ignores those for other components (a camera, a
// gimbal).
func (v *Vehicle) forAutopilot(sys, comp uint8) bool {
	return (sys == v.cfg.SysID || sys == 0) && (comp == compAutopilot || comp == 0)
}

// commandForMe reports whether the autopilot handles a COMMAND_LONG or
// COMMAND_INT; others are ignored without an acknowledgement, as PX4 does.
// As in PX4, the old requests for capabilities and protocol version are
// answered whatever their target component.
func (v *Vehicle) commandForMe(cmd common.MAV_CMD, sys, comp uint8) bool {
	switch cmd {
	case common.MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES, common.MAV_CMD_REQUEST_PROTOCOL_VERSION:
		return sys == v.cfg.SysID || sys == 0
	}
	return v.forAutopilot(sys, comp)
}

func (v *Vehicle) ack(to *Peer, sys, comp uint8, cmd common.MAV_CMD, res common.MAV_RESULT) {
	v.Commands++
	v.send(to, &common.MessageCommandAck{Command: cmd, Result: res, TargetSystem: sys, TargetComponent: comp})
}

// homeAMSL returns the launch point's altitude above mean sea level.
func (v *Vehicle) homeAMSL() float64 { return v.cfg.Origin.Alt + v.cfg.Home.Z }

// globalToLocal converts a WGS84 position with altitude in frame fr to
// local coordinates; lat/lon 0,0 (or NaN) keeps the current horizontal
// position.
func (v *Vehicle) globalToLocal(lat, lon, alt float64, fr common.MAV_FRAME) geom.Vec3 {
	var p geom.Vec3
	if (lat == 0 && lon == 0) || math.IsNaN(lat) || math.IsNaN(lon) {
		p = v.tel.Pos
	} else {
		p = v.cfg.Origin.ToLocal(geom.Geodetic{Lat: lat, Lon: lon, Alt: v.cfg.Origin.Alt})
	}
	switch {
	case math.IsNaN(alt):
		p.Z = v.tel.Pos.Z
	case fr == common.MAV_FRAME_GLOBAL_RELATIVE_ALT || fr == common.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT ||
		fr == common.MAV_FRAME_GLOBAL_TERRAIN_ALT || fr == common.MAV_FRAME_GLOBAL_TERRAIN_ALT_INT:
		p.Z = v.cfg.Home.Z + alt
	default:
		p.Z = alt - v.cfg.Origin.Alt
	}
	return p
}

// doCommand carries out a COMMAND_LONG or COMMAND_INT (p[4], p[5] are
// latitude and longitude in degrees in both cases).
func (v *Vehicle) doCommand(to *Peer, cmd common.MAV_CMD, p [7]float64, isInt bool, fr common.MAV_FRAME) common.MAV_RESULT {
	t := &v.tel
	switch cmd {
	case common.MAV_CMD_COMPONENT_ARM_DISARM:
		if p[0] == 1 {
			if !t.Armed {
				v.command(vehicle.Command{Kind: vehicle.CmdArm})
			}
			return common.MAV_RESULT_ACCEPTED
		}
		if t.Armed && !t.Landed && p[1] != 21196 {
			v.statusText(to, common.MAV_SEVERITY_CRITICAL, "Disarming denied: not landed")
			return common.MAV_RESULT_DENIED
		}
		v.mission.active, v.offboard = false, false
		v.disarmReq = true
		v.command(vehicle.Command{Kind: vehicle.CmdDisarm})
		return common.MAV_RESULT_ACCEPTED
	case common.MAV_CMD_NAV_TAKEOFF:
		if !t.Armed {
			v.statusText(to, common.MAV_SEVERITY_CRITICAL, "Takeoff denied: disarmed")
			return common.MAV_RESULT_TEMPORARILY_REJECTED
		}
		alt := p[6] - v.homeAMSL()
		if isInt && (fr == common.MAV_FRAME_GLOBAL_RELATIVE_ALT || fr == common.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT) {
			alt = p[6]
		}
		switch {
		case math.IsNaN(alt):
			// No altitude: PX4 takes off to MIS_TAKEOFF_ALT above home,
			// and says so.
			alt = v.ep.TakeoffAlt
			v.statusText(to, common.MAV_SEVERITY_INFO, "Using default takeoff altitude: %.1f m", alt)
		case alt < minTakeoffAlt:
			// PX4 accepts an altitude next to or below home and barely
			// lifts off (measured against real PX4: 3 cm for 0.2 m,
			// nothing for 8 m below home; px4sitl.TestFlowsSideBySide).
			alt = minTakeoffAlt
		}
		c := vehicle.Command{Kind: vehicle.CmdTakeoff, Alt: alt}
		if !v.plausible(to, c) {
			return common.MAV_RESULT_DENIED
		}
		v.takeOver()
		v.command(c)
		return common.MAV_RESULT_ACCEPTED
	case common.MAV_CMD_NAV_LAND:
		if !t.Armed {
			return common.MAV_RESULT_TEMPORARILY_REJECTED
		}
		v.takeOver()
		v.command(vehicle.Command{Kind: vehicle.CmdLand})
		return common.MAV_RESULT_ACCEPTED
	case common.MAV_CMD_NAV_RETURN_TO_LAUNCH:
		if !t.Armed {
			return common.MAV_RESULT_TEMPORARILY_REJECTED
		}
		v.takeOver()
		v.command(vehicle.Command{Kind: vehicle.CmdRTL})
		return common.MAV_RESULT_ACCEPTED
	case common.MAV_CMD_DO_SET_MODE:
		return v.setMode(to, FlightMode{Main: uint8(p[1]), Sub: uint8(p[2])})
	case common.MAV_CMD_DO_REPOSITION:
		if !t.Armed || t.Landed {
			return common.MAV_RESULT_TEMPORARILY_REJECTED
		}
		if !isInt {
			fr = common.MAV_FRAME_GLOBAL
		}
		pos := v.globalToLocal(p[4], p[5], p[6], fr)
		yaw := math.NaN()
		if math.IsInf(p[3], 0) {
			v.plausible(to, vehicle.Command{Kind: vehicle.CmdGoto, Pos: pos, Yaw: p[3]})
			return common.MAV_RESULT_DENIED
		}
		if !math.IsNaN(p[3]) {
			yaw = geom.HeadingToYaw(p[3] * math.Pi / 180)
		}
		speed := v.speedLim
		if p[0] > 0 {
			speed = p[0]
		}
		c := vehicle.Command{Kind: vehicle.CmdGoto, Pos: pos, Yaw: yaw, Speed: speed}
		if !v.plausible(to, c) {
			return common.MAV_RESULT_DENIED
		}
		v.takeOver()
		v.command(c)
		return common.MAV_RESULT_ACCEPTED
	case common.MAV_CMD_DO_CHANGE_SPEED:
		if p[1] > 0 && !v.plausible(to, vehicle.Command{Kind: vehicle.CmdGoto, Speed: p[1]}) {
			return common.MAV_RESULT_DENIED
		}
		if p[1] > 0 {
			v.speedLim = p[1]
		} else if p[1] == -2 || p[1] == 0 {
			v.speedLim = 0
		}
		return common.MAV_RESULT_ACCEPTED
	case common.MAV_CMD_MISSION_START:
		return v.startMission(to, int(p[0]))
	case common.MAV_CMD_SET_MESSAGE_INTERVAL:
		id := uint32(p[0])
		if !v.streamable(id) {
			return common.MAV_RESULT_UNSUPPORTED
		}
		switch {
		case p[1] < 0:
			v.setRate(id, 0)
		case p[1] == 0:
			v.setRate(id, DefaultRates[id])
		default:
			v.setRate(id, 1e6/p[1])
		}
		return common.MAV_RESULT_ACCEPTED
	case common.MAV_CMD_REQUEST_MESSAGE:
		id := uint32(p[0])
		if !v.streamable(id) && id != idAutopilotVer && id != idProtocolVer {
			return common.MAV_RESULT_UNSUPPORTED
		}
		defer v.emit(to, id) // after the ack, as PX4 does
		return common.MAV_RESULT_ACCEPTED
	case common.MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES:
		defer v.emit(to, idAutopilotVer)
		return common.MAV_RESULT_ACCEPTED
	case common.MAV_CMD_REQUEST_PROTOCOL_VERSION:
		defer v.emit(to, idProtocolVer)
		return common.MAV_RESULT_ACCEPTED
	}
	return common.MAV_RESULT_UNSUPPORTED
}

func (v *Vehicle) streamable(id uint32) bool {
	_, ok := DefaultRates[id]
	return ok || id == idHomePosition
}

// takeOver ends what the operator had selected (a mission, offboard
// control, a kept mode) when a new mode or command takes over.
func (v *Vehicle) takeOver() {
	v.mission.active, v.offboard, v.keep, v.rtlLand = false, false, FlightMode{}, false
}

// setMode switches to a PX4 mode.
func (v *Vehicle) setMode(to *Peer, m FlightMode) common.MAV_RESULT {
	t := &v.tel
	switch {
	case m == ModePosctl || m.Main == MainAltctl || m.Main == MainManual || m.Main == MainStabilized || m.Main == MainAcro:
		// The manual modes need a manual control input (a remote control
		// or a joystick), which the simulated vehicle has not: PX4 then
		// refuses them, temporarily, and stays in its mode (measured
		// against real PX4 SITL without one; px4sitl.TestFlowsSideBySide).
		v.statusText(to, common.MAV_SEVERITY_CRITICAL, "Switching to %v is currently not possible: no manual control input", m)
		return common.MAV_RESULT_TEMPORARILY_REJECTED
	case m == ModeHold:
		v.takeOver()
		if t.Armed && !t.Landed {
			v.command(vehicle.Command{Kind: vehicle.CmdHold})
		}
	case m == ModeMission:
		return v.startMission(to, -1)
	case m == ModeRTL || m == ModeLand:
		if !t.Armed {
			return common.MAV_RESULT_TEMPORARILY_REJECTED
		}
		v.takeOver()
		k := vehicle.CmdRTL
		if m == ModeLand {
			k = vehicle.CmdLand
		}
		v.command(vehicle.Command{Kind: k})
	case m == ModeTakeoff:
		if !t.Armed {
			return common.MAV_RESULT_TEMPORARILY_REJECTED
		}
		c := vehicle.Command{Kind: vehicle.CmdTakeoff, Alt: v.ep.TakeoffAlt}
		if !v.plausible(to, c) {
			return common.MAV_RESULT_DENIED
		}
		v.takeOver()
		v.command(c)
	case m == ModeOffboard:
		if !v.hasSP || v.now.Sub(v.lastSP) > sim.Second {
			v.statusText(to, common.MAV_SEVERITY_CRITICAL, "Switching to Offboard denied: no setpoints")
			return common.MAV_RESULT_DENIED
		}
		v.takeOver()
		v.offboard = true
		v.applySetpoint()
	default:
		v.statusText(to, common.MAV_SEVERITY_WARNING, "Mode %v not available in simulation", m)
		return common.MAV_RESULT_UNSUPPORTED
	}
	return common.MAV_RESULT_ACCEPTED
}

// The newest offboard setpoint.
type setpoint struct {
	pos, vel geom.Vec3
	usePos   bool
	yaw      float64
}

// storeSetpoint keeps the newest offboard setpoint and applies it while in
// offboard mode; an implausible one (not finite, beyond the world, faster
// than vehicle.MaxCommandSpeed) is ignored, as PX4 ignores invalid
// setpoints, and the last good one stays in force.
func (v *Vehicle) storeSetpoint(s setpoint) {
	if err := s.command().Validate(); err != nil {
		v.badSetpoint(err)
		return
	}
	v.spDenied = false
	v.sp = s
	v.hasSP, v.lastSP = true, v.now
	if v.offboard {
		v.applySetpoint()
	}
}

// badSetpoint records an ignored setpoint: one command_denied event per run
// of bad setpoints (a ground station streams them at tens of hertz).
func (v *Vehicle) badSetpoint(err error) {
	if !v.spDenied {
		v.host.Event("command_denied", "offboard setpoint ignored: "+err.Error())
	}
	v.spDenied = true
}

// command returns the autopilot command that follows s.
func (s setpoint) command() vehicle.Command {
	if s.usePos {
		return vehicle.Command{Kind: vehicle.CmdGoto, Pos: s.pos, Yaw: s.yaw}
	}
	return vehicle.Command{Kind: vehicle.CmdVelocity, Vel: s.vel}
}

func (v *Vehicle) applySetpoint() {
	v.offboardPos = v.sp.usePos
	v.command(v.sp.command())
}

func (v *Vehicle) localSetpoint(m *common.MessageSetPositionTargetLocalNed) {
	mask := m.TypeMask
	s := setpoint{yaw: math.NaN()}
	if mask&common.POSITION_TARGET_TYPEMASK_YAW_IGNORE == 0 {
		if math.IsInf(float64(m.Yaw), 0) {
			v.badSetpoint(vehicle.Command{Kind: vehicle.CmdGoto, Yaw: float64(m.Yaw)}.Validate())
			return
		}
		s.yaw = geom.HeadingToYaw(float64(m.Yaw))
	}
	pos := geom.NEDToENU(geom.V(float64(m.X), float64(m.Y), float64(m.Z)))
	vel := geom.NEDToENU(geom.V(float64(m.Vx), float64(m.Vy), float64(m.Vz)))
	switch m.CoordinateFrame {
	case common.MAV_FRAME_LOCAL_NED:
		pos = pos.Add(v.cfg.Home)
	case common.MAV_FRAME_LOCAL_OFFSET_NED:
		pos = pos.Add(v.tel.Pos)
	case common.MAV_FRAME_BODY_NED, common.MAV_FRAME_BODY_OFFSET_NED, common.MAV_FRAME_BODY_FRD:
		// Body frames: x forward, y right, z down, rotated by the heading.
		c, sn := math.Cos(v.tel.Yaw), math.Sin(v.tel.Yaw)
		rot := func(b geom.Vec3) geom.Vec3 { // b is (fwd, right, down)
			return geom.V(b.X*c+b.Y*sn, b.X*sn-b.Y*c, -b.Z)
		}
		bp := geom.V(float64(m.X), float64(m.Y), float64(m.Z))
		pos = rot(bp).Add(v.tel.Pos)
		vel = rot(geom.V(float64(m.Vx), float64(m.Vy), float64(m.Vz)))
	default:
		return
	}
	const posMask = common.POSITION_TARGET_TYPEMASK_X_IGNORE | common.POSITION_TARGET_TYPEMASK_Y_IGNORE | common.POSITION_TARGET_TYPEMASK_Z_IGNORE
	s.usePos = mask&posMask == 0
	s.pos, s.vel = pos, vel
	if !s.usePos && mask&common.POSITION_TARGET_TYPEMASK_VX_IGNORE != 0 {
		return // neither position nor velocity: nothing we can follow
	}
	v.storeSetpoint(s)
}

func (v *Vehicle) globalSetpoint(m *common.MessageSetPositionTargetGlobalInt) {
	mask := m.TypeMask
	s := setpoint{yaw: math.NaN()}
	if mask&common.POSITION_TARGET_TYPEMASK_YAW_IGNORE == 0 {
		if math.IsInf(float64(m.Yaw), 0) {
			v.badSetpoint(vehicle.Command{Kind: vehicle.CmdGoto, Yaw: float64(m.Yaw)}.Validate())
			return
		}
		s.yaw = geom.HeadingToYaw(float64(m.Yaw))
	}
	const posMask = common.POSITION_TARGET_TYPEMASK_X_IGNORE | common.POSITION_TARGET_TYPEMASK_Y_IGNORE | common.POSITION_TARGET_TYPEMASK_Z_IGNORE
	s.usePos = mask&posMask == 0
	s.pos = v.globalToLocal(float64(m.LatInt)/1e7, float64(m.LonInt)/1e7, float64(m.Alt), m.CoordinateFrame)
	s.vel = geom.NEDToENU(geom.V(float64(m.Vx), float64(m.Vy), float64(m.Vz)))
	if !s.usePos && mask&common.POSITION_TARGET_TYPEMASK_VX_IGNORE != 0 {
		return
	}
	v.storeSetpoint(s)
}

// paramValue sends parameter i.
func (v *Vehicle) paramValue(to *Peer, i int) {
	p := &paramTable[i]
	var ap px4like.Params
	if v.tun != nil {
		ap = v.tun.Params()
	} else if !p.available(false) {
		return
	}
	val := p.get(&ap, &v.ep)
	v.send(to, &common.MessageParamValue{ParamId: p.name, ParamValue: p.wire(val), ParamType: p.typ,
		ParamCount: uint16(v.paramCount()), ParamIndex: uint16(i)})
}

func (v *Vehicle) paramCount() int {
	if v.tun != nil {
		return len(paramTable)
	}
	n := 0
	for i := range paramTable {
		if paramTable[i].available(false) {
			n++
		}
	}
	return n
}

func (v *Vehicle) paramSet(to *Peer, m *common.MessageParamSet) {
	i := paramIndex(m.ParamId)
	if i < 0 || !paramTable[i].available(v.tun != nil) {
		v.statusText(to, common.MAV_SEVERITY_WARNING, "Unknown parameter %s", m.ParamId)
		return
	}
	p := &paramTable[i]
	var ap px4like.Params
	if v.tun != nil {
		ap = v.tun.Params()
	}
	ep := v.ep
	val := unwire(m.ParamType, m.ParamValue)
	err := p.set(&ap, &ep, val)
	if err == nil && (p.ap != nil || p.apd != nil) {
		err = v.tun.SetParams(ap)
	}
	if err != nil {
		v.statusText(to, common.MAV_SEVERITY_WARNING, "%v", err)
	} else {
		v.ep = ep
		v.host.Event("param", fmt.Sprintf("%s=%g", p.name, val))
	}
	// PX4 answers every write with the value now in force.
	v.paramValue(to, i)
}

// emit sends one message of the given id (a stream or a requested one).
func (v *Vehicle) emit(to *Peer, id uint32) {
	t := &v.tel
	ms := uint32(v.now / sim.Time(sim.Millisecond))
	var geo geom.Geodetic
	if id == idGlobalPosInt || id == idGPSRawInt || id == idVFRHUD {
		geo = v.cfg.Origin.ToGeodetic(t.Pos)
	}
	ned := geom.ENUToNED(t.Vel)
	hdg := geom.YawToHeading(t.Yaw)
	switch id {
	case idHeartbeat:
		mode := v.Mode()
		state := common.MAV_STATE_STANDBY
		if t.Armed {
			state = common.MAV_STATE_ACTIVE
		}
		if v.dlLost {
			state = common.MAV_STATE_CRITICAL
		}
		v.send(to, &common.MessageHeartbeat{Type: common.MAV_TYPE_QUADROTOR, Autopilot: common.MAV_AUTOPILOT_PX4,
			BaseMode: mode.baseMode(t.Armed), CustomMode: mode.Custom(), SystemStatus: state, MavlinkVersion: 3})
	case idSysStatus:
		const sensors = common.MAV_SYS_STATUS_SENSOR_3D_GYRO | common.MAV_SYS_STATUS_SENSOR_3D_ACCEL |
			common.MAV_SYS_STATUS_SENSOR_ABSOLUTE_PRESSURE | common.MAV_SYS_STATUS_SENSOR_GPS |
			common.MAV_SYS_STATUS_SENSOR_ANGULAR_RATE_CONTROL | common.MAV_SYS_STATUS_SENSOR_ATTITUDE_STABILIZATION |
			common.MAV_SYS_STATUS_SENSOR_Z_ALTITUDE_CONTROL | common.MAV_SYS_STATUS_SENSOR_XY_POSITION_CONTROL |
			common.MAV_SYS_STATUS_SENSOR_MOTOR_OUTPUTS | common.MAV_SYS_STATUS_SENSOR_BATTERY
		v.send(to, &common.MessageSysStatus{OnboardControlSensorsPresent: sensors, OnboardControlSensorsEnabled: sensors,
			OnboardControlSensorsHealth: sensors, Load: 100, VoltageBattery: u16(t.BatteryV * 1000),
			CurrentBattery: i16(t.BatteryA * 100), BatteryRemaining: int8(math.Round(t.BatteryRemaining * 100))})
	case idBatteryStatus:
		var cells [10]uint16
		for i := range cells {
			cells[i] = math.MaxUint16
		}
		cells[0] = u16(t.BatteryV * 1000)
		v.send(to, &common.MessageBatteryStatus{BatteryFunction: common.MAV_BATTERY_FUNCTION_ALL, Type: common.MAV_BATTERY_TYPE_LIPO,
			Temperature: math.MaxInt16, Voltages: cells, CurrentBattery: i16(t.BatteryA * 100),
			CurrentConsumed: -1, EnergyConsumed: int32(t.Energy / 100), BatteryRemaining: int8(math.Round(t.BatteryRemaining * 100)),
			VoltagesExt: [4]uint16{}})
	case idGlobalPosInt:
		v.send(to, &common.MessageGlobalPositionInt{TimeBootMs: ms, Lat: deg7(geo.Lat), Lon: deg7(geo.Lon),
			Alt: int32(math.Round(geo.Alt * 1000)), RelativeAlt: int32(math.Round((t.Pos.Z - v.cfg.Home.Z) * 1000)),
			Vx: i16(ned.X * 100), Vy: i16(ned.Y * 100), Vz: i16(ned.Z * 100), Hdg: uint16(math.Round(hdg*18000/math.Pi)) % 36000})
	case idLocalPosNED:
		p := geom.ENUToNED(t.Pos.Sub(v.cfg.Home))
		v.send(to, &common.MessageLocalPositionNed{TimeBootMs: ms, X: float32(p.X), Y: float32(p.Y), Z: float32(p.Z),
			Vx: float32(ned.X), Vy: float32(ned.Y), Vz: float32(ned.Z)})
	case idAttitude:
		// ENU/FLU -> NED/FRD: roll keeps its sign, pitch and yaw rate flip,
		// yaw becomes the heading.
		v.send(to, &common.MessageAttitude{TimeBootMs: ms, Roll: float32(t.Roll), Pitch: float32(-t.Pitch),
			Yaw: float32(math.Remainder(hdg, 2*math.Pi)), Rollspeed: float32(t.RollRate), Pitchspeed: float32(-t.PitchRate),
			Yawspeed: float32(-t.YawRate)})
	case idGPSRawInt:
		gs := math.Hypot(t.Vel.X, t.Vel.Y)
		cog := uint16(math.MaxUint16)
		if gs > 0.1 {
			cog = uint16(math.Round(geom.YawToHeading(math.Atan2(t.Vel.Y, t.Vel.X))*18000/math.Pi)) % 36000
		}
		v.send(to, &common.MessageGpsRawInt{TimeUsec: uint64(v.cfg.EpochUs + int64(v.now)/1000), FixType: common.GPS_FIX_TYPE_3D_FIX,
			Lat: deg7(geo.Lat), Lon: deg7(geo.Lon), Alt: int32(math.Round(geo.Alt * 1000)), Eph: 80, Epv: 120,
			Vel: u16(gs * 100), Cog: cog, SatellitesVisible: 12, AltEllipsoid: int32(math.Round(geo.Alt * 1000)),
			HAcc: 500, VAcc: 800, VelAcc: 200})
	case idVFRHUD:
		gs := math.Hypot(t.Vel.X, t.Vel.Y)
		v.send(to, &common.MessageVfrHud{Airspeed: float32(gs), Groundspeed: float32(gs),
			Heading: int16(math.Round(hdg*180/math.Pi)) % 360, Throttle: uint16(math.Round(t.Throttle * 100)),
			Alt: float32(geo.Alt), Climb: float32(t.Vel.Z)})
	case idExtSysState:
		v.send(to, &common.MessageExtendedSysState{LandedState: v.landedState()})
	case idMissionCur:
		v.sendMissionCurrent(to)
	case idHomePosition:
		h := v.cfg.Origin.ToGeodetic(v.cfg.Home)
		v.send(to, &common.MessageHomePosition{Latitude: deg7(h.Lat), Longitude: deg7(h.Lon), Altitude: int32(math.Round(h.Alt * 1000)),
			Q: [4]float32{1, 0, 0, 0}, TimeUsec: uint64(v.cfg.EpochUs + int64(v.now)/1000)})
	case idAutopilotVer:
		caps := common.MAV_PROTOCOL_CAPABILITY_MISSION_FLOAT | common.MAV_PROTOCOL_CAPABILITY_PARAM_FLOAT |
			common.MAV_PROTOCOL_CAPABILITY_MISSION_INT | common.MAV_PROTOCOL_CAPABILITY_COMMAND_INT |
			common.MAV_PROTOCOL_CAPABILITY_PARAM_ENCODE_BYTEWISE |
			common.MAV_PROTOCOL_CAPABILITY_SET_POSITION_TARGET_LOCAL_NED |
			common.MAV_PROTOCOL_CAPABILITY_SET_POSITION_TARGET_GLOBAL_INT | common.MAV_PROTOCOL_CAPABILITY_MAVLINK2
		// Flight software version 1.14.0 release (PX4's encoding): the
		// MAVLink behaviour emulated is that of PX4 v1.14.
		v.send(to, &common.MessageAutopilotVersion{Capabilities: caps, FlightSwVersion: 1<<24 | 14<<16 | 0<<8 | 0xFF,
			Uid: uint64(v.cfg.SysID)})
	case idProtocolVer:
		v.send(to, &common.MessageProtocolVersion{Version: 200, MinVersion: 100, MaxVersion: 200})
	}
}

func (v *Vehicle) landedState() common.MAV_LANDED_STATE {
	t := &v.tel
	switch {
	case t.Landed && t.Mode != vehicle.ModeTakeoff:
		return common.MAV_LANDED_STATE_ON_GROUND
	case t.Mode == vehicle.ModeTakeoff:
		return common.MAV_LANDED_STATE_TAKEOFF
	case t.Mode == vehicle.ModeLand:
		return common.MAV_LANDED_STATE_LANDING
	case t.Armed:
		return common.MAV_LANDED_STATE_IN_AIR
	}
	return common.MAV_LANDED_STATE_ON_GROUND
}

func deg7(d float64) int32 { return int32(math.Round(d * 1e7)) }

func u16(x float64) uint16 { return uint16(math.Max(0, math.Min(math.MaxUint16-1, math.Round(x)))) }

func i16(x float64) int16 {
	return int16(math.Max(math.MinInt16, math.Min(math.MaxInt16, math.Round(x))))
}
