package ros2

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
	"time"
	"unsafe"

	"skyloop/dds"
	"skyloop/internal/ddstest"
)

// waitFor polls cond until it holds, failing after a generous minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// poseCDR is a geometry_msgs/PoseStamped as rclpy serializes it (ROS2.md:
// the encapsulation header 00 01 00 00, then little-endian CDR: sec,
// nanosec, frame_id with its length counting the NUL, padding to 8, the
// seven doubles).
func poseCDR(sec int32, nsec uint32, frame string, v [7]float64) []byte {
	b := []byte{0, 1, 0, 0}
	b = binary.LittleEndian.AppendUint32(b, uint32(sec))
	b = binary.LittleEndian.AppendUint32(b, nsec)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(frame)+1))
	b = append(append(b, frame...), 0)
	for (len(b)-4)%8 != 0 {
		b = append(b, 0)
	}
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// TestPoseStampedOnTheWire: a PoseStamped written from the Go layout
// arrives at another participant as exactly rclpy's bytes, on the DDS
// topic and type names ROS 2 uses.
func TestPoseStampedOnTheWire(t *testing.T) {
	domain := ddstest.Need(t)
	a, err := dds.NewParticipant(domain)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := dds.NewParticipant(domain)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ta, err := a.Topic("rt/uav_0/pose", descPoseStamped)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := b.Topic("rt/uav_0/pose", descPoseStamped)
	if err != nil {
		t.Fatal(err)
	}
	w, err := a.Writer(ta, dds.DefaultQoS)
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Reader(tb, dds.DefaultQoS)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the writer to match the reader", func() bool { n, _ := w.Matched(); return n == 1 })
	frame := cString0("map")
	m := cPoseStamped{header: cHeader{stamp: cTime{sec: 12, nanosec: 345}, frameID: &frame[0]},
		pose: cPose{position: cPoint{1.5, -2, 3}, orientation: cQuaternion{0, 0, 0.7071067811865476, 0.7071067811865476}}}
	if err := w.Write(unsafe.Pointer(&m)); err != nil {
		t.Fatal(err)
	}
	var got []byte
	waitFor(t, "the sample", func() bool {
		r.TakeCDR(func(c []byte) { got = c })
		return got != nil
	})
	want := poseCDR(12, 345, "map", [7]float64{1.5, -2, 3, 0, 0, 0.7071067811865476, 0.7071067811865476})
	if !bytes.Equal(got, want) {
		t.Errorf("on the wire:\n% x\nwant rclpy's\n% x", got, want)
	}
	if ta.Name() != "rt/uav_0/pose" || descPoseStamped.TypeName != "geometry_msgs::msg::dds_::PoseStamped_" {
		t.Errorf("topic %s type %s", ta.Name(), descPoseStamped.TypeName)
	}
}
