package mavlink

import (
	"strings"
	"testing"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"

	"skyloop/sim"
)

// prearmUntil makes the stand-in's SYS_STATUS report the pre-arm check as
// ArduPilot does: present and enabled, healthy only from time pass (never
// when pass is negative).
func prearmUntil(pass sim.Time) func(sim.Time, frame.Frame) {
	return func(now sim.Time, fr frame.Frame) {
		m, ok := fr.GetMessage().(*common.MessageSysStatus)
		if !ok {
			return
		}
		const bit = common.MAV_SYS_STATUS_PREARM_CHECK
		m.OnboardControlSensorsPresent |= bit
		m.OnboardControlSensorsEnabled |= bit
		if pass >= 0 && now >= pass {
			m.OnboardControlSensorsHealth |= bit
		} else {
			m.OnboardControlSensorsHealth &^= bit
		}
	}
}

// TestArmWaitsForPrearmChecks: a vehicle whose SYS_STATUS reports its
// pre-arm checks failing for 20 s is not armed before they pass (the
// client sends no arming command: the vehicle would accept it) and is
// armed, and flies its mission, after.
func TestArmWaitsForPrearmChecks(t *testing.T) {
	const pass = 20 * sim.Second
	f := newFlyer(t, 0)
	f.tamper = prearmUntil(sim.Time(pass))
	f.cl.ReadyTimeout = DefaultReadyTimeout
	f.cl.Add(missionOps(twoWaypoints)...)
	if !f.run(120*sim.Second, func() bool { return f.cl.Done() }) || f.cl.Failed {
		t.Fatalf("mission did not complete: %+v, events %v", f.cl.Results, f.events)
	}
	up, _ := f.cl.Result("upload")
	arm, _ := f.cl.Result("arm")
	if up.End >= sim.Time(pass) {
		t.Fatalf("upload done at %v: the test needs it before the checks pass at %v", up.End, pass)
	}
	if arm.Start < sim.Time(pass) || arm.Start > sim.Time(pass+2*sim.Second) {
		t.Errorf("arming began at %v, want just after the checks pass at %v", arm.Start, pass)
	}
	if at, ok := f.ep.Milestones["ARM"]; !ok || at < sim.Time(pass) {
		t.Errorf("vehicle armed at %v (%v), want after %v", at, ok, pass)
	}
	ready := false
	for _, e := range f.events {
		ready = ready || strings.HasPrefix(e, "mavlink_ready vehicle 1: ready to arm after waiting")
	}
	if !ready {
		t.Errorf("no mavlink_ready event: %v", f.events)
	}
}

// TestNotReadyTimesOut: a vehicle whose pre-arm checks never pass is never
// armed, and after ReadyTimeout the script fails saying what was missing.
func TestNotReadyTimesOut(t *testing.T) {
	f := newFlyer(t, 0)
	f.tamper = prearmUntil(-1)
	f.cl.ReadyTimeout = 30 * sim.Second
	f.cl.Add(missionOps(twoWaypoints)...)
	f.run(60*sim.Second, func() bool { return f.cl.Done() })
	const want = "vehicle 1 not ready after 30 s: pre-arm checks not passed (SYS_STATUS)"
	if !f.cl.Failed || f.cl.Err == nil || f.cl.Err.Error() != want {
		t.Fatalf("failed %v, err %v; want %q", f.cl.Failed, f.cl.Err, want)
	}
	if f.now < sim.Time(30*sim.Second) || f.now > sim.Time(31*sim.Second) {
		t.Errorf("failed at %v, want at 30 s", f.now)
	}
	if _, ok := f.ep.Milestones["ARM"]; ok {
		t.Error("the vehicle was armed")
	}
	r, ok := f.cl.Result("arm")
	if !ok || r.OK || r.Detail != want {
		t.Errorf("arm result %+v", r)
	}
}

// TestConnectTimesOut: a vehicle never heard fails the connection after
// ReadyTimeout, naming the missing link.
func TestConnectTimesOut(t *testing.T) {
	f := newFlyer(t, 1) // every frame lost
	f.cl.ReadyTimeout = 10 * sim.Second
	f.cl.Add(missionOps(twoWaypoints)...)
	f.run(20*sim.Second, func() bool { return f.cl.Done() })
	const want = "vehicle 1 not ready after 10 s: no heartbeat heard (link down)"
	if f.cl.Err == nil || f.cl.Err.Error() != want {
		t.Fatalf("err %v, want %q", f.cl.Err, want)
	}
}

// ackClient is a client with a scripted vehicle: frames from system 1
// built by enc are handed to it directly.
type ackClient struct {
	t    *testing.T
	c    *Client
	enc  *Encoder
	dec  *Decoder
	sent []frame.Frame
}

func (a *ackClient) Send(b []byte) {
	a.dec.Decode(b, func(f frame.Frame) { a.sent = append(a.sent, f) })
}
func (a *ackClient) Event(string, string) {}

func (a *ackClient) hear(now sim.Time, m interface{ GetID() uint32 }) {
	b, err := a.enc.Encode(m)
	if err != nil {
		a.t.Fatal(err)
	}
	a.dec.Decode(b, func(f frame.Frame) { a.c.Handle(now, f) })
}

// TestDeniedArmingRetriedUntilReadyTimeout: arming refused (DENIED, as PX4
// does while its checks fail, which its SYS_STATUS does not report
// beforehand) is retried past the old 120 attempts while the wait for
// readiness lasts, and succeeds when the vehicle accepts.
func TestDeniedArmingRetriedUntilReadyTimeout(t *testing.T) {
	a := &ackClient{t: t, enc: NewEncoder(1, 1), dec: NewDecoder()}
	a.c = NewClient(255, 190, 1, testOrigin, sim.Second, common.MAV_TYPE_GCS, a)
	a.c.ReadyTimeout = 300 * sim.Second
	a.c.Add(Op{Kind: OpConnect, Name: "connect"}, Op{Kind: OpCommand, Name: "arm", Cmd: common.MAV_CMD_COMPONENT_ARM_DISARM, Params: [7]float32{1}})
	arms := 0
	for now := sim.Time(0); now < sim.Time(200*sim.Second) && !a.c.Done(); now = now.Add(100 * sim.Millisecond) {
		a.hear(now, &common.MessageHeartbeat{Type: common.MAV_TYPE_QUADROTOR, Autopilot: common.MAV_AUTOPILOT_PX4})
		a.hear(now, &common.MessageGlobalPositionInt{Lat: 473977420, Lon: 85455940, Alt: 488000})
		a.sent = a.sent[:0]
		a.c.Step(now)
		for _, f := range a.sent {
			if cl, ok := f.GetMessage().(*common.MessageCommandLong); ok && cl.Command == common.MAV_CMD_COMPONENT_ARM_DISARM {
				arms++
				res := common.MAV_RESULT_DENIED
				if arms > 150 {
					res = common.MAV_RESULT_ACCEPTED
				}
				a.hear(now, &common.MessageCommandAck{Command: cl.Command, Result: res})
			}
		}
	}
	if r, ok := a.c.Result("arm"); !ok || !r.OK || arms != 151 {
		t.Fatalf("arm %+v after %d arming commands, want accepted at the 151st (failed: %v)", r, arms, a.c.Err)
	}
}

// TestRefusedArmingFailsAtReadyTimeout: a vehicle that keeps refusing to
// arm (TEMPORARILY_REJECTED, DENIED) is asked again until ReadyTimeout,
// then the script fails saying so, instead of asking for ever (the old
// client's answer to TEMPORARILY_REJECTED).
func TestRefusedArmingFailsAtReadyTimeout(t *testing.T) {
	for _, res := range []common.MAV_RESULT{common.MAV_RESULT_TEMPORARILY_REJECTED, common.MAV_RESULT_DENIED} {
		a := &ackClient{t: t, enc: NewEncoder(1, 1), dec: NewDecoder()}
		a.c = NewClient(255, 190, 1, testOrigin, sim.Second, common.MAV_TYPE_GCS, a)
		a.c.ReadyTimeout = 20 * sim.Second
		a.c.Add(Op{Kind: OpConnect, Name: "connect"}, Op{Kind: OpCommand, Name: "arm", Cmd: common.MAV_CMD_COMPONENT_ARM_DISARM, Params: [7]float32{1}})
		arms := 0
		var now sim.Time
		for ; now < sim.Time(60*sim.Second) && !a.c.Done(); now = now.Add(100 * sim.Millisecond) {
			a.hear(now, &common.MessageHeartbeat{Type: common.MAV_TYPE_QUADROTOR, Autopilot: common.MAV_AUTOPILOT_PX4})
			a.hear(now, &common.MessageGlobalPositionInt{Lat: 473977420, Lon: 85455940, Alt: 488000})
			a.sent = a.sent[:0]
			a.c.Step(now)
			for _, f := range a.sent {
				if cl, ok := f.GetMessage().(*common.MessageCommandLong); ok && cl.Command == common.MAV_CMD_COMPONENT_ARM_DISARM {
					arms++
					a.hear(now, &common.MessageCommandAck{Command: cl.Command, Result: res})
				}
			}
		}
		want := "vehicle 1 not ready after 20 s: arming still refused (" + res.String() + ")"
		if a.c.Err == nil || a.c.Err.Error() != want || arms < 19 || now > sim.Time(21*sim.Second) {
			t.Errorf("%v: err %v after %d arming commands at %v, want %q at 20 s", res, a.c.Err, arms, now, want)
		}
	}
}
