package mavlink

import (
	"math"
	"strings"
	"testing"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"
	"github.com/bluenviron/gomavlib/v3/pkg/message"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// These tests pin down behaviours where the stand-in once differed from
// real PX4 (v1.15 and main), PX4 being the reference.

// msgHost keeps every message an endpoint sends.
type msgHost struct {
	dec  *Decoder
	msgs []message.Message
}

func (h *msgHost) Send(to Peer, b []byte) {
	h.dec.Decode(b, func(f frame.Frame) { h.msgs = append(h.msgs, f.GetMessage()) })
}
func (h *msgHost) Broadcast(b []byte)        { h.Send(Peer{}, b) }
func (h *msgHost) Event(name, detail string) {}

// count returns how many messages of type T were sent.
func count[T message.Message](h *msgHost) int {
	n := 0
	for _, m := range h.msgs {
		if _, ok := m.(T); ok {
			n++
		}
	}
	return n
}

func statusTexts(msgs []message.Message) []*common.MessageStatustext {
	var out []*common.MessageStatustext
	for _, m := range msgs {
		if s, ok := m.(*common.MessageStatustext); ok {
			out = append(out, s)
		}
	}
	return out
}

// newMsgVehicle returns an endpoint whose autopilot records commands and
// reports tel.
func newMsgVehicle(tel vehicle.Telemetry) (*Vehicle, *recAutopilot, *msgHost) {
	ap := &recAutopilot{tel: tel}
	h := &msgHost{dec: NewDecoder()}
	return NewVehicle(VehicleConfig{SysID: 1, Origin: testOrigin}, ap, nil, h), ap, h
}

func gcsFrame(m message.Message) frame.Frame {
	return &frame.V2Frame{SystemID: 255, ComponentID: 190, Message: m}
}

var hovering = vehicle.Telemetry{Pos: geom.V(0, 0, 10), Armed: true, Mode: vehicle.ModeHold}

// TestCommandsForOtherComponentsIgnored: PX4's autopilot (component 1)
// handles a COMMAND_LONG or COMMAND_INT only when it targets component 1 or
// 0 (broadcast); one for a camera (component 100) is ignored, without an
// acknowledgement. The old requests for capabilities and protocol version
// are the exception: PX4 answers them whatever the component.
func TestCommandsForOtherComponentsIgnored(t *testing.T) {
	for _, comp := range []uint8{0, 1, 100} {
		for _, isInt := range []bool{false, true} {
			v, ap, h := newMsgVehicle(hovering)
			var m message.Message = &common.MessageCommandLong{TargetSystem: 1, TargetComponent: comp, Command: common.MAV_CMD_NAV_LAND}
			if isInt {
				m = &common.MessageCommandInt{TargetSystem: 1, TargetComponent: comp, Command: common.MAV_CMD_NAV_LAND,
					Frame: common.MAV_FRAME_GLOBAL_INT}
			}
			v.Handle(sim.Time(sim.Second), Peer{}, gcsFrame(m))
			acks := count[*common.MessageCommandAck](h)
			if comp == 100 {
				if acks != 0 || len(ap.cmds) != 0 {
					t.Errorf("NAV_LAND for component 100 (int %v): %d acks, autopilot got %+v; want it ignored", isInt, acks, ap.cmds)
				}
				continue
			}
			if acks != 1 || len(ap.cmds) != 1 || ap.cmds[0].Kind != vehicle.CmdLand {
				t.Errorf("NAV_LAND for component %d (int %v): %d acks, autopilot got %+v; want it carried out", comp, isInt, acks, ap.cmds)
			}
		}
	}
	v, _, h := newMsgVehicle(hovering)
	v.Handle(sim.Time(sim.Second), Peer{}, gcsFrame(&common.MessageCommandLong{TargetSystem: 1, TargetComponent: 100,
		Command: common.MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES, Param1: 1}))
	if count[*common.MessageAutopilotVersion](h) != 1 {
		t.Errorf("REQUEST_AUTOPILOT_CAPABILITIES to component 100 not answered: %v", h.msgs)
	}
}

// TestMissionParamAndSetpointMessagesForOtherComponentsIgnored: the
// parameter, mission and offboard messages carry a target component too;
// PX4's autopilot ignores those for another component (its mission
// manager also takes MAV_COMP_ID_MISSIONPLANNER, 190).
func TestMissionParamAndSetpointMessagesForOtherComponentsIgnored(t *testing.T) {
	now := sim.Time(sim.Second)
	cases := []struct {
		name string
		msg  func(comp uint8) message.Message
		// answered reports whether the endpoint reacted.
		answered func(v *Vehicle, h *msgHost) bool
	}{
		{"PARAM_SET", func(c uint8) message.Message {
			return &common.MessageParamSet{TargetSystem: 1, TargetComponent: c, ParamId: "NAV_ACC_RAD", ParamValue: 5,
				ParamType: common.MAV_PARAM_TYPE_REAL32}
		}, func(v *Vehicle, h *msgHost) bool { return v.ep.AccRad == 5 || count[*common.MessageParamValue](h) > 0 }},
		{"PARAM_REQUEST_LIST", func(c uint8) message.Message {
			return &common.MessageParamRequestList{TargetSystem: 1, TargetComponent: c}
		}, func(v *Vehicle, h *msgHost) bool { return count[*common.MessageParamValue](h) > 0 }},
		{"PARAM_REQUEST_READ", func(c uint8) message.Message {
			return &common.MessageParamRequestRead{TargetSystem: 1, TargetComponent: c, ParamId: "NAV_ACC_RAD", ParamIndex: -1}
		}, func(v *Vehicle, h *msgHost) bool { return count[*common.MessageParamValue](h) > 0 }},
		{"MISSION_COUNT", func(c uint8) message.Message {
			return &common.MessageMissionCount{TargetSystem: 1, TargetComponent: c, Count: 1}
		}, func(v *Vehicle, h *msgHost) bool {
			return count[*common.MessageMissionRequestInt](h) > 0 || v.upload.active
		}},
		{"MISSION_REQUEST_LIST", func(c uint8) message.Message {
			return &common.MessageMissionRequestList{TargetSystem: 1, TargetComponent: c}
		}, func(v *Vehicle, h *msgHost) bool { return count[*common.MessageMissionCount](h) > 0 }},
		{"MISSION_CLEAR_ALL", func(c uint8) message.Message {
			return &common.MessageMissionClearAll{TargetSystem: 1, TargetComponent: c}
		}, func(v *Vehicle, h *msgHost) bool { return count[*common.MessageMissionAck](h) > 0 }},
		{"SET_POSITION_TARGET_LOCAL_NED", func(c uint8) message.Message {
			return &common.MessageSetPositionTargetLocalNed{TargetSystem: 1, TargetComponent: c,
				CoordinateFrame: common.MAV_FRAME_LOCAL_NED, Z: -5, TypeMask: common.POSITION_TARGET_TYPEMASK_YAW_IGNORE}
		}, func(v *Vehicle, h *msgHost) bool { return v.hasSP }},
		{"SET_POSITION_TARGET_GLOBAL_INT", func(c uint8) message.Message {
			return &common.MessageSetPositionTargetGlobalInt{TargetSystem: 1, TargetComponent: c,
				CoordinateFrame: common.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, LatInt: 473977420, LonInt: 85455940, Alt: 5,
				TypeMask: common.POSITION_TARGET_TYPEMASK_YAW_IGNORE}
		}, func(v *Vehicle, h *msgHost) bool { return v.hasSP }},
	}
	for _, c := range cases {
		comps := []uint8{0, 1, 100}
		if strings.HasPrefix(c.name, "MISSION") {
			comps = append(comps, 190)
		}
		for _, comp := range comps {
			v, _, h := newMsgVehicle(hovering)
			v.Handle(now, Peer{}, gcsFrame(c.msg(comp)))
			if got, want := c.answered(v, h), comp != 100; got != want {
				t.Errorf("%s for component %d: handled %v, want %v", c.name, comp, got, want)
			}
		}
	}
}

// TestTakeoffAltitudes: NAV_TAKEOFF without an altitude climbs to
// MIS_TAKEOFF_ALT with PX4's "Using default takeoff altitude"; with one
// next to or below home it is accepted and the vehicle barely lifts off
// (as real PX4 does: px4sitl.TestFlowsSideBySide measured 3 cm for 0.2 m
// and nothing for 8 m below home).
func TestTakeoffAltitudes(t *testing.T) {
	onGround := vehicle.Telemetry{Armed: true, Landed: true, Mode: vehicle.ModeIdle}
	nan := float32(math.NaN())
	cases := []struct {
		name    string
		msg     message.Message
		misAlt  float32 // MIS_TAKEOFF_ALT written first; 0 = default
		alt     float64 // takeoff altitude given to the autopilot
		wantTxt string  // "" = no text
	}{
		{"0.3 m above home (AMSL)", &common.MessageCommandLong{TargetSystem: 1, Command: common.MAV_CMD_NAV_TAKEOFF, Param7: 488.3},
			0, 0.3, ""},
		{"below home (AMSL)", &common.MessageCommandLong{TargetSystem: 1, Command: common.MAV_CMD_NAV_TAKEOFF, Param7: 400},
			0, minTakeoffAlt, ""},
		{"NaN", &common.MessageCommandLong{TargetSystem: 1, Command: common.MAV_CMD_NAV_TAKEOFF, Param7: nan},
			0, 2.5, "Using default takeoff altitude: 2.5 m"},
		{"NaN, MIS_TAKEOFF_ALT 4", &common.MessageCommandLong{TargetSystem: 1, Command: common.MAV_CMD_NAV_TAKEOFF, Param7: nan},
			4, 4, "Using default takeoff altitude: 4.0 m"},
		{"0.2 m relative (COMMAND_INT)", &common.MessageCommandInt{TargetSystem: 1, Command: common.MAV_CMD_NAV_TAKEOFF,
			Frame: common.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, Z: 0.2}, 0, 0.2, ""},
		{"5 m above home (AMSL)", &common.MessageCommandLong{TargetSystem: 1, Command: common.MAV_CMD_NAV_TAKEOFF, Param7: 493},
			0, 5, ""},
	}
	for _, c := range cases {
		v, ap, h := newMsgVehicle(onGround)
		now := sim.Time(sim.Second)
		if c.misAlt != 0 {
			v.Handle(now, Peer{}, gcsFrame(&common.MessageParamSet{TargetSystem: 1, TargetComponent: 1, ParamId: "MIS_TAKEOFF_ALT",
				ParamValue: c.misAlt, ParamType: common.MAV_PARAM_TYPE_REAL32}))
			h.msgs = nil
		}
		v.Handle(now, Peer{}, gcsFrame(c.msg))
		var ack *common.MessageCommandAck
		for _, m := range h.msgs {
			if a, ok := m.(*common.MessageCommandAck); ok {
				ack = a
			}
		}
		if ack == nil || ack.Result != common.MAV_RESULT_ACCEPTED {
			t.Errorf("%s: ack %+v, want ACCEPTED", c.name, ack)
			continue
		}
		if len(ap.cmds) != 1 || ap.cmds[0].Kind != vehicle.CmdTakeoff || math.Abs(ap.cmds[0].Alt-c.alt) > 1e-3 {
			t.Errorf("%s: autopilot got %+v, want a takeoff to %.1f m", c.name, ap.cmds, c.alt)
		}
		txt := statusTexts(h.msgs)
		switch {
		case c.wantTxt == "" && len(txt) > 0:
			t.Errorf("%s: unexpected STATUSTEXT %q", c.name, txt[0].Text)
		case c.wantTxt != "" && (len(txt) != 1 || txt[0].Text != c.wantTxt || txt[0].Severity != common.MAV_SEVERITY_INFO):
			t.Errorf("%s: STATUSTEXTs %+v, want INFO %q", c.name, txt, c.wantTxt)
		}
	}
}

// TestManualModesRefused: without a manual control input (the simulated
// vehicle has none), SET_MODE and DO_SET_MODE to POSCTL or ALTCTL are
// TEMPORARILY_REJECTED and the vehicle stays in its mode, holding, as real
// PX4 SITL without a joystick does (px4sitl.TestFlowsSideBySide).
func TestManualModesRefused(t *testing.T) {
	f := newFlyer(t, 0)
	f.cl.Add(Op{Kind: OpConnect, Name: "connect"},
		Op{Kind: OpCommand, Name: "arm", Cmd: common.MAV_CMD_COMPONENT_ARM_DISARM, Params: [7]float32{1}},
		Op{Kind: OpCommand, Name: "takeoff", Cmd: common.MAV_CMD_NAV_TAKEOFF, Params: [7]float32{6: 493}})
	f.run(12*sim.Second, nil)
	hbMode := func() FlightMode {
		return ModeFromCustom(f.last(0).GetMessage().(*common.MessageHeartbeat).CustomMode)
	}
	lastAck := func() common.MAV_RESULT {
		if a := f.last(77); a != nil {
			return a.GetMessage().(*common.MessageCommandAck).Result
		}
		return math.MaxUint8
	}
	if m := hbMode(); m != ModeHold {
		t.Fatalf("after the takeoff mode %v, want AUTO.LOITER", m)
	}
	for _, c := range []struct {
		name string
		msg  message.Message
		ack  bool // answered with a COMMAND_ACK (SET_MODE is not)
	}{
		{"SET_MODE POSCTL", &common.MessageSetMode{TargetSystem: 1, BaseMode: 1, CustomMode: ModePosctl.Custom()}, false},
		{"DO_SET_MODE ALTCTL", &common.MessageCommandLong{TargetSystem: 1, TargetComponent: 1, Command: common.MAV_CMD_DO_SET_MODE,
			Param1: 1, Param2: MainAltctl}, true},
		{"DO_SET_MODE POSCTL", &common.MessageCommandLong{TargetSystem: 1, TargetComponent: 1, Command: common.MAV_CMD_DO_SET_MODE,
			Param1: 1, Param2: MainPosctl}, true},
	} {
		start := f.mr.Telemetry().Pos
		f.gcsSend(c.msg)
		f.run(50*sim.Millisecond, nil)
		if r := lastAck(); c.ack && r != common.MAV_RESULT_TEMPORARILY_REJECTED {
			t.Errorf("%s: ack %v, want TEMPORARILY_REJECTED", c.name, r)
		}
		f.run(3*sim.Second, nil)
		if m := hbMode(); m != ModeHold {
			t.Errorf("%s: heartbeat mode %v, want AUTO.LOITER (unchanged)", c.name, m)
		}
		if p := f.mr.Telemetry().Pos; p.Dist(start) > 0.3 || !near(p.Z, 5, 0.3) {
			t.Errorf("%s: moved from %v to %v; want it to hold", c.name, start, p)
		}
	}
}

// landing is what a landingRun saw.
type landing struct {
	modes    map[FlightMode]int // heartbeat modes heard, armed, from the start of the return or landing on
	after    map[FlightMode]int // heartbeat modes heard once disarmed
	groundAt sim.Time           // the endpoint first reported ON_GROUND
	disarmAt sim.Time
	texts    []*common.MessageStatustext
}

// landingRun flies to 5 m, 10 m north of home, then sends the landing ops
// (or, with mission set, flies a takeoff-and-land mission) and runs until 5 s
// after the vehicle disarmed.
func landingRun(t *testing.T, params map[string]float32, land []Op, mission bool) landing {
	t.Helper()
	f := newFlyer(t, 0)
	f.cl.Add(Op{Kind: OpConnect, Name: "connect"})
	for name, val := range params {
		f.cl.Add(Op{Kind: OpSetParam, Name: name, Param: name, Value: val})
	}
	if mission {
		f.cl.Add(missionOps([]Item{{Cmd: common.MAV_CMD_NAV_TAKEOFF, Offset: geom.V(0, 0, 5)},
			{Cmd: common.MAV_CMD_NAV_WAYPOINT, Offset: geom.V(0, 10, 5)}, {Cmd: common.MAV_CMD_NAV_LAND, Here: true}})[1:]...)
	} else {
		g := testOrigin.ToGeodetic(geom.V(0, 10, 5))
		f.cl.Add(Op{Kind: OpCommand, Name: "arm", Cmd: common.MAV_CMD_COMPONENT_ARM_DISARM, Params: [7]float32{1}},
			Op{Kind: OpCommand, Name: "takeoff", Cmd: common.MAV_CMD_NAV_TAKEOFF, Params: [7]float32{6: 493}})
		f.run(10*sim.Second, nil)
		f.cl.Add(Op{Kind: OpCommand, Name: "reposition", Cmd: common.MAV_CMD_DO_REPOSITION,
			Params: [7]float32{-1, 0, 0, 0, float32(g.Lat), float32(g.Lon), float32(g.Alt)}})
		f.run(12*sim.Second, nil)
		if p := f.mr.Telemetry().Pos; p.Dist(geom.V(0, 10, 5)) > 0.5 {
			t.Fatalf("reposition left the vehicle at %v", p)
		}
		f.cl.Add(land...)
	}
	// Heartbeats count from the start of the return or landing.
	from := -1
	var l landing
	flew := false
	f.run(120*sim.Second, func() bool {
		if !flew && !f.ep.tel.Landed {
			flew = true
		}
		if m := f.ep.tel.Mode; from < 0 && (m == vehicle.ModeRTL || m == vehicle.ModeLand) {
			from = len(f.heard)
		}
		if flew && l.groundAt == 0 && f.ep.landedState() == common.MAV_LANDED_STATE_ON_GROUND {
			l.groundAt = f.now
		}
		_, disarmed := f.ep.Milestones["DISARM"]
		return disarmed
	})
	f.run(5*sim.Second, nil)
	l.disarmAt = f.ep.Milestones["DISARM"]
	if l.groundAt == 0 || l.disarmAt == 0 || from < 0 {
		t.Fatalf("no landing (on the ground at %v) or no disarm (%v); results %+v", l.groundAt, l.disarmAt, f.cl.Results)
	}
	l.modes, l.after = map[FlightMode]int{}, map[FlightMode]int{}
	var msgs []message.Message
	for _, fr := range f.heard[from:] {
		msgs = append(msgs, fr.GetMessage())
		if hb, ok := fr.GetMessage().(*common.MessageHeartbeat); ok {
			if hb.BaseMode&common.MAV_MODE_FLAG_SAFETY_ARMED != 0 {
				l.modes[ModeFromCustom(hb.CustomMode)]++
			} else {
				l.after[ModeFromCustom(hb.CustomMode)]++
			}
		}
	}
	l.texts = statusTexts(msgs)
	return l
}

// checkLanding checks that every heartbeat from the landing command to the
// disarm reported want (through the touchdown), the ones after it
// AUTO.LOITER, that the vehicle disarmed delay after it reported
// ON_GROUND, and said so.
func checkLanding(t *testing.T, name string, l landing, want FlightMode, delay sim.Duration) {
	t.Helper()
	if len(l.modes) != 1 || l.modes[want] == 0 {
		t.Errorf("%s: heartbeat modes while armed %v, want only %v", name, l.modes, want)
	}
	if len(l.after) != 1 || l.after[ModeHold] == 0 {
		t.Errorf("%s: heartbeat modes once disarmed %v, want only AUTO.LOITER (as real PX4)", name, l.after)
	}
	if d := l.disarmAt.Sub(l.groundAt); d < delay-50*sim.Millisecond || d > delay+100*sim.Millisecond {
		t.Errorf("%s: disarmed %v after reporting ON_GROUND, want %v (COM_DISARM_LAND)", name, d, delay)
	}
	n := 0
	for _, s := range l.texts {
		if s.Text == "Disarmed by landing" && s.Severity == common.MAV_SEVERITY_INFO {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%s: %d INFO \"Disarmed by landing\" texts in %+v, want 1", name, n, l.texts)
	}
}

// TestLandingKeepsModeAndDisarms: PX4 reports AUTO.RTL for the whole
// return including its final descent, stays in AUTO.RTL, AUTO.LAND or
// AUTO.MISSION after touching down, disarms COM_DISARM_LAND (2 s) after
// the landing is detected with "Disarmed by landing", and reports
// AUTO.LOITER once disarmed (px4sitl.TestFlowsSideBySide).
func TestLandingKeepsModeAndDisarms(t *testing.T) {
	rtl := landingRun(t, nil, []Op{{Kind: OpCommand, Name: "rtl", Cmd: common.MAV_CMD_NAV_RETURN_TO_LAUNCH}}, false)
	checkLanding(t, "RTL", rtl, ModeRTL, 2*sim.Second)
	land := landingRun(t, map[string]float32{"COM_DISARM_LAND": 4},
		[]Op{{Kind: OpCommand, Name: "land", Cmd: common.MAV_CMD_NAV_LAND}}, false)
	checkLanding(t, "LAND, COM_DISARM_LAND 4", land, ModeLand, 4*sim.Second)
	mis := landingRun(t, nil, nil, true)
	checkLanding(t, "mission", mis, ModeMission, 2*sim.Second)
}
