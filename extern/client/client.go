// Package client is the Go client of skyloop's external-agent protocol
// (docs/protocol.md): a program that uses it is a skyloop agent in its own
// process. Calls read like a sequential mission script: Time reports
// simulated time, Sleep and Recv wait in simulated time (ending the agent's
// step), and Send, Broadcast and the vehicle commands take effect at the
// current simulated time, exactly like a built-in agent's.
package client

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"skyloop/extern"
)

// ErrEnded is returned once the run is over; the program should exit.
var ErrEnded = errors.New("skyloop: the run is over")

// Message is a packet delivered to the agent.
type Message = extern.Delivery

// Telemetry is the vehicle's state as its autopilot estimates it.
type Telemetry = extern.Telemetry

// Options say where and as whom to connect; zero fields come from the
// environment skyloop gives the processes it launches (SKYLOOP_SOCKET or
// SKYLOOP_ADDR, SKYLOOP_TOKEN, SKYLOOP_FINGERPRINT, SKYLOOP_VEHICLE).
type Options struct {
	Socket string // Unix socket path
	Addr   string // TCP address (host:port), used when Socket is empty
	Token  string
	// Fingerprint pins the TLS certificate of a skyloop or relay on
	// another host (SKYLOOP_FINGERPRINT): with it, Addr is reached over
	// TLS; without it, Addr must be a loopback address.
	Fingerprint string
	Vehicle     int // node id; -1 = from the environment
	Name        string
}

// Agent is one connected agent stepping one node.
type Agent struct {
	conn
	id      int
	now     int64
	tick    int64
	tel     *Telemetry
	inbox   []Message
	welcome *extern.Frame
}

// Connect connects and waits for the agent's first step.
func Connect(o Options) (*Agent, error) {
	if o.Vehicle < 0 {
		v, err := strconv.Atoi(os.Getenv("SKYLOOP_VEHICLE"))
		if err != nil {
			return nil, fmt.Errorf("skyloop: no vehicle id given and SKYLOOP_VEHICLE=%q", os.Getenv("SKYLOOP_VEHICLE"))
		}
		o.Vehicle = v
	}
	k, w, err := dial(o, &extern.Frame{Vehicles: []int{o.Vehicle}, Name: o.Name})
	if err != nil {
		return nil, err
	}
	a := &Agent{conn: k, id: o.Vehicle, welcome: w, tick: w.TickNs}
	if err := a.waitTick(); err != nil {
		a.c.Close()
		return nil, err
	}
	return a, nil
}

// waitTick waits for this agent's next BEGIN-TICK.
func (a *Agent) waitTick() error {
	for {
		f, err := a.read()
		if err != nil {
			return err
		}
		if f.Type == extern.TypeTick && f.Vehicle == a.id {
			a.now, a.tel = f.T, f.Telemetry
			a.inbox = append(a.inbox, f.Deliveries...)
			return nil
		}
	}
}

// end finishes the current step with a wake condition and waits for the
// next one.
func (a *Agent) end(wakeAt int64, onRecv bool) error {
	if a.ended {
		return ErrEnded
	}
	if err := a.write(&extern.Frame{Type: extern.TypeDone, Vehicle: a.id, WakeAt: wakeAt, WakeOnRecv: onRecv}); err != nil {
		return err
	}
	return a.waitTick()
}

// ID returns the agent's node id.
func (a *Agent) ID() int { return a.id }

// Nodes lists the run's nodes.
func (a *Agent) Nodes() []extern.NodeInfo { return a.welcome.Nodes }

// Time returns the simulated time.
func (a *Agent) Time() time.Duration { return time.Duration(a.now) }

// Tick returns the kernel tick.
func (a *Agent) Tick() time.Duration { return time.Duration(a.tick) }

// Sleep ends the step and resumes d of simulated time later (at the
// agent's next step when d is not positive). Messages arriving meanwhile
// wait in the inbox.
func (a *Agent) Sleep(d time.Duration) error {
	at := int64(0)
	if d > 0 {
		at = a.now + int64(d)
	}
	return a.end(at, false)
}

// Step ends the step and resumes at the agent's next step.
func (a *Agent) Step() error { return a.end(0, false) }

// Recv returns the next delivered message, waiting in simulated time for
// one when the inbox is empty.
func (a *Agent) Recv() (Message, error) {
	for len(a.inbox) == 0 {
		if err := a.end(int64(^uint64(0)>>1), true); err != nil {
			return Message{}, err
		}
	}
	m := a.inbox[0]
	a.inbox = a.inbox[1:]
	return m, nil
}

// Inbox returns and clears the messages delivered so far, without waiting.
func (a *Agent) Inbox() []Message {
	in := a.inbox
	a.inbox = nil
	return in
}

// Send hands payload to the network for node dst (on port 0, kind data)
// at the current simulated time.
func (a *Agent) Send(dst int, payload []byte) error { return a.SendTo(dst, 0, "", payload) }

// Broadcast sends payload to every node in range.
func (a *Agent) Broadcast(payload []byte) error { return a.SendTo(-1, 0, "", payload) }

// SendTo sends with an explicit port and packet kind ("" = data).
func (a *Agent) SendTo(dst, port int, kind string, payload []byte) error {
	return a.write(&extern.Frame{Type: extern.TypeSend, Vehicle: a.id, Dst: &dst, Port: port, Kind: kind, Payload: payload})
}

// SendAfter sends like SendTo but offset into the current tick by delay
// (0 <= delay < the tick): sub-tick send times spread agents that step
// together.
func (a *Agent) SendAfter(delay time.Duration, dst, port int, kind string, payload []byte) error {
	return a.write(&extern.Frame{Type: extern.TypeSend, Vehicle: a.id, Dst: &dst, Port: port, Kind: kind, Payload: payload,
		At: a.now + int64(delay)})
}

// Event writes a line to events.csv.
func (a *Agent) Event(name, detail string) error {
	return a.write(&extern.Frame{Type: extern.TypeEvent, Vehicle: a.id, Name: name, Detail: detail})
}

// Telemetry returns the vehicle's state at the current step (nil on a
// fixed node).
func (a *Agent) Telemetry() *Telemetry { return a.tel }

func (a *Agent) cmd(f extern.Frame) error {
	f.Type, f.Vehicle = extern.TypeCommand, a.id
	return a.write(&f)
}

// Arm arms the vehicle.
func (a *Agent) Arm() error { return a.cmd(extern.Frame{Cmd: "arm"}) }

// Disarm disarms it (on the ground).
func (a *Agent) Disarm() error { return a.cmd(extern.Frame{Cmd: "disarm"}) }

// Takeoff climbs to alt metres above the ground, arming if needed.
func (a *Agent) Takeoff(alt float64) error { return a.cmd(extern.Frame{Cmd: "takeoff", Alt: alt}) }

// Goto flies to a point (x east, y north, z up).
func (a *Agent) Goto(x, y, z float64) error {
	return a.cmd(extern.Frame{Cmd: "goto", Pos: &extern.Vec3{x, y, z}})
}

// Velocity follows a world-frame velocity setpoint.
func (a *Agent) Velocity(vx, vy, vz float64) error {
	return a.cmd(extern.Frame{Cmd: "velocity", Vel: &extern.Vec3{vx, vy, vz}})
}

// Hold holds the current position.
func (a *Agent) Hold() error { return a.cmd(extern.Frame{Cmd: "hold"}) }

// Land lands where the vehicle is.
func (a *Agent) Land() error { return a.cmd(extern.Frame{Cmd: "land"}) }

// RawWrite writes bytes as they are: for testing how skyloop takes broken
// frames.
func (a *Agent) RawWrite(b []byte) error {
	_, err := a.c.Write(b)
	return err
}

// Close ends the connection.
func (a *Agent) Close() error { return a.c.Close() }

// Ended reports whether the run told the agent it is over.
func (a *Agent) Ended() bool { return a.ended }

// IsEnd reports whether err means the run ended normally.
func IsEnd(err error) bool { return errors.Is(err, ErrEnded) }
