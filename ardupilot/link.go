// Package ardupilot flies a multirotor with real ArduPilot firmware
// (ArduCopter SITL) over ArduPilot's JSON physics interface
// (libraries/SITL/examples/JSON in the ArduPilot repository): ArduCopter,
// started with `--model JSON`, sends a servo packet (its PWM outputs) on
// UDP 9002+10i at every step of its physics and waits for skyloop's answer,
// one JSON line with the vehicle's state at the next time step. Lockstep
// comes from the protocol: ArduPilot's clock is the answers' timestamps.
//
// As package px4sitl, it has a pure protocol layer (Link), the controller
// that owns the socket and the process (Controller), and the scenario's
// `controller: ardupilot-sitl` (Spec).
package ardupilot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Servo packet magics: 16 and 32 channels.
const (
	Magic16 = 18458
	Magic32 = 29569
)

// ErrProtocol marks packets that break the JSON interface.
var ErrProtocol = errors.New("ArduPilot broke the JSON physics protocol")

// Servos is one servo packet.
type Servos struct {
	// FrameRate is ArduPilot's physics rate (Hz) as it measures it.
	FrameRate uint16
	// FrameCount counts the answers ArduPilot accepted; it starts at 0
	// again when ArduPilot restarts.
	FrameCount uint32
	// PWM holds the channels' pulse widths (µs); 0 is no pulse.
	PWM [32]uint16
	// Channels is 16 or 32.
	Channels int
}

// ParseServos decodes a servo packet (little endian: magic, frame rate,
// frame count, 16 or 32 PWM values).
func ParseServos(b []byte, out *Servos) error {
	if len(b) < 8 {
		return fmt.Errorf("%w: a %d-byte packet", ErrProtocol, len(b))
	}
	magic := binary.LittleEndian.Uint16(b)
	n := 0
	switch magic {
	case Magic16:
		n = 16
	case Magic32:
		n = 32
	default:
		return fmt.Errorf("%w: magic %d, want %d or %d", ErrProtocol, magic, Magic16, Magic32)
	}
	if len(b) != 8+2*n {
		return fmt.Errorf("%w: %d bytes with magic %d, want %d", ErrProtocol, len(b), magic, 8+2*n)
	}
	out.FrameRate = binary.LittleEndian.Uint16(b[2:])
	out.FrameCount = binary.LittleEndian.Uint32(b[4:])
	out.Channels = n
	for i := 0; i < 32; i++ {
		out.PWM[i] = 0
		if i < n {
			out.PWM[i] = binary.LittleEndian.Uint16(b[8+2*i:])
		}
	}
	for i := 0; i < n; i++ {
		if p := out.PWM[i]; p != 0 && (p < 500 || p > 2500) {
			return fmt.Errorf("%w: channel %d pulse %d us, outside [500, 2500] (or 0 for none)", ErrProtocol, i+1, p)
		}
	}
	return nil
}

// Motors converts the first n channels (ArduCopter's Motor1..n on
// SERVO1..n) into rotor commands: PWM 1000-2000 is 0-1 of the maximum
// rotor speed; no pulse is 0.
func (s *Servos) Motors(out *[vehicle.MaxMotors]float64, n int) {
	for i := range out {
		out[i] = 0
	}
	for i := 0; i < n && i < len(s.PWM); i++ {
		if p := s.PWM[i]; p != 0 {
			out[i] = math.Max(0, math.Min(1, (float64(p)-1000)/1000))
		}
	}
}

// State formats the answer for a step: one JSON line, preceded by a
// newline (ArduPilot drops a first answer without one), with the time in
// seconds, the IMU in the body frame (FRD: gyro rad/s, specific force
// m/s^2), position (m, from home) and velocity (m/s) in NED, and the
// attitude quaternion (w, x, y, z; body FRD to NED). It appends to buf and
// allocates nothing when buf has room.
func State(buf []byte, t sim.Time, s *vehicle.Sensors, home geom.Vec3) []byte {
	gyro, acc := vehicle.FRD(s.IMU.Gyro), vehicle.FRD(s.IMU.Accel)
	pos, vel := vehicle.NED(s.Truth.Pos.Sub(home)), vehicle.NED(s.Truth.Vel)
	q := vehicle.AttitudeNED(s.Truth.Att)
	buf = append(buf, "\n{\"timestamp\":"...)
	buf = strconv.AppendFloat(buf, float64(t)/1e9, 'f', 6, 64)
	buf = append(buf, `,"imu":{"gyro":`...)
	buf = vec(buf, gyro.X, gyro.Y, gyro.Z)
	buf = append(buf, `,"accel_body":`...)
	buf = vec(buf, acc.X, acc.Y, acc.Z)
	buf = append(buf, `},"position":`...)
	buf = vec(buf, pos.X, pos.Y, pos.Z)
	buf = append(buf, `,"velocity":`...)
	buf = vec(buf, vel.X, vel.Y, vel.Z)
	buf = append(buf, `,"quaternion":[`...)
	buf = num(buf, q.W)
	for _, c := range [3]float64{q.X, q.Y, q.Z} {
		buf = append(buf, ',')
		buf = num(buf, c)
	}
	return append(buf, "]}\n"...)
}

func num(b []byte, v float64) []byte { return strconv.AppendFloat(b, v, 'g', 9, 64) }

func vec(b []byte, x, y, z float64) []byte {
	b = append(b, '[')
	b = num(b, x)
	b = append(b, ',')
	b = num(b, y)
	b = append(b, ',')
	b = num(b, z)
	return append(b, ']')
}
