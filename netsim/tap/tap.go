// Package tap connects TAP devices to the simulated network: every IPv4
// frame a vehicle's namespace sends on its wifi_tap becomes a packet from
// that vehicle, handed to the active backend at the current simulated time;
// every such packet the backend delivers is written to the receiving
// vehicle's TAP.
//
// What travels is the IP packet (its size is the message size); the
// Ethernet header is dropped at the sender and rebuilt at the receiver.
// The backends add their 28-byte IPv4/UDP header on top, as an IP-in-UDP
// tunnel would, so a packet occupies the simulated channel 28 bytes longer
// than on a bare 802.11 link.
//
// Addresses: vehicle i is 10.0.0.(i+1); 10.0.0.255 and 255.255.255.255
// are broadcasts. ARP does not cross the simulated network: every
// namespace has static (permanent) neighbour entries for all the others
// (see orchestrate), so the first packet of a flow is not delayed by an ARP
// exchange whose loss would look like a network fault, and broadcast ARP
// traffic does not load the channel. IPv6 is switched off in the
// namespaces; other non-IPv4 frames are counted and dropped.
package tap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"skyloop/agent"
	"skyloop/edge"
	"skyloop/fields"
	"skyloop/netsim"
	"skyloop/orchestrate"
	"skyloop/sim"
)

// Kind labels TAP traffic in traces and metrics.
const Kind = netsim.KindTap

type frame struct {
	b  []byte
	at time.Time // when it was read
}

// Port is skyloop's end of one TAP device. A goroutine reads frames into an
// inbox; the simulation drains it at tick boundaries.
type Port struct {
	f     io.ReadWriteCloser
	mu    sync.Mutex
	in    []frame
	spare []frame
	err   error
	done  chan struct{}
}

// Open starts reading f (a TAP device: each Read returns one frame, each
// Write sends one).
func Open(f io.ReadWriteCloser) *Port {
	p := &Port{f: f, done: make(chan struct{})}
	go p.read()
	return p
}

func (p *Port) read() {
	defer close(p.done)
	buf := make([]byte, 65536)
	for {
		n, err := p.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) && !errors.Is(err, io.EOF) {
				p.mu.Lock()
				p.err = err
				p.mu.Unlock()
			}
			return
		}
		fr := frame{b: append([]byte(nil), buf[:n]...), at: time.Now()}
		p.mu.Lock()
		p.in = append(p.in, fr)
		p.mu.Unlock()
	}
}

// Drain hands every frame read since the last call to fn, in order, with
// the wall-clock time it was read.
func (p *Port) Drain(fn func(frame []byte, readAt time.Time)) error {
	p.mu.Lock()
	in := p.in
	p.in = p.spare[:0]
	err := p.err
	p.mu.Unlock()
	for i, fr := range in {
		fn(fr.b, fr.at)
		in[i] = frame{}
	}
	p.spare = in[:0]
	return err
}

// Write writes one frame to the TAP (the kernel delivers it to the
// namespace as if received on the interface).
func (p *Port) Write(frame []byte) error {
	_, err := p.f.Write(frame)
	return err
}

// Close closes the device file and waits for the reader.
func (p *Port) Close() error {
	err := p.f.Close()
	<-p.done
	return err
}

// Behavior bridges one vehicle's TAP and the simulated network. The engine
// adds it to every vehicle of a run with isolation: netns.
type Behavior struct {
	port  *Port
	ctx   *agent.Context
	frame []byte // reused for writing
	seq   uint32 // of the frames sent, for trace.csv

	// Counters for summary.json.
	sent, received, ignored, unknownDst, writeErrs int
	readErr                                        error
	// Wall-clock time between reading frames and handing them to the
	// network, since the last Lateness call.
	lateSum time.Duration
	lateN   int
	first   time.Time // wall time of the first tick
}

// Lateness returns and resets the total wall-clock delay between reading
// frames from the TAP and injecting them, and their number.
func (b *Behavior) Lateness() (time.Duration, int) {
	d, n := b.lateSum, b.lateN
	b.lateSum, b.lateN = 0, 0
	return d, n
}

// NewBehavior returns an unbound bridge; Bind attaches the TAP when the
// run starts.
func NewBehavior() *Behavior { return &Behavior{} }

// Bind attaches the TAP port.
func (b *Behavior) Bind(p *Port) { b.port = p }

// Open implements edge.Component: the bridge takes its vehicle's TAP
// device from the run's namespaces.
func (b *Behavior) Open(env *edge.Env) error {
	ns := env.Namespace(int(b.ctx.ID()))
	if ns == nil || ns.TAP == nil {
		return fmt.Errorf("isolation: no TAP device for vehicle %d", b.ctx.ID())
	}
	b.Bind(Open(ns.TAP))
	ns.TAP = nil // the port owns the file now
	return nil
}

// Close implements edge.Component: it closes the TAP device.
func (b *Behavior) Close() error {
	if b.port == nil {
		return nil
	}
	err := b.port.Close()
	b.port = nil
	return err
}

// noParams is the parameter set of the bridge: it has none.
type noParams struct{}

func (*noParams) Validate() fields.Errors { return nil }

// BridgeSpec is the TAP bridge the engine adds to every vehicle of a run
// with isolation: netns (engine.TAPBridge).
var BridgeSpec = agent.Spec{
	Name: "tap",
	Doc: "The bridge between a vehicle's TAP device and the simulated network; the engine adds it to every vehicle " +
		"of a run with isolation: netns (scenarios do not name it).",
	Internal: true,
	Params:   func() agent.Params { return &noParams{} },
	New:      func(agent.Params) agent.Behavior { return NewBehavior() },
}

// Start implements agent.Behavior.
func (b *Behavior) Start(ctx *agent.Context) error {
	b.ctx = ctx
	return nil
}

// Schedule implements agent.Behavior: the TAP is drained at every tick.
func (b *Behavior) Schedule() (period, offset sim.Duration) { return b.ctx.Tick(), 0 }

// Step sends the frames the namespace wrote since the last tick.
func (b *Behavior) Step(ctx *agent.Context) {
	if b.port == nil {
		return
	}
	now := time.Now()
	if b.first.IsZero() {
		b.first = now
	}
	err := b.port.Drain(func(fr []byte, readAt time.Time) {
		// Frames written before the first tick (while the run's other
		// processes were being started) enter at time 0; they are not
		// late, as there was no simulated clock to be late against.
		if readAt.Before(b.first) {
			readAt = b.first
		}
		b.lateSum += now.Sub(readAt)
		b.lateN++
		// Ethernet II with an IPv4 packet: the destination is at 30..33.
		if len(fr) < 34 || binary.BigEndian.Uint16(fr[12:14]) != 0x0800 {
			b.ignored++
			return
		}
		dst, ok := orchestrate.NodeOfIP([4]byte(fr[30:34]))
		if !ok || dst >= len(ctx.Nodes()) {
			b.unknownDst++
			return
		}
		to := netsim.NodeID(dst)
		if dst < 0 {
			to = netsim.Broadcast
		} else if to == ctx.ID() {
			return
		}
		// The IP packet travels; the Ethernet header is rebuilt at the
		// receiver (static neighbours make it predictable).
		ip := fr[14:]
		if n := int(binary.BigEndian.Uint16(fr[16:18])); n >= 20 && n <= len(ip) {
			ip = ip[:n] // without Ethernet padding
		}
		if err := ctx.Send(agent.Message{Dst: to, Kind: Kind, Seq: b.seq, Payload: ip}); err != nil {
			b.unknownDst++
			return
		}
		b.sent++
		b.seq++
	})
	if err != nil && b.readErr == nil {
		b.readErr = err
		ctx.Log().Warn("reading the TAP failed", "err", err)
	}
}

// Receive writes delivered TAP frames to the vehicle's TAP.
func (b *Behavior) Receive(ctx *agent.Context, m *agent.Message) {
	if m.Kind != Kind || b.port == nil {
		return
	}
	// Ethernet II: to this vehicle (or broadcast), from the sender.
	dst := orchestrate.VehicleMAC(int(ctx.ID()))
	if m.Dst == netsim.Broadcast {
		dst = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	b.frame = append(b.frame[:0], dst...)
	b.frame = append(b.frame, orchestrate.VehicleMAC(int(m.Src))...)
	b.frame = append(b.frame, 0x08, 0x00)
	b.frame = append(b.frame, m.Payload...)
	if err := b.port.Write(b.frame); err != nil {
		b.writeErrs++
		return
	}
	b.received++
}

// Finish implements agent.Finisher.
func (b *Behavior) Finish(ctx *agent.Context) map[string]any {
	return map[string]any{"frames_sent": b.sent, "frames_received": b.received, "ignored_non_ipv4": b.ignored,
		"unknown_destination": b.unknownDst, "write_errors": b.writeErrs}
}
