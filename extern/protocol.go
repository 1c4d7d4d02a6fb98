// Package extern lets processes outside skyloop take part in a run in
// lockstep: mission logic in any language (type 0 subscribers) sees
// simulated time, its vehicle's telemetry and the messages the simulated
// network delivers to it, and sends packets and vehicle commands, exactly
// like a built-in agent. The protocol (docs/protocol.md) is a lockstep tick
// protocol (agents and network take turns, never at once) over a Unix socket or TCP on loopback: length-prefixed JSON
// frames, versioned.
package extern

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unsafe"
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
	// in batch frames too (a relay, docs/remote.md).
	Batch bool `json:"batch,omitempty"`

	// batch: the frames it carries, in order (no hello, welcome or
	// batch among them).
	Frames []Frame `json:"frames,omitempty"`

	// welcome
	TickNs int64      `json:"tick_ns,omitempty"`
	Nodes  []NodeInfo `json:"nodes,omitempty"`
	Origin *Vec3      `json:"origin,omitempty"` // lat, lon, alt of the local origin

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
	Cmd   string   `json:"cmd,omitempty"` // arm, disarm, takeoff, goto, velocity, hold, land, rtl
	Pos   *Vec3    `json:"pos,omitempty"`
	Vel   *Vec3    `json:"vel,omitempty"`
	Alt   float64  `json:"alt,omitempty"`
	Yaw   *float64 `json:"yaw,omitempty"`
	Speed float64  `json:"speed,omitempty"`

	// event
	Detail string `json:"detail,omitempty"`

	// done: wake at this time (ns; 0 = at the agent's next step) or
	// earlier when a message arrives and WakeOnRecv is set.
	WakeAt     int64 `json:"wake_at,omitempty"`
	WakeOnRecv bool  `json:"wake_on_recv,omitempty"`

	// end, error
	Reason string `json:"reason,omitempty"`
	// Failed, in an end frame, says the run failed (Reason says why); a
	// relay then exits with an error.
	Failed bool `json:"failed,omitempty"`

	// net_tick
	Positions []Vec3   `json:"positions,omitempty"` // every node, by id, when they changed
	Packets   []Packet `json:"packets,omitempty"`
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
	Pos     Vec3    `json:"pos"` // x east, y north, z up, m
	Vel     Vec3    `json:"vel"`
	Yaw     float64 `json:"yaw"` // rad, counter-clockwise from east
	Mode    string  `json:"mode"`
	Armed   bool    `json:"armed"`
	Landed  bool    `json:"landed"`
	Battery float64 `json:"battery"` // fraction left, 0..1 (0 where not modelled)
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
// type. Every field must have its type: a vector exactly three finite
// numbers (Vec3), an integer field an integer in its range; a frame that
// breaks a rule is refused with an error naming its type, its node and the
// field (for a batch, the frame within it).
func DecodeFrame(b []byte) (*Frame, error) {
	f := &Frame{}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, decodeError(b, err)
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

// Vec3 is a vector of a frame: exactly three finite numbers, [x, y, z] (or
// [lat, lon, alt] for a welcome's origin). Anything else (fewer or more
// numbers, null, a string) does not decode: DecodeFrame's error names the
// field.
type Vec3 [3]float64

var vec3Type = reflect.TypeFor[Vec3]()

// UnmarshalJSON implements json.Unmarshaler: b must be an array of exactly
// three numbers within float64's range.
func (v *Vec3) UnmarshalJSON(b []byte) error {
	if got := parseVec3(b, v); got != "" {
		return &json.UnmarshalTypeError{Value: got, Type: vec3Type}
	}
	return nil
}

// parseVec3 reads the JSON array b into v and returns "" or, when b is not
// three finite numbers, what it is instead. b is valid JSON (the decoder
// checked it before calling UnmarshalJSON), so a number's text is in the
// JSON grammar, a subset of strconv.ParseFloat's.
func parseVec3(b []byte, v *Vec3) string {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return jsonKind(b[i:])
	}
	n := 0
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return "an empty array"
	}
	for i < len(b) {
		j := i
		for j < len(b) && strings.IndexByte("+-.0123456789eE", b[j]) >= 0 {
			j++
		}
		if j == i {
			return fmt.Sprintf("an array holding %s at index %d", jsonKind(b[i:]), n)
		}
		x, err := strconv.ParseFloat(string(b[i:j]), 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return fmt.Sprintf("number %s at index %d, beyond float64", b[i:j], n)
		}
		if n < 3 {
			v[n] = x
		}
		n++
		i = skipSpace(b, j)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		break
	}
	if n != 3 {
		if n == 1 {
			return "an array of 1 number"
		}
		return fmt.Sprintf("an array of %d numbers", n)
	}
	return ""
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// jsonKind names the kind of the JSON value b starts with.
func jsonKind(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "a number"
}

// decodeError describes why json.Unmarshal refused frame b: which frame
// (its type and node, and its place in a batch) and which field, with what
// the field wants and what it got.
func decodeError(b []byte, err error) error {
	what := frameWhat(b)
	var ute *json.UnmarshalTypeError
	if !errors.As(err, &ute) || ute.Field == "" {
		return fmt.Errorf("malformed %s: %w", what, err)
	}
	field := ute.Field
	if rest, ok := strings.CutPrefix(field, "frames."); ok {
		// Find the frame of the batch that does not decode.
		var batch struct {
			Frames []json.RawMessage `json:"frames"`
		}
		if json.Unmarshal(b, &batch) == nil {
			for i, sub := range batch.Frames {
				if json.Unmarshal(sub, &Frame{}) != nil {
					what = fmt.Sprintf("%s (frame %d of a batch)", frameWhat(sub), i)
					field = rest
					break
				}
			}
		}
	}
	return fmt.Errorf("malformed %s: field %s: want %s, got %s", what, field, wantOf(ute.Type), ute.Value)
}

// frameWhat names a frame by what can be read of its type and node:
// "command frame for node 3", or "frame".
func frameWhat(b []byte) string {
	var head struct {
		Type    json.RawMessage `json:"type"`
		Vehicle json.RawMessage `json:"vehicle"`
	}
	if json.Unmarshal(b, &head) != nil {
		return "frame"
	}
	var typ string
	var node int
	s := "frame"
	if json.Unmarshal(head.Type, &typ) == nil && typ != "" {
		switch typ {
		case TypeHello, TypeSend, TypeCommand, TypeEvent, TypeDone, TypeWelcome, TypeTick, TypeEnd, TypeError, TypeNetTick, TypeNetDone, TypeBatch:
			s = typ + " frame"
		default:
			s = fmt.Sprintf("frame of type %.20q", typ)
		}
	}
	if json.Unmarshal(head.Vehicle, &node) == nil && head.Vehicle != nil {
		s += fmt.Sprintf(" for node %d", node)
	}
	return s
}

// wantOf says what a field of type t must hold.
func wantOf(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	if t == vec3Type {
		return "exactly 3 finite numbers [x, y, z]"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Int32:
		return "an integer in [-2147483648, 2147483647]"
	case reflect.Uint64, reflect.Uint:
		return "an integer >= 0"
	case reflect.Uint32:
		return "an integer in [0, 4294967295]"
	case reflect.Float64, reflect.Float32:
		return "a finite number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Struct, reflect.Pointer, reflect.Map:
		return "an object"
	}
	return t.String()
}

// FormatNodes writes node ids as ranges, sorted: "0-24,30,32-33".
func FormatNodes(ids []int) string {
	s := append([]int(nil), ids...)
	sort.Ints(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", s[i], s[j])
		} else {
			b.WriteString(strconv.Itoa(s[i]))
		}
		i = j + 1
	}
	return b.String()
}

// Fixed sizes of the parts of a decoded frame, for Frame.Footprint.
var (
	frameSize    = int(unsafe.Sizeof(Frame{}))
	eventSize    = int(unsafe.Sizeof(NetEvent{}))
	packetSize   = int(unsafe.Sizeof(Packet{}))
	deliverySize = int(unsafe.Sizeof(Delivery{}))
	nodeSize     = int(unsafe.Sizeof(NodeInfo{}))
	telSize      = int(unsafe.Sizeof(Telemetry{}))
)

// Footprint returns the memory a decoded frame holds: its fixed part and what
// its strings and lists hold (frames of a batch are measured one by one).
func (f *Frame) Footprint() int {
	n := frameSize + len(f.Token) + len(f.Name) + len(f.Kind) + len(f.Payload) + len(f.Cmd) + len(f.Detail) + len(f.Reason) +
		8*len(f.Vehicles) + 24*len(f.Positions) + 8*len(f.Release) + len(f.Events)*eventSize + len(f.Deliveries)*deliverySize +
		len(f.Packets)*packetSize + len(f.Nodes)*nodeSize
	if f.Telemetry != nil {
		n += telSize + len(f.Telemetry.Mode)
	}
	for i := range f.Events {
		n += len(f.Events[i].Drop)
	}
	for i := range f.Deliveries {
		n += len(f.Deliveries[i].Kind) + len(f.Deliveries[i].Payload)
	}
	for i := range f.Packets {
		n += len(f.Packets[i].Kind) + len(f.Packets[i].Payload)
	}
	for i := range f.Nodes {
		n += len(f.Nodes[i].Name) + len(f.Nodes[i].Group)
	}
	return n
}
