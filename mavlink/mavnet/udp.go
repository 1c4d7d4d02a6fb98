package mavnet

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"syscall"

	"skyloop/agent"
	"skyloop/mavlink"
)

// UDPConfig sets the ports of the real-time UDP transport, with PX4 SITL's
// conventions as defaults: vehicle i listens on BindBase+i and sends to
// OffboardBase+i (SDKs such as MAVSDK listen there) and to GCSPort
// (QGroundControl listens there), and answers whoever talks to it.
type UDPConfig struct {
	Host         string // loopback address, 127.0.0.1
	BindBase     int    // 14580
	OffboardBase int    // 14540
	GCSPort      int    // 14550
}

// DefaultUDPConfig returns PX4 SITL's ports on loopback.
func DefaultUDPConfig() UDPConfig {
	return UDPConfig{Host: "127.0.0.1", BindBase: 14580, OffboardBase: 14540, GCSPort: 14550}
}

type datagram struct {
	from int32
	data []byte
}

// UDPLink is one vehicle's UDP socket, a mavlink.Link. A goroutine reads
// datagrams into an inbox; the simulation drains it at its own pace
// (Drain), so frames enter the deterministic part of the run only at step
// boundaries.
type UDPLink struct {
	conn    *net.UDPConn
	targets []netip.AddrPort

	mu    sync.Mutex
	inbox []datagram
	spare []datagram
	peers []netip.AddrPort // index = Peer.Addr
	err   error
	done  chan struct{}
}

var _ mavlink.Link = (*UDPLink)(nil)

// ListenUDP opens a link bound to bind that sends telemetry to targets.
func ListenUDP(bind netip.AddrPort, targets []netip.AddrPort) (*UDPLink, error) {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(bind))
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("MAVLink UDP port %v is in use (another skyloop, a PX4 SITL?): stop it or move the ports (skyloop run --mavlink-bind-base): %w", bind, err)
	}
	if err != nil {
		return nil, fmt.Errorf("MAVLink UDP port %v: %w", bind, err)
	}
	l := &UDPLink{conn: conn, targets: targets, done: make(chan struct{})}
	go l.read()
	return l, nil
}

// LocalAddr returns the address the link listens on.
func (l *UDPLink) LocalAddr() netip.AddrPort { return l.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func (l *UDPLink) read() {
	defer close(l.done)
	buf := make([]byte, 65536)
	for {
		n, from, err := l.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				l.mu.Lock()
				l.err = err
				l.mu.Unlock()
			}
			return
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		data := append([]byte(nil), buf[:n]...)
		l.mu.Lock()
		idx := -1
		for i, p := range l.peers {
			if p == from {
				idx = i
				break
			}
		}
		if idx < 0 {
			idx = len(l.peers)
			l.peers = append(l.peers, from)
		}
		l.inbox = append(l.inbox, datagram{from: int32(idx), data: data})
		l.mu.Unlock()
	}
}

// Drain hands every datagram received since the last call to fn, in
// arrival order.
func (l *UDPLink) Drain(fn func(from int32, data []byte)) error {
	l.mu.Lock()
	in := l.inbox
	l.inbox = l.spare[:0]
	err := l.err
	l.mu.Unlock()
	for _, d := range in {
		fn(d.from, d.data)
	}
	l.spare = in[:0]
	return err
}

// Send sends a frame to peer addr (an index from Drain).
func (l *UDPLink) Send(addr int32, frame []byte) {
	l.mu.Lock()
	if addr < 0 || int(addr) >= len(l.peers) {
		l.mu.Unlock()
		return
	}
	to := l.peers[addr]
	l.mu.Unlock()
	l.conn.WriteToUDPAddrPort(frame, to) //nolint:errcheck // nobody listening is normal for UDP telemetry
}

// peer returns the address of peer addr (an index from Drain).
func (l *UDPLink) peer(addr int32) netip.AddrPort {
	l.mu.Lock()
	defer l.mu.Unlock()
	if addr < 0 || int(addr) >= len(l.peers) {
		return netip.AddrPort{}
	}
	return l.peers[addr]
}

// Broadcast sends a frame to the default targets and to every peer heard.
func (l *UDPLink) Broadcast(frame []byte) {
	l.mu.Lock()
	peers := l.peers
	l.mu.Unlock()
	for _, t := range l.targets {
		l.conn.WriteToUDPAddrPort(frame, t) //nolint:errcheck // see Send
	}
	for _, p := range peers {
		known := false
		for _, t := range l.targets {
			known = known || t == p
		}
		if !known {
			l.conn.WriteToUDPAddrPort(frame, p) //nolint:errcheck // see Send
		}
	}
}

// Close closes the socket and waits for the reader to stop.
func (l *UDPLink) Close() error {
	err := l.conn.Close()
	<-l.done
	return err
}

// UDPAttacher returns a function for engine.Options.Attach that gives every
// MAVLink vehicle behaviour of a run a UDP link with the ports of cfg
// (vehicle i = node id i).
func UDPAttacher(cfg UDPConfig) func(node agent.NodeRef, b agent.Behavior) (io.Closer, error) {
	return func(node agent.NodeRef, b agent.Behavior) (io.Closer, error) {
		vb, ok := b.(*Vehicle)
		if !ok {
			return nil, nil
		}
		host, err := netip.ParseAddr(cfg.Host)
		if err != nil {
			return nil, fmt.Errorf("MAVLink UDP host %q: %w", cfg.Host, err)
		}
		i := int(node.ID)
		port := func(p int) (netip.AddrPort, error) {
			if p <= 0 || p > 65535 {
				return netip.AddrPort{}, fmt.Errorf("vehicle %s: UDP port %d out of range", node.Name, p)
			}
			return netip.AddrPortFrom(host, uint16(p)), nil
		}
		bind, err := port(cfg.BindBase + i)
		if err != nil {
			return nil, err
		}
		off, err := port(cfg.OffboardBase + i)
		if err != nil {
			return nil, err
		}
		gcs, err := port(cfg.GCSPort)
		if err != nil {
			return nil, err
		}
		l, err := ListenUDP(bind, []netip.AddrPort{off, gcs})
		if err != nil {
			return nil, err
		}
		vb.AttachLink(l)
		return l, nil
	}
}
