package mavlink

import (
	"math"
	"strings"
	"testing"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// recAutopilot records the commands an endpoint gives; it reports an armed
// vehicle hovering 10 m above home.
type recAutopilot struct {
	tel  vehicle.Telemetry
	cmds []vehicle.Command
}

func (a *recAutopilot) Estimate() vehicle.Telemetry { return a.tel }
func (a *recAutopilot) Command(c vehicle.Command)   { a.cmds = append(a.cmds, c) }

// ackHost decodes the acknowledgements the endpoint sends.
type ackHost struct {
	dec    *Decoder
	acks   []common.MAV_RESULT
	events []string
}

func (h *ackHost) Send(to Peer, b []byte) {
	h.dec.Decode(b, func(f frame.Frame) {
		if m, ok := f.GetMessage().(*common.MessageCommandAck); ok {
			h.acks = append(h.acks, m.Result)
		}
	})
}
func (h *ackHost) Broadcast(b []byte)        {}
func (h *ackHost) Event(name, detail string) { h.events = append(h.events, name+": "+detail) }

func newRecVehicle() (*Vehicle, *recAutopilot, *ackHost) {
	ap := &recAutopilot{tel: vehicle.Telemetry{Pos: geom.V(0, 0, 10), Armed: true, Mode: vehicle.ModeHold}}
	h := &ackHost{dec: NewDecoder()}
	v := NewVehicle(VehicleConfig{SysID: 1, Origin: testOrigin}, ap, nil, h)
	return v, ap, h
}

// TestImplausibleCommandsDenied: a ground station is a network peer;
// commands whose numbers are not finite or beyond any plausible world are
// denied and never reach the autopilot (a reposition to 1e30 m used to be
// flown).
func TestImplausibleCommandsDenied(t *testing.T) {
	inf := float32(math.Inf(1))
	cases := []struct {
		name string
		cmd  common.MAV_CMD
		p    [7]float32
		ok   bool
	}{
		{"reposition nearby", common.MAV_CMD_DO_REPOSITION, [7]float32{0, 0, 0, 0, 47.3978, 8.5456, 500}, true},
		{"reposition 1e30 m up", common.MAV_CMD_DO_REPOSITION, [7]float32{0, 0, 0, 0, 47.3978, 8.5456, 1e30}, false},
		{"reposition infinitely high", common.MAV_CMD_DO_REPOSITION, [7]float32{0, 0, 0, 0, 47.3978, 8.5456, inf}, false},
		{"reposition to the antipode", common.MAV_CMD_DO_REPOSITION, [7]float32{0, 0, 0, 0, -47.3978, -171.4544, 500}, false},
		{"reposition at 1e30 m/s", common.MAV_CMD_DO_REPOSITION, [7]float32{1e30, 0, 0, 0, 47.3978, 8.5456, 500}, false},
		{"reposition heading inf", common.MAV_CMD_DO_REPOSITION, [7]float32{0, 0, 0, inf, 47.3978, 8.5456, 500}, false},
		{"takeoff to 1e30 m", common.MAV_CMD_NAV_TAKEOFF, [7]float32{0, 0, 0, 0, 0, 0, 1e30}, false},
		{"takeoff to inf", common.MAV_CMD_NAV_TAKEOFF, [7]float32{0, 0, 0, 0, 0, 0, inf}, false},
		{"change speed to 1e30", common.MAV_CMD_DO_CHANGE_SPEED, [7]float32{1, 1e30}, false},
		{"change speed to inf", common.MAV_CMD_DO_CHANGE_SPEED, [7]float32{1, inf}, false},
		{"change speed to 12", common.MAV_CMD_DO_CHANGE_SPEED, [7]float32{1, 12}, true},
	}
	for _, c := range cases {
		v, ap, h := newRecVehicle()
		v.Handle(sim.Time(sim.Second), Peer{}, &frame.V2Frame{SystemID: 255, ComponentID: 190,
			Message: &common.MessageCommandLong{TargetSystem: 1, Command: c.cmd, Param1: c.p[0], Param2: c.p[1], Param3: c.p[2],
				Param4: c.p[3], Param5: c.p[4], Param6: c.p[5], Param7: c.p[6]}})
		if len(h.acks) != 1 {
			t.Fatalf("%s: %d acks", c.name, len(h.acks))
		}
		switch {
		case c.ok && h.acks[0] != common.MAV_RESULT_ACCEPTED:
			t.Errorf("%s: %v", c.name, h.acks[0])
		case !c.ok && h.acks[0] != common.MAV_RESULT_DENIED:
			t.Errorf("%s: %v, want DENIED", c.name, h.acks[0])
		case !c.ok && (len(ap.cmds) > 0 || v.speedLim > vehicle.MaxCommandSpeed):
			t.Errorf("%s: denied, yet the autopilot got %+v (speed limit %v)", c.name, ap.cmds, v.speedLim)
		}
		for _, cmd := range ap.cmds {
			if err := cmd.Validate(); err != nil {
				t.Errorf("%s: the autopilot got an invalid command: %v", c.name, err)
			}
		}
	}
}

// TestImplausibleSetpointsIgnored: offboard setpoints beyond the plausible
// range are ignored; the vehicle keeps following the last good one.
func TestImplausibleSetpointsIgnored(t *testing.T) {
	v, ap, h := newRecVehicle()
	now := sim.Time(sim.Second)
	local := func(m *common.MessageSetPositionTargetLocalNed) {
		m.TargetSystem, m.CoordinateFrame = 1, common.MAV_FRAME_LOCAL_NED
		v.Handle(now, Peer{}, &frame.V2Frame{SystemID: 255, Message: m})
	}
	const velOnly = common.POSITION_TARGET_TYPEMASK_X_IGNORE | common.POSITION_TARGET_TYPEMASK_Y_IGNORE |
		common.POSITION_TARGET_TYPEMASK_Z_IGNORE | common.POSITION_TARGET_TYPEMASK_YAW_IGNORE
	local(&common.MessageSetPositionTargetLocalNed{X: 5, Y: 5, Z: -10, TypeMask: common.POSITION_TARGET_TYPEMASK_YAW_IGNORE})
	v.Handle(now, Peer{}, &frame.V2Frame{SystemID: 255, Message: &common.MessageSetMode{TargetSystem: 1,
		CustomMode: ModeOffboard.Custom()}})
	if len(h.acks) != 1 || h.acks[0] != common.MAV_RESULT_ACCEPTED || len(ap.cmds) != 1 {
		t.Fatalf("offboard with a good setpoint: acks %v, commands %+v", h.acks, ap.cmds)
	}
	inf := float32(math.Inf(1))
	for _, m := range []*common.MessageSetPositionTargetLocalNed{
		{X: 3e38, Y: 0, Z: -10, TypeMask: common.POSITION_TARGET_TYPEMASK_YAW_IGNORE},
		{X: 0, Y: 0, Z: -2e5, TypeMask: common.POSITION_TARGET_TYPEMASK_YAW_IGNORE},
		{X: 0, Y: 0, Z: -10, Yaw: inf},
		{Vx: 1e30, TypeMask: velOnly},
		{Vz: inf, TypeMask: velOnly},
	} {
		local(m)
	}
	v.Handle(now, Peer{}, &frame.V2Frame{SystemID: 255, Message: &common.MessageSetPositionTargetGlobalInt{TargetSystem: 1,
		CoordinateFrame: common.MAV_FRAME_GLOBAL_INT, LatInt: 473977420, LonInt: 85455940, Alt: 1e30,
		TypeMask: common.POSITION_TARGET_TYPEMASK_YAW_IGNORE}})
	if len(ap.cmds) != 1 {
		t.Fatalf("implausible setpoints reached the autopilot: %+v", ap.cmds[1:])
	}
	if want := geom.V(5, 5, 10); v.sp.pos.Sub(want).Norm() > 1e-9 || !v.sp.usePos {
		t.Fatalf("the kept setpoint is %+v, want the good one at %v", v.sp, want)
	}
	// One event for the run of bad setpoints, not one per setpoint.
	if len(h.events) != 1 || !strings.HasPrefix(h.events[0], "command_denied: offboard setpoint ignored: goto position [0 3") {
		t.Fatalf("events %q", h.events)
	}
}
