package behavior

import (
	"math"
	"testing"

	"skyloop/geom"
)

func TestCmdTelemRoundTrip(t *testing.T) {
	c := CmdMsg{Op: OpGoto, Seq: 9, Leg: 2, Pos: geom.V(1, 2, 3), Speed: 4.5}
	b := c.Append(nil)
	got, err := DecodeCmd(b)
	if err != nil || got != c {
		t.Fatalf("cmd %+v %v", got, err)
	}
	b[0] = 99
	if _, err := DecodeCmd(b); err == nil {
		t.Fatal("bad opcode accepted")
	}
	m := TelemMsg{ID: 3, Seq: 4, Leg: NoLeg, Mode: 4, Armed: true, Pos: geom.V(1, 2, 3), Vel: geom.V(-1, 0, 1)}
	got2, err := DecodeTelem(m.Append(nil))
	if err != nil || got2 != m {
		t.Fatalf("telem %+v %v", got2, err)
	}
}

// TestWireDecodersRejectImplausibleValues: commands and telemetry come
// from other nodes, possibly external processes; NaN, infinite or absurd
// numbers are refused at decoding, never handed to a controller.
func TestWireDecodersRejectImplausibleValues(t *testing.T) {
	for _, pos := range []geom.Vec3{geom.V(math.NaN(), 0, 5), geom.V(1e308, 0, 5), geom.V(0, 0, math.Inf(1)), geom.V(2e6, 0, 0)} {
		c := CmdMsg{Op: OpGoto, Seq: 1, Pos: pos}
		if _, err := DecodeCmd(c.Append(nil)); err == nil {
			t.Errorf("goto %v decoded", pos)
		}
		m := TelemMsg{Pos: pos}
		if _, err := DecodeTelem(m.Append(nil)); err == nil {
			t.Errorf("telemetry at %v decoded", pos)
		}
	}
	c := CmdMsg{Op: OpGoto, Seq: 1, Pos: geom.V(10, -20, 15), Speed: float32(math.Inf(1))}
	if _, err := DecodeCmd(c.Append(nil)); err == nil {
		t.Error("goto with infinite speed decoded")
	}
	c.Speed = 5
	if _, err := DecodeCmd(c.Append(nil)); err != nil {
		t.Errorf("a plausible goto refused: %v", err)
	}
}
