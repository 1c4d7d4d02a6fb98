package ardupilot_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"testing"
	"time"

	"skyloop/engine"
	"skyloop/internal/short"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/transcript"
)

// replayScenario is testdata/takeoff-land.yaml without the network side:
// the same vehicle and seed, ArduCopter not launched (the test plays its
// part from the transcript).
const replayScenario = `
name: ap-replay
seed: 7
duration: 64s
tick: 1ms
vehicles:
  - name: copter
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params:
      preset: iris
      controller: ardupilot-sitl
      ardupilot: {launch: false, port: %d, connect_timeout: 20s, step_timeout: 20s}
network:
  backend: ideal
outputs:
  sample_period: 100ms
`

type stateLine struct {
	Timestamp float64
	IMU       struct {
		Gyro      []float64
		AccelBody []float64 `json:"accel_body"`
	}
	Position, Velocity, Quaternion []float64
}

// replayArduPilot sends the recorded servo packets one by one, reads the
// answer to each, checks the recorded digests, the time steps and, at one
// step, that nothing comes without a packet.
func replayArduPilot(port int, recs []transcript.Record, hold int) (answers []stateLine, err error) {
	to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	buf := make([]byte, 4096)
	var last []byte
	lastFrom := -1
	for i, r := range recs {
		if r.FromFirmware {
			lastFrom = i
		}
	}
	for i, r := range recs {
		if !r.FromFirmware {
			if int(r.After) != len(answers) {
				return answers, fmt.Errorf("record %d: digest of answer %d, but %d answers so far", i, r.After, len(answers))
			}
			if !bytes.Equal(transcript.Digest(last), r.Data) {
				return answers, fmt.Errorf("answer %d (t = %.3f s) differs from the recording: %q; the physics, the sensors or the bridge changed: "+
					"re-record the transcript (testdata/README.md)", r.After, answers[len(answers)-1].Timestamp, last)
			}
			continue
		}
		conn.WriteToUDP(r.Data, to)
		if i == lastFrom {
			break // the bridge's last step waits for it; its answer would come after the run
		}
		first := len(answers) == 0
		for {
			conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if !first {
				conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			}
			n, err := conn.Read(buf)
			if err != nil && first {
				conn.WriteToUDP(r.Data, to) // the bridge may not listen yet, as ArduPilot finds (it resends)
				continue
			}
			if err != nil {
				return answers, fmt.Errorf("answer %d: %w", len(answers)+1, err)
			}
			last = append(last[:0], buf[:n]...)
			break
		}
		if first { // answers to our resends of the first packet repeat the first answer
			for {
				conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
				n, err := conn.Read(buf)
				if err != nil {
					break
				}
				if !bytes.Equal(buf[:n], last) {
					return answers, fmt.Errorf("a second, different first answer %q", buf[:n])
				}
			}
		}
		var s stateLine
		if err := json.Unmarshal(last, &s); err != nil {
			return answers, fmt.Errorf("answer %d %q: %w", len(answers)+1, last, err)
		}
		if len(answers) > 0 && math.Abs(s.Timestamp-answers[len(answers)-1].Timestamp-0.001) > 1e-9 {
			return answers, fmt.Errorf("answer %d at %v s after %v s: want 1 ms steps", len(answers)+1, s.Timestamp, answers[len(answers)-1].Timestamp)
		}
		answers = append(answers, s)
		if len(answers) == hold { // lockstep: nothing more until the next packet
			conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if n, err := conn.Read(buf); err == nil {
				return answers, fmt.Errorf("an answer without a packet: %q", buf[:n])
			}
		}
	}
	return answers, nil
}

// TestTranscriptReplay replays real ArduCopter's side of a flight (boot,
// pre-arm checks, GUIDED arming by the built-in ground station, takeoff to
// 3 m, AUTO, landing; recorded on skyloop's physics) against the bridge:
// one answer per servo packet, 1 ms apart, what skyloop answered the real
// firmware (sampled digests), units and frames at rest, and the same
// flight on ArduPilot's recorded motor outputs.
func TestTranscriptReplay(t *testing.T) {
	short.Skip(t, "takes several seconds")
	port := freeUDPPort(t)
	answers, res := replayFlight(t, fmt.Sprintf(replayScenario, port), port)
	// At rest on the ground, facing east, before arming: specific force up
	// (-g in FRD), at home, heading 90 degrees in NED.
	s := answers[1000]
	h := math.Sqrt2 / 2
	if math.Abs(s.IMU.AccelBody[2]+9.81) > 0.3 || math.Hypot(s.Position[0], s.Position[1]) > 1e-6 || math.Abs(s.Position[2]) > 1e-6 ||
		math.Abs(math.Abs(s.Quaternion[0])-h) > 1e-6 || math.Abs(math.Abs(s.Quaternion[3])-h) > 1e-6 {
		t.Errorf("at rest: %+v", s)
	}
	top := 0.0
	for _, a := range answers {
		top = max(top, -a.Position[2])
	}
	if top < 2.5 || top > 4 {
		t.Errorf("highest %.2f m, want about 3 (the recorded takeoff)", top)
	}
	if v := res.Summary.Vehicles[0]; v.Final.Z > 0.05 || math.Hypot(v.Final.X, v.Final.Y) > 2 {
		t.Errorf("ended at %v, want landed near home", v.Final)
	}
}

// replayFlight runs scenario text with the recorded ArduCopter flight
// replayed against port, and returns skyloop's answers (one per
// millisecond of the 64 s) and the run's result.
func replayFlight(t *testing.T, text string, port int) ([]stateLine, *runner.Result) {
	t.Helper()
	f, err := os.Open("testdata/takeoff-land.transcript.gz")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := transcript.Read(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse("replay.yaml", []byte(text), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		answers []stateLine
		err     error
	}
	done := make(chan out, 1)
	go func() {
		a, err := replayArduPilot(port, recs, 20000)
		done <- out{a, err}
	}()
	res, err := runner.Execute(r, "", runner.Options{})
	if err != nil {
		t.Fatal(err) // the replay goroutine gives up on its own
	}
	o := <-done
	if o.err != nil {
		t.Fatalf("replayed ArduPilot: %v", o.err)
	}
	if len(o.answers) < 63000 {
		t.Fatalf("%d answers, want one per millisecond of the 64 s", len(o.answers))
	}
	return o.answers, res
}
