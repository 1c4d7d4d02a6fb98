package mavlink

import (
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
