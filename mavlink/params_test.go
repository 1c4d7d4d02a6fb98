package mavlink

import (
	"math"
	"testing"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"

	"skyloop/geom"
	"skyloop/sim"
)

func TestParameterListReadSet(t *testing.T) {
	f := newFlyer(t, 0)
	f.run(20*sim.Millisecond, nil)
	f.gcsSend(&common.MessageParamRequestList{TargetSystem: 1, TargetComponent: 1})
	f.run(30*sim.Millisecond, nil)
	seen := map[uint16]string{}
	for _, fr := range f.heard {
		if m, ok := fr.GetMessage().(*common.MessageParamValue); ok {
			if int(m.ParamCount) != len(paramTable) {
				t.Fatalf("param_count %d, want %d", m.ParamCount, len(paramTable))
			}
			seen[m.ParamIndex] = m.ParamId
		}
	}
	if len(seen) != len(paramTable) {
		t.Fatalf("listed %d parameters, want %d", len(seen), len(paramTable))
	}
	if v := f.cl.Params["MPC_XY_VEL_MAX"]; v != 12 {
		t.Errorf("MPC_XY_VEL_MAX = %v, want PX4's 12", v)
	}
	// Read by name; integers come byte-wise.
	f.gcsSend(&common.MessageParamRequestRead{TargetSystem: 1, TargetComponent: 1, ParamId: "NAV_DLL_ACT", ParamIndex: -1})
	f.run(30*sim.Millisecond, nil)
	pv := f.last(22).GetMessage().(*common.MessageParamValue)
	if pv.ParamId != "NAV_DLL_ACT" || pv.ParamType != common.MAV_PARAM_TYPE_INT32 || math.Float32bits(pv.ParamValue) != 0 {
		t.Errorf("NAV_DLL_ACT read %+v", pv)
	}
	// An out-of-range write is refused and the old value reported.
	f.cl.Add(Op{Kind: OpSetParam, Name: "tilt", Param: "MPC_TILTMAX_AIR", Value: 120})
	f.run(2*sim.Second, func() bool { return f.cl.Done() })
	if r, _ := f.cl.Result("tilt"); r.OK || f.mr.Params().TiltMax != 45 {
		t.Fatalf("tilt 120 accepted: %+v, tilt now %v", r, f.mr.Params().TiltMax)
	}
}

// TestParameterLimitsSpeed: MPC_XY_VEL_MAX and MPC_XY_CRUISE written over
// MAVLink cap the horizontal speed of a mission leg.
func TestParameterLimitsSpeed(t *testing.T) {
	top := func(limit float32) float64 {
		f := newFlyer(t, 0)
		f.cl.Add(Op{Kind: OpConnect, Name: "connect"})
		if limit > 0 {
			f.cl.Add(Op{Kind: OpSetParam, Name: "vmax", Param: "MPC_XY_VEL_MAX", Value: limit},
				Op{Kind: OpSetParam, Name: "cruise", Param: "MPC_XY_CRUISE", Value: limit})
		}
		f.cl.Add(missionOps([]Item{{Cmd: common.MAV_CMD_NAV_TAKEOFF, Offset: geom.V(0, 0, 5)},
			{Cmd: common.MAV_CMD_NAV_WAYPOINT, Offset: geom.V(40, 0, 5)}, {Cmd: common.MAV_CMD_NAV_LAND, Here: true}})...)
		v := 0.0
		f.run(120*sim.Second, func() bool {
			tel := f.mr.Telemetry()
			v = math.Max(v, math.Hypot(tel.Vel.X, tel.Vel.Y))
			return f.cl.Done()
		})
		if !f.cl.Done() || f.cl.Failed {
			t.Fatalf("limit %v: mission failed: %+v", limit, f.cl.Results)
		}
		return v
	}
	fast, slow := top(0), top(2)
	if !(fast > 4.5 && slow < 2.3) {
		t.Fatalf("top speed %.2f m/s with defaults, %.2f with MPC_XY_VEL_MAX=MPC_XY_CRUISE=2", fast, slow)
	}
	t.Logf("top horizontal speed %.2f m/s by default, %.2f m/s after the parameter writes", fast, slow)
}

func TestOffboardVelocityAndFailsafe(t *testing.T) {
	f := newFlyer(t, 0)
	f.cl.Add(Op{Kind: OpConnect, Name: "connect"},
		Op{Kind: OpCommand, Name: "arm", Cmd: common.MAV_CMD_COMPONENT_ARM_DISARM, Params: [7]float32{1}},
		Op{Kind: OpCommand, Name: "takeoff", Cmd: common.MAV_CMD_NAV_TAKEOFF, Params: [7]float32{6: 493}})
	f.run(10*sim.Second, nil)
	// Offboard without setpoints is denied.
	f.gcsSend(&common.MessageCommandLong{TargetSystem: 1, TargetComponent: 1, Command: common.MAV_CMD_DO_SET_MODE,
		Param1: 1, Param2: MainOffboard})
	f.run(30*sim.Millisecond, nil)
	if a := f.last(77).GetMessage().(*common.MessageCommandAck); a.Result != common.MAV_RESULT_DENIED {
		t.Fatalf("offboard without setpoints: %v", a.Result)
	}
	// Stream velocity setpoints (2 m/s north in NED = +y ENU) at 20 Hz, switch, fly 3 s.
	sp := &common.MessageSetPositionTargetLocalNed{TargetSystem: 1, TargetComponent: 1, CoordinateFrame: common.MAV_FRAME_LOCAL_NED,
		TypeMask: 0b110111000111, Vx: 2}
	for i := 0; i < 80; i++ {
		f.gcsSend(sp)
		if i == 5 {
			f.gcsSend(&common.MessageSetMode{TargetSystem: 1, BaseMode: 1, CustomMode: ModeOffboard.Custom()})
		}
		f.run(50*sim.Millisecond, nil)
	}
	tel := f.mr.Telemetry()
	if !near(tel.Vel.Y, 2, 0.3) || math.Abs(tel.Vel.X) > 0.3 {
		t.Fatalf("offboard velocity %v, want 2 m/s north", tel.Vel)
	}
	hb := f.last(0).GetMessage().(*common.MessageHeartbeat)
	if ModeFromCustom(hb.CustomMode) != ModeOffboard {
		t.Fatalf("mode %v, want OFFBOARD", ModeFromCustom(hb.CustomMode))
	}
	// Stop streaming: after COM_OF_LOSS_T the autopilot holds.
	f.run(3*sim.Second, nil)
	if v := f.mr.Telemetry().Vel.Norm(); v > 0.3 {
		t.Fatalf("still moving at %.2f m/s after offboard loss", v)
	}
	hb = f.last(0).GetMessage().(*common.MessageHeartbeat)
	if ModeFromCustom(hb.CustomMode) != ModeHold {
		t.Fatalf("after offboard loss mode %v, want AUTO.LOITER", ModeFromCustom(hb.CustomMode))
	}
}

func TestMessageIntervalAndRequests(t *testing.T) {
	f := newFlyer(t, 0)
	f.run(20*sim.Millisecond, nil)
	// ATTITUDE at 50 Hz, GPS_RAW_INT off.
	f.gcsSend(&common.MessageCommandLong{TargetSystem: 1, TargetComponent: 1, Command: common.MAV_CMD_SET_MESSAGE_INTERVAL, Param1: 30, Param2: 20000})
	f.gcsSend(&common.MessageCommandLong{TargetSystem: 1, TargetComponent: 1, Command: common.MAV_CMD_SET_MESSAGE_INTERVAL, Param1: 24, Param2: -1})
	f.run(20*sim.Millisecond, nil)
	f.heard = nil
	f.run(2*sim.Second, nil)
	n := map[uint32]int{}
	for _, fr := range f.heard {
		n[fr.GetMessage().GetID()]++
	}
	if !near(float64(n[30]), 100, 3) || n[24] != 0 {
		t.Fatalf("ATTITUDE %d in 2 s (want 100), GPS_RAW_INT %d (want 0)", n[30], n[24])
	}
	for id, want := range map[uint32]uint32{148: 148, 242: 242, 300: 300} {
		f.gcsSend(&common.MessageCommandLong{TargetSystem: 1, TargetComponent: 1, Command: common.MAV_CMD_REQUEST_MESSAGE, Param1: float32(id)})
		f.run(20*sim.Millisecond, nil)
		if f.last(want) == nil {
			t.Errorf("REQUEST_MESSAGE %d: not sent", id)
		}
	}
	av := f.last(148).GetMessage().(*common.MessageAutopilotVersion)
	if av.Capabilities&common.MAV_PROTOCOL_CAPABILITY_MISSION_INT == 0 || av.Capabilities&common.MAV_PROTOCOL_CAPABILITY_MAVLINK2 == 0 {
		t.Errorf("capabilities %v", av.Capabilities)
	}
	f.gcsSend(&common.MessageCommandLong{TargetSystem: 1, TargetComponent: 1, Command: common.MAV_CMD_REQUEST_MESSAGE, Param1: 12345})
	f.run(20*sim.Millisecond, nil)
	if a := f.last(77).GetMessage().(*common.MessageCommandAck); a.Result != common.MAV_RESULT_UNSUPPORTED {
		t.Errorf("request of message 12345: %v", a.Result)
	}
	// Commands for another system are ignored.
	acks := 0
	for _, fr := range f.heard {
		if _, ok := fr.GetMessage().(*common.MessageCommandAck); ok {
			acks++
		}
	}
	f.gcsSend(&common.MessageCommandLong{TargetSystem: 9, Command: common.MAV_CMD_COMPONENT_ARM_DISARM, Param1: 1})
	f.run(20*sim.Millisecond, nil)
	after := 0
	for _, fr := range f.heard {
		if _, ok := fr.GetMessage().(*common.MessageCommandAck); ok {
			after++
		}
	}
	if after != acks || f.mr.Telemetry().Armed {
		t.Fatal("a command for system 9 was obeyed")
	}
}

func TestCommandIntAndGlobalSetpoints(t *testing.T) {
	f := newFlyer(t, 0)
	f.cl.Add(Op{Kind: OpConnect, Name: "connect"},
		Op{Kind: OpCommand, Name: "arm", Cmd: common.MAV_CMD_COMPONENT_ARM_DISARM, Params: [7]float32{1}},
		Op{Kind: OpCommand, Name: "takeoff", Cmd: common.MAV_CMD_NAV_TAKEOFF, Params: [7]float32{6: 493}})
	f.run(10*sim.Second, nil)
	// COMMAND_INT reposition 8 m east at 6 m above home.
	g := testOrigin.ToGeodetic(geom.V(8, 0, 0))
	f.gcsSend(&common.MessageCommandInt{TargetSystem: 1, TargetComponent: 1, Frame: common.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT,
		Command: common.MAV_CMD_DO_REPOSITION, Param1: -1, Param4: float32(math.NaN()), X: deg7(g.Lat), Y: deg7(g.Lon), Z: 6})
	f.run(12*sim.Second, nil)
	if a := f.last(77).GetMessage().(*common.MessageCommandAck); a.Command != common.MAV_CMD_DO_REPOSITION || a.Result != common.MAV_RESULT_ACCEPTED {
		t.Fatalf("COMMAND_INT ack %+v", a)
	}
	if p := f.mr.Telemetry().Pos; p.Dist(geom.V(8, 0, 6)) > 0.5 {
		t.Fatalf("after COMMAND_INT reposition at %v, want (8, 0, 6)", p)
	}
	// Offboard position through SET_POSITION_TARGET_GLOBAL_INT.
	g = testOrigin.ToGeodetic(geom.V(8, -6, 0))
	sp := &common.MessageSetPositionTargetGlobalInt{TargetSystem: 1, CoordinateFrame: common.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT,
		TypeMask: 0b110111111000, LatInt: deg7(g.Lat), LonInt: deg7(g.Lon), Alt: 4}
	for i := 0; i < 200; i++ {
		f.gcsSend(sp)
		if i == 3 {
			f.gcsSend(&common.MessageCommandLong{TargetSystem: 1, TargetComponent: 1, Command: common.MAV_CMD_DO_SET_MODE,
				Param1: 1, Param2: MainOffboard})
		}
		f.run(50*sim.Millisecond, nil)
	}
	if p := f.mr.Telemetry().Pos; p.Dist(geom.V(8, -6, 4)) > 0.5 {
		t.Fatalf("offboard global position: at %v, want (8, -6, 4)", p)
	}
	gp := f.last(33).GetMessage().(*common.MessageGlobalPositionInt)
	if math.Abs(float64(gp.Lat-deg7(g.Lat))) > 50 || math.Abs(float64(gp.RelativeAlt)-4000) > 300 {
		t.Fatalf("GLOBAL_POSITION_INT %+v, want lat %d and 4 m up", gp, deg7(g.Lat))
	}
}
