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

// pair makes a writer in participant a and a reader in participant b of
// topic, and waits until they are matched.
func pair(t *testing.T, a, b *dds.Participant, topic string, d *dds.Descriptor) (*dds.Writer, *dds.Reader) {
	t.Helper()
	ta, err := a.Topic(topic, d)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := b.Topic(topic, d)
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
	return w, r
}

// participants makes two participants in domain, closed at the test's end.
func participants(t *testing.T, domain uint32) (*dds.Participant, *dds.Participant) {
	t.Helper()
	var ps [2]*dds.Participant
	for i := range ps {
		p, err := dds.NewParticipant(domain)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		ps[i] = p
	}
	return ps[0], ps[1]
}

// roundTrip writes msg and returns the bytes the reader receives.
func roundTrip(t *testing.T, w *dds.Writer, r *dds.Reader, msg unsafe.Pointer) []byte {
	t.Helper()
	if err := w.Write(msg); err != nil {
		t.Fatal(err)
	}
	var got []byte
	waitFor(t, "the sample", func() bool {
		r.TakeCDR(func(c []byte) { got = c })
		return got != nil
	})
	return got
}

// TestPoseStampedOnTheWire: a PoseStamped written from the Go layout
// arrives at another participant as exactly rclpy's bytes (ROS2.md's
// layout, built here by hand), on the DDS topic and type names ROS 2 uses.
func TestPoseStampedOnTheWire(t *testing.T) {
	a, b := participants(t, ddstest.Need(t))
	w, r := pair(t, a, b, "rt/uav_0/pose", descPoseStamped)
	frame := cString0("map")
	m := cPoseStamped{header: cHeader{stamp: cTime{sec: 12, nanosec: 345}, frameID: &frame[0]},
		pose: cPose{position: cPoint{1.5, -2, 3}, orientation: cQuaternion{0, 0, 0.7071067811865476, 0.7071067811865476}}}
	got := roundTrip(t, w, r, unsafe.Pointer(&m))
	want := poseCDR(12, 345, "map", [7]float64{1.5, -2, 3, 0, 0, 0.7071067811865476, 0.7071067811865476})
	if !bytes.Equal(got, want) {
		t.Errorf("on the wire:\n% x\nwant rclpy's\n% x", got, want)
	}
	if descPoseStamped.TypeName != "geometry_msgs::msg::dds_::PoseStamped_" {
		t.Errorf("type %s", descPoseStamped.TypeName)
	}
}
