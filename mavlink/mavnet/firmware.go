package mavnet

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"

	"skyloop/mavlink"
)

// fwConn is the relay's connection to the firmware, closed by the
// Vehicle.
type fwConn interface {
	mavlink.FirmwareLink
	Close() error
}

// udpFw is the relay's socket to a UDP firmware link (PX4). Until the
// firmware has sent to it, each Drain also sends it an empty datagram:
// PX4 takes the first sender on loopback as its partner and talks to it
// from then on (an empty datagram carries no message, so the firmware
// does not see a ground station before one speaks). A firmware on another
// host takes the first sender from anywhere. With mavlink.FirmwareHost the
// socket is opened once the firmware's host is known (PX4 has connected
// to the simulator port): on loopback for a firmware there, on every
// address for one elsewhere.
//
// Only the firmware's datagrams (from its MAVLink port) are taken, and
// frames go to it only: a stranger sending to the relay's socket neither
// reaches the firmware nor hears it.
type udpFw struct {
	l      *UDPLink
	heard  bool
	port   uint16
	host   func() netip.Addr // where the firmware runs; invalid: not yet known
	target netip.AddrPort    // the firmware's MAVLink port, once l is open
}

func (u *udpFw) Drain(fn func(data []byte)) error {
	if u.l == nil {
		h := u.host()
		if !h.IsValid() {
			return nil
		}
		bind := netip.IPv4Unspecified()
		if h.IsLoopback() {
			bind = h
		}
		u.target = netip.AddrPortFrom(h, u.port)
		l, err := ListenUDP(netip.AddrPortFrom(bind, 0), nil)
		if err != nil {
			return fmt.Errorf("relay to the firmware's MAVLink port at %s: %w", h, err)
		}
		u.l = l
	}
	if !u.heard {
		u.Write(nil)
	}
	return u.l.Drain(func(from int32, data []byte) {
		if u.l.peer(from) != u.target {
			return
		}
		u.heard = true
		fn(data)
	})
}

func (u *udpFw) Write(b []byte) {
	if u.l != nil {
		u.l.conn.WriteToUDPAddrPort(b, u.target) //nolint:errcheck // nobody listening is normal for UDP
	}
}

func (u *udpFw) Close() error {
	if u.l == nil {
		return nil
	}
	return u.l.Close()
}

// tcpFw is the relay's connection to a TCP firmware link (ArduPilot's
// SERIAL0). It does everything on the simulation's goroutine, at the
// relay's steps, so that what crosses the link at a step depends on
// simulated time only:
//
//   - It connects at a step, never in between: from its second step on
//     (the first is at time 0, before the firmware is known to run), again
//     after the firmware closed the link (a reboot). ArduPilot accepts a
//     connection when its main loop next polls SERIAL0, so a connection
//     made while it waits for its physics answer is accepted at a
//     simulated time fixed by the run, not by when a dialler got round to
//     it.
//   - It reads without waiting: every byte the socket holds. At a relay
//     step ArduPilot waits for its physics answer (the engine's agents run
//     after the vehicle step that took ArduPilot's servo packet), and
//     ArduPilot wrote its MAVLink for the steps before that servo packet
//     (its main loop writes SERIAL0 in _run_io_procs, on the same thread,
//     before it sends servos): on loopback, those bytes are in the socket
//     when the servo packet has arrived. A reader goroutine, as before,
//     handed the step whatever it had got round to reading.
//
// A firmware on another host (mavlink.FirmwareHost) is dialled at its
// host once that is known (the firmware's first physics packet); the link
// then crosses a real network, and what arrives by a step depends on it.
type tcpFw struct {
	port   uint16
	host   func() netip.Addr // nil: loopback
	conn   *net.TCPConn
	raw    syscall.RawConn
	steps  int    // Drain calls
	part   []byte // the start of a frame not yet whole
	in     []byte // whole frames of this step
	buf    []byte
	readFn func(fd uintptr) bool
	rerr   error // of the last read: nil, or the link broke
}

func dialFirmwareTCP(port int, host func() netip.Addr) *tcpFw {
	t := &tcpFw{port: uint16(port), host: host, buf: make([]byte, 16384)}
	t.readFn = t.readAll
	return t
}

// maxPending bounds what the relay keeps of a firmware's frames between
// two steps.
const maxPending = 1 << 20

// connect dials the firmware: on loopback the handshake is done when Dial
// returns, refused at once when nothing listens (tried again at the next
// step). A firmware on another host is dialled once its host is known.
func (t *tcpFw) connect() {
	addr := netip.MustParseAddr("127.0.0.1")
	if t.host != nil {
		if addr = t.host(); !addr.IsValid() {
			return
		}
	}
	c, err := net.DialTimeout("tcp", netip.AddrPortFrom(addr, t.port).String(), time.Second)
	if err != nil {
		return
	}
	tc := c.(*net.TCPConn)
	raw, err := tc.SyscallConn()
	if err != nil {
		tc.Close()
		return
	}
	tc.SetNoDelay(true) //nolint:errcheck // a TCP socket takes it
	t.conn, t.raw, t.part = tc, raw, t.part[:0]
}

// readAll reads what the socket holds, without waiting (it reports done
// at EAGAIN), and keeps the whole frames. It reads at most 2*maxPending
// bytes a step, so that a firmware that never stops writing cannot hold
// the tick; the rest waits for the next step.
func (t *tcpFw) readAll(fd uintptr) bool {
	t.rerr = nil
	for read := 0; read < 2*maxPending; {
		n, err := syscall.Read(int(fd), t.buf)
		if n > 0 {
			read += n
			t.part = append(t.part, t.buf[:n]...)
			whole, _ := mavlink.WholeFrames(t.part)
			if len(t.in)+whole <= maxPending {
				t.in = append(t.in, t.part[:whole]...)
			}
			t.part = append(t.part[:0], t.part[whole:]...)
			continue
		}
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
		case err != nil:
			t.rerr = err
		default: // n == 0: the firmware closed the link
			t.rerr = io.EOF
		}
		return true
	}
	return true
}

func (t *tcpFw) Drain(fn func(data []byte)) error {
	t.steps++
	if t.conn == nil && t.steps > 1 {
		t.connect()
	}
	if t.conn != nil {
		if err := t.raw.Read(t.readFn); err != nil {
			t.rerr = err
		}
		if t.rerr != nil { // closed (a reboot): connect again at a later step
			t.conn.Close()
			t.conn, t.raw = nil, nil
		}
	}
	if len(t.in) > 0 {
		in := t.in
		t.in = nil // the relay's packets may keep it
		fn(in)
	}
	return nil
}

func (t *tcpFw) Write(b []byte) {
	if t.conn != nil {
		t.conn.SetWriteDeadline(time.Now().Add(time.Second))
		t.conn.Write(b) //nolint:errcheck // a broken link is found by the next read, which reconnects
	}
}

func (t *tcpFw) Close() error {
	if t.conn != nil {
		t.conn.Close()
		t.conn = nil
	}
	return nil
}

// openFirmware connects the relay to the vehicle's firmware.
func openFirmware(fw any) (fwConn, error) {
	if f, ok := fw.(mavlink.FirmwareTCP); ok {
		var host func() netip.Addr
		if h, ok := fw.(mavlink.FirmwareHost); ok {
			host = h.FirmwareHost
		}
		return dialFirmwareTCP(f.MAVLinkTCP(), host), nil
	}
	f, ok := fw.(mavlink.Firmware)
	if !ok {
		return nil, errors.New("internal error: firmware without a MAVLink link")
	}
	host := func() netip.Addr { return netip.AddrFrom4([4]byte{127, 0, 0, 1}) }
	if h, ok := fw.(mavlink.FirmwareHost); ok {
		host = h.FirmwareHost // known once the firmware has connected
	}
	// Opened at a step, once the firmware's host is known.
	return &udpFw{port: uint16(f.MAVLinkPort()), host: host}, nil
}
