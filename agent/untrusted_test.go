package agent

import (
	"io"
	"math"
	"strings"
	"testing"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

// TestDecodersRejectImplausibleValues: state updates come from other
// nodes, possibly external processes; NaN,
// infinite or absurd numbers are refused at decoding, never handed to a
// controller.
func TestDecodersRejectImplausibleValues(t *testing.T) {
	for _, pos := range []geom.Vec3{geom.V(math.NaN(), 0, 5), geom.V(1e308, 0, 5), geom.V(0, 0, math.Inf(1)), geom.V(2e6, 0, 0)} {
		s := State{Pos: pos}
		if _, err := decodeState(s.Append3D(nil)); err == nil {
			t.Errorf("3D state at %v decoded", pos)
		}
		if _, err := decodeState(s.AppendPlanar(nil)); err == nil && (math.IsNaN(pos.X) || math.Abs(pos.X) > 1e6) {
			t.Errorf("planar state at %v decoded", pos)
		}
	}
	for _, s := range []State{{Vel: geom.V(0, 1e9, 0)}, {Yaw: math.NaN()}, {Yaw: 1e300}} {
		if _, err := decodeState(s.Append3D(nil)); err == nil {
			t.Errorf("3D state %+v decoded", s)
		}
	}
	for _, s := range []State{{V: 1e9}, {V: math.NaN()}, {Yaw: math.NaN()}, {Omega: math.Inf(-1)}} {
		if _, err := decodeState(s.AppendPlanar(nil)); err == nil {
			t.Errorf("planar state %+v decoded", s)
		}
	}
}

// cmdVehicle records the commands it gets.
type cmdVehicle struct{ got []vehicle.Command }

func (v *cmdVehicle) Kind() string                           { return "test" }
func (v *cmdVehicle) Timing() vehicle.Timing                 { return vehicle.Timing{} }
func (v *cmdVehicle) Command(c vehicle.Command)              { v.got = append(v.got, c) }
func (v *cmdVehicle) Control(t sim.Time, ev *vehicle.Events) {}
func (v *cmdVehicle) Step(t sim.Time, ev *vehicle.Events)    {}
func (v *cmdVehicle) Telemetry() vehicle.Telemetry           { return vehicle.Telemetry{} }
func (v *cmdVehicle) Estimate() vehicle.Telemetry            { return vehicle.Telemetry{} }
func (v *cmdVehicle) Radius() float64                        { return 0.3 }
func (v *cmdVehicle) Pos() geom.Vec3                         { return geom.Vec3{} }
func (v *cmdVehicle) Motion() vehicle.Motion                 { return vehicle.Motion{} }

type eventHost struct {
	sendHost
	events []string
}

func (h *eventHost) Event(t sim.Time, node netsim.NodeID, name, detail string) {
	h.events = append(h.events, name+": "+detail)
}
func (h *eventHost) File(name string) (io.Writer, error) { return nil, nil }

// TestContextRejectsImplausibleCommands: whatever a behaviour computes, an
// implausible command never reaches the vehicle, and a run of them gives
// one event.
func TestContextRejectsImplausibleCommands(t *testing.T) {
	h := &eventHost{}
	v := &cmdVehicle{}
	ctx, _ := NewContext(NodeRef{ID: 0, Name: "a"}, h, v, vehicle.Telemetry{}, nil, nil)
	for i := 0; i < 5; i++ {
		ctx.Command(vehicle.Command{Kind: vehicle.CmdVelocity, Vel: geom.V(math.NaN(), 0, 0)})
	}
	ctx.Command(vehicle.Command{Kind: vehicle.CmdHold})
	ctx.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(1e308, 0, 0), Yaw: math.NaN()})
	if len(v.got) != 1 || v.got[0].Kind != vehicle.CmdHold {
		t.Fatalf("the vehicle got %+v", v.got)
	}
	if len(h.events) != 2 || !strings.HasPrefix(h.events[0], "command_rejected: ") {
		t.Fatalf("events %q", h.events)
	}
}
