package ardupilot_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"skyloop/ardupilot"
	"skyloop/components"
	"skyloop/engine"
	"skyloop/runner"
	"skyloop/scenario"
)

var registry = components.Registry()

func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

func servos(count uint32, pwm uint16) []byte {
	b := make([]byte, 40)
	binary.LittleEndian.PutUint16(b, ardupilot.Magic16)
	binary.LittleEndian.PutUint16(b[2:], 500)
	binary.LittleEndian.PutUint32(b[4:], count)
	for i := 0; i < 4; i++ {
		binary.LittleEndian.PutUint16(b[8+2*i:], pwm)
	}
	return b
}

type answer struct {
	Timestamp float64
	Position  []float64
}

// fakeArduPilot plays ArduCopter's side of the JSON interface: it sends
// servo packets and reads one answer per packet, checking lockstep,
// answers to a resent packet and a restart from a new socket.
func fakeArduPilot(port int, steps int, pwm uint16) error {
	to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	defer func() { conn.Close() }()
	buf := make([]byte, 2048)
	read := func(c *net.UDPConn) (answer, []byte, error) {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := c.Read(buf)
		if err != nil {
			return answer{}, nil, err
		}
		var a answer
		if err := json.Unmarshal(buf[:n], &a); err != nil {
			return a, nil, fmt.Errorf("answer %q: %w", buf[:n], err)
		}
		return a, append([]byte(nil), buf[:n]...), nil
	}
	last := 0.0
	var count uint32
	for k := 0; k < steps; k++ {
		switch k {
		case steps / 2: // a restart: a new socket, the count from 0
			conn.Close()
			if conn, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); err != nil {
				return err
			}
			count = 0
		}
		if _, err := conn.WriteToUDP(servos(count, pwm), to); err != nil {
			return err
		}
		if k == 0 { // the bridge may not listen yet: resend, as ArduPilot does (every 1.1 s)
			for i := 0; i < 100; i++ {
				conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				if n, err := conn.Read(buf); err == nil {
					last, count = 0, 1
					var a answer
					if err := json.Unmarshal(buf[:n], &a); err != nil {
						return err
					}
					last = a.Timestamp
					break
				}
				conn.WriteToUDP(servos(count, pwm), to)
			}
			continue
		}
		a, raw, err := read(conn)
		for err == nil && k < 5 && a.Timestamp <= last {
			a, raw, err = read(conn) // repeats of the first answer, for our resends of the first packet
		}
		if err != nil {
			return fmt.Errorf("step %d: %w", k, err)
		}
		if want := last + 0.001; k > 0 && math.Abs(a.Timestamp-want) > 1e-9 {
			return fmt.Errorf("step %d: timestamp %v, want %v (1 ms steps, on through a restart)", k, a.Timestamp, want)
		}
		last = a.Timestamp
		if k == 10 {
			// A packet resent right after the answer (ArduPilot sent it
			// before the answer reached it) is not answered again: a
			// second answer would be one more step for ArduPilot.
			conn.WriteToUDP(servos(count, pwm), to)
			conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if n, err := conn.Read(buf); err == nil {
				return fmt.Errorf("a second answer to a packet resent at once: %q", buf[:n])
			}
			// Resent again and again, as ArduPilot does every second
			// when an answer went missing, it gets the same answer
			// again once resendGrace has passed.
			var again []byte
			for try := 0; try < 5 && again == nil; try++ {
				conn.WriteToUDP(servos(count, pwm), to)
				conn.SetReadDeadline(time.Now().Add(time.Second))
				if n, err := conn.Read(buf); err == nil {
					again = append([]byte(nil), buf[:n]...)
				}
			}
			if string(again) != string(raw) {
				return fmt.Errorf("resent packet: answer %q, want %q", again, raw)
			}
		}
		if k == 20 { // lockstep: nothing more until the next packet
			conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if n, err := conn.Read(buf); err == nil {
				return fmt.Errorf("an answer without a packet: %q", buf[:n])
			}
		}
		count++
	}
	// The last step waits for a packet, as with ArduPilot, which never stops.
	_, err = conn.WriteToUDP(servos(count, pwm), to)
	return err
}

func protocolScenario(port int, secs float64) string {
	return fmt.Sprintf(`
name: ap
seed: 1
duration: %gs
tick: 1ms
vehicles:
  - name: copter
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params: {preset: iris, controller: ardupilot-sitl, ardupilot: {launch: false, port: %d, connect_timeout: 10s, step_timeout: 10s}}
network:
  backend: ideal
`, secs, port)
}

// TestProtocolAgainstAFake: the bridge answers each servo packet once with
// the state 1 ms on, waits for the next packet, answers a resent packet
// again, follows a restarted ArduPilot, and its motors drive the physics
// (full PWM: the vehicle climbs).
func TestProtocolAgainstAFake(t *testing.T) {
	port := freeUDPPort(t)
	const steps = 999 // 1 s: 1000 steps, the first packet answered at the second
	sc, err := scenario.Parse("ap.yaml", []byte(protocolScenario(port, 1)), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fakeArduPilot(port, steps, 2000) }()
	res, err := runner.Execute(r, "", runner.Options{})
	if ferr := <-done; ferr != nil {
		t.Fatalf("fake ArduPilot: %v", ferr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if z := res.Summary.Vehicles[0].Final.Z; z < 1 {
		t.Errorf("at full throttle for 1 s the vehicle is at %.2f m, want it climbing", z)
	}
}

// TestSilentArduPilotFails: no servo packet within the connect timeout is
// an error naming the vehicle and the port.
func TestSilentArduPilotFails(t *testing.T) {
	port := freeUDPPort(t)
	text := strings.Replace(protocolScenario(port, 1), "connect_timeout: 10s", "connect_timeout: 300ms", 1)
	sc, err := scenario.Parse("ap.yaml", []byte(text), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	_, err = runner.Execute(r, "", runner.Options{})
	if err == nil || !strings.Contains(err.Error(), "copter-0") || !strings.Contains(err.Error(), fmt.Sprintf("UDP %d", port)) ||
		!strings.Contains(err.Error(), "no servo packet") {
		t.Fatalf("got %v", err)
	}
}
