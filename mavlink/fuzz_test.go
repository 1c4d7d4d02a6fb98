package mavlink

import (
	"bytes"
	"testing"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"

	"skyloop/sim"
)

// validFrames returns a few real frames to seed the fuzzer.
func validFrames(t testing.TB) [][]byte {
	enc := NewEncoder(255, 190)
	var out [][]byte
	for _, m := range []interface{ GetID() uint32 }{
		&common.MessageHeartbeat{Type: common.MAV_TYPE_GCS, MavlinkVersion: 3},
		&common.MessageCommandLong{TargetSystem: 1, TargetComponent: 1, Command: common.MAV_CMD_COMPONENT_ARM_DISARM, Param1: 1},
		&common.MessageMissionCount{TargetSystem: 1, TargetComponent: 1, Count: 2},
		&common.MessageMissionItemInt{TargetSystem: 1, TargetComponent: 1, Command: common.MAV_CMD_NAV_WAYPOINT, Frame: common.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, X: 473977420, Y: 85455940, Z: 5},
		&common.MessageParamSet{TargetSystem: 1, TargetComponent: 1, ParamId: "MPC_XY_VEL_MAX", ParamValue: 3, ParamType: common.MAV_PARAM_TYPE_REAL32},
		&common.MessageSetPositionTargetLocalNed{TargetSystem: 1, CoordinateFrame: common.MAV_FRAME_LOCAL_NED, TypeMask: 0b110111000111, Vx: 1},
	} {
		b, err := enc.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]byte(nil), b...))
	}
	return out
}

func TestDecoderSkipsDamage(t *testing.T) {
	frames := validFrames(t)
	all := bytes.Join(frames, nil)
	count := func(data []byte) (n int, d *Decoder) {
		d = NewDecoder()
		d.Decode(data, func(frame.Frame) { n++ })
		return n, d
	}
	if n, d := count(all); n != len(frames) || d.Bad != 0 {
		t.Fatalf("%d valid frames decoded as %d (bad %d)", len(frames), n, d.Bad)
	}
	// Garbage between frames and a truncated tail: the good frames survive.
	var mixed []byte
	for _, f := range frames {
		mixed = append(mixed, 0x00, 0x42, 0xFD) // junk, including a stray magic byte
		mixed = append(mixed, f...)
	}
	mixed = append(mixed, frames[0][:5]...)
	if n, d := count(mixed); n < len(frames)-1 || d.Bad == 0 {
		t.Fatalf("mixed stream: %d of %d frames, %d bad", n, len(frames), d.Bad)
	}
	// A flipped payload bit fails the checksum.
	bad := append([]byte(nil), frames[1]...)
	bad[12] ^= 0x10
	if n, d := count(bad); n != 0 || d.Bad == 0 {
		t.Fatalf("corrupted frame accepted (%d frames, %d bad)", n, d.Bad)
	}
}

// FuzzEndpoint feeds arbitrary datagrams to a vehicle endpoint: it must
// neither panic nor stop answering (a valid command afterwards is still
// acknowledged).
func FuzzEndpoint(f *testing.F) {
	frames := validFrames(f)
	for _, fr := range frames {
		f.Add(fr)
		f.Add(fr[:len(fr)/2])
		c := append([]byte(nil), fr...)
		c[len(c)-1] ^= 0xFF
		f.Add(c)
	}
	f.Add(bytes.Join(frames, []byte{0xFD, 0x09}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		fl := newFlyer(t, 0)
		fl.toVeh = append(fl.toVeh, data)
		fl.run(30*sim.Millisecond, nil)
		fl.gcsSend(&common.MessageCommandLong{TargetSystem: 1, TargetComponent: 1, Command: common.MAV_CMD_REQUEST_MESSAGE, Param1: 148})
		fl.run(30*sim.Millisecond, nil)
		if fl.last(148) == nil {
			t.Fatal("the endpoint stopped answering after a bad datagram")
		}
	})
}
