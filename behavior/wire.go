package behavior

import (
	"encoding/binary"
	"fmt"
	"math"

	"skyloop/agent"
	"skyloop/geom"
	"skyloop/vehicle"
)

// GCSPort is the UDP port of the ground-station link's commands and
// telemetry (the gcs and remote behaviours' default port): skyloop's own,
// next to the beacons' 5000, so that captures keep MAVLink's 14550 for
// MAVLink. tools/wireshark/skyloop.lua decodes both.
const GCSPort = 5001

// Ground-station command opcodes carried in CmdMsg.
const (
	OpGoto uint8 = 1 + iota
	OpLand
	OpHold
	OpRTL
	OpHeartbeat // no command: the station is alive (carries the current leg)
)

// CmdMsgSize is the encoded size of a CmdMsg.
const CmdMsgSize = 35

// CmdMsg is a ground-station command (kind cmd): op u8, seq u32, leg u16,
// x, y, z float64, speed float32, little-endian.
type CmdMsg struct {
	Op    uint8
	Seq   uint32
	Leg   uint16
	Pos   geom.Vec3
	Speed float32
}

// Append appends the encoding of c to b.
func (c *CmdMsg) Append(b []byte) []byte {
	b = append(b, c.Op)
	b = binary.LittleEndian.AppendUint32(b, c.Seq)
	b = binary.LittleEndian.AppendUint16(b, c.Leg)
	for _, f := range [...]float64{c.Pos.X, c.Pos.Y, c.Pos.Z} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(c.Speed))
}

// DecodeCmd decodes a CmdMsg.
func DecodeCmd(b []byte) (CmdMsg, error) {
	var c CmdMsg
	if len(b) != CmdMsgSize {
		return c, fmt.Errorf("command of %d bytes: want %d", len(b), CmdMsgSize)
	}
	c.Op = b[0]
	c.Seq = binary.LittleEndian.Uint32(b[1:])
	c.Leg = binary.LittleEndian.Uint16(b[5:])
	f := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b[7+8*i:])) }
	c.Pos = geom.Vec3{X: f(0), Y: f(1), Z: f(2)}
	c.Speed = math.Float32frombits(binary.LittleEndian.Uint32(b[31:]))
	if c.Op < OpGoto || c.Op > OpHeartbeat {
		return c, fmt.Errorf("unknown command opcode %d", c.Op)
	}
	if c.Op == OpGoto {
		g := vehicle.Command{Kind: vehicle.CmdGoto, Pos: c.Pos, Speed: float64(c.Speed), Yaw: math.NaN()}
		if err := g.Validate(); err != nil {
			return c, fmt.Errorf("command: %w", err)
		}
	}
	return c, nil
}

// TelemMsgSize is the encoded size of a TelemMsg.
const TelemMsgSize = 60

// NoLeg is the Leg of a TelemMsg from a vehicle that has had no command.
const NoLeg = 0xffff

// TelemMsg is a vehicle's report to its ground station (kind telem): id u32,
// seq u32, leg u16 (latest command applied), mode u8, flags u8 (bit 0 armed,
// bit 1 landed), x, y, z, vx, vy, vz float64, little-endian.
type TelemMsg struct {
	ID, Seq uint32
	Leg     uint16
	Mode    vehicle.Mode
	Armed   bool
	Landed  bool
	Pos     geom.Vec3
	Vel     geom.Vec3
}

// Append appends the encoding of m to b.
func (m *TelemMsg) Append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, m.ID)
	b = binary.LittleEndian.AppendUint32(b, m.Seq)
	b = binary.LittleEndian.AppendUint16(b, m.Leg)
	var flags uint8
	if m.Armed {
		flags |= 1
	}
	if m.Landed {
		flags |= 2
	}
	b = append(b, uint8(m.Mode), flags)
	for _, f := range [...]float64{m.Pos.X, m.Pos.Y, m.Pos.Z, m.Vel.X, m.Vel.Y, m.Vel.Z} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	return b
}

// DecodeTelem decodes a TelemMsg.
func DecodeTelem(b []byte) (TelemMsg, error) {
	var m TelemMsg
	if len(b) != TelemMsgSize {
		return m, fmt.Errorf("telemetry of %d bytes: want %d", len(b), TelemMsgSize)
	}
	m.ID = binary.LittleEndian.Uint32(b)
	m.Seq = binary.LittleEndian.Uint32(b[4:])
	m.Leg = binary.LittleEndian.Uint16(b[8:])
	m.Mode = vehicle.Mode(b[10])
	m.Armed, m.Landed = b[11]&1 != 0, b[11]&2 != 0
	f := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b[12+8*i:])) }
	m.Pos = geom.Vec3{X: f(0), Y: f(1), Z: f(2)}
	m.Vel = geom.Vec3{X: f(3), Y: f(4), Z: f(5)}
	if err := agent.Plausible(m.Pos, m.Vel); err != nil {
		return m, fmt.Errorf("telemetry: %w", err)
	}
	return m, nil
}
