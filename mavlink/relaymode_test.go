package mavlink

import (
	"io"
	"slices"
	"testing"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/message"

	"skyloop/agent"
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

// fwVehicle is a vehicle flown by real firmware, as the mavlink behaviour
// sees it: it offers the firmware's ground-station port (mavlink.Firmware).
type fwVehicle struct{ vehicle.Vehicle }

func (fwVehicle) MAVLinkPort() int            { return 18570 }
func (fwVehicle) Estimate() vehicle.Telemetry { return vehicle.Telemetry{} }

// apVehicle is a vehicle flown by ArduPilot: a TCP link, and arming seen in
// heartbeats only (mavlink.ArmingInHeartbeats).
type apVehicle struct{ vehicle.Vehicle }

func (apVehicle) MAVLinkTCP() int             { return 5760 }
func (apVehicle) ArmingInHeartbeats() bool    { return true }
func (apVehicle) Estimate() vehicle.Telemetry { return vehicle.Telemetry{} }

// eventHost is a run with a vehicle node and a ground-station node that
// records events.
type eventHost struct {
	events []string
	sent   int
}

func (h *eventHost) Send(netsim.NodeID, *agent.Message) { h.sent++ }
func (h *eventHost) Event(_ sim.Time, _ netsim.NodeID, name, detail string) {
	h.events = append(h.events, name+" "+detail)
}
func (h *eventHost) Tick() sim.Duration { return sim.Millisecond }
func (h *eventHost) Nodes() []agent.NodeRef {
	return []agent.NodeRef{{ID: 0, Name: "uav-0", Group: "uav"}, {ID: 1, Name: "gcs"}}
}
func (h *eventHost) Origin() geom.Geodetic          { return testOrigin }
func (h *eventHost) File(string) (io.Writer, error) { return io.Discard, nil }
func (h *eventHost) Fail(netsim.NodeID, error)      {}
func (h *eventHost) Network() agent.NetworkMode     { return agent.NetworkMode{} }

// chunkLink is the firmware's side of the relay: datagrams queued by the
// test, drained at the behaviour's next step.
type chunkLink struct{ in [][]byte }

func (l *chunkLink) Drain(fn func([]byte)) error {
	for _, b := range l.in {
		fn(b)
	}
	l.in = l.in[:0]
	return nil
}
func (l *chunkLink) Write([]byte) {}

// TestRelayLogsFirmwareModes: heartbeats of real firmware passing through
// the relay become "mode" events when their custom mode changes, named as
// the firmware names them (PX4's main.sub modes, ArduCopter's numbers) in
// the stand-in's from->to form; a repeated mode, a ground station's
// heartbeat and a camera's are no change, and the first heartbeat only
// sets the mode. ArduPilot's arming, which its controller cannot see,
// becomes "armed" and "disarmed" events from the heartbeats' safety-armed
// flag; PX4's controller logs its own, so the relay logs none for it.
func TestRelayLogsFirmwareModes(t *testing.T) {
	const armed = uint8(common.MAV_MODE_FLAG_SAFETY_ARMED | common.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED)
	for _, c := range []struct {
		name  string
		ap    common.MAV_AUTOPILOT
		v     vehicle.Vehicle
		modes []uint32
		base  []uint8
		want  []string
	}{
		{"px4", common.MAV_AUTOPILOT_PX4, fwVehicle{},
			[]uint32{ModeHold.Custom(), ModeHold.Custom(), ModeTakeoff.Custom(), ModeMission.Custom(), ModeLand.Custom()},
			[]uint8{1, armed, armed, armed, 1},
			[]string{"mode AUTO.LOITER->AUTO.TAKEOFF", "mode AUTO.TAKEOFF->AUTO.MISSION", "mode AUTO.MISSION->AUTO.LAND"}},
		{"arducopter", common.MAV_AUTOPILOT_ARDUPILOTMEGA, apVehicle{},
			[]uint32{0, 4, 4, 3, 9, 99},
			[]uint8{1, 1, armed, armed, armed, 1},
			[]string{"mode STABILIZE->GUIDED", "armed ArduPilot", "mode GUIDED->AUTO", "mode AUTO->LAND", "mode LAND->mode(99)", "disarmed ArduPilot"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &eventHost{}
			p := DefaultVehicleParams()
			p.GCS, p.Tlog = []string{"gcs"}, false
			b := NewVehicleBehavior(p)
			ctx, drv := agent.NewContext(h.Nodes()[0], h, c.v, vehicle.Telemetry{}, nil, nil)
			if err := b.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if b.Firmware() == nil {
				t.Fatal("the behaviour did not find the firmware")
			}
			link := &chunkLink{}
			b.AttachFirmware(link)
			fw, gcs, cam := NewEncoder(1, 1), NewEncoder(255, 190), NewEncoder(1, 100)
			frame := func(e *Encoder, m message.Message) []byte {
				out, err := e.Encode(m)
				if err != nil {
					t.Fatal(err)
				}
				return slices.Clone(out)
			}
			for i, m := range c.modes {
				now := sim.Time(i) * sim.Time(sim.Second)
				// One datagram: telemetry, then the heartbeat (frames the
				// mode watch skips on their header).
				dg := frame(fw, &common.MessageAttitude{Roll: 0.1})
				dg = append(dg, frame(fw, &common.MessageHeartbeat{Type: common.MAV_TYPE_QUADROTOR, Autopilot: c.ap, BaseMode: common.MAV_MODE_FLAG(c.base[i]), CustomMode: m})...)
				link.in = append(link.in, dg,
					frame(gcs, &common.MessageHeartbeat{Type: common.MAV_TYPE_GCS, Autopilot: common.MAV_AUTOPILOT_INVALID, CustomMode: 77}),
					frame(cam, &common.MessageHeartbeat{Type: common.MAV_TYPE_CAMERA, Autopilot: c.ap, BaseMode: common.MAV_MODE_FLAG(armed), CustomMode: 55}))
				drv.SetNow(now)
				b.Step(ctx)
			}
			if !slices.Equal(h.events, c.want) {
				t.Errorf("events %q, want %q", h.events, c.want)
			}
			if h.sent == 0 {
				t.Error("the relay passed nothing on to the ground station")
			}
		})
	}
}
