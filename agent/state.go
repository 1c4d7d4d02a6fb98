package agent

import (
	"encoding/binary"
	"fmt"
	"math"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Sizes of the two state-update wire formats.
const (
	// PlanarStateSize is the netbots platoon study's 56-byte update: id u32, seq u32,
	// t_gen int64 ns, x, y, theta, v, omega float64, little-endian.
	PlanarStateSize = 56
	// State3DSize is the 3D update: id u32, seq u32, t_gen int64 ns,
	// x, y, z, vx, vy, vz, yaw float64, little-endian.
	State3DSize = 72
)

// State is a vehicle state update as carried by beacons.
type State struct {
	ID    uint32
	Seq   uint32
	TGen  sim.Time
	Pos   geom.Vec3
	Vel   geom.Vec3
	Yaw   float64
	V     float64 // forward speed (planar format), m/s
	Omega float64 // turn rate (planar format), rad/s
}

// AppendPlanar appends the 56-byte planar encoding of s to b.
func (s *State) AppendPlanar(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, s.ID)
	b = binary.LittleEndian.AppendUint32(b, s.Seq)
	b = binary.LittleEndian.AppendUint64(b, uint64(s.TGen))
	for _, f := range [...]float64{s.Pos.X, s.Pos.Y, s.Yaw, s.V, s.Omega} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	return b
}

// Append3D appends the 72-byte 3D encoding of s to b.
func (s *State) Append3D(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, s.ID)
	b = binary.LittleEndian.AppendUint32(b, s.Seq)
	b = binary.LittleEndian.AppendUint64(b, uint64(s.TGen))
	for _, f := range [...]float64{s.Pos.X, s.Pos.Y, s.Pos.Z, s.Vel.X, s.Vel.Y, s.Vel.Z, s.Yaw} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	return b
}

// DecodeStateInto decodes either format, telling them apart by length,
// into *s (a receiver's scratch state, so that the hot path copies no
// State around).
func DecodeStateInto(b []byte, s *State) error {
	*s = State{}
	switch len(b) {
	case PlanarStateSize:
		b = b[:PlanarStateSize:PlanarStateSize]
		s.ID, s.Seq, s.TGen = header(b)
		s.Pos.X, s.Pos.Y = f64(b[16:24]), f64(b[24:32])
		s.Yaw, s.V, s.Omega = f64(b[32:40]), f64(b[40:48]), f64(b[48:56])
		sn, cs := geom.Sincos(s.Yaw)
		s.Vel = geom.Vec3{X: s.V * cs, Y: s.V * sn}
	case State3DSize:
		b = b[:State3DSize:State3DSize]
		s.ID, s.Seq, s.TGen = header(b)
		s.Pos = geom.Vec3{X: f64(b[16:24]), Y: f64(b[24:32]), Z: f64(b[32:40])}
		s.Vel = geom.Vec3{X: f64(b[40:48]), Y: f64(b[48:56]), Z: f64(b[56:64])}
		s.Yaw = f64(b[64:72])
		s.V = math.Sqrt(s.Vel.X*s.Vel.X + s.Vel.Y*s.Vel.Y)
	default:
		return fmt.Errorf("state update of %d bytes: want %d or %d", len(b), PlanarStateSize, State3DSize)
	}
	if err := Plausible(s.Pos, s.Vel); err != nil {
		return fmt.Errorf("state update: %w", err)
	}
	if !(math.Abs(s.Yaw) <= vehicle.MaxCommandYaw && math.Abs(s.Omega) <= vehicle.MaxCommandTurnRate) {
		return fmt.Errorf("state update: yaw %v rad or turn rate %v rad/s implausible", s.Yaw, s.Omega)
	}
	return nil
}

func header(b []byte) (uint32, uint32, sim.Time) {
	_ = b[15]
	return binary.LittleEndian.Uint32(b[0:4]), binary.LittleEndian.Uint32(b[4:8]), sim.Time(binary.LittleEndian.Uint64(b[8:16]))
}

func f64(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }

// Verdict is what the receiver rules decided about one state update.
type Verdict uint8

// Receiver-rule outcomes (the netbots study's rules; docs/scenario.md, State
// updates and beliefs).
const (
	Applied    Verdict = iota // newest so far: the belief was updated
	Duplicate                 // same (source, seq) seen before
	OutOfOrder                // older than the newest applied update
)

// String returns the verdict's name.
func (v Verdict) String() string {
	return [...]string{"applied", "duplicate", "out_of_order"}[v]
}

type belief struct {
	src    netsim.NodeID // the source it is about
	s      State
	valid  bool
	newest uint32 // newest applied seq
	seen   uint64 // bit k set: seq newest-k was seen
}

// Beliefs is a node's table of the newest state it has applied for every
// other node, with the netbots study's receiver rules: duplicates (same source and
// sequence number) and out-of-order updates (sequence number at or below the
// newest applied) are dropped, and a belief whose information is older than
// the stale limit is withheld.
type Beliefs struct {
	// b holds the beliefs of the sources heard, in the order first heard;
	// index finds a source's entry: an open-addressing hash table
	// (linear probing) of slots holding 1 + the entry's position in b, 0
	// for an empty slot, keyed by the source id. A node pays for the
	// sources it hears, not for every node of the swarm (a table indexed
	// by id would make a swarm of n nodes keep n x n entries).
	b     []belief
	index []int32
	n     int // node count: sources are 0..n-1
	stale sim.Duration
	// Counts of each verdict, indexed by Verdict.
	Counts [3]uint64
}

// NewBeliefs returns a table for n nodes withholding beliefs older than
// stale. It takes memory only for the sources it hears from.
func NewBeliefs(n int, stale sim.Duration) *Beliefs {
	return &Beliefs{n: n, stale: stale}
}

// SetStale changes the stale limit.
func (bs *Beliefs) SetStale(d sim.Duration) { bs.stale = d }

// slot returns the index slot of source id: the one holding it, or the
// empty one where it would go.
func (bs *Beliefs) slot(id netsim.NodeID) int {
	mask := len(bs.index) - 1
	// Fibonacci hashing spreads neighbouring ids over the table.
	i := int(uint32(id)*2654435769) & mask
	for {
		k := bs.index[i]
		if k == 0 || bs.b[k-1].src == id {
			return i
		}
		i = (i + 1) & mask
	}
}

// entry returns the belief about id, or nil when id was never heard.
func (bs *Beliefs) entry(id netsim.NodeID) *belief {
	if len(bs.index) == 0 {
		return nil
	}
	if k := bs.index[bs.slot(id)]; k != 0 {
		return &bs.b[k-1]
	}
	return nil
}

// add makes the (empty) belief about id, growing the index to keep it at
// most half full.
func (bs *Beliefs) add(id netsim.NodeID) *belief {
	if 2*(len(bs.b)+1) > len(bs.index) {
		size := max(16, 2*len(bs.index))
		bs.index = make([]int32, size)
		for k := range bs.b {
			bs.index[bs.slot(bs.b[k].src)] = int32(k + 1)
		}
	}
	bs.b = append(bs.b, belief{src: id})
	bs.index[bs.slot(id)] = int32(len(bs.b))
	return &bs.b[len(bs.b)-1]
}

// Apply runs the receiver rules on update s from node src received at now.
// Duplicates are recognised exactly within a window of 64 sequence numbers
// below the newest; older repeats count as out-of-order.
func (bs *Beliefs) Apply(now sim.Time, src netsim.NodeID, s *State) Verdict {
	if src < 0 || int(src) >= bs.n {
		return OutOfOrder
	}
	e := bs.entry(src)
	if e == nil {
		e = bs.add(src)
	}
	v := Applied
	switch {
	case !e.valid:
		e.seen = 1
	case s.Seq > e.newest:
		shift := s.Seq - e.newest
		if shift >= 64 {
			e.seen = 1
		} else {
			e.seen = e.seen<<shift | 1
		}
	default:
		back := e.newest - s.Seq
		if back < 64 && e.seen&(1<<back) != 0 {
			v = Duplicate
		} else {
			v = OutOfOrder
			if back < 64 {
				e.seen |= 1 << back
			}
		}
	}
	bs.Counts[v]++
	if v == Applied {
		e.s, e.valid, e.newest = *s, true, s.Seq
	}
	return v
}

// Get returns the belief about node id at time now; ok is false when there
// is none or when its information is older than the stale limit.
func (bs *Beliefs) Get(now sim.Time, id netsim.NodeID) (s State, ok bool) {
	if id < 0 || int(id) >= bs.n {
		return s, false
	}
	e := bs.entry(id)
	if e == nil || !e.valid || now.Sub(e.s.TGen) > bs.stale {
		return s, false
	}
	return e.s, true
}

// Plausible checks a position and velocity received from another node
// (possibly an external process) against the ranges vehicle commands must
// respect: finite, within the plausible world, at most
// vehicle.MaxCommandSpeed.
func Plausible(pos, vel geom.Vec3) error {
	if !(math.Abs(pos.X) <= vehicle.MaxWorldXY && math.Abs(pos.Y) <= vehicle.MaxWorldXY && pos.Z >= vehicle.MinWorldZ && pos.Z <= vehicle.MaxWorldZ) {
		return fmt.Errorf("position [%v %v %v] outside the plausible world", pos.X, pos.Y, pos.Z)
	}
	if !(math.Abs(vel.X) <= vehicle.MaxCommandSpeed && math.Abs(vel.Y) <= vehicle.MaxCommandSpeed && math.Abs(vel.Z) <= vehicle.MaxCommandSpeed) {
		return fmt.Errorf("velocity [%v %v %v] beyond %v m/s", vel.X, vel.Y, vel.Z, float64(vehicle.MaxCommandSpeed))
	}
	return nil
}
