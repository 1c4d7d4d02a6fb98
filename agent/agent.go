// Package agent is the behaviour API: what mission logic sees and how it is
// registered. Every network node (a vehicle or a fixed node such as a
// ground station) runs a stack of behaviours. A behaviour sees only its own
// node: the current simulated time, its own vehicle's telemetry and
// commands, the messages that reach it through the simulated network, its
// own random stream and logger. It never sees the network model, other
// vehicles' true state, or the wall clock. The behaviours skyloop ships
// with live in package behavior; external ones (extern, mavlink) use the
// same API.
package agent

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Message is a datagram as a behaviour sends or receives it.
type Message struct {
	Src, Dst netsim.NodeID // Dst may be netsim.Broadcast
	Port     uint16
	Kind     netsim.Kind
	Seq      uint32
	TGen     sim.Time // generation time of the information (defaults to the send time)
	TSend    sim.Time // when the sender handed it to the network
	TArrive  sim.Time // when it arrived (received messages only)
	TRecv    sim.Time // the tick at which the receiver got it (received messages only)
	Size     int      // payload bytes on the wire; 0 means len(Payload)
	Payload  []byte   // only valid during Receive; copy to keep
	RxPower  float64  // dBm where the backend models it, NaN otherwise
	// Deferred marks a message planned ahead (see Planner) whose content
	// is not known yet: it is sent without a payload, Size bytes long, and
	// bound later by the sender's Binder to the sender's state at TGen.
	// Receivers get the bound content.
	Deferred bool
	// memo holds the state update decoded from Payload for all the
	// receivers of one packet (DecodedState); the engine sets it.
	memo *StateMemo
}

// StateMemo holds the state update decoded from one packet's payload. The
// engine hands the receivers of one packet messages that share it, so a
// broadcast heard by many nodes is decoded once, not once per receiver.
type StateMemo struct {
	pl  []byte
	s   State
	err error
	ok  bool
}

// Reset forgets the update decoded (the next message is another packet).
func (c *StateMemo) Reset() { *c = StateMemo{} }

// ShareDecoded makes m use memo for DecodedState: the engine gives the
// messages of one packet's receivers the same memo, reset between packets.
func (m *Message) ShareDecoded(memo *StateMemo) { m.memo = memo }

// DecodedState returns the state update pl (the message's payload, or a
// prefix of it) decodes to, as DecodeStateInto decodes it. The update is
// shared by every receiver of the packet: read it, do not change it, and
// do not keep the pointer past Receive.
func (m *Message) DecodedState(pl []byte) (*State, error) {
	c := m.memo
	if c == nil {
		c = &StateMemo{}
		m.memo = c
	}
	if !c.ok || len(c.pl) != len(pl) || len(pl) > 0 && &c.pl[0] != &pl[0] {
		c.err = DecodeStateInto(pl, &c.s)
		c.pl, c.ok = pl, true
	}
	return &c.s, c.err
}

// Behavior is one piece of a node's logic.
type Behavior interface {
	// Start runs once before the first tick.
	Start(ctx *Context) error
	// Schedule returns how often Step runs and when it first runs; both
	// must be whole multiples of the kernel tick. A zero period means Step
	// is never called (receive-only behaviours). It is called once, after
	// Start.
	Schedule() (period, offset sim.Duration)
	// Step runs at the behaviour's rate, in the agent phase.
	Step(ctx *Context)
}

// Sleeper is implemented by behaviours that are scheduled every tick (or
// at some other period) but need only some of those steps, such as a
// periodic sender at exact times: after Start and after each Step,
// NextStep returns the earliest time the behaviour needs a step again
// (a step of a tick that ends at or before it would do nothing), and the
// engine skips the scheduled steps before the tick that holds it. Zero
// skips nothing.
type Sleeper interface {
	NextStep() sim.Time
}

// Receiver is implemented by behaviours that want messages. Receive is
// called in the agent phase of the first tick at or after the message's
// arrival, before any Step of that tick, once per behaviour of the node in
// stack order. The message belongs to the engine, which hands the same one
// to every receiver of a packet in the tick (with each delivery's TArrive
// and RxPower): read it, do not change it, and do not keep it past
// Receive.
type Receiver interface {
	Receive(ctx *Context, m *Message)
}

// LocalReceiver is implemented by behaviours whose Receive reads and
// changes nothing but the behaviour's own state and its node's beliefs
// (ctx.Beliefs) and clock (ctx.Now): it sends nothing, records no event,
// does not fail the run and reads no vehicle. When every receiving
// behaviour of a run is local, the engine delivers a tick's packets while
// the vehicles of the tick before are still stepping, on another
// goroutine: the results are the same as in the agent phase.
type LocalReceiver interface {
	Receiver
	// ReceivesLocally reports whether Receive keeps to these rules.
	ReceivesLocally() bool
}

// Preparer is implemented by behaviours whose step runs elsewhere (in an
// external process). In the agent phase the engine calls Prepare on every
// due Preparer, in node order, before any Step: each hands its step to the
// other side, so that those steps run in parallel; Step then collects the
// results in node order, which keeps the run deterministic.
type Preparer interface {
	Prepare(ctx *Context)
}

// Planner is implemented by behaviours whose sending can be announced
// ahead of time. In runs whose network advances in epochs (network.epoch,
// NetworkMode.Epoch > 0) the engine calls Plan at the start of every epoch,
// in node order, before the network advances over the epoch: the behaviour
// hands over with SendAt every message it sends in [ctx.Now(), end), and
// its Step sends nothing. Messages whose content must reflect the sender's
// state at a later time within the epoch are sent Deferred and bound by
// the behaviour's Binder.
//
// A replayed network (NetworkMode.Replay) runs before the vehicles move:
// Plan is then first called on a fresh copy of the behaviour for every
// epoch of the run, and must not read the vehicle's state (the engine
// refuses the run if it does). The live run's plan must equal that one.
type Planner interface {
	Plan(ctx *Context, end sim.Time)
}

// Binder is implemented by planners that send Deferred messages. Bind
// appends to buf the content of m as of m.TGen and returns the result; the
// engine calls it at the first tick at or after m.TGen, before the
// network phase delivers anything, so that ctx.Telemetry() is the
// vehicle's state at that tick. Only the header fields of m are set.
type Binder interface {
	Bind(ctx *Context, m *Message, buf []byte) []byte
}

// NetworkMode says how a run drives its network (Host.Network).
type NetworkMode struct {
	// Epoch is the network epoch: 0 advances the network every tick and
	// hands it each send at once; > 0 advances it a whole epoch ahead at
	// every epoch start, with the epoch's sends planned (see Planner).
	Epoch sim.Duration
	// Replay says the network's packet fates were fixed before the run
	// from its traffic plan.
	Replay bool
}

// Finisher is implemented by behaviours with something to report at the end
// of a run; the returned values are merged into summary.json under the
// node's name.
type Finisher interface {
	Finish(ctx *Context) map[string]any
}

// NodeRef describes another node of the run, as every agent may know it
// (names and ids are configuration, not state).
type NodeRef struct {
	ID    netsim.NodeID
	Name  string
	Group string
	Index int // index within the group
}

// Host is what a context needs from the engine that runs it.
type Host interface {
	// Send queues m from node src for the network phase of the next tick,
	// copying its payload; m.TSend is already set.
	Send(src netsim.NodeID, m *Message)
	// Event records an event for events.csv.
	Event(t sim.Time, node netsim.NodeID, name, detail string)
	// Tick returns the kernel tick.
	Tick() sim.Duration
	// Nodes lists every node of the run in id order.
	Nodes() []NodeRef
	// Origin returns the WGS84 position of the scenario's local origin.
	Origin() geom.Geodetic
	// File creates an output file in the run directory (a telemetry log,
	// say), flushed and closed with the run. A run that writes no files
	// may return nil and no error: Context.File, through which behaviours
	// ask, turns that into io.Discard.
	File(name string) (io.Writer, error)
	// Fail ends the run with err after the current agent phase.
	Fail(node netsim.NodeID, err error)
	// Network says how the run drives its network.
	Network() NetworkMode
}

// Context is a node's view of the world. One context exists per node and is
// shared by the node's behaviours.
type Context struct {
	ref     NodeRef
	now     sim.Time
	host    Host
	veh     vehicle.Vehicle
	fixed   *vehicle.Telemetry // fixed nodes only (a Telemetry is large)
	rng     *rand.Rand
	log     *slog.Logger // the run's logger; Log adds the node's name
	nodeLog *slog.Logger
	beliefs *Beliefs
	tmp     Message
	// rejecting is set while commands are being rejected (see Command).
	rejecting bool
	// planOnly marks a context that only plans traffic before the run
	// (replay): commands are ignored and reading the state is recorded.
	planOnly, stateRead bool
	// planEnd is the end of the epoch being planned (Plan), 0 otherwise.
	planEnd sim.Time

	// timingKey keys the node's send-time draws (the phase and jitter of
	// its periodic senders, see SendTimes): the first number of its stream.
	timingKey uint64
}

// zeroTelemetry is the telemetry of contexts without a vehicle or a fixed
// position (a scenario check builds no vehicle).
var zeroTelemetry vehicle.Telemetry

// NewContext returns the context of node ref. veh is nil for fixed nodes,
// whose telemetry is fixedTel. rng is the node's random stream (nil: none);
// its first number becomes the key of the node's send times (the random
// phase and jitter of its periodic senders).
func NewContext(ref NodeRef, host Host, veh vehicle.Vehicle, fixedTel vehicle.Telemetry, rng *rand.Rand, log *slog.Logger) (*Context, Driver) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Context{ref: ref, host: host, veh: veh, rng: rng}
	if rng != nil {
		// Drawn first, so that every context made from the same stream
		// (the live run's and the one that plans a replayed network) has
		// the same key, whatever its behaviours draw later.
		c.timingKey = rng.Uint64()
	}
	if veh == nil {
		if fixedTel == (vehicle.Telemetry{}) {
			c.fixed = &zeroTelemetry // shared: never written
		} else {
			t := new(vehicle.Telemetry)
			*t = fixedTel
			c.fixed = t
		}
	}
	c.log = log
	return c, Driver{c}
}

// Driver is the engine's handle on a context: what behaviours must not do
// themselves, such as moving the clock. NewContext returns it beside the
// context.
type Driver struct{ c *Context }

// SetNow sets the context's current time; the engine calls it before a
// behaviour runs.
func (d Driver) SetNow(t sim.Time) { d.c.now = t }

// Network returns how the run drives its network.
func (c *Context) Network() NetworkMode { return c.host.Network() }

// SetPlanning opens (end > 0) or closes (end = 0) the planning window of
// an epoch ending at end: while it is open, SendAt accepts send times in
// [Now, end). The engine calls it around Plan.
func (d Driver) SetPlanning(end sim.Time) { d.c.planEnd = end }

// SetPlanOnly makes the context one that plans traffic before the run
// (replay): commands are ignored and reading the vehicle's state is
// recorded, to be reported by ReadState.
func (d Driver) SetPlanOnly() { d.c.planOnly = true }

// ReadState reports whether a behaviour read the vehicle's state through
// this plan-only context, and forgets it.
func (d Driver) ReadState() bool {
	r := d.c.stateRead
	d.c.stateRead = false
	return r
}

// Now returns the current simulated time.
func (c *Context) Now() sim.Time { return c.now }

// Tick returns the kernel tick.
func (c *Context) Tick() sim.Duration { return c.host.Tick() }

// ID returns the node's id.
func (c *Context) ID() netsim.NodeID { return c.ref.ID }

// Ref returns the node's name, group and index.
func (c *Context) Ref() NodeRef { return c.ref }

// Nodes lists every node of the run in id order.
func (c *Context) Nodes() []NodeRef { return c.host.Nodes() }

// Group returns the ids of the nodes in the named group, in index order.
func (c *Context) Group(name string) []netsim.NodeID {
	var ids []netsim.NodeID
	for _, n := range c.host.Nodes() {
		if n.Group == name {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// HasVehicle reports whether the node is a vehicle.
func (c *Context) HasVehicle() bool { return c.veh != nil }

// Telemetry returns the own vehicle's state as its autopilot estimates it
// (a fixed node reports its position and nothing else).
func (c *Context) Telemetry() vehicle.Telemetry {
	c.stateRead = c.stateRead || c.planOnly
	if c.veh == nil {
		return *c.fixed
	}
	return c.veh.Estimate()
}

// Capability returns the own vehicle (or its controller) as a T when it offers that
// capability (an interface such as the MAVLink endpoint's parameter
// access), and false on fixed nodes or vehicles without it. Behaviours get
// the narrow interface they ask for, never the whole vehicle: mission
// logic uses Telemetry and Command.
func Capability[T any](c *Context) (T, bool) {
	if t, ok := c.veh.(T); ok {
		return t, true
	}
	// A vehicle made of physics and a controller offers what its
	// controller offers (real firmware's MAVLink port, say).
	if cv, ok := c.veh.(interface{ Controller() vehicle.Controller }); ok {
		t, ok := cv.Controller().(T)
		return t, ok
	}
	var zero T
	return zero, false
}

// forwardSpeeder is implemented by vehicles that know their signed speed
// along their heading exactly (ground robots).
type forwardSpeeder interface{ ForwardSpeed() float64 }

// ForwardSpeed returns the own vehicle's signed speed along its heading
// (negative when moving backwards) and true, when the vehicle kind reports
// it directly; otherwise 0 and false.
func (c *Context) ForwardSpeed() (float64, bool) {
	c.stateRead = c.stateRead || c.planOnly
	if f, ok := c.veh.(forwardSpeeder); ok {
		return f.ForwardSpeed(), true
	}
	return 0, false
}

// Command sends a command to the own vehicle; the autopilot applies it at
// its next control step (this tick's autopilot phase when the control
// period is one tick). Fixed nodes ignore it.
//
// A command outside the plausible ranges (vehicle.Command.Validate: a
// behaviour fed implausible values from the network, say) is not passed
// on; an event records the first of each run of them.
func (c *Context) Command(cmd vehicle.Command) {
	if c.veh == nil || c.planOnly {
		return
	}
	if err := cmd.Validate(); err != nil {
		if !c.rejecting {
			c.rejecting = true
			c.Event("command_rejected", err.Error())
		}
		return
	}
	c.rejecting = false
	c.veh.Command(cmd)
}

// Origin returns the WGS84 position of the scenario's local origin
// (x east, y north, z up).
func (c *Context) Origin() geom.Geodetic { return c.host.Origin() }

// File creates an output file named name in the run directory, closed with
// the run. Names must be unique in the run. The writer is never nil: a run
// that writes no files (benchmarks) gives io.Discard.
func (c *Context) File(name string) (io.Writer, error) {
	w, err := c.host.File(name)
	if w == nil && err == nil {
		return io.Discard, nil
	}
	return w, err
}

// Rand returns the node's random stream (after the number NewContext
// takes for the node's send times).
func (c *Context) Rand() *rand.Rand { return c.rng }

// Log returns the node's logger.
func (c *Context) Log() *slog.Logger {
	if c.nodeLog == nil { // made on first use: most nodes never log
		c.nodeLog = c.log.With("node", c.ref.Name)
	}
	return c.nodeLog
}

// Fail ends the run with err at the end of the current agent phase: for
// behaviours whose failure must stop the run (an external agent that
// crashed under on_failure: abort). The first failure wins.
func (c *Context) Fail(err error) { c.host.Fail(c.ref.ID, err) }

// Event records an event in events.csv under this node.
func (c *Context) Event(name, detail string) { c.host.Event(c.now, c.ref.ID, name, detail) }

// Send hands m to the network now; see SendAt.
func (c *Context) Send(m Message) error { return c.SendAt(c.now, m) }

// SendAt hands m to the network at time at, which must lie in the current
// tick [now, now+tick) (constant-bit-rate sources use it for sub-tick
// timing), or, while a Planner plans an epoch, in [now, epoch end).
// m.Size (0: the payload's length) must lie in [len(m.Payload),
// netsim.MaxPayload]; a Deferred message has no payload and a positive
// Size, and is sent while planning. Src, TSend and (if zero) TGen are
// filled in; the payload is copied.
func (c *Context) SendAt(at sim.Time, m Message) error {
	end := c.now.Add(c.host.Tick())
	if c.planEnd > 0 {
		end = c.planEnd
	}
	if at < c.now || at >= end {
		return fmt.Errorf("send time %v outside the current tick [%v, %v)", at, c.now, end)
	}
	if m.Deferred && (c.planEnd == 0 || len(m.Payload) > 0 || m.Size <= 0) {
		return fmt.Errorf("a deferred message is sent while planning, with a size and no payload (size %d, %d payload bytes)", m.Size, len(m.Payload))
	}
	if m.Size == 0 {
		m.Size = len(m.Payload)
	}
	switch {
	case m.Size < 0:
		return fmt.Errorf("negative message size %d (a datagram carries 0..%d bytes)", m.Size, netsim.MaxPayload)
	case m.Size > netsim.MaxPayload:
		return fmt.Errorf("message size %d above the %d bytes of a UDP/IPv4 payload", m.Size, netsim.MaxPayload)
	case m.Size < len(m.Payload):
		return fmt.Errorf("message size %d smaller than its payload (%d bytes)", m.Size, len(m.Payload))
	}
	if m.Dst != netsim.Broadcast && (m.Dst < 0 || int(m.Dst) >= len(c.host.Nodes())) {
		return fmt.Errorf("no node %d", m.Dst)
	}
	m.Src = c.ref.ID
	m.TSend = at
	if m.TGen == 0 {
		m.TGen = at
	}
	c.tmp = m
	c.host.Send(c.ref.ID, &c.tmp)
	return nil
}

// Beliefs returns the node's table of what it believes about the others,
// fed by state messages (see behavior.Beacon).
func (c *Context) Beliefs() *Beliefs {
	if c.beliefs == nil {
		c.beliefs = NewBeliefs(len(c.host.Nodes()), sim.Second)
	}
	return c.beliefs
}
