package px4sitl_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"

	"skyloop/components"
	"skyloop/engine"
	"skyloop/internal/short"
	"skyloop/mavlink"
	"skyloop/px4sitl"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/transcript"
)

var registry = components.Registry()

// replayScenario is testdata/takeoff-land.yaml without the network side:
// the same vehicle, seed and PX4 parameters, with PX4 not launched (the
// test plays its part from the transcript).
const replayScenario = `
name: px4-replay
seed: 7
duration: 36s
tick: 1ms
vehicles:
  - name: iris
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params:
      preset: iris
      controller: px4-sitl
      px4: {launch: false, port: %d, connect_timeout: 20s, step_timeout: 20s}
network:
  backend: ideal
outputs:
  sample_period: 100ms
`

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func loadTranscript(t *testing.T) []transcript.Record {
	t.Helper()
	f, err := os.Open("testdata/takeoff-land.transcript.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := transcript.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// step is one control step as the fake PX4 saw it.
type step struct {
	sensor *common.MessageHilSensor
	gps    *common.MessageHilGps
	state  *common.MessageHilStateQuaternion
}

// fakePX4 connects to the bridge and plays PX4's side of the transcript:
// it sends PX4's bytes when the recording did (after the HIL_SENSOR they
// followed), reads skyloop's frames of each step and checks their digest.
// At step hold it waits before answering and checks that skyloop sends
// nothing meanwhile (lockstep).
type fakePX4 struct {
	recs  []transcript.Record
	hold  int
	steps []step
	held  bool // the lockstep check ran
}

func (f *fakePX4) run(port int) error {
	var conn net.Conn
	var err error
	for range 200 { // the run opens its port after the test starts us
		if conn, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	dec := mavlink.NewDecoder()
	n := 0
	for i, r := range f.recs {
		if r.FromFirmware {
			if n == f.hold && !f.held {
				f.held = true
				conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				var b [1]byte
				if k, err := conn.Read(b[:]); k > 0 || !isTimeout(err) {
					return fmt.Errorf("step %d: skyloop sent more (%d bytes, %v) before PX4 answered: not in lockstep", n, k, err)
				}
			}
			if _, err := conn.Write(r.Data); err != nil {
				return fmt.Errorf("record %d: %w", i, err)
			}
			continue
		}
		want := int(uint32(r.Data[0]) | uint32(r.Data[1])<<8 | uint32(r.Data[2])<<16 | uint32(r.Data[3])<<24)
		got := make([]byte, want)
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.ReadFull(conn, got); err != nil {
			return fmt.Errorf("step %d (after %d us): reading skyloop's %d bytes: %w", n, r.After, want, err)
		}
		var s step
		dec.Decode(got, func(fr frame.Frame) {
			switch m := fr.GetMessage().(type) {
			case *common.MessageHilSensor:
				s.sensor = m
			case *common.MessageHilGps:
				s.gps = m
			case *common.MessageHilStateQuaternion:
				s.state = m
			}
		})
		f.steps = append(f.steps, s)
		if d := transcript.Digest(got); !bytes.Equal(d, r.Data) {
			return fmt.Errorf("step %d (HIL_SENSOR at %d us, recorded after %d us): skyloop's frames differ from the recording "+
				"(%d bytes; sensor %+v): the physics, the sensors or the bridge changed; re-record the transcript (testdata/README.md)",
				n, s.sensor.TimeUsec, r.After, want, s.sensor)
		}
		n++
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestTranscriptReplay replays real PX4's side of a flight (boot, arming,
// takeoff to 3 m, 5 m east, landing; recorded from PX4 SITL on skyloop's
// physics) against the bridge: every frame skyloop sends must be what it
// sent to the real firmware, in lockstep, and the vehicle must fly the same
// flight on PX4's recorded motor commands.
func TestTranscriptReplay(t *testing.T) {
	short.Skip(t, "takes several seconds")
	port := freePort(t)
	fake := replayFlight(t, fmt.Sprintf(replayScenario, port), port)
	if !fake.held {
		t.Fatal("the lockstep check did not run")
	}
}

// replayFlight runs scenario text with the fake PX4 on port playing the
// recorded flight, and checks what skyloop sent and how the vehicle flew.
func replayFlight(t *testing.T, text string, port int) *fakePX4 {
	t.Helper()
	// Before PX4 joins, a step waits one period (4 ms) for the recorded
	// boot frames; on a loaded machine the stand-in may answer later and a
	// frame would be consumed a step late. Give each boot step 100 ms.
	t.Cleanup(px4sitl.SetJoinPace(100 * time.Millisecond))
	recs := loadTranscript(t)
	sc, err := scenario.Parse("replay.yaml", []byte(text), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	fake := &fakePX4{recs: recs, hold: 5000}
	done := make(chan error, 1)
	go func() { done <- fake.run(port) }()
	dir := filepath.Join(t.TempDir(), "run")
	res, err := runner.Execute(r, dir, runner.Options{})
	if ferr := <-done; ferr != nil {
		t.Fatalf("fake PX4: %v", ferr)
	}
	if err != nil {
		t.Fatal(err)
	}
	checkSteps(t, fake.steps)
	checkFlight(t, res, dir)
	return fake
}

// checkSteps checks rates, times, units and frames of what skyloop sent.
func checkSteps(t *testing.T, steps []step) {
	t.Helper()
	var gps, baro, state int
	firstState := -1
	for i, s := range steps {
		if s.sensor == nil {
			t.Fatalf("step %d has no HIL_SENSOR", i)
		}
		if want := uint64(px4sitl.TimeOffsetUs + 4000*i); s.sensor.TimeUsec != want {
			t.Fatalf("step %d: HIL_SENSOR at %d us, want %d (250 Hz from %d us)", i, s.sensor.TimeUsec, want, px4sitl.TimeOffsetUs)
		}
		if s.sensor.FieldsUpdated&0x1FF != 0x1FF {
			t.Fatalf("step %d: fields_updated %#x lacks the IMU or the magnetometer", i, s.sensor.FieldsUpdated)
		}
		if s.sensor.FieldsUpdated&0x1A00 == 0x1A00 {
			baro++
		}
		if s.gps != nil {
			gps++
		}
		if s.state != nil {
			if firstState < 0 {
				firstState = i
			}
			state++
		}
	}
	secs := float64(len(steps)) * 0.004
	if r := float64(gps) / secs; math.Abs(r-10) > 0.2 {
		t.Errorf("HIL_GPS at %.2f Hz, want 10", r)
	}
	if r := float64(baro) / secs; math.Abs(r-50) > 0.5 {
		t.Errorf("barometer at %.2f Hz, want 50", r)
	}
	if firstState < 0 || firstState > 20 {
		t.Errorf("HIL_STATE_QUATERNION first sent at step %d: PX4 asks for it at connection", firstState)
	} else if r := float64(state) / (secs - float64(firstState)*0.004); math.Abs(r-200) > 2 {
		t.Errorf("HIL_STATE_QUATERNION at %.1f Hz, want the 200 Hz PX4 asked for", r)
	}
	// At rest on the ground, level, facing east (heading 90 degrees in NED):
	// specific force up (-g in FRD), the Earth's field in the body frame
	// (north is on the vehicle's left), ISA pressure at 488 m.
	s := steps[100]
	if math.Abs(float64(s.sensor.Zacc)+9.81) > 0.3 || math.Abs(float64(s.sensor.Xacc)) > 0.3 {
		t.Errorf("accelerometer at rest %v %v %v m/s^2, want 0 0 -9.81 (FRD)", s.sensor.Xacc, s.sensor.Yacc, s.sensor.Zacc)
	}
	if math.Abs(float64(s.sensor.Xmag)-0.0129) > 0.01 || math.Abs(float64(s.sensor.Ymag)+0.2174) > 0.01 || math.Abs(float64(s.sensor.Zmag)-0.4304) > 0.01 {
		t.Errorf("magnetometer facing east %v %v %v G, want 0.013 -0.217 0.430 (FRD)", s.sensor.Xmag, s.sensor.Ymag, s.sensor.Zmag)
	}
	for _, st := range steps[100:120] {
		if st.sensor.FieldsUpdated&0x1A00 == 0x1A00 {
			if math.Abs(float64(st.sensor.AbsPressure)-955.98) > 0.1 || math.Abs(float64(st.sensor.PressureAlt)-488) > 0.5 {
				t.Errorf("barometer at rest %v hPa, %v m; want 955.98 hPa at 488 m", st.sensor.AbsPressure, st.sensor.PressureAlt)
			}
		}
		if g := st.gps; g != nil {
			if math.Abs(float64(g.Lat)-473977420) > 20 || math.Abs(float64(g.Lon)-85455940) > 20 || math.Abs(float64(g.Alt)-488000) > 500 || g.FixType != 3 {
				t.Errorf("GPS at rest %d %d %d mm fix %d, want the origin 47.397742 8.545594 488 m, 3D fix", g.Lat, g.Lon, g.Alt, g.FixType)
			}
		}
		if q := st.state; q != nil {
			// q and -q are the same rotation.
			h, a := math.Sqrt2/2, q.AttitudeQuaternion
			if math.Abs(math.Abs(float64(a[0]))-h) > 0.01 || math.Abs(math.Abs(float64(a[3]))-h) > 0.01 || a[0]*a[3] < 0 {
				t.Errorf("ground truth attitude facing east %v, want +-(%.3f 0 0 %.3f) (w x y z, NED)", a, h, h)
			}
		}
	}
}

// checkFlight checks the flight PX4's recorded commands flew on skyloop's
// physics: up to 3 m, 5 m east, back and down.
func checkFlight(t *testing.T, res *runner.Result, dir string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "vehicles.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var maxZ, maxX float64
	armed := false
	for _, row := range rows[1:] {
		x, _ := strconv.ParseFloat(row[2], 64)
		z, _ := strconv.ParseFloat(row[4], 64)
		maxZ, maxX = max(maxZ, z), max(maxX, x)
		armed = armed || row[12] == "1"
	}
	// PX4 accepts the waypoint within NAV_ACC_RAD (2 m) and its approach
	// to the landing point climbs and sinks by a metre.
	if !armed || maxZ < 2.7 || maxZ > 4.5 || maxX < 3 || maxX > 6 {
		t.Errorf("flight: armed %v, highest %.2f m (want 2.7 to 4.5), farthest east %.2f m (want 3 to 6)", armed, maxZ, maxX)
	}
	// The flight's events: PX4's arming from its outputs, lift-off and
	// touchdown from the truth.
	ev, err := os.ReadFile(filepath.Join(dir, "events.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(ev)), "\n")[1:] {
		if f := strings.Split(line, ","); len(f) > 3 {
			names = append(names, f[3])
		}
	}
	if got := strings.Join(names, " "); got != "armed takeoff touchdown disarmed" {
		t.Errorf("events %q, want armed takeoff touchdown disarmed:\n%s", got, ev)
	}
	v := res.Summary.Vehicles[0]
	if v.Final.Z > 0.05 || math.Hypot(v.Final.X, v.Final.Y) > 1 || v.Mode != "disarmed" {
		t.Errorf("end of flight at %v in mode %s, want landed at home, disarmed", v.Final, v.Mode)
	}
}

// TestTranscriptIsReadable checks the recorded transcript's shape: one
// digest per step, PX4's bytes after the steps they followed.
func TestTranscriptIsReadable(t *testing.T) {
	recs := loadTranscript(t)
	if len(recs) < 8000 || recs[0].FromFirmware || recs[0].After != px4sitl.TimeOffsetUs {
		t.Fatalf("%d records, first %+v: want the first step's digest first", len(recs), recs[0])
	}
	var steps int
	for _, r := range recs {
		if !r.FromFirmware {
			steps++
		}
	}
	if steps != 36*250 {
		t.Fatalf("%d steps, want %d (36 s at 250 Hz)", steps, 36*250)
	}
}
