// Package engine is the deterministic core of a run: it builds the world
// from a scenario (vehicles, agents and a network backend), wires it into
// the kernel's phases and steps it, feeding the metrics and a Recorder. It
// opens no sockets, starts no processes and reads no wall clock (the worker
// pool's tuner gets the runner's clock); what still reaches outside through
// its imports (scenario files, MuJoCo's library and models) is listed in
// docs/boundary.txt's allow lines and checked by internal/boundary. The
// parts of a run that reach outside (package edge) are
// opened and closed by the runner (package runner), which also owns the
// run directory, pacing and namespaces.
//
// Phase order at every tick t (docs/architecture.md, The tick):
//
//  0. record: sample vehicles (vehicles.csv) and check separation, obstacles
//     and bounds, at the sample period;
//  1. network: backend.AdvanceTo(t) returns everything that arrived by t;
//  2. agents: deliveries go to their receivers, then due behaviours step, in
//     node order; packets they send are handed to the backend;
//  3. autopilot: due vehicles run their controllers (in parallel);
//  4. physics: due vehicles integrate [t, t+period) (in parallel);
//  5. positions: the backend learns where the nodes are at t+tick.
package engine

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"

	"skyloop/agent"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/metrics"
	"skyloop/netsim"
	"skyloop/scenario"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Options adjust a run without editing its scenario.
type Options struct {
	Seed     *uint64       // overrides the scenario seed
	Duration *sim.Duration // overrides the scenario duration
	Workers  int           // overrides the scenario worker count when > 0
	// AlwaysParallel makes the workers share every tick's vehicles (and
	// the network step beside them) whatever the pool's tuner would
	// choose; determinism tests use it so that the parallel paths run.
	AlwaysParallel bool
	// NoFiles turns off every per-packet and per-sample CSV (metrics stay
	// exact); used by benchmarks.
	NoFiles bool
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Progress, when set, is called about once per simulated second.
	Progress func(now, end sim.Time)
	// Stop, when it returns true, ends the run at the next tick with
	// sim.ErrStopped.
	Stop func() bool
	// Registry names the component types the scenario may use; nil means
	// Core().
	Registry *Registry
	// Realtime, when > 0, paces the run to the wall clock: simulated time
	// advances Realtime times as fast as real time (1 = real time), so
	// that people and outside programs can take part.
	Realtime float64
	// wallClock is the wall clock the worker pool times its jobs with,
	// given by the edge (Run.SetWallClock); the core reads none itself.
	wallClock sim.WallClock
}

// OptionError reports bad input that is not a mistake in the scenario file:
// a bad value in Options (a command-line override), or something a scenario
// needs from the machine (privileges, programs, namespaces not in use).
type OptionError struct{ Err error }

// Error returns the wrapped error's message.
func (e *OptionError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *OptionError) Unwrap() error { return e.Err }

// filesValidator is a parameter set that names files (a MuJoCo model,
// say), relative to the scenario's directory: ValidateFiles checks them as
// the run will read them, so that validate reports a file that cannot be
// used against the field that names it.
type filesValidator interface {
	ValidateFiles(dir string) fields.Errors
}

type slot struct {
	b     agent.Behavior
	made  *built // what it was made from; nil for engine-made behaviours (tap)
	recv  agent.Receiver
	prep  agent.Preparer
	sleep agent.Sleeper
	every int64 // ticks; 0 = never steps
	next  int64 // next tick index to step
	path  string
	typ   string
}

// wake moves a sleeping slot's next step to the first scheduled tick
// that holds the time its behaviour needs a step again.
func (s *slot) wake(tick sim.Duration) {
	k := int64(s.sleep.NextStep()) / int64(tick) // the tick holding it
	if k > s.next {
		s.next += (k - s.next + s.every - 1) / s.every * s.every
	}
}

type nodeState struct {
	ref   agent.NodeRef
	ctx   *agent.Context
	drv   agent.Driver
	slots []slot
	veh   vehicle.Vehicle // nil for fixed nodes
	fixed geom.Vec3
}

// Run is a built, ready-to-execute run: the stepping core. Its exported
// surface is the life of a run (Start, RunUntil, Run, Finish, Close), a
// few setters the runner attaches the edges with before Start, and
// read-only getters; the behaviours and the backend reach it through the
// unexported views host and tracer.
type Run struct {
	cfg     *Config // what it was built from: scenario, seed, end, tick, periods, effective configuration
	opt     Options
	log     *slog.Logger
	kernel  *sim.Kernel
	workers int

	fleet runFleet // the nodes: vehicles, fixed nodes, behaviours, physics worlds
	net   runNet   // the network: backend, positions, packets in and out
	par   runPar   // the tick in progress and the worker pool
	out   runOut   // where records and files go

	met      *metrics.Collector
	world    worldCheck
	measures []measure
	failed   error // a behaviour's Fail: ends the run after the agent phase
	finished bool
}

// runFleet is a run's nodes: every vehicle with its control and physics
// periods, the fixed nodes, their behaviours, and the shared physics
// worlds.
type runFleet struct {
	nodes   []nodeState
	refs    []agent.NodeRef
	veh     []vehicle.Vehicle
	vev     []vehicle.Events
	ctrlEv  []int64 // control period per vehicle, ticks
	physEv  []int64 // physics period per vehicle, ticks
	groupOf []int   // vehicle -> group index
	remotes []int   // vehicles flown by controllers in other processes
	// preparers is set when some behaviour steps in two passes (external
	// agents); localRecv when every receiving behaviour is an
	// agent.LocalReceiver (deliveries stepped ahead are then consumed
	// ahead too), sharedRecv when some is not.
	preparers, localRecv, sharedRecv bool
	// steps is the agent phase's timetable of the slots that step.
	steps stepQueue
	// worlds are the shared physics worlds (MuJoCo); worldList and
	// worldEvery, once built, the worlds and their periods in ticks.
	worlds     vehicle.Worlds
	worldList  []vehicle.World
	worldEvery []int64
	motion     []vehicle.Motion // world checks' buffer
}

// runNet is a run's network: the backend, how often it learns positions
// and advances, and the packets on their way in and out.
type runNet struct {
	backendName string
	backend     netsim.Backend
	posEvery    int64
	epochEvery  int64     // network epoch in ticks; 0 = every tick
	replay      bool      // the network runs first (netsim/replay)
	ep          *epochNet // the epoch machinery, when epochEvery > 0
	pos         []geom.Vec3
	pktPool     netsim.PacketPool
	outbox      []*netsim.Packet
	nextPktID   uint64
	deliv       []netsim.Delivery
	// rx holds a receiving scratch per worker (receive). recvD and recvT
	// are the deliveries and tick being received in parallel, rxOrder
	// their indices sorted by part of the node range (part k's are
	// rxOrder[rxStart[k]:rxStart[k+1]]), and rxBase the first node of the
	// shared job.
	rx      []rxScratch
	recvD   []netsim.Delivery
	recvT   sim.Time
	rxOrder []int32
	rxStart [rxParts + 1]int32
	rxBase  int
}

// rxScratch is what one goroutine needs to hand deliveries to receivers:
// the message it fills, and the states decoded from the last packets it
// delivered (round robin from next), each shared by all its receivers the
// goroutine serves in the tick. busy marks it taken by a receiving job.
// Padded to its own cache lines.
type rxScratch struct {
	busy  atomic.Bool
	msg   agent.Message
	memos [rxMemos]rxMemo
	next  int
	_     [64]byte
}

// rxMemo is the state decoded from packet p (agent.StateMemo).
type rxMemo struct {
	p *netsim.Packet
	m agent.StateMemo
}

// rxMemos is how many packets' decoded states a receiving goroutine
// keeps: the deliveries of a tick come sorted by node part, so the
// receivers of one packet in the parts a goroutine serves come
// interleaved with those of the other packets of the tick.
const rxMemos = 8

// memoFor returns the decoded state kept for p, or makes room for it.
func (sc *rxScratch) memoFor(p *netsim.Packet) *agent.StateMemo {
	for i := range sc.memos {
		if sc.memos[i].p == p {
			return &sc.memos[i].m
		}
	}
	k := sc.next
	sc.next = (k + 1) % rxMemos
	sc.memos[k].p = p
	sc.memos[k].m.Reset()
	return &sc.memos[k].m
}

// forget drops the decoded states: packets are recycled between ticks, so
// a pointer may stand for another packet in the next one.
func (sc *rxScratch) forget() {
	for i := range sc.memos {
		sc.memos[i].p = nil
	}
}

// runPar is the tick in progress and the parallel machinery that steps it.
type runPar struct {
	pool      *sim.Pool
	curTick   int64
	curT      sim.Time
	vehicleFn func(lo, hi int)
	receiveFn func(lo, hi int) // receiveRange, made once
	// overlap lets the network step to the next tick while the workers
	// step the vehicles (see vehiclePhase); until is where the current
	// RunUntil stops, pre the step taken ahead.
	overlap bool
	until   sim.Time
	pre     prefetch
	// gather lets the vehicle step read what the next world check and
	// the position update read, each vehicle right after its step, while
	// it is in cache and on the worker that stepped it: nothing changes a
	// vehicle between its step and those phases (no shared world steps
	// after the vehicles, no first phase runs before the check).
	// gatherMotion and gatherPos say whether the tick in progress does it;
	// motionTick is the tick whose world check the gathered motions serve
	// (-1: none), posTick the tick whose position update the gathered
	// positions serve (-1: none).
	gather, gatherMotion, gatherPos bool
	motionTick, posTick             int64
	// aroundPos lets the network's step ahead run at position ticks too
	// (stepAroundPositions); posSent is the last tick whose positions
	// went to the backend.
	aroundPos bool
	posSent   int64
}

// runOut is where a run's records and files go.
type runOut struct {
	rec         Recorder // nil: nothing is recorded
	recVehicles bool     // rec wants vehicle samples
	openFile    func(name string) (io.Writer, error)
	files       map[string]bool // behaviour output files created
	started     bool            // Start was called: output files may be created
}

// Build validates the scenario (Validate) and constructs the run from the
// decoded configuration. It writes nothing. Problems in the file come back
// as a scenario.Errors value naming file, line and field path.
func Build(sc *scenario.Scenario, opt Options) (*Run, error) {
	c, err := Validate(sc, opt)
	if err != nil {
		return nil, err
	}
	return c.Build()
}

// Build constructs the run c describes: its vehicles, network backend,
// behaviours, measures and physics worlds. It reads nothing more from the
// scenario.
func (c *Config) Build() (*Run, error) {
	r := &Run{cfg: c, opt: c.opt, log: c.opt.Logger, workers: c.workers}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	k, err := sim.NewKernel(c.tick)
	if err != nil {
		return nil, err
	}
	r.kernel = k
	r.buildVehicles()
	r.buildFixed()
	if err := r.buildMeasures(); err != nil {
		return nil, err
	}
	if err := r.buildNetwork(); err != nil {
		return nil, err
	}
	// A backend not started has nothing to close (and some would trace
	// their end of run to metrics not yet made).
	if err := r.buildBehaviors(); err != nil {
		return nil, err
	}
	if err := r.buildWorlds(); err != nil {
		return nil, err
	}
	r.met = metrics.New(len(r.fleet.nodes))
	r.world = newWorldCheck(c.sc.World, r.fleet.veh)
	return r, nil
}

// buildVehicles constructs every group's vehicles.
func (r *Run) buildVehicles() {
	c := r.cfg
	r.fleet.worlds.Dir = c.sc.Dir
	n := c.vehicles + len(c.fixed)
	r.fleet.nodes = make([]nodeState, 0, n)
	r.fleet.veh = make([]vehicle.Vehicle, 0, c.vehicles)
	r.fleet.ctrlEv, r.fleet.physEv, r.fleet.groupOf = make([]int64, 0, c.vehicles), make([]int64, 0, c.vehicles), make([]int, 0, c.vehicles)
	for gi := range c.groups {
		g := &c.groups[gi]
		ks, cs, p := g.kind, g.ctrl, g.params
		var newVehicle func(geom.Vec3, float64, func(string) *rand.Rand) vehicle.Vehicle
		if cs != nil {
			phys, ctrl, first := ks.NewPhysics(p), cs.NewGroup(p, g.ctrlParams), len(r.fleet.nodes)
			newVehicle = func(pos geom.Vec3, yaw float64, stream func(string) *rand.Rand) vehicle.Vehicle {
				id := len(r.fleet.nodes) // the node being built
				return vehicle.Compose(phys(pos, yaw, stream), ctrl(id, fmt.Sprintf("%s-%d", g.name, id-first), pos, yaw))
			}
		} else if ks.NewGroupIn != nil {
			newVehicle = ks.NewGroupIn(p, &r.fleet.worlds)
		} else {
			newVehicle = ks.NewGroup(p)
		}
		for i, pt := range g.points {
			id := netsim.NodeID(len(r.fleet.nodes))
			// Each purpose (turbulence, sensor noise, ...) draws from its
			// own stream keyed by (seed, purpose, vehicle).
			v := newVehicle(pt, g.yaw, func(purpose string) *rand.Rand { return sim.Stream(r.cfg.seed, purpose, int(id)) })
			ref := agent.NodeRef{ID: id, Name: fmt.Sprintf("%s-%d", g.name, i), Group: g.name, Index: i}
			if rc, ok := v.(vehicle.RemoteControlled); ok && rc.Remote() {
				r.fleet.remotes = append(r.fleet.remotes, int(id))
			}
			r.fleet.nodes = append(r.fleet.nodes, nodeState{ref: ref, veh: v})
			r.fleet.veh = append(r.fleet.veh, v)
			r.fleet.ctrlEv = append(r.fleet.ctrlEv, g.ctrlEvery)
			r.fleet.physEv = append(r.fleet.physEv, g.physEvery)
			r.fleet.groupOf = append(r.fleet.groupOf, gi)
		}
	}
	r.fleet.vev = make([]vehicle.Events, len(r.fleet.veh))
}

// buildWorlds builds the shared physics worlds (MuJoCo) with the
// scenario's obstacles, and notes how often each steps.
func (r *Run) buildWorlds() error {
	var boxes []geom.Box
	for _, o := range r.cfg.sc.World.Obstacles {
		boxes = append(boxes, geom.Box{Min: o.Min, Max: o.Max})
	}
	for _, w := range r.fleet.worlds.All() {
		if err := w.Build(boxes); err != nil {
			r.closeWorlds()
			// Mostly a robot model's problem: bad input.
			return located(r.cfg.vehiclesAt, "MuJoCo: %v", err)
		}
		every := int64(w.Period() / r.cfg.tick)
		if every < 1 || sim.Duration(every)*r.cfg.tick != w.Period() {
			r.closeWorlds()
			return fmt.Errorf("a shared physics world steps every %v: not a whole number of ticks of %v", w.Period(), r.cfg.tick)
		}
		r.fleet.worldList = append(r.fleet.worldList, w)
		r.fleet.worldEvery = append(r.fleet.worldEvery, every)
	}
	return nil
}

// located returns a problem found while constructing as a scenario error
// at the place at, located while decoding.
func located(at scenario.Error, format string, args ...any) error {
	at.Msg = fmt.Sprintf(format, args...)
	return scenario.Errors{&at}
}

// closeWorlds frees the shared physics worlds.
func (r *Run) closeWorlds() {
	for _, w := range r.fleet.worlds.All() {
		w.Close()
	}
}

// buildFixed adds the fixed nodes after the vehicles.
func (r *Run) buildFixed() {
	for _, f := range r.cfg.fixed {
		id := netsim.NodeID(len(r.fleet.nodes))
		r.fleet.nodes = append(r.fleet.nodes, nodeState{ref: agent.NodeRef{ID: id, Name: f.name}, fixed: f.pos})
	}
	r.fleet.refs = make([]agent.NodeRef, len(r.fleet.nodes))
	for i := range r.fleet.nodes {
		r.fleet.refs[i] = r.fleet.nodes[i].ref
	}
}

// buildMeasures constructs the measures.
func (r *Run) buildMeasures() error {
	for _, mc := range r.cfg.measures {
		m, err := mc.spec.new(r, mc.params, mc.name)
		if err != nil {
			return err
		}
		r.measures = append(r.measures, m)
	}
	return nil
}

// buildNetwork constructs the network backend, with what the
// configuration puts on top of it (the routing layer, the replay).
func (r *Run) buildNetwork() error {
	n := &r.cfg.net
	r.net.backendName, r.net.posEvery, r.net.epochEvery = n.name, n.posEvery, n.epochEvery
	r.net.replay = n.mode == modeReplay
	b, err := n.newBackend(r.cfg.seed, (*tracer)(r))
	if err != nil {
		return located(r.cfg.netAt, "%v", err)
	}
	r.net.backend = b
	return nil
}

// buildBehaviors makes every node's context and behaviours and starts
// them, in node order.
func (r *Run) buildBehaviors() error {
	c := r.cfg
	for i := range r.fleet.nodes {
		ns := &r.fleet.nodes[i]
		list, fixedTel := c.node(i)
		ns.ctx, ns.drv = agent.NewContext(ns.ref, (*host)(r), ns.veh, fixedTel, sim.Stream(r.cfg.seed, "agent", i), r.log)
		for k := range list {
			b := &list[k]
			ns.slots = append(ns.slots, slot{b: b.spec.New(b.params), made: b, path: b.path, typ: b.spec.Name})
		}
	}
	for i := range r.fleet.nodes {
		ns := &r.fleet.nodes[i]
		for j := range ns.slots {
			s := &ns.slots[j]
			if err := s.b.Start(ns.ctx); err != nil {
				// Validate started it without a vehicle and it did not
				// refuse then.
				return fmt.Errorf("%s: %s on node %s: %w", s.path, s.typ, ns.ref.Name, err)
			}
			period, offset := s.b.Schedule()
			if rc, ok := s.b.(agent.Receiver); ok {
				s.recv = rc
				if lr, ok := rc.(agent.LocalReceiver); !ok || !lr.ReceivesLocally() {
					r.fleet.sharedRecv = true
				}
			}
			if pp, ok := s.b.(agent.Preparer); ok {
				s.prep = pp
				r.fleet.preparers = true
			}
			if period > 0 {
				every, err := r.kernel.Ticks(period)
				if err != nil || offset < 0 || offset%r.cfg.tick != 0 {
					return fmt.Errorf("%s: %s on node %s steps every %v from %v, off the tick %v", s.path, s.typ, ns.ref.Name, period, offset, r.cfg.tick)
				}
				s.every, s.next = every, int64(offset/r.cfg.tick)
				if sl, ok := s.b.(agent.Sleeper); ok {
					s.sleep = sl
					s.wake(r.cfg.tick)
				}
				r.fleet.steps.push(dueSlot{next: s.next, node: int32(i), slot: int32(j)})
			}
		}
	}
	return nil
}

// Nodes lists the run's nodes in id order.
func (r *Run) Nodes() []agent.NodeRef { return r.fleet.refs }

// HasBehavior reports whether node id runs a behaviour of the named type.
func (r *Run) HasBehavior(id netsim.NodeID, typ string) bool {
	if id < 0 || int(id) >= len(r.fleet.nodes) {
		return false
	}
	for _, s := range r.fleet.nodes[id].slots {
		if s.typ == typ {
			return true
		}
	}
	return false
}

// host is the run as its behaviours see it (agent.Host): a view of the
// same value, so that only the contexts the run made can send, record
// events, fail the run or create files, not every holder of a *Run.
type host Run

// Origin returns the scenario's geodetic origin.
func (h *host) Origin() geom.Geodetic { return h.cfg.sc.World.Origin }

// Nodes lists the run's nodes in id order.
func (h *host) Nodes() []agent.NodeRef { return h.fleet.refs }

// Tick returns the kernel tick.
func (h *host) Tick() sim.Duration { return h.cfg.tick }

// File creates a behaviour's output file in the run directory; nil and no
// error when the run writes no files (agent.Context.File, the one place
// behaviours reach it through, turns that into io.Discard).
func (h *host) File(name string) (io.Writer, error) { return (*Run)(h).sampleFile(name) }

// Network says how the run drives its network.
func (h *host) Network() agent.NetworkMode {
	return agent.NetworkMode{Epoch: sim.Duration(h.net.epochEvery) * h.cfg.tick, Replay: h.net.replay}
}

// Send queues a packet from an agent.
func (h *host) Send(src netsim.NodeID, m *agent.Message) {
	p := h.net.pktPool.Get(len(m.Payload))
	p.ID, p.Src, p.Dst, p.Port, p.Kind, p.Seq = h.net.nextPktID, src, m.Dst, m.Port, m.Kind, m.Seq
	p.TGen, p.TSend, p.Size = m.TGen, m.TSend, m.Size
	p.Payload = append(p.Payload, m.Payload...)
	h.net.nextPktID++
	h.net.outbox = append(h.net.outbox, p)
	if m.Deferred && h.net.ep != nil {
		h.net.ep.deferredSent(p, m)
	}
}

// Event records an agent event.
func (h *host) Event(t sim.Time, node netsim.NodeID, name, detail string) {
	(*Run)(h).event(t, node, "agent", name, detail)
}

// Fail ends the run with err after the current agent phase. The first
// failure wins.
func (h *host) Fail(node netsim.NodeID, err error) {
	if h.failed == nil {
		h.failed = err
	}
}

// sampleFile creates a per-sample output file (a behaviour's, a
// measure's): nil and no error when the run writes no files, so that the
// engine's own writers skip the work.
func (r *Run) sampleFile(name string) (io.Writer, error) {
	if !r.out.started {
		return nil, errStartFile(name)
	}
	if r.opt.NoFiles {
		return nil, nil
	}
	return r.summaryFile(name)
}

// summaryFile creates an end-of-run file that even runs without
// per-sample files write (a measure's result, beside summary.json); it
// returns nil and no error when the run writes no files.
func (r *Run) summaryFile(name string) (io.Writer, error) {
	if r.out.openFile == nil {
		return nil, nil
	}
	if name == "" || strings.ContainsAny(name, `/\`) || name[0] == '.' {
		return nil, fmt.Errorf("output file name %q must be a plain file name", name)
	}
	if r.out.files == nil {
		r.out.files = map[string]bool{}
	}
	if r.out.files[name] {
		return nil, fmt.Errorf("output file %s created twice", name)
	}
	r.out.files[name] = true
	return r.out.openFile(name)
}

// Tick returns the kernel tick.
func (r *Run) Tick() sim.Duration { return r.cfg.tick }

func (r *Run) event(t sim.Time, node netsim.NodeID, source, name, detail string) {
	if r.out.rec != nil {
		r.out.rec.Event(t, node, source, name, detail)
	}
}

// tracer is the run as its network backend sees it (netsim.Tracer and
// netsim.DropCounter): a view of the same value, so that trace events
// reach the run only from the backend it built.
type tracer Run

// Trace receives the backend's trace events.
func (t *tracer) Trace(e *netsim.TraceEvent) {
	t.met.Trace(e)
	if t.out.rec != nil {
		t.out.rec.Trace(e)
	}
}

// CountsDrops says that drops may be counted in bulk unless the recorder
// writes each one (trace.csv).
func (t *tracer) CountsDrops() bool {
	if t.out.rec == nil {
		return true
	}
	d, ok := t.out.rec.(DropRecorder)
	return ok && !d.RecordsDrops()
}

// TraceDrops counts n drops like e in bulk.
func (t *tracer) TraceDrops(e *netsim.TraceEvent, n int) { t.met.TraceDrops(e, n) }

// CountsReceptions says that receptions may be counted in bulk unless the
// recorder uses each one (trace.csv, run.mcap, the live view).
func (t *tracer) CountsReceptions() bool {
	if t.out.rec == nil {
		return true
	}
	d, ok := t.out.rec.(ReceptionRecorder)
	return ok && !d.RecordsReceptions()
}

// TraceReceptions counts n receptions like e in bulk.
func (t *tracer) TraceReceptions(e *netsim.TraceEvent, n int) { t.met.TraceReceptions(e, n) }

// SetOptions replaces the run-time options (progress, stop) after Build.
func (r *Run) SetOptions(opt Options) {
	r.opt.Progress, r.opt.Stop = opt.Progress, opt.Stop
	if opt.Logger != nil {
		r.log = opt.Logger
	}
}

// Effective returns the configuration the run uses, every default filled
// in; it is what config.json holds.
func (r *Run) Effective() map[string]any { return r.cfg.effective }

// Describe returns a one-line description of the run.
func (r *Run) Describe() string { return r.cfg.Describe() }

// Describe returns a one-line description of the run c describes.
func (c *Config) Describe() string {
	return fmt.Sprintf("%d vehicles, %d fixed nodes, %s network, %v at tick %v, seed %d",
		c.vehicles, len(c.fixed), c.net.name, sim.Duration(c.end), c.tick, c.seed)
}
