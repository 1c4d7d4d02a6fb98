package px4sitl

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bluenviron/gomavlib/v3/pkg/frame"

	"skyloop/edge"
	"skyloop/fields"
	"skyloop/firmware"
	"skyloop/geom"
	"skyloop/mavlink"
	"skyloop/sim"
	"skyloop/simport"
	"skyloop/transcript"
	"skyloop/vehicle"
)

// JoinTimeout bounds (wall clock) how long PX4 may run after connecting
// before it answers its first HIL_SENSOR.
const JoinTimeout = 60 * time.Second

// maxJunk bounds the bytes skipped between frames before PX4 is taken to
// be talking nonsense.
const maxJunk = 1 << 16

// joinPace is the least wall-clock time a step waits for PX4's answer
// before PX4 has joined the lockstep. It is zero (the step's own period
// applies) except in transcript replays, where the stand-in firmware must
// consume each recorded boot frame within one step even on a loaded
// machine (see SetJoinPace in export_test.go).
var joinPace time.Duration

// Controller flies one multirotor with a PX4 SITL instance. It implements
// vehicle.Remote (the engine hands it every vehicle's sensors first, then
// waits for the answers) and edge.Component (Open listens and launches
// PX4; Close stops it). Commands from behaviours do not reach it: PX4 takes
// its commands over MAVLink (the mavlink behaviour relays them).
type Controller struct {
	p        *Params
	fw       firmware.Bridge // PX4 instance fw.Inst: the vehicle's node id
	motors   int
	idleFrac float64
	link     *Link
	origin   geom.Geodetic

	ln       net.Listener
	host     netip.Addr // where PX4 connected from
	accepted chan net.Conn
	refused  atomic.Value // the last refused peer's address (string)
	conn     net.Conn
	rbuf     []byte
	pending  []byte
	junk     int
	handle   func(frame.Frame) // hands decoded frames to the link
	dec      *mavlink.Decoder

	joined    bool      // PX4 answers every HIL_SENSOR
	connected time.Time // when PX4 connected
	pace      time.Time // before joining: when the next step may go on without an answer
	armed     bool

	// Steps counts control steps, Waits the wall time spent waiting for
	// PX4's answers.
	Steps int
	Waits time.Duration
}

// New returns the controller of vehicle id (PX4 instance id) named name,
// for an airframe with motors rotors whose rotor speed at PX4's zero output
// is idleFrac of the maximum.
func New(p *Params, id int, name string, motors int, idleFrac float64) *Controller {
	return &Controller{p: p, motors: motors, idleFrac: idleFrac,
		fw: firmware.Bridge{Key: "px4", Stack: "PX4", Firmware: "PX4", Proto: "TCP",
			Inst: id, Name: name, Port: p.Port + id, Log: slog.New(slog.DiscardHandler)},
		rbuf: make([]byte, 8192), dec: mavlink.NewDecoder()}
}

// Instance returns the PX4 instance number.
func (c *Controller) Instance() int { return c.fw.Inst }

// Port returns the TCP port PX4 connects to.
func (c *Controller) Port() int { return c.fw.Port }

// Link returns the protocol state.
func (c *Controller) Link() *Link { return c.link }

// Open implements edge.Component: it listens on the vehicle's simulator
// port and launches PX4 (unless px4.launch is false).
func (c *Controller) Open(env *edge.Env) error {
	if err := c.fw.Open(env, c.p.Transcript); err != nil {
		return err
	}
	c.origin = env.Origin
	c.link = NewLink(env.Origin)
	access, err := simport.Parse(c.p.Listen, c.p.Peer)
	if err != nil {
		return fmt.Errorf("%s: px4: %w", c.fw.Name, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(access.Listen.String(), strconv.Itoa(c.Port())))
	if err != nil {
		return c.fw.ListenError(err)
	}
	c.ln = ln
	c.accepted = make(chan net.Conn, 1)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				close(c.accepted)
				return
			}
			from, _ := netip.ParseAddrPort(conn.RemoteAddr().String())
			if !access.Allowed(from.Addr()) {
				// Not a firmware host the scenario names (px4.peer).
				c.fw.Log.Warn("PX4 simulator port: connection refused", "vehicle", c.fw.Name, "from", from.String(), "peer", c.p.Peer)
				c.refused.Store(from.String())
				conn.Close()
				continue
			}
			c.accepted <- conn
			return
		}
	}()
	if !c.p.Launch {
		c.fw.Wait()
		return nil
	}
	return c.fw.Launch(env, func(wd string) (*exec.Cmd, error) {
		cmd, err := command(c.p, c.fw.Inst, wd, netip.Addr{})
		if err != nil {
			return nil, fmt.Errorf("%s: starting PX4: %w", c.fw.Name, err)
		}
		return cmd, nil
	})
}

// Close implements edge.Component: it stops PX4 (which does not exit when
// its simulator goes away) and closes the connection.
func (c *Controller) Close() error {
	if c.ln != nil {
		c.ln.Close()
	}
	if c.conn != nil {
		c.conn.Close()
	}
	return c.fw.Close()
}

// Period returns the HIL_SENSOR period.
func (c *Controller) Period() sim.Duration { return c.p.Period }

// Command implements vehicle.Controller. PX4 takes its commands over
// MAVLink, not from skyloop's behaviours: the first command a behaviour
// gives ends the run with an error that says so.
func (c *Controller) Command(cmd vehicle.Command) { c.fw.Command(cmd) }

// Err returns why the controller stopped, or nil.
func (c *Controller) Err() error { return c.fw.Err() }

func (c *Controller) fail(err error) { c.fw.Fail(err) }

// connect waits for PX4 to connect (or exit, or time out).
func (c *Controller) connect() bool {
	if c.conn != nil {
		return true
	}
	if c.link == nil {
		c.fail(errors.New("internal error: controller not opened"))
		return false
	}
	timer := time.NewTimer(time.Duration(c.p.ConnectTimeout))
	defer timer.Stop()
	var exited <-chan struct{}
	if c.fw.Proc != nil {
		exited = c.fw.Proc.Done()
	}
	select {
	case conn, ok := <-c.accepted:
		if !ok {
			c.fail(errors.New("the simulator port closed before PX4 connected"))
			return false
		}
		c.conn = conn
		if ap, err := netip.ParseAddrPort(conn.RemoteAddr().String()); err == nil {
			c.host = ap.Addr().Unmap()
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		c.connected = time.Now()
		c.fw.Log.Info("PX4 connected", "vehicle", c.fw.Name, "port", c.Port())
		return true
	case <-exited:
		c.fail(fmt.Errorf("PX4 exited before connecting (%s)", c.fw.Proc.Status()))
	case <-timer.C:
		msg := fmt.Sprintf("PX4 did not connect within %v", time.Duration(c.p.ConnectTimeout))
		if from, ok := c.refused.Load().(string); ok {
			msg += fmt.Sprintf("; a connection from %s was refused: not in px4.peer (%s)", from, c.p.Peer)
		}
		c.fail(errors.New(msg))
	}
	return false
}

// Send implements vehicle.Remote: it writes the step's HIL frames.
func (c *Controller) Send(t sim.Time, s *vehicle.Sensors) {
	if c.fw.Err() != nil || !c.connect() {
		return
	}
	out, err := c.link.Sensors(t, s)
	if err != nil {
		c.fail(err)
		return
	}
	c.fw.Transcript.Record(transcript.ToFirmware, c.link.LastSent(), out)
	c.conn.SetWriteDeadline(time.Now().Add(time.Duration(c.p.StepTimeout)))
	if _, err := c.conn.Write(out); err != nil {
		c.fail(fmt.Errorf("sending sensors: %w", err))
		return
	}
	if !c.joined {
		c.pace = time.Now().Add(max(time.Duration(c.p.Period), joinPace))
	}
}

// Control implements vehicle.Controller: it waits for PX4's
// HIL_ACTUATOR_CONTROLS answering the step's HIL_SENSOR and sets the
// motors from it (held until the next answer). Until PX4 first answers
// (it takes some tens of steps to start its modules), steps go on at
// real-time pace with the motors stopped.
func (c *Controller) Control(t sim.Time, s *vehicle.Sensors, a *vehicle.Actuators, ev *vehicle.Events) {
	c.Steps++
	if c.fw.Err() == nil && c.conn != nil {
		c.await(Usec(t))
	}
	if c.link != nil {
		c.link.Act.Motors(&a.Motors, c.motors, c.idleFrac)
		if c.link.Act.Armed != c.armed {
			c.armed = c.link.Act.Armed
			if c.armed {
				ev.Add(t, "armed", "PX4")
			} else {
				ev.Add(t, "disarmed", "PX4")
			}
		}
	}
	a.NumMotors = c.motors
	c.fw.Ground(t, s, ev)
}

// await reads PX4's frames until the answer to the HIL_SENSOR at want.
func (c *Controller) await(want uint64) {
	start := time.Now()
	defer func() { c.Waits += time.Since(start) }()
	for !(c.link.Answered && c.link.Act.TimeUsec == want) {
		deadline := start.Add(time.Duration(c.p.StepTimeout))
		if !c.joined {
			deadline = c.pace
		}
		c.conn.SetReadDeadline(deadline)
		n, err := c.conn.Read(c.rbuf)
		if n > 0 {
			c.fw.Transcript.Record(transcript.FromFirmware, c.link.LastSent(), c.rbuf[:n])
			if !c.consume(c.rbuf[:n]) {
				return
			}
			continue
		}
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			if !c.joined {
				if time.Since(c.connected) > JoinTimeout {
					c.fail(fmt.Errorf("PX4 connected but answered no HIL_SENSOR within %v", JoinTimeout))
				}
				return // not in lockstep yet: go on at real-time pace
			}
			c.fail(fmt.Errorf("no HIL_ACTUATOR_CONTROLS within %v (wall clock) of the HIL_SENSOR at %d us", time.Duration(c.p.StepTimeout), want))
			return
		case errors.Is(err, io.EOF):
			st := "its process is not ours"
			if c.fw.Proc != nil {
				st = c.fw.Proc.Status()
			}
			c.fail(fmt.Errorf("PX4 closed the simulator connection (%s)", st))
			return
		case err != nil:
			c.fail(fmt.Errorf("reading from PX4: %w", err))
			return
		}
	}
	c.joined = true
}

// consume splits the stream into MAVLink frames and hands them to the
// link; it returns false after a protocol error.
func (c *Controller) consume(b []byte) bool {
	c.pending = append(c.pending, b...)
	whole, junk := mavlink.WholeFrames(c.pending)
	if c.junk += junk; c.junk > maxJunk {
		c.fail(fmt.Errorf("%w: %d bytes that are not MAVLink frames", ErrProtocol, c.junk))
		return false
	}
	if c.handle == nil {
		c.handle = func(f frame.Frame) {
			if c.fw.Err() != nil {
				return // a protocol error: the rest is not read
			}
			if _, err := c.link.Handle(f); err != nil {
				c.fail(err)
			}
		}
	}
	c.dec.Decode(c.pending[:whole], c.handle)
	c.pending = append(c.pending[:0], c.pending[whole:]...)
	return c.fw.Err() == nil
}

// Status implements vehicle.Controller: armed when PX4's outputs say so
// (mode, target and estimate are PX4's own and reach skyloop over MAVLink
// only).
func (c *Controller) Status(tel vehicle.Telemetry) vehicle.Telemetry {
	tel.Mode = vehicle.ModeDisarmed
	if c.link != nil && c.link.Act.Armed {
		tel.Armed, tel.Mode = true, vehicle.ModeIdle
		sum := 0.0
		for i := 0; i < c.motors; i++ {
			sum += float64(c.link.Act.Controls[i])
		}
		tel.Throttle = sum / float64(c.motors)
	}
	return tel
}

// Estimate implements vehicle.Controller: the physics' readings (PX4's
// estimate reaches skyloop over MAVLink only).
func (c *Controller) Estimate(tel vehicle.Telemetry) vehicle.Telemetry { return tel }

// MAVLinkPort returns the UDP port of PX4's ground-station link (18570+i,
// PX4's convention), where the mavlink behaviour relays ground stations'
// frames.
func (c *Controller) MAVLinkPort() int { return 18570 + c.fw.Inst }

// FirmwareHost implements mavlink.FirmwareHost: the address PX4 connected
// to the simulator port from (127.0.0.1, or its host when it runs
// elsewhere), where the relay finds its MAVLink port; the zero Addr before
// it connected.
func (c *Controller) FirmwareHost() netip.Addr { return c.host }

// FirmwareBridge implements firmware.Remote.
func (c *Controller) FirmwareBridge() *firmware.Bridge { return &c.fw }

// RemoteCommand implements firmware.Remote: PX4 as skyloop run would start
// it, connecting to the simulator at sim (PX4_SIM_HOST_ADDR). The scenario
// must not have skyloop launch it (px4.launch: false).
func (c *Controller) RemoteCommand(_ geom.Geodetic, wd string, sim netip.Addr) (*exec.Cmd, error) {
	if c.p.Launch {
		return nil, fmt.Errorf("%s: px4.launch is true, so `skyloop run` starts PX4 itself; "+
			"for PX4 on another host set launch: false, listen (an address of the simulator's host or 0.0.0.0) and peer (the firmware hosts)", c.fw.Name)
	}
	if c.p.Port != BasePort {
		return nil, fmt.Errorf("%s: px4.port is %d: PX4 connects to %d+instance, so a port it is to connect to must be %d", c.fw.Name, c.p.Port, BasePort, BasePort)
	}
	// The scenario's launch: false skipped finding PX4; find it on this
	// host (px4.dir, bin, rootfs or $SKYLOOP_PX4_DIR).
	p, bad := *c.p, fields.Errors{}
	p.locate(bad)
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s: %w", c.fw.Name, bad.Err("px4"))
	}
	cmd, err := command(&p, c.fw.Inst, wd, sim)
	if err != nil {
		return nil, fmt.Errorf("%s: starting PX4: %w", c.fw.Name, err)
	}
	return cmd, nil
}
