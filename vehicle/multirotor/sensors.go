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

// SensorParams are the instruments' rates and noise levels, shared by a
// group. Noise is white and Gaussian with the given standard deviation; 0
// makes a reading exact. Scenarios set them in the multirotor's
// `autopilot:` block, where they have always been.
type SensorParams struct {
	GPSPeriod   sim.Duration `yaml:"gps_period" json:"gps_period"`       // time between fixes
	GPSNoise    float64      `yaml:"gps_noise" json:"gps_noise"`         // horizontal position sigma, m
	GPSNoiseZ   float64      `yaml:"gps_noise_z" json:"gps_noise_z"`     // vertical position sigma, m
	GPSVelNoise float64      `yaml:"gps_vel_noise" json:"gps_vel_noise"` // velocity sigma, m/s
	BaroPeriod  sim.Duration `yaml:"baro_period" json:"baro_period"`     // time between barometer samples
	BaroNoise   float64      `yaml:"baro_noise" json:"baro_noise"`       // altitude sigma, m
	AccelNoise  float64      `yaml:"accel_noise" json:"accel_noise"`     // specific force sigma per axis, m/s^2
	GyroNoise   float64      `yaml:"gyro_noise" json:"gyro_noise"`       // body rate sigma per axis, rad/s
	AttNoise    float64      `yaml:"att_noise" json:"att_noise"`         // AHRS attitude sigma per axis, rad
	// MagNoise is the magnetometer's sigma per axis, gauss. It is 0 by
	// default (the PX4-like controller reads no magnetometer) and 0.002 G
	// for real PX4, which flags exactly constant readings as stale.
	MagNoise float64 `yaml:"mag_noise" json:"mag_noise,omitempty"`
}

// DefaultSensorParams returns the instruments of a small autopilot board:
// 10 Hz GPS with 5 cm / 10 cm / 5 cm/s noise, a 50 Hz barometer with 5 cm
// noise, and a quiet IMU and AHRS.
func DefaultSensorParams() SensorParams {
	return SensorParams{
		GPSPeriod: 100 * sim.Millisecond, GPSNoise: 0.05, GPSNoiseZ: 0.1, GPSVelNoise: 0.05,
		BaroPeriod: 20 * sim.Millisecond, BaroNoise: 0.05,
		AccelNoise: 0.05, GyroNoise: 0.002, AttNoise: 0.002,
	}
}

// Validate checks the parameters, returning field -> message.
func (p *SensorParams) Validate() fields.Errors {
	bad := fields.Errors{}
	for _, f := range []struct {
		name string
		v    float64
	}{{"gps_noise", p.GPSNoise}, {"gps_noise_z", p.GPSNoiseZ}, {"gps_vel_noise", p.GPSVelNoise}, {"baro_noise", p.BaroNoise},
		{"accel_noise", p.AccelNoise}, {"gyro_noise", p.GyroNoise}, {"att_noise", p.AttNoise}, {"mag_noise", p.MagNoise}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			bad[f.name] = fmt.Sprintf("must be >= 0, got %v", f.v)
		}
	}
	if p.GPSPeriod <= 0 {
		bad["gps_period"] = fmt.Sprintf("must be positive, got %v", p.GPSPeriod)
	}
	if p.BaroPeriod <= 0 {
		bad["baro_period"] = fmt.Sprintf("must be positive, got %v", p.BaroPeriod)
	}
	return bad
}

// Physics is one multirotor: its state, stepped by the group's Model, and
// its instruments. It implements vehicle.Physics. Its two random streams
// are separate so that changing a sensor's noise leaves the wind as it was
// (and the other way round).
type Physics struct {
	m  *Model
	sp *SensorParams
	// S is the dynamic state.
	S     State
	turb  *rand.Rand // wind turbulence
	noise *rand.Rand // sensor noise

	nextGPS, nextBaro sim.Time // when the next fix and barometer sample are due

	// impulse is the velocity change (world frame, m/s) the ground imposed
	// that the accelerometer has not reported yet; lastSense is when it
	// last sampled.
	impulse   geom.Vec3
	lastSense sim.Time
}

// NewPhysics returns a multirotor at pos heading yaw (see Model.Init),
// with turb driving its turbulence and noise its sensors' noise (either
// may be nil when the corresponding sigmas are all 0).
func NewPhysics(m *Model, sp *SensorParams, pos geom.Vec3, yaw float64, turb, noise *rand.Rand) *Physics {
	return &Physics{m: m, sp: sp, S: m.Init(pos, yaw), turb: turb, noise: noise}
}

// Kind returns "multirotor".
func (p *Physics) Kind() string { return Kind }

// Model returns the group's model.
func (p *Physics) Model() *Model { return p.m }

// Period returns the physics period.
func (p *Physics) Period() sim.Duration { return p.m.P.PhysicsPeriod }

// Step integrates one physics period with the motor commands a.Motors.
// When the ground stops the vehicle within the step (a touchdown, or a
// descent cut short at z = 0), it keeps the velocity the ground took away
// for the accelerometer (see Sense): the model stops the vehicle in one
// step without a force, but a real accelerometer feels that stop.
func (p *Physics) Step(t sim.Time, a *vehicle.Actuators, ev *vehicle.Events) {
	s := &p.S
	v0, att0 := s.Vel, s.Att
	p.m.Step(s, &a.Motors, p.turb)
	switch {
	case s.Landed:
		// Resting (v0 is zero) or touching down: the ground took v0.
		if v0 != (geom.Vec3{}) {
			p.impulse = p.impulse.Sub(v0)
		}
	case s.Pos.Z == 0 && s.Vel.Z == 0:
		// Flying into the ground: the ground took what would have been
		// the vertical velocity after the step.
		vz := v0.Z + (att0.Rotate(s.SpecificForce).Z-Gravity)*p.m.dt
		if vz < 0 {
			p.impulse.Z -= vz
		}
	}
}

// Pos returns the position.
func (p *Physics) Pos() geom.Vec3 { return p.S.Pos }

// Motion returns the position, velocity and heading.
func (p *Physics) Motion() vehicle.Motion {
	return vehicle.Motion{Pos: p.S.Pos, Vel: p.S.Vel, Yaw: p.S.Att.Yaw()}
}

// Radius returns the distance from the centre to the farthest rotor tip.
func (p *Physics) Radius() float64 { return p.m.radius }

// Telemetry returns the true state.
func (p *Physics) Telemetry() vehicle.Telemetry {
	s := &p.S
	roll, pitch, yaw := s.Att.Euler()
	return vehicle.Telemetry{
		Pos: s.Pos, Vel: s.Vel, Yaw: yaw, YawRate: s.Omega.Z, Roll: roll, Pitch: pitch,
		RollRate: s.Omega.X, PitchRate: s.Omega.Y, Landed: s.Landed,
		Energy: s.Energy, Distance: s.Distance,
		BatteryV: s.Voltage, BatteryA: s.Current, BatteryRemaining: s.Remaining(p.m.P),
		PressurePa: Pressure(s.Pos.Z),
	}
}

// gauss returns a normal draw of standard deviation sigma from the sensor
// stream (no draw when sigma is 0).
func (p *Physics) gauss(sigma float64) float64 {
	if sigma == 0 {
		return 0
	}
	return sigma * p.noise.NormFloat64()
}

// Sense reads every instrument at t: the IMU, AHRS, magnetometer, power
// module and gear switch at every call, the GPS and the barometer when
// their periods have come round (their New flags say so).
func (p *Physics) Sense(t sim.Time, out *vehicle.Sensors) {
	sp, s := p.sp, &p.S
	g := sp.GyroNoise
	out.IMU.Gyro = s.Omega.Add(geom.V(p.gauss(g), p.gauss(g), p.gauss(g)))
	if a := sp.AttNoise; a > 0 {
		out.AHRS.Att = s.Att.Mul(geom.FromEuler(p.gauss(a), p.gauss(a), p.gauss(a)))
	} else {
		out.AHRS.Att = s.Att
	}
	a := sp.AccelNoise
	out.IMU.Accel = s.SpecificForce.Add(geom.V(p.gauss(a), p.gauss(a), p.gauss(a)))
	if p.impulse != (geom.Vec3{}) {
		out.IMU.Accel = out.IMU.Accel.Add(p.contact(s, t.Sub(p.lastSense).Seconds()))
	}
	p.lastSense = t
	out.Mag.Field = s.Att.RotateInv(vehicle.EarthField)
	if m := sp.MagNoise; m > 0 {
		out.Mag.Field = out.Mag.Field.Add(geom.V(p.gauss(m), p.gauss(m), p.gauss(m)))
	}
	out.Contact = s.Landed
	out.Truth = vehicle.Pose{Pos: s.Pos, Vel: s.Vel, Att: s.Att, Rates: s.Omega}
	out.Battery = vehicle.Battery{Voltage: s.Voltage, Current: s.Current, Remaining: s.Remaining(p.m.P), Energy: s.Energy}
	out.GPS.New = t >= p.nextGPS
	if out.GPS.New {
		out.GPS.Fix = true
		out.GPS.Pos = s.Pos.Add(geom.V(p.gauss(sp.GPSNoise), p.gauss(sp.GPSNoise), p.gauss(sp.GPSNoiseZ)))
		v := sp.GPSVelNoise
		out.GPS.Vel = s.Vel.Add(geom.V(p.gauss(v), p.gauss(v), p.gauss(v)))
		p.nextGPS = due(p.nextGPS, t, sp.GPSPeriod)
	}
	out.Baro.New = t >= p.nextBaro
	if out.Baro.New {
		alt := s.Pos.Z + p.gauss(sp.BaroNoise)
		out.Baro.Alt = alt
		out.Baro.Pressure = Pressure(alt)
		out.Baro.Temperature = 15 - 0.0065*alt
		p.nextBaro = due(p.nextBaro, t, sp.BaroPeriod)
	}
}

// AccelRange is the largest specific force the accelerometer reports on
// an axis (m/s^2) while it passes on a contact with the ground: 15 g,
// inside the 16 g full scale of the accelerometer PX4 simulates behind
// HIL_SENSOR (simulator_mavlink's FIFO accelerometer: int16 at 2048
// LSB/g, so 16 g is the most it can carry) with room for the noise.
const AccelRange = 15 * Gravity

// contact returns the specific force (body frame) with which the
// accelerometer reports the ground's impulse over a sample interval of dt
// seconds, and takes it off what is pending. The mean over the interval
// is what an accelerometer's integrating filter passes on (PX4 integrates
// each sample over the interval since the last); an axis is held within
// AccelRange with the rest carried to the next samples, so the whole
// velocity change reaches the firmware, over a few milliseconds, as a
// stiff landing gear would spread it.
func (p *Physics) contact(s *State, dt float64) geom.Vec3 {
	if dt <= 0 {
		return geom.Vec3{}
	}
	want := s.Att.RotateInv(p.impulse).Scale(1 / dt)
	f := s.SpecificForce
	got := geom.V(limit(want.X, f.X), limit(want.Y, f.Y), limit(want.Z, f.Z))
	if got == want {
		p.impulse = geom.Vec3{}
	} else {
		p.impulse = p.impulse.Sub(s.Att.Rotate(got).Scale(dt))
	}
	return got
}

// limit returns x clamped so that base + x stays within AccelRange (or 0
// when base alone is beyond it).
func limit(x, base float64) float64 {
	return max(min(0, -AccelRange-base), min(max(0, AccelRange-base), x))
}

// due returns the first sample time after t on the grid next + k*period.
func due(next, t sim.Time, period sim.Duration) sim.Time {
	for next <= t {
		next = next.Add(period)
	}
	return next
}
