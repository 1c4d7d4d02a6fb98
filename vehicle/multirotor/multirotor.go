// Package multirotor is the physics of a multirotor: a 6-DoF rigid body
// with quaternion attitude, rotors whose thrust and drag torque grow with
// the square of their speed, first-order motors with separate spin-up and
// spin-down time constants, rotor drag, angular damping, gravity, ground
// contact, wind with seeded turbulence, a battery fed by the rotors' power,
// and the instruments a flight controller reads (IMU, AHRS, magnetometer,
// barometer, GPS, power module, landing-gear switch; sensors.go). It knows
// no controller: Physics takes normalised motor commands and fills
// vehicle.Sensors (package autopilot/px4like flies it).
//
// Frames: world x east, y north, z up (ENU); body x forward, y left, z up
// (FLU). Rotor positions are body-frame (x, y); Dir is +1 for a rotor
// turning counter-clockwise seen from above, whose drag torque on the body
// is clockwise (-z).
//
// Integration (1 kHz by default) is semi-implicit Euler: velocities first
// from the forces at the start of the step, then positions from the new
// velocities; the attitude follows the new body rates through the exact
// exponential map, and the motors through the exact solution of their
// first-order lag. At 1 ms the step is 12x shorter than the fastest motor
// time constant and some 25x shorter than the attitude loop's period, so
// the first-order error is far below sensor noise, the scheme is stable for
// the oscillatory attitude dynamics (it is symplectic), and it costs a
// quarter of RK4 — which would also need the controller's output held over
// sub-steps it cannot see.
package multirotor

import (
	"fmt"
	"math"
	"math/rand/v2"

	"skyloop/fields"
	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Kind is the scenario name of this vehicle kind.
const Kind = "multirotor"

// MaxRotors is the largest rotor count supported (octo).
const MaxRotors = vehicle.MaxMotors

// Gravity is standard gravity, m/s^2.
const Gravity = 9.80665

// Rotor is one rotor's place and spin direction.
type Rotor struct {
	X   float64 `yaml:"x" json:"x"`     // body forward, m
	Y   float64 `yaml:"y" json:"y"`     // body left, m
	Dir int     `yaml:"dir" json:"dir"` // +1 counter-clockwise seen from above, -1 clockwise
}

// Battery is a simple lithium-polymer pack.
type Battery struct {
	Cells      int     `yaml:"cells" json:"cells"`             // in series
	CapacityAh float64 `yaml:"capacity_ah" json:"capacity_ah"` // Ah
	InternalR  float64 `yaml:"internal_r" json:"internal_r"`   // pack resistance, ohm
	CellFull   float64 `yaml:"cell_full" json:"cell_full"`     // open-circuit volts per cell, full
	CellEmpty  float64 `yaml:"cell_empty" json:"cell_empty"`   // open-circuit volts per cell, empty
}

// Params are the airframe parameters shared by a group of vehicles.
type Params struct {
	Preset        string    `yaml:"preset" json:"preset"`
	Mass          float64   `yaml:"mass" json:"mass"`                       // kg
	Inertia       geom.Vec3 `yaml:"inertia" json:"inertia"`                 // Ixx, Iyy, Izz, kg m^2
	Rotors        []Rotor   `yaml:"rotors" json:"rotors"`                   // rotor layout
	MotorConstant float64   `yaml:"motor_constant" json:"motor_constant"`   // thrust = k w^2, N/(rad/s)^2
	MomentConst   float64   `yaml:"moment_constant" json:"moment_constant"` // drag torque / thrust, m
	MaxRotorSpeed float64   `yaml:"max_rotor_speed" json:"max_rotor_speed"` // rad/s
	TauUp         float64   `yaml:"tau_up" json:"tau_up"`                   // motor spin-up time constant, s
	TauDown       float64   `yaml:"tau_down" json:"tau_down"`               // motor spin-down time constant, s
	RotorDragXY   float64   `yaml:"rotor_drag_xy" json:"rotor_drag_xy"`     // N per (rad/s of all rotors) per (m/s of air speed), body x/y
	RotorDragZ    float64   `yaml:"rotor_drag_z" json:"rotor_drag_z"`       // same, body z
	AngularDrag   float64   `yaml:"angular_drag" json:"angular_drag"`       // N m per rad/s
	PropRadius    float64   `yaml:"prop_radius" json:"prop_radius"`         // m, for rotor power
	FigureOfMerit float64   `yaml:"figure_of_merit" json:"figure_of_merit"` // rotor efficiency vs ideal momentum theory
	DriveEff      float64   `yaml:"drive_eff" json:"drive_eff"`             // motor + ESC efficiency
	AvionicsPower float64   `yaml:"avionics_power" json:"avionics_power"`   // W
	Battery       Battery   `yaml:"battery" json:"battery"`
	Wind          geom.Vec3 `yaml:"wind" json:"wind"`                           // constant wind, world frame, m/s
	TurbSigma     float64   `yaml:"turbulence_sigma" json:"turbulence_sigma"`   // turbulence intensity, m/s (0 = none)
	TurbLength    float64   `yaml:"turbulence_length" json:"turbulence_length"` // turbulence scale length, m
	// TurbPeriod is how often the turbulence velocity is drawn anew (a
	// whole multiple of the physics period); it holds in between.
	TurbPeriod    sim.Duration `yaml:"turbulence_period" json:"turbulence_period"`
	PhysicsPeriod sim.Duration `yaml:"physics_period" json:"physics_period"`
}

// Presets returns the named airframe presets.
func Presets() []string { return []string{"iris", "crazyflie"} }

// Preset returns the parameters of a named airframe.
func Preset(name string) (Params, bool) {
	switch name {
	case "iris":
		return Params{
			Preset: "iris",
			// PX4/PX4-SITL_gazebo-classic models/iris/iris.sdf.jinja: base_link mass and inertia.
			Mass:    1.5,
			Inertia: geom.V(0.029125, 0.029125, 0.055225),
			// Same file: rotor_0..3 poses and turningDirection (ccw, ccw, cw, cw).
			Rotors: []Rotor{{0.13, -0.22, 1}, {-0.13, 0.20, 1}, {0.13, 0.22, -1}, {-0.13, -0.20, -1}},
			// Same file, gazebo_motor_model plugin: motorConstant, momentConstant,
			// maxRotVelocity, timeConstantUp/Down, rotorDragCoefficient.
			MotorConstant: 5.84e-6,
			MomentConst:   0.06,
			MaxRotorSpeed: 1100,
			TauUp:         0.0125,
			TauDown:       0.025,
			RotorDragXY:   1.75e-4,
			RotorDragZ:    0,
			// Assumed (no public source for the Iris): light angular damping.
			AngularDrag: 1e-3,
			// 3DR Iris+ uses 10x4.7 propellers (radius 0.127 m) and a 3S 5100 mAh pack
			// (3DR Iris+ specification). Figure of merit 0.65 and drive efficiency 0.75
			// are typical values for such propellers and motors (assumed); with them
			// hover power is about 170 W, inside the 120-250 W that 16-22 min flights
			// on that pack imply.
			PropRadius: 0.127, FigureOfMerit: 0.65, DriveEff: 0.75, AvionicsPower: 5,
			Battery:       Battery{Cells: 3, CapacityAh: 5.1, InternalR: 0.015, CellFull: 4.2, CellEmpty: 3.3},
			TurbLength:    100,
			TurbPeriod:    10 * sim.Millisecond,
			PhysicsPeriod: sim.Millisecond,
		}, true
	case "crazyflie":
		// utiasDSL/gym-pybullet-drones assets/cf2x.urdf: m, ixx/iyy/izz, arm, kf, km,
		// thrust2weight, drag_coeff_xy/z, prop_radius. kf and km are per RPM^2 there;
		// converted to (rad/s)^2 with (60/2pi)^2 = 91.189. The drag coefficients are per
		// RPM there; converted to per rad/s with 60/2pi = 9.5493.
		const rpm2 = 91.18906
		kf := 3.16e-10 * rpm2
		km := 7.94e-12 * rpm2
		const arm = 0.0397
		d := arm / math.Sqrt2
		mass := 0.027
		maxW := math.Sqrt(2.25 * mass * Gravity / (4 * kf)) // thrust-to-weight 2.25
		return Params{
			Preset:        "crazyflie",
			Mass:          mass,
			Inertia:       geom.V(1.4e-5, 1.4e-5, 2.17e-5),
			Rotors:        []Rotor{{d, -d, 1}, {-d, d, 1}, {d, d, -1}, {-d, -d, -1}},
			MotorConstant: kf,
			MomentConst:   km / kf,
			MaxRotorSpeed: maxW,
			// Assumed: brushed coreless motors of this size respond in about 15 ms.
			TauUp: 0.015, TauDown: 0.015,
			RotorDragXY: 9.1785e-7 * 9.5493, RotorDragZ: 10.311e-7 * 9.5493,
			AngularDrag: 1e-7, // assumed
			// Bitcraze Crazyflie 2.1: 250 mAh 1S LiPo, about 7 min of flight, which implies
			// about 6-8 W in hover; figure of merit 0.4 and drive efficiency 0.5 are
			// assumed for 46 mm propellers on brushed motors (hover about 6 W).
			PropRadius: 0.0231, FigureOfMerit: 0.4, DriveEff: 0.5, AvionicsPower: 0.3,
			Battery:       Battery{Cells: 1, CapacityAh: 0.25, InternalR: 0.1, CellFull: 4.2, CellEmpty: 3.3},
			TurbLength:    100,
			TurbPeriod:    10 * sim.Millisecond,
			PhysicsPeriod: sim.Millisecond,
		}, true
	}
	return Params{}, false
}

// Validate checks the parameters, returning field -> message.
func (p *Params) Validate() fields.Errors {
	bad := fields.Errors{}
	pos := func(name string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			bad[name] = fmt.Sprintf("must be a positive number, got %v", v)
		}
	}
	nonneg := func(name string, v float64) {
		if !(v >= 0) || math.IsInf(v, 0) {
			bad[name] = fmt.Sprintf("must be >= 0, got %v", v)
		}
	}
	pos("mass", p.Mass)
	if !(p.Inertia.X > 0 && p.Inertia.Y > 0 && p.Inertia.Z > 0) {
		bad["inertia"] = fmt.Sprintf("all three moments must be positive, got %v", p.Inertia)
	}
	if n := len(p.Rotors); n < 4 || n > MaxRotors {
		bad["rotors"] = fmt.Sprintf("want 4 to %d rotors, got %d", MaxRotors, n)
	}
	for i, r := range p.Rotors {
		if r.Dir != 1 && r.Dir != -1 {
			bad[fmt.Sprintf("rotors[%d].dir", i)] = fmt.Sprintf("must be 1 (counter-clockwise) or -1 (clockwise), got %d", r.Dir)
		}
	}
	pos("motor_constant", p.MotorConstant)
	pos("moment_constant", p.MomentConst)
	pos("max_rotor_speed", p.MaxRotorSpeed)
	pos("tau_up", p.TauUp)
	pos("tau_down", p.TauDown)
	nonneg("rotor_drag_xy", p.RotorDragXY)
	nonneg("rotor_drag_z", p.RotorDragZ)
	nonneg("angular_drag", p.AngularDrag)
	pos("prop_radius", p.PropRadius)
	if !(p.FigureOfMerit > 0 && p.FigureOfMerit <= 1) {
		bad["figure_of_merit"] = fmt.Sprintf("must be in (0, 1], got %v", p.FigureOfMerit)
	}
	if !(p.DriveEff > 0 && p.DriveEff <= 1) {
		bad["drive_eff"] = fmt.Sprintf("must be in (0, 1], got %v", p.DriveEff)
	}
	nonneg("avionics_power", p.AvionicsPower)
	b := p.Battery
	if b.Cells < 1 {
		bad["battery.cells"] = fmt.Sprintf("must be >= 1, got %d", b.Cells)
	}
	pos("battery.capacity_ah", b.CapacityAh)
	nonneg("battery.internal_r", b.InternalR)
	if !(b.CellFull > b.CellEmpty && b.CellEmpty > 0) {
		bad["battery.cell_full"] = fmt.Sprintf("need cell_full > cell_empty > 0, got %v and %v", b.CellFull, b.CellEmpty)
	}
	if !p.Wind.IsFinite() {
		bad["wind"] = "must be finite"
	}
	nonneg("turbulence_sigma", p.TurbSigma)
	pos("turbulence_length", p.TurbLength)
	if p.PhysicsPeriod <= 0 {
		bad["physics_period"] = fmt.Sprintf("must be positive, got %v", p.PhysicsPeriod)
	} else if p.TurbPeriod <= 0 || p.TurbPeriod%p.PhysicsPeriod != 0 {
		bad["turbulence_period"] = fmt.Sprintf("must be a positive whole multiple of physics_period %v, got %v", p.PhysicsPeriod, p.TurbPeriod)
	}
	if len(bad) == 0 && p.MaxThrust() <= p.Mass*Gravity {
		bad["max_rotor_speed"] = fmt.Sprintf("the rotors cannot lift the vehicle: %.3g N of thrust for %.3g N of weight", p.MaxThrust(), p.Mass*Gravity)
	}
	return bad
}

// MaxRotorThrust returns one rotor's thrust at full speed, N.
func (p *Params) MaxRotorThrust() float64 { return p.MotorConstant * p.MaxRotorSpeed * p.MaxRotorSpeed }

// MaxThrust returns the thrust of all rotors at full speed, N.
func (p *Params) MaxThrust() float64 { return float64(len(p.Rotors)) * p.MaxRotorThrust() }

// HoverThrust returns the collective thrust, normalised to MaxThrust, that
// balances the weight.
func (p *Params) HoverThrust() float64 { return p.Mass * Gravity / p.MaxThrust() }

// State is the dynamic state of one multirotor.
type State struct {
	Pos, Vel geom.Vec3
	Att      geom.Quat
	Omega    geom.Vec3 // body rates, rad/s
	Rotor    [MaxRotors]float64
	Landed   bool
	Gust     geom.Vec3 // turbulence velocity, world frame
	// GustSteps counts the physics steps until the next turbulence draw.
	GustSteps int
	// SpecificForce is what an accelerometer measures: non-gravitational
	// force per mass, body frame, m/s^2.
	SpecificForce geom.Vec3
	Thrust        float64 // total rotor thrust, N
	Power         float64 // electrical power, W
	Current       float64 // battery current, A
	Voltage       float64 // battery terminal voltage, V
	ChargeUsed    float64 // Ah
	Energy        float64 // J
	Distance      float64 // m
}

// Remaining returns the battery's remaining charge fraction.
func (s *State) Remaining(p *Params) float64 {
	return max(0, 1-s.ChargeUsed/p.Battery.CapacityAh)
}

// Model holds what Step derives once from Params.
type Model struct {
	P                *Params
	n                int
	aUp, aDown       float64 // motor lag factors per step
	dt               float64
	rotorPowerFactor float64 // P_rotor = factor * T^1.5
	invI             geom.Vec3
	radius           float64 // centre to the farthest rotor tip, m
	gustEvery        int     // physics steps per turbulence draw
	gustDt           float64 // the turbulence period, s
}

// NewModel prepares p for stepping; p must be valid.
func NewModel(p *Params) *Model {
	dt := p.PhysicsPeriod.Seconds()
	const rho = 1.225 // sea-level air density, kg/m^3
	area := math.Pi * p.PropRadius * p.PropRadius
	r := 0.0
	for _, ro := range p.Rotors {
		r = max(r, math.Hypot(ro.X, ro.Y))
	}
	return &Model{
		P: p, n: len(p.Rotors), dt: dt,
		aUp: 1 - math.Exp(-dt/p.TauUp), aDown: 1 - math.Exp(-dt/p.TauDown),
		rotorPowerFactor: 1 / math.Sqrt(2*rho*area) / p.FigureOfMerit / p.DriveEff,
		invI:             geom.V(1/p.Inertia.X, 1/p.Inertia.Y, 1/p.Inertia.Z),
		radius:           r + p.PropRadius,
		gustEvery:        max(1, int(p.TurbPeriod/max(p.PhysicsPeriod, 1))),
		gustDt:           p.TurbPeriod.Seconds(),
	}
}

// Init returns a vehicle at pos, heading yaw, with a full battery: at rest
// on the ground when pos.Z <= 0, else in trim (level, rotors at the speed
// that holds its weight).
func (m *Model) Init(pos geom.Vec3, yaw float64) State {
	s := State{Pos: pos, Att: geom.FromEuler(0, 0, yaw), Landed: pos.Z <= 0}
	s.Voltage = float64(m.P.Battery.Cells) * m.P.Battery.CellFull
	if s.Landed {
		s.Pos.Z = 0
		s.SpecificForce = geom.V(0, 0, Gravity)
	} else {
		w := m.P.MaxRotorSpeed * math.Sqrt(m.P.HoverThrust())
		for i := 0; i < m.n; i++ {
			s.Rotor[i] = w
		}
	}
	return s
}

// Step integrates one physics period: u holds the normalised motor
// commands (0..1 of the maximum rotor speed); rng drives the turbulence (it
// may be nil when TurbSigma is 0).
func (m *Model) Step(s *State, u *[MaxRotors]float64, rng *rand.Rand) {
	p, dt := m.P, m.dt
	// Motors: first-order lag, exact for a command held over the step.
	var thrust, tx, ty, tz, sumW, power float64
	for i := 0; i < m.n; i++ {
		c := unit(u[i]) * p.MaxRotorSpeed
		w := s.Rotor[i]
		if c > w {
			w += (c - w) * m.aUp
		} else {
			w += (c - w) * m.aDown
		}
		s.Rotor[i] = w
		f := p.MotorConstant * w * w
		r := &p.Rotors[i]
		thrust += f
		tx += r.Y * f
		ty -= r.X * f
		tz -= float64(r.Dir) * p.MomentConst * f
		sumW += w
		power += m.rotorPowerFactor * f * math.Sqrt(f)
	}
	s.Thrust = thrust

	// Wind: constant plus first-order Gauss-Markov turbulence (Dryden-like,
	// time constant = scale length / air speed), drawn every TurbPeriod
	// with the process's exact transition over that period and held in
	// between (its time constant is tens of seconds).
	air := s.Vel.Sub(p.Wind).Sub(s.Gust)
	if p.TurbSigma > 0 && rng != nil {
		if s.GustSteps <= 0 {
			tau := p.TurbLength / max(air.Norm(), 1)
			e := math.Exp(-m.gustDt / tau)
			k := p.TurbSigma * math.Sqrt(1-e*e)
			s.Gust = geom.V(s.Gust.X*e+k*rng.NormFloat64(), s.Gust.Y*e+k*rng.NormFloat64(), s.Gust.Z*e+k*rng.NormFloat64())
			s.GustSteps = m.gustEvery
		}
		s.GustSteps--
	}

	// Forces, body frame: thrust along z, rotor drag against the air speed.
	airB := s.Att.RotateInv(air)
	fb := geom.V(-p.RotorDragXY*sumW*airB.X, -p.RotorDragXY*sumW*airB.Y, thrust-p.RotorDragZ*sumW*airB.Z)
	acc := s.Att.Rotate(fb).Scale(1 / p.Mass)
	acc.Z -= Gravity

	if s.Landed || (s.Pos.Z <= 0 && acc.Z <= 0 && s.Vel.Z <= 0) {
		// On the ground: the ground holds the vehicle until thrust
		// exceeds its weight; it sits level, turning only in yaw.
		if acc.Z > 0 {
			s.Landed = false
		} else {
			s.Landed = true
			s.Pos.Z = 0
			s.Vel = geom.Vec3{}
			s.Omega = geom.Vec3{}
			s.Att = geom.FromEuler(0, 0, s.Att.Yaw())
			s.SpecificForce = geom.V(0, 0, Gravity)
			m.battery(s, power, dt)
			return
		}
	}
	s.SpecificForce = fb.Scale(1 / p.Mass)

	// Translation: semi-implicit Euler.
	s.Vel = s.Vel.Add(acc.Scale(dt))
	step := s.Vel.Scale(dt)
	s.Pos = s.Pos.Add(step)
	s.Distance += step.Norm()
	if s.Pos.Z < 0 {
		s.Pos.Z = 0
		s.Vel.Z = max(0, s.Vel.Z)
	}

	// Rotation: Euler's equations for a diagonal inertia.
	w := s.Omega
	I := p.Inertia
	tau := geom.V(tx-p.AngularDrag*w.X, ty-p.AngularDrag*w.Y, tz-p.AngularDrag*w.Z)
	gyro := w.Cross(w.Mul(I))
	dw := tau.Sub(gyro).Mul(m.invI)
	s.Omega = w.Add(dw.Scale(dt))
	s.Att = s.Att.Integrate(s.Omega, dt)

	m.battery(s, power, dt)
}

// unit limits a motor command to [0, 1]. It returns exactly what
// max(0, min(1, u)) returns for every u (NaN and signed zeros
// included) without their calls, which the compiler cannot inline.
func unit(u float64) float64 {
	if u > 1 {
		return 1
	}
	if u <= 0 {
		return 0
	}
	return u
}

// battery draws the power of the rotors and avionics from the pack: the
// current solves P = I (Voc - I R).
func (m *Model) battery(s *State, rotorPower, dt float64) {
	b := &m.P.Battery
	soc := s.Remaining(m.P)
	voc := float64(b.Cells) * (b.CellEmpty + (b.CellFull-b.CellEmpty)*soc)
	pw := rotorPower + m.P.AvionicsPower
	var i float64
	if b.InternalR > 0 {
		disc := voc*voc - 4*b.InternalR*pw
		if disc < 0 {
			disc = 0 // beyond the pack's maximum power: clip
		}
		i = (voc - math.Sqrt(disc)) / (2 * b.InternalR)
	} else {
		i = pw / voc
	}
	s.Power, s.Current, s.Voltage = pw, i, voc-i*b.InternalR
	s.ChargeUsed += i * dt / 3600
	s.Energy += pw * dt
}

// Pressure returns the ISA static pressure (Pa) at altitude h metres above
// sea level (troposphere: 288.15 K, lapse 6.5 K/km).
func Pressure(h float64) float64 {
	return 101325 * math.Pow(1-2.25577e-5*h, 5.25588)
}
