package groundbot

import (
	"fmt"
	"math"

	"skyloop/fields"
	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
	"skyloop/vehicle/mujoco"
)

// Physics engines of the robot (Params.Physics).
const (
	// PhysicsNative is the kinematic model of this package: unicycle
	// kinematics of the wheels, first-order motor lag, no slip.
	PhysicsNative = "native"
	// PhysicsMuJoCo is the robot as a rigid body in MuJoCo: a box chassis
	// on a free joint, two hinge wheels driven by velocity actuators, two
	// frictionless casters, all robots of the run in one world.
	PhysicsMuJoCo = "mujoco"
)

// Wheel drives of the MuJoCo model (MuJoCoParams.Drive).
const (
	// DrivePI drives each wheel with a torque motor limited to
	// wheel_torque under a PI speed controller (wheel_kp, wheel_ki) run
	// every physics step.
	DrivePI = "pi"
	// DriveVelocity drives each wheel with a MuJoCo velocity actuator:
	// torque wheel_kv * (command - speed), force-limited to ±wheel_torque.
	DriveVelocity = "velocity"
)

// Wheel shapes of the MuJoCo model (MuJoCoParams.WheelShape).
const (
	// WheelSphere is a sphere of the wheel radius: one contact point, as
	// a thin tyre has.
	WheelSphere = "sphere"
	// WheelCylinder is a cylinder of the wheel radius and wheel_width.
	WheelCylinder = "cylinder"
)

// MuJoCoParams are the robot's parameters that only its MuJoCo model
// uses; the chassis size, mass, wheel radius, track and speed limit come
// from Params. Every default is in DefaultParams.
type MuJoCoParams struct {
	Drive         string  `yaml:"drive" json:"drive"`                   // DrivePI or DriveVelocity
	WheelKp       float64 `yaml:"wheel_kp" json:"wheel_kp"`             // pi: wheel speed controller's proportional gain, N m s/rad
	WheelKi       float64 `yaml:"wheel_ki" json:"wheel_ki"`             // pi: and integral gain, N m/rad
	WheelKv       float64 `yaml:"wheel_kv" json:"wheel_kv"`             // velocity: actuator gain, N m s/rad
	WheelTorque   float64 `yaml:"wheel_torque" json:"wheel_torque"`     // motor torque limit, N m
	WheelArmature float64 `yaml:"wheel_armature" json:"wheel_armature"` // motor rotor inertia seen at the wheel, kg m^2
	WheelMass     float64 `yaml:"wheel_mass" json:"wheel_mass"`         // kg, each (part of mass)
	WheelDamping  float64 `yaml:"wheel_damping" json:"wheel_damping"`   // hinge damping, N m s/rad
	WheelShape    string  `yaml:"wheel_shape" json:"wheel_shape"`       // WheelSphere or WheelCylinder
	WheelWidth    float64 `yaml:"wheel_width" json:"wheel_width"`       // cylinder: the wheel's width, m
	CasterRadius  float64 `yaml:"caster_radius" json:"caster_radius"`   // m
	CasterGap     float64 `yaml:"caster_gap" json:"caster_gap"`         // the casters' bottom above the ground with the chassis level, m
	Clearance     float64 `yaml:"clearance" json:"clearance"`           // chassis bottom above the ground, m
	Friction      float64 `yaml:"friction" json:"friction"`             // wheel-ground sliding friction coefficient

	// lib is the MuJoCo library (Params.UseMuJoCo).
	lib mujoco.Library
}

// UseMuJoCo sets the MuJoCo library that Validate checks is there when
// physics is mujoco (the registry's; mujoco.Absent() when unset).
func (p *Params) UseMuJoCo(l mujoco.Library) { p.MuJoCo.lib = l }

// DefaultMuJoCoParams returns the MuJoCo model's defaults (the classic
// preset). Each wheel, a sphere, is driven by a torque motor limited to
// 0.4 N m under a PI speed controller run every physics step, as a motor
// driver does; its integral holds the commanded speed under the turning
// load of the wheels' contact patches, where a proportional servo droops.
// The armature, 0.0025 kg m^2, is the rotor of a small 50:1 gear motor
// seen at the wheel; it also keeps the controller stable with the wheel
// off the ground. Two wheels at 0.4 N m push the 8 kg robot with 16 N,
// but accelerate its mass plus the armatures' and wheels' inertia seen at
// the ground (2 x (0.0025 + 0.0002) / 0.05^2 = 2.16 kg): 1.57 m/s^2, not
// the native max_wheel_accel's 2 m/s^2.
func DefaultMuJoCoParams() MuJoCoParams {
	return MuJoCoParams{Drive: DrivePI, WheelKp: 0.5, WheelKi: 5, WheelTorque: 0.4, WheelArmature: 0.0025, WheelMass: 0.2,
		WheelDamping: 0.001, WheelShape: WheelSphere, CasterRadius: 0.025, Clearance: 0.02, Friction: 1}
}

// NetbotsParams returns the robot of the netbots paper (the netbots
// preset), in MuJoCo: a 0.3 x 0.2 m box chassis of 2.5 kg (height
// 0.08 m, its bottom 2 cm above the floor, so its centre of mass is 1 cm
// above the axle) on two cylinder wheels (radius 0.05 m, width 0.04 m,
// 0.2 kg each, 0.24 m apart: just outside the chassis; friction 1.5)
// driven by MuJoCo velocity actuators with gain kv = 2 N m s/rad,
// force-limited to ±3 N m; and two frictionless casters (radius 0.015 m)
// whose bottoms sit 2 mm above the floor, so that the chassis rocks on its
// axle until one touches (at 0.85 degrees). Goto drives at up to 0.8 m/s
// with heading gain 3 and accepts a target at 0.3 m, as the paper's
// controller. The wheel radius and width, the track, the chassis height
// and the wheels' mass are ours (the paper gives none), and so is the
// armature, 0.0025 kg m^2 (the classic robot's gear motor): MuJoCo
// integrates the actuator's kv explicitly, and a bare 0.2 kg wheel
// (2.5e-4 kg m^2) gives kv dt / I = 16 at the 2 ms step, far past the
// stable 2: the wheel chatters between the ±3 N m limits whenever it
// slips. The native-physics fields approximate the MuJoCo robot:
// max_wheel_accel is what friction allows (1.5 g / r), motor_tau the
// velocity servo's time constant with the wheels gripping, (mass +
// 2 armature / r^2) r^2 / (2 kv) = 3 ms.
func NetbotsParams() Params {
	p := DefaultParams()
	p.Preset = PresetNetbots
	p.Length, p.Width, p.Height, p.Mass = 0.3, 0.2, 0.08, 2.9
	p.WheelRadius, p.Track = 0.05, 0.24
	p.MaxWheelSpeed, p.MaxWheelAccel, p.MotorTau = 30, 1.5*9.81/0.05, 0.003
	p.MaxSpeed, p.HeadingGain, p.AcceptRadius = 0.8, 3, 0.3
	p.Physics = PhysicsMuJoCo
	p.MuJoCo = MuJoCoParams{Drive: DriveVelocity, WheelKv: 2, WheelTorque: 3, WheelArmature: 0.0025, WheelMass: 0.2,
		WheelShape: WheelCylinder, WheelWidth: 0.04, CasterRadius: 0.015, CasterGap: 0.002, Clearance: 0.02, Friction: 1.5}
	return p
}

// validateMuJoCo checks the MuJoCo parameters, and that MuJoCo is there.
func (p *Params) validateMuJoCo(bad fields.Errors) {
	m := &p.MuJoCo
	positive := map[string]float64{"wheel_torque": m.WheelTorque, "wheel_mass": m.WheelMass,
		"caster_radius": m.CasterRadius, "friction": m.Friction}
	nonNeg := map[string]float64{"wheel_damping": m.WheelDamping, "clearance": m.Clearance, "caster_gap": m.CasterGap,
		"wheel_armature": m.WheelArmature}
	switch m.Drive {
	case DrivePI:
		// The PI loop needs the armature to stay stable with the wheel
		// off the ground.
		delete(nonNeg, "wheel_armature")
		positive["wheel_kp"], positive["wheel_armature"] = m.WheelKp, m.WheelArmature
		nonNeg["wheel_ki"] = m.WheelKi
	case DriveVelocity:
		positive["wheel_kv"] = m.WheelKv
	default:
		bad["mujoco.drive"] = fmt.Sprintf("must be %s or %s, got %q", DrivePI, DriveVelocity, m.Drive)
	}
	switch m.WheelShape {
	case WheelSphere:
	case WheelCylinder:
		positive["wheel_width"] = m.WheelWidth
	default:
		bad["mujoco.wheel_shape"] = fmt.Sprintf("must be %s or %s, got %q", WheelSphere, WheelCylinder, m.WheelShape)
	}
	for name, v := range positive {
		if !(v > 0) || math.IsInf(v, 0) {
			bad["mujoco."+name] = fmt.Sprintf("must be a positive number, got %v", v)
		}
	}
	for name, v := range nonNeg {
		if !(v >= 0) || math.IsInf(v, 0) {
			bad["mujoco."+name] = fmt.Sprintf("must be >= 0, got %v", v)
		}
	}
	if m.CasterGap >= p.WheelRadius {
		bad["mujoco.caster_gap"] = fmt.Sprintf("%v m leaves the casters above the axle (wheel_radius %v m)", m.CasterGap, p.WheelRadius)
	}
	if 2*m.WheelMass >= p.Mass {
		bad["mujoco.wheel_mass"] = fmt.Sprintf("two wheels of %v kg leave nothing of the robot's %v kg for the chassis", m.WheelMass, p.Mass)
	}
	if m.CasterRadius > p.Length/2 {
		bad["mujoco.caster_radius"] = fmt.Sprintf("%v m does not fit under a %v m chassis", m.CasterRadius, p.Length)
	}
	lib := m.lib
	if lib == nil {
		lib = mujoco.Absent()
	}
	if err := lib.Load(); err != nil {
		bad["physics"] = err.Error()
	}
}

// chassisHeight is the chassis centre's height above the ground at rest.
func (p *Params) chassisHeight() float64 {
	return max(p.WheelRadius, p.Height/2+p.MuJoCo.Clearance)
}

// MuJoCoPhysics is one robot in a MuJoCo world. It implements
// vehicle.Physics: Step hands the world the wheel speed commands, and the
// world's step moves the robot.
type MuJoCoPhysics struct {
	p      *Params
	w      *mujoco.World
	prefix string
	spawn  geom.Vec3
	yaw0   float64

	chassis     mujoco.Body
	left, right int // actuator indices
	dofL, dofR  int // the wheels' indices in qvel
	intL, intR  float64
	m           *mujoco.Model

	// State after the last world step; pos is the chassis centre less
	// its height at rest (zOff): where the robot stands.
	zOff                  float64
	pos, vel              geom.Vec3
	yaw, yawRate, v, prev float64
	energy, distance      float64
}

// NewMuJoCoPhysics puts a robot in w at pos (its wheels on the ground
// below pos) heading yaw. Robots need names unique in the world: n is the
// robot's number in it.
func NewMuJoCoPhysics(p *Params, w *mujoco.World, n int, pos geom.Vec3, yaw float64) *MuJoCoPhysics {
	ph := &MuJoCoPhysics{p: p, w: w, prefix: fmt.Sprintf("bot%d_", n), spawn: pos, yaw0: yaw}
	ph.pos = pos
	ph.yaw = yaw
	w.Add(ph)
	return ph
}

// MJCF returns the robot: the chassis box on a free joint, the wheels on
// hinges along the body's y axis at ±track/2 (positive speed drives
// forward; by default each touches the ground at one point, a sphere of
// the wheel's radius, as a thin tyre does: a cylinder's several contact
// points scrub when the robot turns, and cost a fifth more time per step;
// wheel_shape cylinder has them), the frictionless casters front and back,
// caster_gap above the floor (priority 1 makes their condim 1, normal
// force only, win over the floor's), and the wheels' torque motors (drive
// pi) or velocity actuators (drive velocity).
func (ph *MuJoCoPhysics) MJCF() (bodies, actuators string) {
	p, m, n := ph.p, &ph.p.MuJoCo, ph.prefix
	zc := p.chassisHeight()
	chassisMass := p.Mass - 2*m.WheelMass
	half := mujoco.Vec(p.Length/2, p.Width/2, p.Height/2)
	q := mujoco.Vec(math.Cos(ph.yaw0/2), 0, 0, math.Sin(ph.yaw0/2))
	shape := `type="sphere" size="` + mujoco.Vec(p.WheelRadius) + `"`
	if m.WheelShape == WheelCylinder {
		shape = `type="cylinder" size="` + mujoco.Vec(p.WheelRadius, m.WheelWidth/2) + `" zaxis="0 1 0"`
	}
	wheel := func(side string, y float64) string {
		return fmt.Sprintf(`      <body name="%swheel_%s" pos="%s">
        <joint name="%s%s" type="hinge" axis="0 1 0" damping="%s" armature="%s"/>
        <geom name="%swheel_%s" %s mass="%s" friction="%s 0.005 0.0001"/>
      </body>
`, n, side, mujoco.Vec(0, y, p.WheelRadius-zc), n, side, mujoco.Vec(m.WheelDamping), mujoco.Vec(m.WheelArmature), n, side,
			shape, mujoco.Vec(m.WheelMass), mujoco.Vec(m.Friction))
	}
	caster := func(side string, x float64) string {
		return fmt.Sprintf("      <geom name=\"%scaster_%s\" type=\"sphere\" size=\"%s\" pos=\"%s\" condim=\"1\" priority=\"1\" mass=\"0.001\"/>\n",
			n, side, mujoco.Vec(m.CasterRadius), mujoco.Vec(x, 0, m.CasterRadius+m.CasterGap-zc))
	}
	bodies = fmt.Sprintf("    <body name=\"%schassis\" pos=\"%s\" quat=\"%s\">\n      <freejoint name=\"%sroot\"/>\n"+
		"      <geom name=\"%sbox\" type=\"box\" size=\"%s\" mass=\"%s\"/>\n",
		n, mujoco.Vec(ph.spawn.X, ph.spawn.Y, ph.spawn.Z+zc), q, n, n, half, mujoco.Vec(chassisMass)) +
		caster("front", p.Length/2-m.CasterRadius) + caster("back", -(p.Length/2-m.CasterRadius)) +
		wheel("left", p.Track/2) + wheel("right", -p.Track/2) + "    </body>\n"
	motor := func(side string) string {
		if m.Drive == DriveVelocity {
			return fmt.Sprintf("    <velocity name=\"%s%s_motor\" joint=\"%s%s\" kv=\"%s\" forcelimited=\"true\" forcerange=\"%s\"/>\n",
				n, side, n, side, mujoco.Vec(m.WheelKv), mujoco.Vec(-m.WheelTorque, m.WheelTorque))
		}
		return fmt.Sprintf("    <motor name=\"%s%s_motor\" joint=\"%s%s\" ctrllimited=\"true\" ctrlrange=\"%s\"/>\n",
			n, side, n, side, mujoco.Vec(-m.WheelTorque, m.WheelTorque))
	}
	return bodies, motor("left") + motor("right")
}

// Bind finds the chassis and the motors.
func (ph *MuJoCoPhysics) Bind(m *mujoco.Model) error {
	ph.chassis = mujoco.Body{ID: m.ID(mujoco.ObjBody, ph.prefix+"chassis")}
	ph.left, ph.right = m.ID(mujoco.ObjActuator, ph.prefix+"left_motor"), m.ID(mujoco.ObjActuator, ph.prefix+"right_motor")
	jl, jr := m.ID(mujoco.ObjJoint, ph.prefix+"left"), m.ID(mujoco.ObjJoint, ph.prefix+"right")
	if ph.chassis.ID < 0 || ph.left < 0 || ph.right < 0 || jl < 0 || jr < 0 {
		return fmt.Errorf("internal error: robot %s not found in the MuJoCo model", ph.prefix)
	}
	ph.dofL, ph.dofR = m.JointDofAdr(jl), m.JointDofAdr(jr)
	ph.m = m
	ph.zOff = ph.p.chassisHeight()
	ph.pos = ph.ground(m)
	ph.yaw = ph.chassis.Quat(m).Yaw()
	return nil
}

// Stepped reads the chassis' pose after a world step and derives its
// velocity, forward speed, turn rate, distance and energy (the native
// model's power: electronics, rolling resistance and acceleration over
// the drive efficiency).
func (ph *MuJoCoPhysics) Stepped(m *mujoco.Model, dt float64) {
	p := ph.p
	pos, yaw := ph.ground(m), ph.chassis.Quat(m).Yaw()
	ph.vel = pos.Sub(ph.pos).Scale(1 / dt)
	ph.yawRate = geom.WrapAngle(yaw-ph.yaw) / dt
	ph.distance += math.Hypot(pos.X-ph.pos.X, pos.Y-ph.pos.Y)
	ph.pos, ph.yaw = pos, yaw
	ph.prev, ph.v = ph.v, ph.vel.X*math.Cos(yaw)+ph.vel.Y*math.Sin(yaw)
	mech := p.RollingCoeff*p.Mass*9.81*math.Abs(ph.v) + nonneg(p.Mass*(ph.v-ph.prev)/dt*ph.v)
	ph.energy += (p.BasePower + mech/p.DriveEff) * dt
}

// ground returns the chassis centre less its height at rest.
func (ph *MuJoCoPhysics) ground(m *mujoco.Model) geom.Vec3 {
	p := ph.chassis.Pos(m)
	p.Z -= ph.zOff
	return p
}

// Kind returns "groundbot".
func (ph *MuJoCoPhysics) Kind() string { return Kind }

// Period returns the physics period, the world's step.
func (ph *MuJoCoPhysics) Period() sim.Duration { return ph.p.PhysicsPeriod }

// World returns the MuJoCo world the robot is in.
func (ph *MuJoCoPhysics) World() vehicle.World { return ph.w }

// Radius returns half the chassis diagonal.
func (ph *MuJoCoPhysics) Radius() float64 { return 0.5 * math.Hypot(ph.p.Length, ph.p.Width) }

// Pos returns where the robot stands: the chassis centre less its height
// at rest (the ground's height when it rests on it, as for the native
// model).
func (ph *MuJoCoPhysics) Pos() geom.Vec3 { return ph.pos }

// Motion returns the position, velocity and heading.
func (ph *MuJoCoPhysics) Motion() vehicle.Motion {
	return vehicle.Motion{Pos: ph.pos, Vel: ph.vel, Yaw: ph.yaw}
}

// Telemetry returns the true state.
func (ph *MuJoCoPhysics) Telemetry() vehicle.Telemetry {
	return vehicle.Telemetry{Pos: ph.pos, Vel: ph.vel, Yaw: ph.yaw, YawRate: ph.yawRate,
		Landed: true, Energy: ph.energy, Distance: ph.distance}
}

// Sense gives the exact pose, as the native model does.
func (ph *MuJoCoPhysics) Sense(t sim.Time, s *vehicle.Sensors) {
	s.Truth = vehicle.Pose{Pos: ph.pos, Speed: ph.v, Yaw: ph.yaw, YawRate: ph.yawRate}
	s.Contact = true
}

// Step runs the wheels' PI speed controllers towards a.WheelL and
// a.WheelR (clipped to max_wheel_speed) and sets the motor torques for the
// world's coming step. The integrals stop growing while the torque is at
// its limit (no wind-up). With velocity actuators (drive velocity) it
// hands them the clipped commands instead: MuJoCo applies the torque.
func (ph *MuJoCoPhysics) Step(t sim.Time, a *vehicle.Actuators, ev *vehicle.Events) {
	m, dt := ph.m, ph.p.PhysicsPeriod.Seconds()
	lim := ph.p.MaxWheelSpeed
	if ph.p.MuJoCo.Drive == DriveVelocity {
		m.Ctrl[ph.left], m.Ctrl[ph.right] = clamp(a.WheelL, lim), clamp(a.WheelR, lim)
		return
	}
	m.Ctrl[ph.left] = ph.pi(clamp(a.WheelL, lim)-m.Qvel[ph.dofL], &ph.intL, dt)
	m.Ctrl[ph.right] = ph.pi(clamp(a.WheelR, lim)-m.Qvel[ph.dofR], &ph.intR, dt)
}

// pi returns the torque for speed error e, updating the integral.
func (ph *MuJoCoPhysics) pi(e float64, integ *float64, dt float64) float64 {
	mp := &ph.p.MuJoCo
	tq := mp.WheelKp*e + mp.WheelKi*(*integ+e*dt)
	if tq > mp.WheelTorque || tq < -mp.WheelTorque {
		return clamp(tq, mp.WheelTorque)
	}
	*integ += e * dt
	return tq
}

// ForwardSpeed returns the speed along the heading.
func (ph *MuJoCoPhysics) ForwardSpeed() float64 { return ph.v }
