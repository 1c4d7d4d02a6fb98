package engine

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"skyloop/agent"

	"skyloop/edge"
	"skyloop/netsim"
	"skyloop/scenario"
	"skyloop/sim"
	"skyloop/vehicle"
)

// TAPBridge is the behaviour type the engine adds to every vehicle of a
// run with isolation: netns: the bridge between the vehicle's TAP device
// and the simulated network (package netsim/tap registers it).
const TAPBridge = "tap"

// Recorder receives what a run records, in simulated-time order, from the
// kernel's goroutine. The runner's implementation writes trace.csv,
// deliveries.csv, vehicles.csv and events.csv; tests may keep it all in
// memory.
type Recorder interface {
	// Trace receives every transmission, reception and drop.
	Trace(e *netsim.TraceEvent)
	// Delivery receives every delivery with the tick that consumed it.
	Delivery(d *netsim.Delivery, tick sim.Time)
	// Vehicle receives vehicle id's true state at a sample time (when the
	// recorder asked for samples).
	Vehicle(t sim.Time, id int, tel *vehicle.Telemetry)
	// Event receives an event for events.csv.
	Event(t sim.Time, node netsim.NodeID, source, name, detail string)
}

// DropRecorder is implemented by recorders that can say whether they use
// drop events one by one (a per-packet trace file does). A recorder that
// does not implement it gets every drop.
type DropRecorder interface {
	RecordsDrops() bool
}

// ReceptionRecorder is implemented by recorders that can say whether they
// use reception events one by one (a per-packet trace file and the
// Foxglove outputs do). A recorder that does not implement it gets every
// reception.
type ReceptionRecorder interface {
	RecordsReceptions() bool
}

// InterleavedRecorder is implemented by recorders that may write every
// kind of record into one stream (run.mcap), where the order across kinds
// is part of the output. While Interleaved reports true, the network never
// steps to the next tick beside the vehicles (see vehiclePhase): that
// would hand over the next tick's network events before this tick's
// vehicle events and the next tick's samples, an order that differs with
// the number of workers. Recorders that keep each kind apart (one file
// per kind) need not implement it.
type InterleavedRecorder interface {
	Interleaved() bool
}

// SetRecorder makes rec receive the run's records; with vehicles set it
// also gets every vehicle's state at the scenario's sample period.
func (r *Run) SetRecorder(rec Recorder, vehicles bool) { r.out.rec, r.out.recVehicles = rec, vehicles }

// SetFiles gives behaviours a way to create their own output files (see
// agent.Context.File); without it they write none.
func (r *Run) SetFiles(open func(name string) (io.Writer, error)) { r.out.openFile = open }

// backendEdge opens a network backend that reaches outside the process;
// the core closes the backend itself (netsim.Backend.Close).
type backendEdge struct{ c edge.Component }

func (b backendEdge) Open(env *edge.Env) error { return b.c.Open(env) }
func (b backendEdge) Close() error             { return nil }

// Components returns the parts of the run that reach outside the
// simulation, in the order they must be opened: the network backend, then
// for every node in order its vehicle's controller (real firmware) and its
// behaviours.
func (r *Run) Components() []edge.Component {
	var out []edge.Component
	if c, ok := r.net.backend.(edge.Component); ok {
		out = append(out, backendEdge{c})
	}
	for i := range r.fleet.nodes {
		if cv, ok := r.fleet.nodes[i].veh.(interface{ Controller() vehicle.Controller }); ok {
			if c, ok := cv.Controller().(edge.Component); ok {
				out = append(out, c) // firmware before the behaviours that talk to it
			}
		}
		for _, s := range r.fleet.nodes[i].slots {
			if c, ok := s.b.(edge.Component); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// Behaviors calls f for every behaviour of the run, in node order.
func (r *Run) Behaviors(f func(node int, b agent.Behavior)) {
	for i := range r.fleet.nodes {
		for _, s := range r.fleet.nodes[i].slots {
			f(i, s.b)
		}
	}
}

// Run steps the kernel to the end of the run (or until a stop request,
// sim.ErrStopped, or a failure).
func (r *Run) Run() error { return r.RunUntil(r.cfg.end) }

// RunUntil steps the kernel up to (not including) the tick at t, or the
// end of the run if that comes first. It may be called repeatedly with
// later times, as tests that drive a run step by step do.
func (r *Run) RunUntil(t sim.Time) error {
	r.par.until = min(t, r.cfg.end)
	err := r.kernel.Run(r.par.until)
	if err != nil && r.par.pre.ok && !r.par.pre.consumed && r.par.pre.err == nil {
		// Stopped with the network stepped ahead: its deliveries are in
		// the trace already; record them too, so that deliveries.csv of
		// the partial run agrees with trace.csv.
		r.record(r.par.pre.d, r.par.pre.t)
		r.par.pre.consumed = true
	}
	return err
}

// Now returns the simulated time the run has reached.
func (r *Run) Now() sim.Time { return r.kernel.Now() }

// TimePhases makes the run time its phases (record, world, network,
// agents, vehicles, positions, ...) with clock, the edge's wall clock,
// from zero; nil stops it. When the network steps ahead beside the
// vehicles, that step is part of the vehicles phase. Timing changes
// nothing the run computes.
func (r *Run) TimePhases(clock sim.WallClock) { r.kernel.TimePhases(clock) }

// PhaseTimes returns the calls and wall time of every phase since
// TimePhases, in the order they run in a tick (nil when not timing).
func (r *Run) PhaseTimes() []sim.PhaseTime { return r.kernel.PhaseTimes() }

// Finish ends a run that reached its end: it closes the backend, checks
// that every packet was released, records the final sample and world
// check, and returns the summary. Call it once, after Run returned nil.
func (r *Run) Finish() (*Summary, error) {
	if r.finished {
		return nil, errors.New("internal error: run finished twice")
	}
	r.finished = true
	r.par.pool.Close()
	if err := r.net.backend.Close(); err != nil {
		return nil, fmt.Errorf("closing the network backend: %w", err)
	}
	if live := r.net.pktPool.Live(); live != 0 {
		return nil, fmt.Errorf("internal error: the %s backend leaked %d packets", r.net.backendName, live)
	}
	r.sample(r.cfg.end)
	r.checkWorld(r.cfg.end)
	r.measurePhase(r.cfg.end)
	for _, m := range r.measures {
		if err := m.finish(r.summaryFile); err != nil {
			r.closeWorlds()
			return nil, err
		}
	}
	s := r.summary()
	r.closeWorlds()
	return s, nil
}

// Close releases what the run holds (the network backend, the worker
// pool) when it did not finish; after Finish it does nothing.
func (r *Run) Close() {
	if r.finished {
		return
	}
	r.finished = true
	r.closeWorlds()
	if r.par.pool != nil {
		r.par.pool.Close()
	}
	if r.net.backend != nil {
		r.net.backend.Close()
	}
}

// Scenario returns the scenario the run was built from.
func (r *Run) Scenario() *scenario.Scenario { return r.cfg.sc }

// Seed returns the run's seed.
func (r *Run) Seed() uint64 { return r.cfg.seed }

// End returns the simulated time the run ends at.
func (r *Run) End() sim.Time { return r.cfg.end }

// Realtime returns the real-time factor (0: as fast as possible).
func (r *Run) Realtime() float64 { return r.cfg.realtime }

// Aerial reports whether the run has multirotors.
func (r *Run) Aerial() bool { return r.cfg.aerial }

// Vehicles returns the number of vehicles (nodes 0..n-1).
func (r *Run) Vehicles() int { return len(r.fleet.veh) }

// Backend returns the network backend.
func (r *Run) Backend() netsim.Backend { return r.net.backend }

// Logger returns the run's logger.
func (r *Run) Logger() *slog.Logger { return r.log }

// NoFiles reports whether the run skips its per-packet and per-sample files.
func (r *Run) NoFiles() bool { return r.opt.NoFiles }
