// Package netsim is the network side of skyloop: packets, deliveries, the
// Backend interface every network model implements, and the tracer that
// sees every transmission, reception and drop whatever backend ran.
//
// The interface is pull-style: the kernel hands a backend the
// packets sent at the current tick with Send, tells it where nodes are with
// SetPositions, and asks with AdvanceTo for everything that has arrived by
// a time. A backend never calls back into agents or physics.
package netsim

import (
	"fmt"
	"io"
	"math"

	"skyloop/geom"
	"skyloop/sim"
)

// NodeID identifies a network node. Vehicles are nodes 0..N-1 in scenario
// order; extra nodes such as ground stations follow.
type NodeID int32

// Broadcast is the destination of a packet meant for every other node.
const Broadcast NodeID = -1

// HeaderBytes is the UDP (8) + IPv4 (20) header counted on the wire on
// top of every payload.
const HeaderBytes = 28

// MaxPayload is the largest application payload of one datagram, in bytes:
// a UDP/IPv4 datagram carries at most 65535 - 20 (IPv4 header) - 8 (UDP
// header) = 65507 bytes. It bounds every packet size whatever its source
// (a built-in agent, an external process), so that no size can overflow
// the time arithmetic of a backend (size*8/rate) downstream.
const MaxPayload = 65535 - HeaderBytes

// Kind labels a packet's traffic class for traces and metrics.
type Kind uint8

// The kinds. They are a fixed list, so that a kind's number never depends
// on which packages a program links.
const (
	KindData    Kind = iota // unclassified application data
	KindState               // vehicle state updates (beacons)
	KindBG                  // background load
	KindCmd                 // commands from a ground station or controller
	KindTelem               // telemetry towards a ground station
	KindMAVLink             // MAVLink frames
	KindTap                 // IP packets from a vehicle's TAP device (isolation: netns)
	KindAODV                // AODV control packets (RREQ, RREP, RERR, HELLO)
	KindOLSR                // OLSR control packets (HELLO, TC)
)

var kindNames = [...]string{"data", "state", "bg", "cmd", "telem", "mavlink", "tap", "aodv", "olsr"}

// String returns the kind's name as written in trace.csv.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind%d", k)
}

// KindByName returns the kind with the given name.
func KindByName(name string) (Kind, bool) {
	for i, n := range kindNames {
		if n == name {
			return Kind(i), true
		}
	}
	return 0, false
}

// NumKinds returns the number of kinds.
func NumKinds() int { return len(kindNames) }

// Packet is one application datagram. The kernel fills it from a PacketPool at the
// sender; from Send on, the backend owns it and returns it to the pool with
// Free when no delivery refers to it any more.
type Packet struct {
	ID      uint64   // unique within a run, in send order
	Src     NodeID   // sender
	Dst     NodeID   // receiver, or Broadcast
	Port    uint16   // application port (informational for most backends)
	Kind    Kind     // traffic class
	Seq     uint32   // sender's sequence number for this kind
	TGen    sim.Time // generation time of the information carried
	TSend   sim.Time // time the sender handed it to the network
	Size    int      // application payload size in bytes (>= len(Payload))
	Payload []byte   // payload content; may be shorter than Size (padding)

	// Refs is scratch space for the owning backend's reference counting;
	// the kernel never reads it.
	Refs int32

	pool *PacketPool
}

// WireBytes returns the size on the wire at the IP layer: payload plus
// UDP/IPv4 headers.
func (p *Packet) WireBytes() int { return p.Size + HeaderBytes }

// Free returns the packet to its pool. It must be called exactly once, by
// the backend, when nothing refers to the packet any more.
func (p *Packet) Free() {
	if p.pool != nil {
		p.pool.put(p)
	}
}

// PacketPool recycles packets so that steady-state runs do not allocate. It is not
// safe for concurrent use: the network side of a run is single-threaded.
type PacketPool struct {
	free []*Packet
	live int
	// OnFree, when set, is called with every packet returned to the pool,
	// before it is recycled: a layer that lends packets to another backend
	// (netsim/routing) learns there when the loan ends.
	OnFree func(p *Packet)
}

// Get returns a zeroed packet with an empty payload of capacity >= n.
func (pl *PacketPool) Get(n int) *Packet {
	pl.live++
	var p *Packet
	if k := len(pl.free); k > 0 {
		p = pl.free[k-1]
		pl.free = pl.free[:k-1]
		buf := p.Payload[:0]
		*p = Packet{Payload: buf}
	} else {
		p = &Packet{}
	}
	if cap(p.Payload) < n {
		p.Payload = make([]byte, 0, max(n, 64))
	}
	p.pool = pl
	return p
}

func (pl *PacketPool) put(p *Packet) {
	if p.pool != pl {
		panic("netsim: packet freed twice or into the wrong pool")
	}
	if pl.OnFree != nil {
		pl.OnFree(p)
	}
	p.pool = nil
	pl.live--
	pl.free = append(pl.free, p)
}

// Live returns the number of packets taken and not yet freed; tests use it
// to prove that backends release every packet.
func (pl *PacketPool) Live() int { return pl.live }

// Delivery is a packet arriving at one receiver.
type Delivery struct {
	P   *Packet
	Dst NodeID   // the receiver (differs from P.Dst for broadcasts)
	At  sim.Time // exact arrival time
	// RxPower is the received power in dBm where the backend models it,
	// NaN otherwise.
	RxPower float64
}

// NoPower is the RxPower of backends that do not model radio power.
var NoPower = math.NaN()

// NodeInfo describes a node to a backend at start.
type NodeInfo struct {
	ID      NodeID
	Name    string
	Pos     geom.Vec3
	Vehicle bool // false for fixed nodes such as ground stations
}

// Work is what a backend's radio model did: the frames it put on the air
// (data and acknowledgements) and their arrivals at the nodes within
// reception range, each a decision of a receiver's PHY (lock, busy or
// drop). A packet-level radio model spends its time on the arrivals.
type Work struct {
	Transmissions uint64
	Arrivals      uint64
}

// WorkCounter is implemented by backends that count their Work (the
// native Wi-Fi model). Work is called from the goroutine that calls
// AdvanceTo, between two calls of it.
type WorkCounter interface {
	Work() Work
}

// Backend is a network model. All methods are called from one goroutine,
// in time order: Send and SetPositions at the current tick time t, which is
// never earlier than the last AdvanceTo.
type Backend interface {
	// Start prepares the backend for the given nodes.
	Start(nodes []NodeInfo) error
	// Send hands the backend a packet sent at p.TSend. The backend owns p
	// from now on and must free it.
	Send(p *Packet)
	// SetPositions tells the backend where every node is at time t;
	// pos is indexed by NodeID and only valid during the call.
	SetPositions(t sim.Time, pos []geom.Vec3)
	// AdvanceTo processes every network event up to and including t and
	// returns the deliveries that arrived in that span, in arrival order
	// (ties in the order the backend decided them). The slice and the
	// packets it refers to stay valid until the next call to any method.
	AdvanceTo(t sim.Time) ([]Delivery, error)
	// Close releases the backend's resources and frees packets still in
	// flight.
	Close() error
}

// Stepper is implemented by backends that can say when their next internal
// event is due, so that a layer above them (netsim/routing) can advance
// them event by event and react at the exact time of each delivery.
type Stepper interface {
	// NextEvent returns the time of the earliest pending event; ok is false
	// when nothing is pending.
	NextEvent() (t sim.Time, ok bool)
}

// Clocked is implemented by backends with a clock of their own (an
// external simulator's): Clock returns the time it has reached.
type Clocked interface {
	Clock() sim.Time
}

// FileUser is implemented by backends that write files of their own (a
// capture); the runner gives them a way to create files in the run
// directory before Start (nil when the run writes none). Write errors
// surface when the run directory is committed.
type FileUser interface {
	SetFiles(open func(name string) (io.Writer, error))
}
