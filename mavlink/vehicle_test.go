package mavlink

import (
	"math"
	"strings"
	"testing"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"

	"skyloop/geom"
	"skyloop/sim"
)

func TestHeartbeatAndTelemetryOnTheGround(t *testing.T) {
	f := newFlyer(t, 0)
	f.cl.Add(Op{Kind: OpConnect, Name: "connect"})
	f.run(2*sim.Second, nil)
	hb, ok := f.last(0).GetMessage().(*common.MessageHeartbeat)
	if !ok {
		t.Fatal("no heartbeat heard")
	}
	if hb.Type != common.MAV_TYPE_QUADROTOR || hb.Autopilot != common.MAV_AUTOPILOT_PX4 || hb.MavlinkVersion != 3 {
		t.Errorf("heartbeat %+v", hb)
	}
	if hb.BaseMode&common.MAV_MODE_FLAG_SAFETY_ARMED != 0 || hb.SystemStatus != common.MAV_STATE_STANDBY {
		t.Errorf("disarmed vehicle reports base mode %v, state %v", hb.BaseMode, hb.SystemStatus)
	}
	if m := ModeFromCustom(hb.CustomMode); m != ModeHold {
		t.Errorf("mode %v, want AUTO.LOITER", m)
	}
	gp := f.last(33).GetMessage().(*common.MessageGlobalPositionInt)
	if !near(float64(gp.Lat), 473977420, 2) || !near(float64(gp.Lon), 85455940, 2) || !near(float64(gp.Alt), 488000, 5) {
		t.Errorf("global position %+v, want the origin", gp)
	}
	es := f.last(245).GetMessage().(*common.MessageExtendedSysState)
	if es.LandedState != common.MAV_LANDED_STATE_ON_GROUND {
		t.Errorf("landed state %v", es.LandedState)
	}
	// Stream rates: PX4's normal mode, over the 2 s.
	count := map[uint32]int{}
	for _, fr := range f.heard {
		count[fr.GetMessage().GetID()]++
	}
	for id, hz := range DefaultRates {
		if want := 2 * hz; !near(float64(count[id]), want, 1+want*0.05) {
			t.Errorf("message %d: %d frames in 2 s, want %.0f", id, count[id], want)
		}
	}
	if !f.cl.Done() || f.cl.Home.Norm() > 0.01 {
		t.Errorf("client connect: done %v home %v", f.cl.Done(), f.cl.Home)
	}
}

func TestCommandsArmTakeoffRepositionLand(t *testing.T) {
	f := newFlyer(t, 0)
	cmd := func(name string, c common.MAV_CMD, p ...float32) {
		var ps [7]float32
		copy(ps[:], p)
		f.cl.Add(Op{Kind: OpCommand, Name: name, Cmd: c, Params: ps})
	}
	f.cl.Add(Op{Kind: OpConnect, Name: "connect"})
	cmd("takeoff early", common.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, 0, 0, 0, 493)
	f.run(3*sim.Second, nil)
	// TEMPORARILY_REJECTED is retried: the operation must still be pending.
	if f.cl.Done() {
		t.Fatal("takeoff while disarmed finished; it must be rejected and retried")
	}
	// A fresh client script: arm, then takeoff, which now succeeds.
	f.cl.ops, f.cl.cur, f.cl.started = nil, 0, false
	cmd("arm", common.MAV_CMD_COMPONENT_ARM_DISARM, 1)
	cmd("takeoff", common.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, 0, 0, 0, 493) // 5 m above home, AMSL
	if !f.run(10*sim.Second, func() bool { return f.cl.Done() }) {
		t.Fatalf("arm/takeoff not acknowledged: %+v", f.cl.Results)
	}
	f.run(8*sim.Second, nil)
	if z := f.mr.Telemetry().Pos.Z; !near(z, 5, 0.3) {
		t.Fatalf("after takeoff z = %.2f, want 5", z)
	}
	hb := f.last(0).GetMessage().(*common.MessageHeartbeat)
	if hb.BaseMode&common.MAV_MODE_FLAG_SAFETY_ARMED == 0 || hb.SystemStatus != common.MAV_STATE_ACTIVE {
		t.Errorf("armed vehicle: base mode %v state %v", hb.BaseMode, hb.SystemStatus)
	}
	// Reposition 10 m north through COMMAND_LONG (lat/lon in degrees).
	g := testOrigin.ToGeodetic(geom.V(0, 10, 5))
	cmd("disarm in air", common.MAV_CMD_COMPONENT_ARM_DISARM, 0)
	f.run(2*sim.Second, func() bool { return f.cl.Done() })
	if r, _ := f.cl.Result("disarm in air"); r.OK {
		t.Fatal("disarm in the air accepted")
	}
	f.cl.Failed = false
	cmd("reposition", common.MAV_CMD_DO_REPOSITION, -1, 0, 0, float32(0), float32(g.Lat), float32(g.Lon), float32(g.Alt))
	f.run(15*sim.Second, nil)
	p := f.mr.Telemetry().Pos
	if !near(p.Y, 10, 0.5) || !near(p.X, 0, 0.5) || !near(p.Z, 5, 0.3) {
		t.Fatalf("after reposition at %v, want (0, 10, 5)", p)
	}
	if h := f.mr.Telemetry().Yaw; !near(h, math.Pi/2, 0.05) {
		t.Errorf("reposition with heading 0 (north) left yaw %.3f, want pi/2", h)
	}
	cmd("unsupported", common.MAV_CMD_DO_SET_SERVO, 1, 1500)
	f.run(2*sim.Second, func() bool { return f.cl.Done() })
	if r, _ := f.cl.Result("unsupported"); r.OK || !strings.Contains(r.Detail, "UNSUPPORTED") {
		t.Errorf("unsupported command result %+v", r)
	}
	f.cl.Failed = false
	cmd("land", common.MAV_CMD_NAV_LAND)
	f.cl.Add(Op{Kind: OpWaitLanded, Name: "landed"})
	if !f.run(30*sim.Second, func() bool { return f.cl.Done() }) {
		t.Fatalf("did not land and disarm: %+v, events %v", f.cl.Results, f.events)
	}
	for _, m := range []string{"ARM", "TAKEOFF", "LAND", "DISARM"} {
		if _, ok := f.ep.Milestones[m]; !ok {
			t.Errorf("no %s milestone", m)
		}
	}
}
