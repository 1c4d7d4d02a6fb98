// Package px4sitl flies a multirotor with real PX4 firmware (PX4 SITL):
// skyloop is the simulator PX4 connects to, as Gazebo or jMAVSim would be,
// over PX4's simulator_mavlink interface (MAVLink 2 on TCP 4560+i), in
// lockstep: every HIL_SENSOR carries the simulated time, PX4's clock
// advances only with it, and the physics waits for PX4's
// HIL_ACTUATOR_CONTROLS before it steps past that time.
//
// The package has three layers: Link, the protocol as a pure state machine
// (sensor readings in, frames out; PX4's frames in, motor commands out),
// which the transcript tests replay; Controller, which is the multirotor's
// controller and owns the TCP connection and the PX4 process; and Spec,
// which makes it `controller: px4-sitl` in scenarios.
package px4sitl

import (
	"errors"
	"fmt"
	"math"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"

	"skyloop/geom"
	"skyloop/mavlink"
	"skyloop/sim"
	"skyloop/vehicle"
)

// TimeOffsetUs is PX4's clock at simulated time zero, in microseconds:
// PX4's time is the simulated time plus one sensor step, as under Gazebo
// (PX4 reads a zero timestamp as "never").
const TimeOffsetUs = 4000

// Usec returns the time_usec PX4 sees for simulated time t.
func Usec(t sim.Time) uint64 { return uint64(int64(t)/1000) + TimeOffsetUs }

// The fields_updated bits of HIL_SENSOR, per sensor group; PX4 applies a
// group only when all its bits are set.
const (
	updatedIMU  = 0x3F   // accel x,y,z and gyro x,y,z
	updatedMag  = 0x1C0  // mag x,y,z
	updatedBaro = 0x1A00 // abs_pressure, pressure_alt, temperature
)

// Gravity is standard gravity (m/s^2), for the milli-g accelerations of
// HIL_STATE_QUATERNION.
const Gravity = 9.80665

// Actuation is what PX4 last commanded.
type Actuation struct {
	// TimeUsec is the time_usec of the HIL_ACTUATOR_CONTROLS, which in
	// lockstep is that of the HIL_SENSOR it answers.
	TimeUsec uint64
	// Controls are PX4's outputs: motors in [0, 1] (airframe order),
	// other outputs in [-1, 1].
	Controls [16]float32
	// Armed is the mode's SAFETY_ARMED flag.
	Armed bool
	// Lockstep is the flags' LOCKSTEP bit.
	Lockstep bool
}

// Link is skyloop's side of PX4's simulator interface for one vehicle, with
// no I/O: Sensors turns a control step's readings into the frames to send,
// Handle takes PX4's frames. It checks everything PX4 sends: PX4 is another
// process and its values are bounded before they reach the physics.
type Link struct {
	enc    *mavlink.Encoder
	origin geom.Geodetic
	out    []byte

	lastSent   uint64 // time_usec of the last HIL_SENSOR
	sentAny    bool
	stateEvery uint64 // HIL_STATE_QUATERNION interval asked for (µs); 0: not asked
	nextState  uint64

	// Act is PX4's last command (zero until the first
	// HIL_ACTUATOR_CONTROLS).
	Act Actuation
	// Answered is true once PX4 has sent a HIL_ACTUATOR_CONTROLS.
	Answered bool
	// Heartbeats, Actuators and Other count PX4's frames by kind.
	Heartbeats, Actuators, Other int
	// SysID is PX4's MAVLink system id (from its frames; 0 until the
	// first).
	SysID uint8
}

// NewLink returns a link for a vehicle flying over origin (the WGS84
// position of the world's origin, for GPS and ground truth).
func NewLink(origin geom.Geodetic) *Link {
	// System 1, component 200 (MAV_COMP_ID_SIMULATOR-like), as jMAVSim
	// sends; PX4 does not check them.
	return &Link{enc: mavlink.NewEncoder(1, 200), origin: origin}
}

// Sensors returns the frames for the control step at t: HIL_SENSOR
// (IMU and magnetometer every step, the barometer when it sampled), then
// HIL_GPS when a fix arrived and HIL_STATE_QUATERNION (ground truth) when
// PX4 asked for it and its interval has passed. The bytes are valid until
// the next call.
func (l *Link) Sensors(t sim.Time, s *vehicle.Sensors) ([]byte, error) {
	us := Usec(t)
	if l.sentAny && us <= l.lastSent {
		return nil, fmt.Errorf("internal error: sensor time %d us after %d us", us, l.lastSent)
	}
	l.out = l.out[:0]
	acc, gyro, mag := vehicle.FRD(s.IMU.Accel), vehicle.FRD(s.IMU.Gyro), vehicle.FRD(s.Mag.Field)
	m := &common.MessageHilSensor{
		TimeUsec: us,
		Xacc:     float32(acc.X), Yacc: float32(acc.Y), Zacc: float32(acc.Z),
		Xgyro: float32(gyro.X), Ygyro: float32(gyro.Y), Zgyro: float32(gyro.Z),
		Xmag: float32(mag.X), Ymag: float32(mag.Y), Zmag: float32(mag.Z),
		FieldsUpdated: updatedIMU | updatedMag,
	}
	if s.Baro.New {
		h := l.origin.Alt + s.Baro.Alt // above mean sea level
		m.AbsPressure = float32(PressureHPa(h))
		m.PressureAlt = float32(h)
		m.Temperature = float32(15 - 0.0065*h)
		m.FieldsUpdated |= updatedBaro
	}
	if err := l.add(m); err != nil {
		return nil, err
	}
	if s.GPS.New && s.GPS.Fix {
		if err := l.add(l.gps(us, &s.GPS)); err != nil {
			return nil, err
		}
	}
	if l.stateEvery > 0 && us >= l.nextState {
		if err := l.add(l.truth(us, s)); err != nil {
			return nil, err
		}
		for l.nextState <= us {
			l.nextState += l.stateEvery
		}
	}
	l.lastSent, l.sentAny = us, true
	return l.out, nil
}

func (l *Link) add(m interface{ GetID() uint32 }) error {
	b, err := l.enc.Encode(m)
	if err != nil {
		return err
	}
	l.out = append(l.out, b...)
	return nil
}

// PressureHPa returns the ISA static pressure (hPa) at h metres above mean
// sea level, the formula PX4's simulators use.
func PressureHPa(h float64) float64 {
	return 1013.25 * math.Pow(1-2.25577e-5*h, 5.25588)
}

// gps returns the HIL_GPS of fix g: WGS84 position (degE7, mm), NED
// velocity (cm/s), ground speed and course.
func (l *Link) gps(us uint64, g *vehicle.GPS) *common.MessageHilGps {
	pos := l.origin.ToGeodetic(g.Pos)
	v := vehicle.NED(g.Vel)
	gs := math.Hypot(v.X, v.Y)
	cog := uint16(math.MaxUint16) // unknown when standing
	if gs > 0.1 {
		c := math.Atan2(v.Y, v.X) * 180 / math.Pi
		if c < 0 {
			c += 360
		}
		cog = uint16(math.Round(c*100)) % 36000
	}
	return &common.MessageHilGps{
		TimeUsec: us, FixType: 3,
		Lat: int32(math.Round(pos.Lat * 1e7)), Lon: int32(math.Round(pos.Lon * 1e7)), Alt: int32(math.Round(pos.Alt * 1000)),
		Eph: 30, Epv: 40, // HDOP and VDOP 0.3 and 0.4, as Gazebo's GPS plugin reports
		Vel: cms16u(gs), Vn: cms16(v.X), Ve: cms16(v.Y), Vd: cms16(v.Z), Cog: cog,
		SatellitesVisible: 10,
	}
}

// truth returns the HIL_STATE_QUATERNION of the exact state.
func (l *Link) truth(us uint64, s *vehicle.Sensors) *common.MessageHilStateQuaternion {
	tr := &s.Truth
	q := vehicle.AttitudeNED(tr.Att)
	rates := vehicle.FRD(tr.Rates)
	pos := l.origin.ToGeodetic(tr.Pos)
	v := vehicle.NED(tr.Vel)
	acc := vehicle.FRD(s.IMU.Accel).Scale(1000 / Gravity) // milli-g
	speed := cms16u(tr.Vel.Norm())
	return &common.MessageHilStateQuaternion{
		TimeUsec:           us,
		AttitudeQuaternion: [4]float32{float32(q.W), float32(q.X), float32(q.Y), float32(q.Z)},
		Rollspeed:          float32(rates.X), Pitchspeed: float32(rates.Y), Yawspeed: float32(rates.Z),
		Lat: int32(math.Round(pos.Lat * 1e7)), Lon: int32(math.Round(pos.Lon * 1e7)), Alt: int32(math.Round(pos.Alt * 1000)),
		Vx: cms16(v.X), Vy: cms16(v.Y), Vz: cms16(v.Z),
		IndAirspeed: speed, TrueAirspeed: speed,
		Xacc: sat16(acc.X), Yacc: sat16(acc.Y), Zacc: sat16(acc.Z),
	}
}

// cms16 converts m/s to cm/s in an int16, saturating.
func cms16(v float64) int16 { return sat16(v * 100) }

func sat16(v float64) int16 {
	return int16(math.Round(math.Max(math.MinInt16, math.Min(math.MaxInt16, v))))
}

func cms16u(v float64) uint16 {
	return uint16(math.Round(math.Max(0, math.Min(math.MaxUint16-1, v*100))))
}

// ErrProtocol marks PX4 frames that break the simulator interface.
var ErrProtocol = errors.New("PX4 broke the simulator protocol")

// Handle takes one frame from PX4. It reports whether the frame was a
// HIL_ACTUATOR_CONTROLS (now in Act). Values outside the interface's
// ranges, and actuator times from the future or going back, are errors
// wrapping ErrProtocol.
func (l *Link) Handle(f frame.Frame) (actuators bool, err error) {
	if l.SysID == 0 {
		l.SysID = f.GetSystemID()
	}
	switch m := f.GetMessage().(type) {
	case *common.MessageHilActuatorControls:
		return true, l.actuators(m)
	case *common.MessageHeartbeat:
		l.Heartbeats++
	case *common.MessageCommandLong:
		l.Other++
		if m.Command == common.MAV_CMD_SET_MESSAGE_INTERVAL && uint32(m.Param1) == (&common.MessageHilStateQuaternion{}).GetID() {
			// param2: interval in µs; -1 stops the message, 0 is the
			// default rate (every step here).
			switch iv := m.Param2; {
			case iv < 0:
				l.stateEvery = 0
			case iv == 0:
				l.stateEvery = 1
			case iv <= 10e6:
				l.stateEvery = uint64(iv)
			default:
				return false, fmt.Errorf("%w: HIL_STATE_QUATERNION interval %v us", ErrProtocol, iv)
			}
			l.nextState = 0
		}
	default:
		l.Other++
	}
	return false, nil
}

func (l *Link) actuators(m *common.MessageHilActuatorControls) error {
	if !l.sentAny || m.TimeUsec > l.lastSent {
		return fmt.Errorf("%w: HIL_ACTUATOR_CONTROLS for %d us, after the last HIL_SENSOR at %d us", ErrProtocol, m.TimeUsec, l.lastSent)
	}
	if l.Answered && m.TimeUsec < l.Act.TimeUsec {
		return fmt.Errorf("%w: HIL_ACTUATOR_CONTROLS time went back from %d us to %d us", ErrProtocol, l.Act.TimeUsec, m.TimeUsec)
	}
	for i, c := range m.Controls {
		if !(c >= -1.001 && c <= 1.001) { // NaN fails too
			return fmt.Errorf("%w: HIL_ACTUATOR_CONTROLS control %d is %v, outside [-1, 1]", ErrProtocol, i, c)
		}
	}
	l.Act = Actuation{TimeUsec: m.TimeUsec, Controls: m.Controls,
		Armed:    m.Mode&common.MAV_MODE_FLAG_SAFETY_ARMED != 0,
		Lockstep: m.Flags&common.HIL_ACTUATOR_CONTROLS_FLAGS_LOCKSTEP != 0}
	l.Answered = true
	l.Actuators++
	return nil
}

// LastSent returns the time_usec of the last HIL_SENSOR.
func (l *Link) LastSent() uint64 { return l.lastSent }

// Motors converts PX4's motor outputs into rotor commands for n motors:
// PX4's output u in [0, 1] sets the rotor speed to idle + (max - idle)*u
// when armed (Gazebo's motor plugin with the Iris's zero_position_armed
// and input_scaling), and 0 when disarmed; the result is that speed as a
// fraction of max, clamped to [0, 1].
func (a *Actuation) Motors(out *[vehicle.MaxMotors]float64, n int, idleFrac float64) {
	for i := range out {
		out[i] = 0
	}
	if !a.Armed {
		return
	}
	for i := 0; i < n && i < len(a.Controls); i++ {
		u := math.Max(0, math.Min(1, float64(a.Controls[i])))
		out[i] = idleFrac + (1-idleFrac)*u
	}
}
