package ardupilot

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"skyloop/edge"
	"skyloop/fields"
	"skyloop/firmware"
	"skyloop/geom"
	"skyloop/sim"
	"skyloop/simport"
	"skyloop/transcript"
	"skyloop/vehicle"
)

// digestEvery: a transcript keeps the digest of every digestEvery-th
// answer (ArduPilot's steps are many and small; a divergence persists, so
// sampling finds it).
const digestEvery = 50

// maxResends bounds how often in a row ArduPilot may ask again for the
// same answer.
const maxResends = 100

// resendGrace is how long after an answer a resent servo packet is taken
// for one sent before the answer arrived (and not answered again).
// ArduPilot resends every second while it waits for an answer.
const resendGrace = 2 * time.Second

// StartTime is the UTC time (Unix seconds) of simulated time zero that
// ArduCopter is given (--start-time): 2026-01-01T00:00:00Z, the epoch of
// skyloop's telemetry logs (mavlink.DefaultEpoch). Without it ArduPilot's
// SITL GPS takes the host's clock at its start, and its GPS time, its
// clock (AP_RTC) and SYSTEM_TIME differ from one run to the next.
const StartTime = 1767225600

// MAVLinkBase is the TCP port of instance 0's primary MAVLink link
// (SERIAL0); instance i listens on MAVLinkBase+10i.
const MAVLinkBase = 5760

// Controller flies one multirotor with an ArduCopter SITL instance. It
// implements vehicle.Remote: Send answers ArduPilot's pending servo packet
// with the state at t, Control waits for the next packet and sets the
// motors from it (held over the period). Commands from behaviours do not
// reach it: ArduPilot takes its commands over MAVLink.
type Controller struct {
	p      *Params
	fw     firmware.Bridge
	motors int
	pos    geom.Vec3 // where the vehicle starts: ArduPilot's home
	yaw    float64

	conn      *net.UDPConn
	peer      netip.AddrPort // where ArduPilot's packets come from
	access    simport.Access // who may send them
	stranger  netip.AddrPort // the last sender refused (ardupilot.peer)
	raw       syscall.RawConn
	readFn    func(fd uintptr) bool
	rn        int
	rfrom     syscall.Sockaddr
	rerr      error
	rbuf      []byte
	out       []byte // the last answer
	servos    Servos
	pending   bool   // a packet waits for its answer
	last      uint32 // frame count of the last packet taken
	taken     bool   // a packet was taken
	steps     uint64 // answers sent
	spin      bool
	resent    int       // times in a row ArduPilot asked again for the last answer
	answered  time.Time // when the last answer was sent (wall clock)
	restarted bool      // a restart was seen since the last control step

	// Restarts counts ArduPilot restarts seen (frame count going back).
	Restarts int
}

// New returns the controller of vehicle id (ArduPilot instance id) named
// name, starting at pos heading yaw (rad, counter-clockwise from east),
// for an airframe with motors rotors.
func New(p *Params, id int, name string, motors int, pos geom.Vec3, yaw float64) *Controller {
	return &Controller{p: p, motors: motors, pos: pos, yaw: yaw, rbuf: make([]byte, 512),
		fw: firmware.Bridge{Key: "ardupilot", Stack: "ArduPilot", Firmware: "ArduCopter", Proto: "UDP",
			Inst: id, Name: name, Port: p.Port + 10*id, Log: slog.New(slog.DiscardHandler)}}
}

// Port returns the UDP port ArduPilot sends its servo packets to.
func (c *Controller) Port() int { return c.fw.Port }

// Open implements edge.Component: it binds the physics port and launches
// ArduCopter (unless ardupilot.launch is false).
func (c *Controller) Open(env *edge.Env) error {
	if err := c.fw.Open(env, c.p.Transcript); err != nil {
		return err
	}
	access, err := simport.Parse(c.p.Listen, c.p.Peer)
	if err != nil {
		return fmt.Errorf("%s: ardupilot: %w", c.fw.Name, err)
	}
	c.access = access
	// udp4: the fast read path takes IPv4 packets (a wildcard "udp" socket
	// would be IPv6); Validate refuses IPv6 listen addresses.
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(access.Listen, uint16(c.Port()))))
	if err != nil {
		return c.fw.ListenError(err)
	}
	c.conn = conn
	if !c.p.Launch {
		c.fw.Wait()
		return nil
	}
	return c.fw.Launch(env, func(wd string) (*exec.Cmd, error) { return c.command(env, wd) })
}

// command writes skyloop's parameter file into the working directory wd
// and returns the ArduCopter command line. ArduCopter sends to the physics
// port: on loopback unless it listens on one other address only.
func (c *Controller) command(env *edge.Env, wd string) (*exec.Cmd, error) {
	model := "JSON:127.0.0.1"
	if a := c.access.Listen; !a.IsLoopback() && !a.IsUnspecified() {
		model = "JSON:" + a.String()
	}
	return c.commandTo(c.p, env.Origin, wd, model)
}

// RemoteCommand implements firmware.Remote: ArduCopter as command would
// start it, sending its servo packets to sim. The scenario must not have
// skyloop launch it (ardupilot.launch: false).
func (c *Controller) RemoteCommand(origin geom.Geodetic, wd string, sim netip.Addr) (*exec.Cmd, error) {
	if c.p.Launch {
		return nil, fmt.Errorf("%s: ardupilot.launch is true, so `skyloop run` starts ArduCopter itself; "+
			"for ArduCopter on another host set launch: false, listen (an address of the simulator's host or 0.0.0.0) and peer (the firmware hosts)", c.fw.Name)
	}
	if !sim.Is4() {
		return nil, fmt.Errorf("%s: the simulator's address %s is not IPv4 (ArduPilot's JSON interface speaks IPv4)", c.fw.Name, sim)
	}
	if c.p.Port != BasePort {
		return nil, fmt.Errorf("%s: ardupilot.port is %d: ArduCopter sends to %d+10*instance, so a port it is to send to must be %d", c.fw.Name, c.p.Port, BasePort, BasePort)
	}
	// The scenario's launch: false skipped finding ArduCopter; find it on
	// this host (ardupilot.dir, bin or $SKYLOOP_ARDUPILOT_DIR).
	p, bad := *c.p, fields.Errors{}
	p.locate(bad)
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s: %w", c.fw.Name, bad.Err("ardupilot"))
	}
	return c.commandTo(&p, origin, wd, "JSON:"+sim.String())
}

// FirmwareBridge implements firmware.Remote.
func (c *Controller) FirmwareBridge() *firmware.Bridge { return &c.fw }

// commandTo writes skyloop's parameter file into wd and returns the
// ArduCopter command line for its --model (JSON:<simulator address>).
func (c *Controller) commandTo(p *Params, origin geom.Geodetic, wd, model string) (*exec.Cmd, error) {
	ours := filepath.Join(wd, "skyloop.parm")
	if err := os.WriteFile(ours, c.defaultsFile(), 0o644); err != nil {
		return nil, fmt.Errorf("%s: writing ArduCopter's parameters: %w", c.fw.Name, err)
	}
	home := origin.ToGeodetic(c.pos)
	heading := math.Mod(90-c.yaw*180/math.Pi+720, 360) // ArduPilot: degrees clockwise from north
	cmd := exec.Command(p.Bin, "--model", model, "--speedup", strconv.FormatFloat(p.Speedup, 'g', -1, 64),
		"--defaults", strings.Join(append(append([]string(nil), p.Defaults...), ours), ","),
		"-I", strconv.Itoa(c.fw.Inst), "--sysid", strconv.Itoa(c.fw.Inst+1), "--serial0", "tcp:0",
		"--start-time", strconv.Itoa(StartTime),
		"--home", fmt.Sprintf("%.7f,%.7f,%.2f,%.1f", home.Lat, home.Lon, home.Alt, heading))
	cmd.Dir = wd
	return cmd, nil
}

// defaultsFile is the parameter file skyloop adds after the scenario's:
// the quad-X frame, no dataflash log (unless the scenario's parameters
// ask for one: see logOff), then the scenario's parameters.
func (c *Controller) defaultsFile() []byte {
	var b strings.Builder
	b.WriteString("# written by skyloop for " + c.fw.Name + "\nFRAME_CLASS 1\nFRAME_TYPE 1\n")
	if _, ok := c.p.Params["LOG_BACKEND_TYPE"]; !ok {
		b.WriteString(logOff)
	}
	names := make([]string, 0, len(c.p.Params))
	for n := range c.p.Params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%s %s\n", n, strconv.FormatFloat(c.p.Params[n], 'g', -1, 64))
	}
	return []byte(b.String())
}

// logOff turns ArduCopter's dataflash log off. ArduCopter opens its log
// file when it arms, in its log thread (log_io), which runs on the wall
// clock, and its main loop waits for it with hal.scheduler->delay(1),
// which in SITL steps simulated time (AP_Logger_File::
// PrepForArming_start_logging): arming then takes as many 1 ms steps as
// the thread took wall time, a few milliseconds more or less from one run
// to the next, and every run diverges from the first arming on. A
// scenario that sets LOG_BACKEND_TYPE (1: logs in procs/ardupilot-i/logs)
// gets its log, and runs that differ after arming.
const logOff = "LOG_BACKEND_TYPE 0\n"

// Close implements edge.Component: it stops ArduCopter and closes the
// socket.
func (c *Controller) Close() error {
	err := c.fw.Close()
	if c.conn != nil {
		c.conn.Close()
	}
	return err
}

// Period returns the physics step ArduPilot sees.
func (c *Controller) Period() sim.Duration { return c.p.Period }

// Command implements vehicle.Controller: ArduPilot takes its commands over
// MAVLink; the first command a behaviour gives ends the run with an error
// that says so.
func (c *Controller) Command(cmd vehicle.Command) { c.fw.Command(cmd) }

// Err returns why the controller stopped, or nil.
func (c *Controller) Err() error { return c.fw.Err() }

func (c *Controller) fail(err error) { c.fw.Fail(err) }

// Send implements vehicle.Remote: it answers the pending servo packet
// with the state at t.
func (c *Controller) Send(t sim.Time, s *vehicle.Sensors) {
	if c.fw.Err() != nil || !c.pending {
		return
	}
	c.out = State(c.out[:0], t, s, c.pos)
	c.steps++
	if c.steps%digestEvery == 0 {
		c.fw.Transcript.Record(transcript.ToFirmware, c.steps, c.out)
	}
	if _, err := c.conn.WriteToUDPAddrPort(c.out, c.peer); err != nil {
		c.fail(fmt.Errorf("answering: %w", err))
		return
	}
	c.answered = time.Now()
	c.pending = false
}

// Control implements vehicle.Controller: it waits for ArduPilot's next
// servo packet and sets the motors from it.
func (c *Controller) Control(t sim.Time, s *vehicle.Sensors, a *vehicle.Actuators, ev *vehicle.Events) {
	if c.fw.Err() == nil && c.conn != nil {
		c.await()
	}
	if c.restarted {
		c.restarted = false
		ev.Add(t, "restarted", "ArduPilot")
	}
	c.servos.Motors(&a.Motors, c.motors)
	a.NumMotors = c.motors
	// ArduPilot spins the motors when armed (MOT_SPIN_ARM) and stops them
	// disarmed: what the outputs show is all skyloop knows of its state.
	spin := false
	for i := 0; i < c.motors; i++ {
		spin = spin || a.Motors[i] > 0.05
	}
	if spin != c.spin {
		c.spin = spin
		if spin {
			ev.Add(t, "motors_on", "ArduPilot")
		} else {
			ev.Add(t, "motors_off", "ArduPilot")
		}
	}
	c.fw.Ground(t, s, ev)
}

// await reads until a new servo packet arrives: the first one (ArduPilot
// starts sending once booted), or the one that follows the last answer.
// A packet repeating the last frame count means ArduPilot missed the
// answer: it is answered again. A frame count going back from a new
// address is ArduPilot restarted: its packets are taken from then on.
func (c *Controller) await() {
	timeout := time.Duration(c.p.StepTimeout)
	if !c.taken {
		timeout = time.Duration(c.p.ConnectTimeout)
	}
	deadline := time.Now().Add(timeout)
	for {
		c.conn.SetReadDeadline(deadline)
		n, from, err := c.read()
		if err != nil {
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				if c.fw.Proc != nil {
					select {
					case <-c.fw.Proc.Done():
						c.fail(fmt.Errorf("ArduCopter exited (%s)", c.fw.Proc.Status()))
						return
					default:
					}
				}
				if !c.taken {
					msg := fmt.Sprintf("no servo packet within %v of the start", timeout)
					if c.stranger.IsValid() {
						msg += fmt.Sprintf("; packets from %s were dropped: not in ardupilot.peer (%s)", c.stranger, c.p.Peer)
					}
					c.fail(errors.New(msg))
				} else {
					c.fail(fmt.Errorf("no servo packet within %v (wall clock) of answer %d", timeout, c.steps))
				}
			default:
				c.fail(fmt.Errorf("reading servo packets: %w", err))
			}
			return
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		if !c.access.Allowed(from.Addr()) {
			// Not a firmware host the scenario names: dropped, not
			// recorded, and it does not end the wait.
			if !c.stranger.IsValid() {
				c.fw.Log.Warn("ArduPilot physics port: packets dropped", "vehicle", c.fw.Name, "from", from.String(), "peer", c.p.Peer)
			}
			c.stranger = from
			continue
		}
		var sv Servos
		if err := ParseServos(c.rbuf[:n], &sv); err != nil {
			c.fw.Transcript.Record(transcript.FromFirmware, c.steps, c.rbuf[:n])
			c.fail(err)
			return
		}
		switch {
		case !c.taken:
		case from != c.peer || sv.FrameCount < c.last:
			// A restarted ArduPilot (a new socket, its count from 0).
			c.Restarts++
			c.restarted = true
			c.fw.Log.Warn("ArduCopter restarted", "vehicle", c.fw.Name, "from", from, "frame", sv.FrameCount)
		case sv.FrameCount == c.last && c.steps > 0:
			// It resent the packet. ArduPilot resends after a second
			// (wall clock) without an answer, and takes every answer it
			// gets as one more step: answering a resend that it sent
			// before our answer reached it (at the start, while the
			// other vehicles launch, or when skyloop was slow) would
			// hand it a second answer for one step, and its frame
			// count and steps would run ahead of ours by as many
			// answers as the wall clock made it resend. So a resend is
			// answered again only once resendGrace has passed since
			// our answer: then our answer went missing, or it rejected
			// it.
			if c.resent++; c.resent > maxResends {
				c.fail(fmt.Errorf("%w: it asked %d times for answer %d (it rejects our state lines; see its output)", ErrProtocol, c.resent, c.steps))
				return
			}
			if time.Since(c.answered) < resendGrace {
				continue // not in the transcript either: their number is the wall clock's
			}
			c.fw.Transcript.Record(transcript.FromFirmware, c.steps, c.rbuf[:n])
			c.conn.WriteToUDPAddrPort(c.out, c.peer)
			c.answered = time.Now()
			continue
		}
		c.fw.Transcript.Record(transcript.FromFirmware, c.steps, c.rbuf[:n])
		c.resent = 0
		c.servos, c.peer, c.last, c.taken, c.pending = sv, from, sv.FrameCount, true, true
		return
	}
}

// spinReads is how many times read polls the socket before it waits for
// it: ArduPilot answers within some tens of microseconds, less than
// parking the goroutine and waking it costs.
const spinReads = 64

// read reads one packet, polling the socket first. The raw socket and its
// callback are made once (readFn), so that a step allocates nothing.
func (c *Controller) read() (int, netip.AddrPort, error) {
	if c.raw == nil {
		rc, err := c.conn.SyscallConn()
		if err != nil {
			return c.conn.ReadFromUDPAddrPort(c.rbuf)
		}
		c.raw = rc
		c.readFn = func(fd uintptr) bool {
			for spins := 0; ; spins++ {
				c.rn, c.rfrom, c.rerr = syscall.Recvfrom(int(fd), c.rbuf, syscall.MSG_DONTWAIT)
				if c.rerr != syscall.EAGAIN {
					return true
				}
				if spins >= spinReads {
					return false // wait until it is readable
				}
			}
		}
	}
	if err := c.raw.Read(c.readFn); err != nil {
		return 0, netip.AddrPort{}, err
	}
	if c.rerr != nil {
		return 0, netip.AddrPort{}, c.rerr
	}
	sa, ok := c.rfrom.(*syscall.SockaddrInet4)
	if !ok {
		return 0, netip.AddrPort{}, fmt.Errorf("a packet from a non-IPv4 address %v", c.rfrom)
	}
	return c.rn, netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port)), nil
}

// Status implements vehicle.Controller: armed while ArduPilot spins the
// motors (its flight mode and estimate reach skyloop over MAVLink only).
func (c *Controller) Status(tel vehicle.Telemetry) vehicle.Telemetry {
	tel.Mode = vehicle.ModeDisarmed
	if c.spin {
		tel.Armed, tel.Mode = true, vehicle.ModeIdle
		sum := 0.0
		for i := 0; i < c.motors; i++ {
			if p := c.servos.PWM[i]; p > 1000 {
				sum += (float64(p) - 1000) / 1000
			}
		}
		tel.Throttle = sum / float64(c.motors)
	}
	return tel
}

// Estimate implements vehicle.Controller: the physics' readings.
func (c *Controller) Estimate(tel vehicle.Telemetry) vehicle.Telemetry { return tel }

// MAVLinkTCP returns the TCP port of ArduCopter's primary MAVLink link
// (SERIAL0), which the mavlink behaviour relays through the network.
func (c *Controller) MAVLinkTCP() int { return MAVLinkBase + 10*c.fw.Inst }

// ArmingInHeartbeats implements mavlink.ArmingInHeartbeats: the servo
// packets of ArduPilot's SITL carry no armed flag, so the relay logs
// "armed" and "disarmed" from ArduPilot's heartbeats.
func (c *Controller) ArmingInHeartbeats() bool { return true }

// FirmwareHost implements mavlink.FirmwareHost: the address ArduCopter's
// servo packets come from (127.0.0.1, or its host when it runs elsewhere),
// where the relay finds its SERIAL0; the zero Addr before the first.
func (c *Controller) FirmwareHost() netip.Addr { return c.peer.Addr() }
