package mavnet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
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
// does not see a ground station before one speaks).
type udpFw struct {
	l     *UDPLink
	heard bool
}

func (u *udpFw) Drain(fn func(data []byte)) error {
	if !u.heard {
		u.l.Broadcast(nil)
	}
	return u.l.Drain(func(_ int32, data []byte) {
		u.heard = true
		fn(data)
	})
}

func (u *udpFw) Write(b []byte) { u.l.Broadcast(b) }
func (u *udpFw) Close() error   { return u.l.Close() }

// tcpFw is the relay's connection to a TCP firmware link (ArduPilot): a
// goroutine connects (again, when the firmware restarts), reads the byte
// stream and queues whole frames; the simulation drains them at its steps.
type tcpFw struct {
	addr string
	mu   sync.Mutex
	conn net.Conn
	in   []byte // whole frames received
	err  error
	done chan struct{}
	stop chan struct{}
}

func dialFirmwareTCP(port int) *tcpFw {
	t := &tcpFw{addr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)).String(),
		done: make(chan struct{}), stop: make(chan struct{})}
	go t.run()
	return t
}

// maxPending bounds what the relay keeps of a firmware's frames between
// two steps.
const maxPending = 1 << 20

func (t *tcpFw) run() {
	defer close(t.done)
	buf := make([]byte, 16384)
	for {
		select {
		case <-t.stop:
			return
		default:
		}
		conn, err := net.DialTimeout("tcp", t.addr, time.Second)
		if err != nil {
			select { // the firmware is not listening yet: try again
			case <-t.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		t.mu.Lock()
		t.conn = conn
		t.mu.Unlock()
		var part []byte
		for {
			n, err := conn.Read(buf)
			if n > 0 {
				part = append(part, buf[:n]...)
				whole, _ := mavlink.WholeFrames(part)
				t.mu.Lock()
				if len(t.in)+whole <= maxPending {
					t.in = append(t.in, part[:whole]...)
				}
				t.mu.Unlock()
				part = append(part[:0], part[whole:]...)
			}
			if err != nil {
				break
			}
		}
		conn.Close()
		t.mu.Lock()
		t.conn = nil
		t.mu.Unlock()
	}
}

func (t *tcpFw) Drain(fn func(data []byte)) error {
	t.mu.Lock()
	in := t.in
	t.in = nil
	err := t.err
	t.mu.Unlock()
	if len(in) > 0 {
		fn(in)
	}
	return err
}

func (t *tcpFw) Write(b []byte) {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c != nil {
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.Write(b) //nolint:errcheck // a broken link is found by the reader, which reconnects
	}
}

func (t *tcpFw) Close() error {
	close(t.stop)
	t.mu.Lock()
	if t.conn != nil {
		t.conn.Close()
	}
	t.mu.Unlock()
	<-t.done
	return nil
}

// openFirmware connects the relay to the vehicle's firmware.
func openFirmware(fw any) (fwConn, error) {
	if f, ok := fw.(mavlink.FirmwareTCP); ok {
		return dialFirmwareTCP(f.MAVLinkTCP()), nil
	}
	f, ok := fw.(mavlink.Firmware)
	if !ok {
		return nil, errors.New("internal error: firmware without a MAVLink link")
	}
	lo := netip.MustParseAddr("127.0.0.1")
	l, err := ListenUDP(netip.AddrPortFrom(lo, 0), []netip.AddrPort{netip.AddrPortFrom(lo, uint16(f.MAVLinkPort()))})
	if err != nil {
		return nil, fmt.Errorf("relay to the firmware's MAVLink port: %w", err)
	}
	return &udpFw{l: l}, nil
}
