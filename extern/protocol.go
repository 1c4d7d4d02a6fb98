// Package extern lets processes outside skyloop take part in a run in
// lockstep: mission logic in any language (type 0 subscribers) sees
// simulated time, its vehicle's telemetry and the messages the simulated
// network delivers to it, and sends packets and vehicle commands, exactly
// like a built-in agent. The protocol (docs/protocol.md) is SPEC.md B's tick
// protocol over a Unix socket or TCP on loopback: length-prefixed JSON
// frames, versioned.
package extern

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Version is the protocol version; a client's hello must carry it.
const Version = 1

// MaxFrame is the largest frame either side accepts (1 MiB): a longer
// length prefix is a protocol error, not an allocation.
const MaxFrame = 1 << 20

// Message types.
const (
	// Client to server.
	TypeHello   = "hello"   // first frame: version, token, role, vehicles
	TypeSend    = "send"    // hand a packet to the network (ENQUEUE)
	TypeCommand = "command" // a vehicle command
	TypeEvent   = "event"   // a line for events.csv
	TypeDone    = "done"    // END-TICK: the agent's step is over
	// Server to client.
	TypeWelcome = "welcome" // answer to hello
	TypeTick    = "tick"    // BEGIN-TICK: time, telemetry, deliveries
	TypeEnd     = "end"     // the run is over
	TypeError   = "error"   // the server refuses something and closes
	// Network phase (type 1 subscribers).
	TypeNetTick = "net_tick" // server: time, positions, packets sent since the last one
	TypeNetDone = "net_done" // client: receptions, drops and released packets up to that time
	// Relays (a hello with batch set): many frames in one, both ways.
	TypeBatch = "batch"
)

// Frame is one protocol message. Which fields matter depends on Type; the
// others are left out of the JSON.
type Frame struct {
	Type string `json:"type"`

	// hello
	Version  int    `json:"version,omitempty"`
	Token    string `json:"token,omitempty"`
	Role     int    `json:"role,omitempty"`     // 0: mission logic (the only role served so far)
	Vehicles []int  `json:"vehicles,omitempty"` // node ids the client steps
	Name     string `json:"name,omitempty"`     // free text for messages
	// Batch, in a hello, asks for the ticks of all the connection's
	// vehicles in one batch frame per round, and promises its answers
	// in batch frames too (a relay, docs/cluster.md).
	Batch bool `json:"batch,omitempty"`

	// batch: the frames it carries, in order (no hello, welcome or
	// batch among them).
	Frames []Frame `json:"frames,omitempty"`

	// welcome
	TickNs int64       `json:"tick_ns,omitempty"`
	Nodes  []NodeInfo  `json:"nodes,omitempty"`
	Origin *[3]float64 `json:"origin,omitempty"` // lat, lon, alt of the local origin

	// tick, send, command, event, done: the node the frame is about
	Vehicle int `json:"vehicle"`

	// tick
	T          int64      `json:"t,omitempty"` // simulated time, ns
	Telemetry  *Telemetry `json:"telemetry,omitempty"`
	Deliveries []Delivery `json:"deliveries,omitempty"`

	// send
	Dst     *int   `json:"dst,omitempty"` // node id; -1 = broadcast
	Port    int    `json:"port,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Payload []byte `json:"payload,omitempty"` // base64 in JSON
	Size    int    `json:"size,omitempty"`    // bytes on the wire if more than the payload
	At      int64  `json:"at,omitempty"`      // send time within the current tick, ns (0 = the tick's start)

	// command
	Cmd   string      `json:"cmd,omitempty"` // arm, disarm, takeoff, goto, velocity, hold, land, rtl
	Pos   *[3]float64 `json:"pos,omitempty"`
	Vel   *[3]float64 `json:"vel,omitempty"`
	Alt   float64     `json:"alt,omitempty"`
	Yaw   *float64    `json:"yaw,omitempty"`
	Speed float64     `json:"speed,omitempty"`

	// event
	Detail string `json:"detail,omitempty"`

	// done: wake at this time (ns; 0 = at the agent's next step) or
	// earlier when a message arrives and WakeOnRecv is set.
	WakeAt     int64 `json:"wake_at,omitempty"`
	WakeOnRecv bool  `json:"wake_on_recv,omitempty"`

	// end, error
	Reason string `json:"reason,omitempty"`

	// net_tick
	Positions [][3]float64 `json:"positions,omitempty"` // every node, by id, when they changed
	Packets   []Packet     `json:"packets,omitempty"`
	// net_done
	Events  []NetEvent `json:"events,omitempty"`
	Release []uint64   `json:"release,omitempty"` // packets the simulator is done with
}

// Packet is a packet handed to an external network simulator.
type Packet struct {
	ID      uint64 `json:"id"`
	Src     int    `json:"src"`
	Dst     int    `json:"dst"` // -1 broadcast
	Port    int    `json:"port"`
	Kind    string `json:"kind"`
	Seq     uint32 `json:"seq"`
	TSend   int64  `json:"t_send"`
	Size    int    `json:"size"`
	Payload []byte `json:"payload"`
}

// NetEvent is an external network simulator's verdict on one packet at one
// receiver: delivered at At, or dropped for Drop (a reason such as range,
// collision, queue, rx_error).
type NetEvent struct {
	ID   uint64 `json:"id"`
	Dst  int    `json:"dst"`
	At   int64  `json:"at"`
	Drop string `json:"drop,omitempty"`
}

// NodeInfo describes a node of the run in the welcome frame.
type NodeInfo struct {
	ID      int    `json:"id"`
	Name    string `json:"name"`
	Group   string `json:"group,omitempty"`
	Index   int    `json:"index"`
	Vehicle bool   `json:"vehicle"`
}

// Telemetry is a vehicle's state as its autopilot estimates it.
type Telemetry struct {
	Pos     [3]float64 `json:"pos"` // x east, y north, z up, m
	Vel     [3]float64 `json:"vel"`
	Yaw     float64    `json:"yaw"` // rad, counter-clockwise from east
	Mode    string     `json:"mode"`
	Armed   bool       `json:"armed"`
	Landed  bool       `json:"landed"`
	Battery float64    `json:"battery"` // fraction left, 0..1 (0 where not modelled)
}

// Delivery is a packet the network delivered to the agent's node.
type Delivery struct {
	Src     int    `json:"src"`
	Dst     int    `json:"dst"` // -1 for a broadcast
	Port    int    `json:"port"`
	Kind    string `json:"kind"`
	Seq     uint32 `json:"seq"`
	TSend   int64  `json:"t_send"`
	TArrive int64  `json:"t_arrive"`
	Size    int    `json:"size"`
	Payload []byte `json:"payload"`
}

// ErrFrameTooLarge reports a length prefix above MaxFrame.
var ErrFrameTooLarge = errors.New("frame larger than the 1 MiB limit")

// ReadFrame reads one length-prefixed frame (a 4-byte big-endian length,
// then that many bytes of JSON) into buf, growing it as needed, and decodes
// it.
func ReadFrame(r *bufio.Reader, buf *[]byte) (*Frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return nil, fmt.Errorf("%w (length prefix %d)", ErrFrameTooLarge, n)
	}
	if cap(*buf) < int(n) {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return DecodeFrame(b)
}

// DecodeFrame decodes one frame's JSON and checks that it names a known
// type.
func DecodeFrame(b []byte) (*Frame, error) {
	f := &Frame{}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("malformed frame: %w", err)
	}
	switch f.Type {
	case TypeHello, TypeSend, TypeCommand, TypeEvent, TypeDone, TypeWelcome, TypeTick, TypeEnd, TypeError, TypeNetTick, TypeNetDone:
		if len(f.Frames) > 0 {
			return nil, fmt.Errorf("malformed frame: a %s frame carrying frames", f.Type)
		}
	case TypeBatch:
		for i := range f.Frames {
			switch t := f.Frames[i].Type; t {
			case TypeTick, TypeSend, TypeCommand, TypeEvent, TypeDone, TypeError:
				if len(f.Frames[i].Frames) > 0 {
					return nil, fmt.Errorf("malformed frame: batch frame %d (%s) carries frames", i, t)
				}
			default:
				return nil, fmt.Errorf("malformed frame: batch frame %d has type %q (a batch carries tick, send, command, event, done and error frames)", i, t)
			}
		}
	case "":
		return nil, errors.New("malformed frame: no type")
	default:
		return nil, fmt.Errorf("malformed frame: unknown type %q", f.Type)
	}
	return f, nil
}

// AppendFrame appends f, length prefix included, to b.
func AppendFrame(b []byte, f *Frame) ([]byte, error) {
	body, err := json.Marshal(f)
	if err != nil {
		return b, fmt.Errorf("encoding a %s frame: %w", f.Type, err)
	}
	if len(body) > MaxFrame {
		return b, fmt.Errorf("%w: a %s frame of %d bytes", ErrFrameTooLarge, f.Type, len(body))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	return append(b, body...), nil
}

// Batcher gathers frames into batch frames of at most MaxFrame bytes.
// Add appends one frame; Take returns the length-prefixed batch frames
// gathered so far and starts over.
type Batcher struct {
	body []byte // the open batch's JSON, without its closing "]}"
	n    int    // frames in the open batch
	out  []byte // finished batch frames, length-prefixed
}

const batchHead = `{"type":"batch","frames":[`

// Add appends f.
func (b *Batcher) Add(f *Frame) error {
	j, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encoding a %s frame: %w", f.Type, err)
	}
	if len(batchHead)+len(j)+2 > MaxFrame {
		return fmt.Errorf("%w: a %s frame of %d bytes", ErrFrameTooLarge, f.Type, len(j))
	}
	if b.n > 0 && len(b.body)+1+len(j)+2 > MaxFrame {
		b.close()
	}
	if b.n == 0 {
		b.body = append(b.body[:0], batchHead...)
	} else {
		b.body = append(b.body, ',')
	}
	b.body = append(b.body, j...)
	b.n++
	return nil
}

func (b *Batcher) close() {
	if b.n == 0 {
		return
	}
	b.body = append(b.body, "]}"...)
	b.out = binary.BigEndian.AppendUint32(b.out, uint32(len(b.body)))
	b.out = append(b.out, b.body...)
	b.body, b.n = b.body[:0], 0
}

// Pending reports whether frames were added since the last Take.
func (b *Batcher) Pending() bool { return b.n > 0 || len(b.out) > 0 }

// Take returns the batch frames (length prefixes included) and starts
// over; the slice is valid until the next Add.
func (b *Batcher) Take() []byte {
	b.close()
	out := b.out
	b.out = b.out[:0]
	return out
}
