// Package vehicle defines what every vehicle kind offers the rest of
// skyloop: a physics step, an autopilot step driven by high-level commands,
// and telemetry.
//
// A vehicle is a physics model and a controller joined by a sensor/actuator
// boundary (Physics, Controller, Sensors, Actuators, and Composed, which
// joins them into a Vehicle). Physics models live in sub-packages
// (pointmass, groundbot, multirotor); each keeps its static parameters
// (shared by all vehicles of a group) apart from its compact dynamic state.
// The kinematic kinds keep their simple controllers beside their physics;
// the multirotor is flown by the PX4-like controller of package
// autopilot/px4like.
package vehicle

import (
	"fmt"
	"math"

	"skyloop/geom"
	"skyloop/sim"
)

// Mode is the flight or drive mode reported in telemetry.
type Mode uint8

// Modes shared by all kinds; a kind uses the subset that makes sense for it.
const (
	ModeDisarmed Mode = iota // motors off
	ModeIdle                 // armed on the ground, waiting for a command
	ModeTakeoff              // climbing to the takeoff altitude
	ModeHold                 // holding position
	ModeGoto                 // flying or driving to a target position
	ModeVelocity             // following a velocity setpoint (offboard)
	ModeDrive                // following body speed and turn-rate commands
	ModeLand                 // descending to touch down
	ModeRTL                  // returning to the launch point
)

var modeNames = [...]string{"disarmed", "idle", "takeoff", "hold", "goto", "velocity", "drive", "land", "rtl"}

// String returns the mode's lower-case name as written in events.csv.
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("mode%d", m)
}

// CommandKind says what a Command asks for.
type CommandKind uint8

// Command kinds.
const (
	CmdNone      CommandKind = iota
	CmdArm                   // arm the motors
	CmdDisarm                // disarm (only on the ground)
	CmdTakeoff               // arm if needed and climb to Alt above the current point
	CmdHold                  // hold the current position
	CmdGoto                  // go to Pos (yaw Yaw unless NaN), at most Speed if > 0
	CmdVelocity              // follow world-frame velocity Vel
	CmdDrive                 // ground vehicles: forward speed V and turn rate Omega
	CmdLand                  // land at the current horizontal position
	CmdRTL                   // return to launch and land
	CmdHeartbeat             // the ground station is alive (feeds the link-loss failsafe)
)

var cmdNames = [...]string{"none", "arm", "disarm", "takeoff", "hold", "goto", "velocity", "drive", "land", "rtl", "heartbeat"}

// String returns the command's lower-case name.
func (k CommandKind) String() string {
	if int(k) < len(cmdNames) {
		return cmdNames[k]
	}
	return fmt.Sprintf("cmd%d", k)
}

// Command is a high-level instruction to a vehicle's autopilot. Which
// fields matter depends on Kind.
type Command struct {
	Kind  CommandKind
	Pos   geom.Vec3 // goto target, world frame (m)
	Vel   geom.Vec3 // velocity setpoint, world frame (m/s)
	Yaw   float64   // goto heading (rad, counter-clockwise from east); NaN keeps the current one
	Speed float64   // goto speed limit (m/s); 0 uses the vehicle's own limit
	Alt   float64   // takeoff altitude above the ground (m)
	V     float64   // drive: forward speed (m/s)
	Omega float64   // drive: turn rate (rad/s)
}

// Plausible ranges of the numbers in a Command. Commands from other
// processes (external agents, ground stations) are checked against them
// with Validate before they reach an autopilot: a finite but absurd value
// such as a goto to 1e308 m would otherwise overflow the controllers into
// NaN. They are generous bounds of the physically meaningful, not the
// limits of any vehicle kind (which clamp further on their own).
const (
	// MaxWorldXY bounds |x| and |y| of a commanded position (m): 1000 km
	// around the scenario origin, far beyond any local east-north-up frame
	// a run can use.
	MaxWorldXY = 1e6
	// MinWorldZ and MaxWorldZ bound z of a commanded position (m, up):
	// from below the deepest sea floor to the edge of space.
	MinWorldZ = -1e4
	MaxWorldZ = 1e5
	// MaxCommandSpeed bounds a goto speed limit, the norm of a velocity
	// setpoint and a drive speed (m/s).
	MaxCommandSpeed = 1000
	// MaxCommandTurnRate bounds a drive turn rate (rad/s).
	MaxCommandTurnRate = 100
	// MaxTakeoffAlt bounds a takeoff altitude above the ground (m); it
	// must also be positive.
	MaxTakeoffAlt = 1e5
	// MaxCommandYaw bounds |yaw| of a goto (rad). Autopilots wrap the
	// angle; a value beyond some 160 turns is garbage or a unit mistake.
	MaxCommandYaw = 1000
)

// Validate reports whether the numbers of c that matter for its Kind are
// finite and within the plausible ranges above (a NaN goto yaw is allowed:
// it keeps the current heading). The error names the field and the value.
// Built-in behaviours produce valid commands; every command source outside
// the process must call it.
func (c Command) Validate() error {
	switch c.Kind {
	case CmdNone, CmdArm, CmdDisarm, CmdHold, CmdLand, CmdRTL, CmdHeartbeat:
		return nil
	case CmdTakeoff:
		if !(c.Alt > 0 && c.Alt <= MaxTakeoffAlt) {
			return fmt.Errorf("takeoff altitude %v outside (0, %v] m", c.Alt, float64(MaxTakeoffAlt))
		}
	case CmdGoto:
		p := c.Pos
		if !(math.Abs(p.X) <= MaxWorldXY && math.Abs(p.Y) <= MaxWorldXY && p.Z >= MinWorldZ && p.Z <= MaxWorldZ) {
			return fmt.Errorf("goto position [%v %v %v] outside the plausible world (|x|, |y| <= %v m, z in [%v, %v] m)",
				p.X, p.Y, p.Z, float64(MaxWorldXY), float64(MinWorldZ), float64(MaxWorldZ))
		}
		if math.Abs(c.Yaw) > MaxCommandYaw { // NaN passes: it keeps the heading
			return fmt.Errorf("goto yaw %v rad outside [-%v, %v] rad", c.Yaw, float64(MaxCommandYaw), float64(MaxCommandYaw))
		}
		if !(c.Speed >= 0 && c.Speed <= MaxCommandSpeed) {
			return fmt.Errorf("goto speed %v outside [0, %v] m/s", c.Speed, float64(MaxCommandSpeed))
		}
	case CmdVelocity:
		v := c.Vel
		if n := v.Norm(); !(n <= MaxCommandSpeed) {
			return fmt.Errorf("velocity [%v %v %v] faster than %v m/s", v.X, v.Y, v.Z, float64(MaxCommandSpeed))
		}
	case CmdDrive:
		if !(math.Abs(c.V) <= MaxCommandSpeed) || !(math.Abs(c.Omega) <= MaxCommandTurnRate) {
			return fmt.Errorf("drive speed %v m/s and turn rate %v rad/s outside |v| <= %v m/s, |omega| <= %v rad/s",
				c.V, c.Omega, float64(MaxCommandSpeed), float64(MaxCommandTurnRate))
		}
	default:
		return fmt.Errorf("unknown command kind %d", c.Kind)
	}
	return nil
}

// Telemetry is a vehicle's state. Vehicle.Telemetry gives the true state
// (for logs and metrics); Vehicle.Estimate gives what the vehicle's own
// autopilot believes (for agents and ground stations).
type Telemetry struct {
	Pos, Vel geom.Vec3
	Yaw      float64 // heading, rad, counter-clockwise from east
	YawRate  float64 // rad/s
	Roll     float64 // rad (aerial kinds)
	Pitch    float64 // rad (aerial kinds)
	// RollRate and PitchRate are body rates (rad/s, aerial kinds).
	RollRate, PitchRate float64
	Throttle            float64 // collective thrust, 0..1 (aerial kinds)
	Mode                Mode
	Armed               bool
	Landed              bool
	Energy              float64 // energy used since the start, J
	Distance            float64 // path length travelled, m

	// Sensor outputs where the kind models them (0 otherwise).
	BatteryV         float64 // battery terminal voltage, V
	BatteryA         float64 // battery current (motor current draw included), A
	BatteryRemaining float64 // fraction of charge left, 0..1
	PressurePa       float64 // barometric pressure (ISA), Pa

	// Target is the position the autopilot is flying to, when HasTarget.
	Target    geom.Vec3
	HasTarget bool
}

// Speed returns the magnitude of the velocity.
func (t Telemetry) Speed() float64 { return t.Vel.Norm() }

// Timing gives a vehicle's physics and autopilot periods; both must be
// whole multiples of the kernel tick.
type Timing struct {
	Physics sim.Duration
	Control sim.Duration
}

// Event is something a vehicle reports for events.csv, such as a mode
// change or touchdown.
type Event struct {
	T    sim.Time
	Name string
	// Detail is the event's text; with NArgs > 0 it is a format (one
	// float verb per argument) that Text applies to Args, so that a
	// vehicle's step never formats (or allocates) a text nobody records.
	Detail string
	Args   [MaxEventArgs]float64
	NArgs  uint8
}

// MaxEventArgs is the largest number of arguments an event's detail takes.
const MaxEventArgs = 3

// Text returns the event's detail, formatted.
func (e *Event) Text() string {
	if e.NArgs == 0 {
		return e.Detail
	}
	var a [MaxEventArgs]any
	for i := range e.Args[:e.NArgs] {
		a[i] = e.Args[i]
	}
	return fmt.Sprintf(e.Detail, a[:e.NArgs]...)
}

// Events is a per-vehicle append-only buffer of events. The kernel drains
// the buffers in vehicle order after each phase, so events are recorded in
// the same order whatever the worker count.
type Events struct {
	List []Event
}

// Add appends an event.
func (e *Events) Add(t sim.Time, name, detail string) {
	e.List = append(e.List, Event{T: t, Name: name, Detail: detail})
}

// Addf appends an event whose detail is format applied to args (at most
// MaxEventArgs; more panic), formatted only when it is read (Event.Text).
func (e *Events) Addf(t sim.Time, name, format string, args ...float64) {
	if len(args) > MaxEventArgs {
		panic(fmt.Sprintf("vehicle: event %q with %d arguments (at most %d)", name, len(args), MaxEventArgs))
	}
	ev := Event{T: t, Name: name, Detail: format, NArgs: uint8(len(args))}
	copy(ev.Args[:], args)
	e.List = append(e.List, ev)
}

// modeChanges holds the detail of every mode change between named modes,
// "from->to", so that reporting one allocates nothing.
var modeChanges = func() (c [len(modeNames)][len(modeNames)]string) {
	for i := range c {
		for j := range c[i] {
			c[i][j] = modeNames[i] + "->" + modeNames[j]
		}
	}
	return c
}()

// ModeChange returns the detail of a change from mode from to mode to as
// events.csv writes it: "from->to".
func ModeChange(from, to Mode) string {
	if int(from) < len(modeNames) && int(to) < len(modeNames) {
		return modeChanges[from][to]
	}
	return from.String() + "->" + to.String()
}

// Vehicle is one simulated vehicle: an autopilot and a physics model
// (Composed implements it for every kind).
// Implementations must not allocate in Control or Step, must not share
// mutable state between vehicles, and must be deterministic.
type Vehicle interface {
	// Kind returns the kind name, e.g. "pointmass".
	Kind() string
	// Timing returns the vehicle's physics and control periods.
	Timing() Timing
	// Command hands the autopilot a new command; it takes effect at the
	// next Control call.
	Command(c Command)
	// Control runs one autopilot step at time t, appending events to ev.
	Control(t sim.Time, ev *Events)
	// Step integrates the physics over one physics period starting at t.
	Step(t sim.Time, ev *Events)
	// Telemetry returns the true state.
	Telemetry() Telemetry
	// Estimate returns the state as the vehicle's autopilot estimates it,
	// which is what agents and ground stations see.
	Estimate() Telemetry
	// Radius returns the vehicle's bounding radius (m) for separation checks.
	Radius() float64
	// Pos returns the true position without building a Telemetry.
	Pos() geom.Vec3
	// Motion returns the true position, velocity and heading without
	// building a Telemetry.
	Motion() Motion
}
