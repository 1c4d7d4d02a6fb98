package ardupilot

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// servoPacket builds a servo packet.
func servoPacket(magic uint16, count uint32, pwm ...uint16) []byte {
	n := 16
	if magic == Magic32 {
		n = 32
	}
	b := make([]byte, 8+2*n)
	binary.LittleEndian.PutUint16(b, magic)
	binary.LittleEndian.PutUint16(b[2:], 400)
	binary.LittleEndian.PutUint32(b[4:], count)
	for i, p := range pwm {
		binary.LittleEndian.PutUint16(b[8+2*i:], p)
	}
	return b
}

func TestParseServos(t *testing.T) {
	var s Servos
	if err := ParseServos(servoPacket(Magic16, 7, 1000, 1500, 2000, 0), &s); err != nil {
		t.Fatal(err)
	}
	if s.FrameCount != 7 || s.FrameRate != 400 || s.Channels != 16 || s.PWM[1] != 1500 {
		t.Fatalf("%+v", s)
	}
	var m [vehicle.MaxMotors]float64
	s.Motors(&m, 4)
	if m[0] != 0 || m[1] != 0.5 || m[2] != 1 || m[3] != 0 {
		t.Fatalf("motors %v, want 0 0.5 1 0 (PWM 1000-2000 to 0-1, no pulse = 0)", m)
	}
	if err := ParseServos(servoPacket(Magic32, 1, 1100), &s); err != nil || s.Channels != 32 {
		t.Fatalf("32 channels: %v %+v", err, s)
	}
	for _, c := range []struct {
		b    []byte
		want string
	}{
		{[]byte{1, 2, 3}, "3-byte packet"},
		{servoPacket(1234, 1), "magic 1234"},
		{servoPacket(Magic16, 1)[:30], "30 bytes with magic 18458"},
		{servoPacket(Magic16, 1, 3000), "channel 1 pulse 3000"},
	} {
		if err := ParseServos(c.b, &s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error with %q", err, c.want)
		}
	}
}

// TestStateLine checks the answer's format and frames: a vehicle 3 m east
// and 4 m north of home, 2 m up, climbing at 1 m/s, facing east, at rest
// otherwise.
func TestStateLine(t *testing.T) {
	home := geom.V(10, 0, 0)
	s := vehicle.Sensors{
		IMU:   vehicle.IMU{Accel: geom.V(0, 0, 9.80665), Gyro: geom.V(0.1, 0, 0)},
		Truth: vehicle.Pose{Pos: geom.V(13, 4, 2), Vel: geom.V(0, 0, 1), Att: geom.Quat{W: 1}},
	}
	line := State(nil, sim.Time(1500*sim.Millisecond), &s, home)
	if line[0] != '\n' || line[len(line)-1] != '\n' || strings.Contains(string(line), ": ") {
		t.Fatalf("want a compact line between newlines: %q", line)
	}
	var v struct {
		Timestamp float64
		IMU       struct {
			Gyro      []float64
			AccelBody []float64 `json:"accel_body"`
		}
		Position, Velocity, Quaternion []float64
	}
	if err := json.Unmarshal(line, &v); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	near := func(a, b []float64) bool {
		for i := range b {
			if math.Abs(a[i]-b[i]) > 1e-6 {
				return false
			}
		}
		return len(a) == len(b)
	}
	h := math.Sqrt2 / 2
	if v.Timestamp != 1.5 || !near(v.IMU.Gyro, []float64{0.1, 0, 0}) || !near(v.IMU.AccelBody, []float64{0, 0, -9.80665}) ||
		!near(v.Position, []float64{4, 3, -2}) || !near(v.Velocity, []float64{0, 0, -1}) ||
		!(near(v.Quaternion, []float64{h, 0, 0, h}) || near(v.Quaternion, []float64{-h, 0, 0, -h})) {
		t.Fatalf("state %+v from %s", v, line)
	}
	if n := testing.AllocsPerRun(100, func() { line = State(line[:0], 0, &s, home) }); n != 0 {
		t.Errorf("State allocates %v times", n)
	}
}

// TestDefaultsFileLogOff: skyloop's parameter file turns ArduCopter's
// dataflash log off (its log thread makes arming take a wall-clock number
// of simulated steps), unless the scenario sets LOG_BACKEND_TYPE.
func TestDefaultsFileLogOff(t *testing.T) {
	p := DefaultParams()
	c := New(&p, 0, "drone-0", 4, geom.Vec3{}, 0)
	if got := string(c.defaultsFile()); !strings.Contains(got, "\nLOG_BACKEND_TYPE 0\n") || !strings.Contains(got, "FRAME_CLASS 1\nFRAME_TYPE 1\n") {
		t.Errorf("defaults without the scenario's LOG_BACKEND_TYPE:\n%s", got)
	}
	p.Params = map[string]float64{"LOG_BACKEND_TYPE": 1}
	got := string(c.defaultsFile())
	if strings.Count(got, "LOG_BACKEND_TYPE") != 1 || !strings.Contains(got, "\nLOG_BACKEND_TYPE 1\n") {
		t.Errorf("the scenario's LOG_BACKEND_TYPE 1 is not the only one:\n%s", got)
	}
}
