package engine

import (
	"fmt"
	"math"

	"skyloop/agent"
	"skyloop/geom"
	"skyloop/kind/multirotor"
	"skyloop/metrics"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

// VehicleSummary is one vehicle's line in summary.json.
type VehicleSummary struct {
	ID        int       `json:"id"`
	Name      string    `json:"name"`
	Group     string    `json:"group"`
	Kind      string    `json:"kind"`
	Start     geom.Vec3 `json:"start"`
	Final     geom.Vec3 `json:"final"`
	Mode      string    `json:"final_mode"`
	DistanceM float64   `json:"distance_m"`
	EnergyJ   float64   `json:"energy_j"`
	// PlanningEnergyJ is UB-ANC's empirical planning model (docs/calibration.md, model spec) applied to
	// the path flown: 0.1164 J/m + 0.0173 J/deg turned.
	PlanningEnergyJ float64 `json:"planning_energy_j"`
	TurnDeg         float64 `json:"turn_deg"`
	MaxSpeed        float64 `json:"max_speed_mps"` // at the world-check period
	// Target is the last position the vehicle was flying to, and
	// ArrivalErrorM its final distance from it (absent without a target).
	Target        *geom.Vec3 `json:"target,omitempty"`
	ArrivalErrorM *float64   `json:"arrival_error_m,omitempty"`
}

// Separation is the closest approach of any two vehicles (at the sample
// period), with the contact count.
type Separation struct {
	MinM       float64  `json:"min_m"`
	TNs        sim.Time `json:"t_ns"`
	Pair       [2]int   `json:"pair"`
	Collisions int      `json:"collisions"`
}

// Summary is summary.json.
type Summary struct {
	Scenario     string                    `json:"scenario"`
	Seed         uint64                    `json:"seed"`
	DurationNs   sim.Time                  `json:"duration_ns"`
	Ticks        int64                     `json:"ticks"`
	Backend      string                    `json:"backend"`
	Nodes        int                       `json:"nodes"`
	Network      metrics.Summary           `json:"network"`
	InFlight     uint64                    `json:"packets_in_flight_at_end"`
	Vehicles     []VehicleSummary          `json:"vehicles"`
	Separation   *Separation               `json:"separation,omitempty"`
	ObstacleHits int                       `json:"obstacle_hits"`
	BoundsExits  int                       `json:"bounds_exits"`
	Agents       map[string]map[string]any `json:"agents,omitempty"`
	// Measures holds the results of the scenario's measures, by name.
	Measures map[string]any `json:"measures,omitempty"`
}

// SetWallClock gives the run the wall clock (time.Now) its worker pool
// times its jobs with, to choose between running vehicles inline and in
// parallel; it never changes what a run computes. The runner sets it;
// without it, a run with several workers always steps them in parallel.
// Call it before Start.
func (r *Run) SetWallClock(now sim.WallClock) { r.opt.wallClock = now }

// Start initialises the backend and adds the phases to the kernel: the
// runner's own phases (pacing, clock sampling) first, in the order given,
// then the core's. Call it once, after the edge components are open.
func (r *Run) Start(first ...sim.Phase) error {
	r.out.started = true
	infos := make([]netsim.NodeInfo, len(r.fleet.nodes))
	r.net.pos = make([]geom.Vec3, len(r.fleet.nodes))
	for i := range r.fleet.nodes {
		ns := &r.fleet.nodes[i]
		p := ns.fixed
		if ns.veh != nil {
			p = ns.veh.Pos()
		}
		r.net.pos[i] = p
		infos[i] = netsim.NodeInfo{ID: ns.ref.ID, Name: ns.ref.Name, Pos: p, Vehicle: ns.veh != nil}
	}
	if err := r.net.backend.Start(infos); err != nil {
		return fmt.Errorf("starting the %s network: %w", r.net.backendName, err)
	}
	if r.net.epochEvery > 0 {
		r.net.ep = newEpochNet(r)
		if rb, ok := r.net.backend.(firstRunner); ok {
			if err := r.recordReplay(rb); err != nil {
				return err
			}
		}
	}
	r.par.pool = sim.NewPool(r.workers, r.opt.wallClock)
	if r.opt.AlwaysParallel {
		r.par.pool.AlwaysParallel()
	}
	r.par.vehicleFn = r.vehicleRange
	r.par.receiveFn = r.receiveRange
	r.net.rx = make([]rxScratch, r.workers)
	// The network runs ahead beside the vehicles only when nothing paces
	// the run to the wall clock (first phases do) and it steps every tick.
	il, ok := r.out.rec.(InterleavedRecorder)
	r.par.overlap = r.workers > 1 && r.net.ep == nil && len(first) == 0 && r.cfg.realtime == 0 && !(ok && il.Interleaved())
	r.par.gather = len(first) == 0 && len(r.fleet.worldList) == 0
	r.par.motionTick, r.par.posTick, r.par.posSent = -1, -1, -1
	r.motionBuf()
	r.fleet.localRecv = !r.fleet.sharedRecv
	tp, ok := r.net.backend.(netsim.TimedPositions)
	r.par.aroundPos = r.par.overlap && r.par.gather && r.fleet.localRecv && ok && tp.PositionsAtTheirTime()
	sampleEvery := int64(r.cfg.sc.Outputs.SamplePeriod / r.cfg.tick)
	second := max(int64(sim.Second/r.cfg.tick), 1)
	var phases []sim.Phase
	if stop := r.opt.Stop; stop != nil {
		// A stop request ends the run at the next tick boundary.
		phases = append(phases, sim.Phase{Name: "stop", Every: 1, Run: func(sim.Time) error {
			if stop() {
				return sim.ErrStopped
			}
			return nil
		}})
	}
	phases = append(phases, first...)
	if len(r.measures) > 0 {
		for _, m := range r.measures {
			if err := m.open(r.sampleFile); err != nil {
				return err
			}
		}
		phases = append(phases, sim.Phase{Name: "measure", Every: 1, Run: r.measurePhase})
	}
	phases = append(phases, []sim.Phase{
		{Name: "record", Every: sampleEvery, Run: func(t sim.Time) error { r.sample(t); return nil }},
		{Name: "world", Every: r.cfg.checkEvery, Run: func(t sim.Time) error { r.checkWorld(t); return nil }},
		{Name: "network", Every: 1, Run: r.networkPhase},
		{Name: "agents", Every: 1, Run: r.agentPhase},
		{Name: "vehicles", Every: 1, Run: r.vehiclePhase},
		{Name: "positions", Every: r.net.posEvery, Run: r.positionPhase},
		{Name: "progress", Every: second, Offset: second - 1, Run: r.progressPhase},
	}...)
	for _, p := range phases {
		if err := r.kernel.Add(p); err != nil {
			return err
		}
	}
	return nil
}

// prefetch is the network's step to the next tick, taken while the
// vehicles of the current tick stepped (see vehiclePhase).
type prefetch struct {
	ok       bool
	t        sim.Time
	d        []netsim.Delivery
	err      error
	consumed bool // the deliveries were recorded and received already
}

func (r *Run) networkPhase(t sim.Time) error {
	if r.net.ep != nil {
		return r.net.ep.phase(t, int64(t)/int64(r.cfg.tick))
	}
	var d []netsim.Delivery
	var err error
	if r.par.pre.ok {
		if r.par.pre.t != t {
			return fmt.Errorf("internal error: the network stepped ahead to %v, not to %v", r.par.pre.t, t)
		}
		pre := r.par.pre
		r.par.pre = prefetch{}
		if pre.err != nil {
			return fmt.Errorf("%s network: %w", r.net.backendName, pre.err)
		}
		if pre.consumed {
			return nil
		}
		d = pre.d
	} else if d, err = r.net.backend.AdvanceTo(t); err != nil {
		return fmt.Errorf("%s network: %w", r.net.backendName, err)
	}
	r.record(d, t)
	r.net.deliv = d
	return nil
}

// record counts the deliveries of tick t in the metrics and records them.
func (r *Run) record(d []netsim.Delivery, t sim.Time) {
	for i := range d {
		if i+recordAhead < len(d) {
			r.met.Upcoming(&d[i+recordAhead])
		}
		r.met.Delivered(&d[i], t)
		if r.out.rec != nil {
			r.out.rec.Delivery(&d[i], t)
		}
	}
}

// recordAhead is how many deliveries ahead record names the one to come
// to the metrics (metrics.Collector.Upcoming).
const recordAhead = 8

// receive hands the deliveries of tick t to their nodes' receiving
// behaviours, in order.
//
// When every receiving behaviour is local (agent.LocalReceiver: it
// changes nothing but its own node's state) and the tick has many
// deliveries, the nodes are split among the workers: each node still gets
// its deliveries in order, and no two nodes share anything a receiver
// changes, so the results are those of the serial loop.
func (r *Run) receive(d []netsim.Delivery, t sim.Time) {
	r.forgetPackets()
	if !r.receivesInParallel(len(d)) {
		r.receiveAll(d, t)
		return
	}
	r.sortReceptions(d, t)
	r.receiveShared(0)
}

// receiveAll hands every delivery of d to its receivers, on this
// goroutine.
func (r *Run) receiveAll(d []netsim.Delivery, t sim.Time) {
	var last *netsim.Packet
	sc := &r.net.rx[0]
	for i := range d {
		r.receiveOne(&d[i], t, sc, &last)
	}
}

// receiveAhead receives the deliveries of tick t while the workers step
// the vehicles of the tick before (stepAhead), then joins them: with many
// deliveries, this goroutine takes them part by part (parts of the node
// range) while the vehicles are still stepping, and shares the parts left
// among the workers once they are done. With few, it receives them all
// at once.
func (r *Run) receiveAhead(d []netsim.Delivery, t sim.Time) {
	r.forgetPackets()
	if !r.receivesInParallel(len(d)) {
		r.receiveAll(d, t)
		r.par.pool.Join()
		return
	}
	r.sortReceptions(d, t)
	part := 0
	if !r.opt.AlwaysParallel { // tests: share every part
		for ; part < rxParts && r.par.pool.Pending(); part++ {
			r.receivePart(part, 0, len(r.fleet.nodes), &r.net.rx[0])
		}
	}
	r.par.pool.Join()
	r.receiveShared(part)
}

// forgetPackets drops the receiving goroutines' decoded states before a
// tick's deliveries (rxScratch.forget).
func (r *Run) forgetPackets() {
	for i := range r.net.rx {
		r.net.rx[i].forget()
	}
}

// receivesInParallel reports whether n deliveries are worth sharing among
// the workers.
func (r *Run) receivesInParallel(n int) bool {
	least := parallelReceiveMin
	if r.opt.AlwaysParallel {
		least = 2 // tests: share whenever there is something to share
	}
	return r.fleet.localRecv && n >= least && r.par.pool.Workers() > 1
}

// parallelReceiveMin is the fewest deliveries in a tick worth sharing
// among the workers: below it, handing the job over costs more than the
// receivers' work (a delivery costs a hundred to a few hundred
// nanoseconds).
const parallelReceiveMin = 128

// rxParts is the number of parts of the node range the deliveries of a
// tick are sorted into for receiving in parallel.
const rxParts = 64

// sortReceptions sorts the deliveries d of tick t into rxParts parts by
// receiving node (a counting sort of their indices, in delivery order
// within a part), for receivePart.
func (r *Run) sortReceptions(d []netsim.Delivery, t sim.Time) {
	n := len(r.fleet.nodes)
	st := &r.net.rxStart
	*st = [rxParts + 1]int32{}
	for i := range d {
		st[int(d[i].Dst)*rxParts/n+1]++
	}
	for k := 1; k <= rxParts; k++ {
		st[k] += st[k-1]
	}
	if cap(r.net.rxOrder) < len(d) {
		r.net.rxOrder = make([]int32, len(d), 2*len(d))
	}
	r.net.rxOrder = r.net.rxOrder[:len(d)]
	var next [rxParts]int32
	copy(next[:], st[:rxParts])
	for i := range d {
		k := int(d[i].Dst) * rxParts / n
		r.net.rxOrder[next[k]] = int32(i)
		next[k]++
	}
	r.net.recvD, r.net.recvT = d, t
}

// receiveShared receives the deliveries of parts [first, rxParts) on the
// workers (sortReceptions sorted them).
func (r *Run) receiveShared(first int) {
	n := len(r.fleet.nodes)
	lo := (first*n + rxParts - 1) / rxParts // the first node of part first
	r.net.rxBase = lo
	if lo < n {
		r.par.pool.Share(n-lo, r.par.receiveFn)
	}
	r.net.recvD = nil
}

// receiveRange is receiveShared's job for the nodes [rxBase+lo,
// rxBase+hi), on any worker: it takes a free receiving scratch for the
// time of the call.
func (r *Run) receiveRange(lo, hi int) {
	lo, hi = lo+r.net.rxBase, hi+r.net.rxBase
	n := len(r.fleet.nodes)
	for i := range r.net.rx {
		sc := &r.net.rx[i]
		if sc.busy.CompareAndSwap(false, true) {
			for k := lo * rxParts / n; k <= (hi-1)*rxParts/n; k++ {
				r.receivePart(k, lo, hi, sc)
			}
			sc.busy.Store(false)
			return
		}
	}
	panic("engine: more receiving jobs at once than workers")
}

// receivePart hands the deliveries of part k to nodes [lo, hi) to their
// receivers, in order, with the message and decode memo of sc.
func (r *Run) receivePart(k, lo, hi int, sc *rxScratch) {
	d, t := r.net.recvD, r.net.recvT
	var last *netsim.Packet
	for _, i := range r.net.rxOrder[r.net.rxStart[k]:r.net.rxStart[k+1]] {
		if dl := &d[i]; int(dl.Dst) >= lo && int(dl.Dst) < hi {
			r.receiveOne(dl, t, sc, &last)
		}
	}
}

// receiveOne hands delivery dl of tick t to its node's receivers, with
// the message and decode memo of sc; *last is the packet sc's memo
// decoded (a packet's receivers share the decoding).
func (r *Run) receiveOne(dl *netsim.Delivery, t sim.Time, sc *rxScratch, last **netsim.Packet) {
	ns := &r.fleet.nodes[dl.Dst]
	if len(ns.slots) == 0 {
		return
	}
	if p := dl.P; p != *last {
		// Another packet: its message, and its decoded state. The
		// receivers of one packet share both (agent.Receiver).
		*last = p
		sc.msg = agent.Message{Src: p.Src, Dst: p.Dst, Port: p.Port, Kind: p.Kind, Seq: p.Seq, TGen: p.TGen,
			TSend: p.TSend, TRecv: t, Size: p.Size, Payload: p.Payload}
		sc.msg.ShareDecoded(sc.memoFor(p))
	}
	sc.msg.TArrive, sc.msg.RxPower = dl.At, dl.RxPower
	ns.drv.SetNow(t)
	for j := range ns.slots {
		if rc := ns.slots[j].recv; rc != nil {
			rc.Receive(ns.ctx, &sc.msg)
		}
	}
}

func (r *Run) agentPhase(t sim.Time) error {
	idx := int64(t) / int64(r.cfg.tick)
	r.receive(r.net.deliv, t)
	r.net.deliv = nil
	due := r.fleet.steps.take(idx)
	if r.fleet.preparers {
		for _, d := range due {
			ns := &r.fleet.nodes[d.node]
			if s := &ns.slots[d.slot]; s.prep != nil {
				ns.drv.SetNow(t)
				s.prep.Prepare(ns.ctx)
			}
		}
	}
	for _, d := range due {
		ns := &r.fleet.nodes[d.node]
		s := &ns.slots[d.slot]
		ns.drv.SetNow(t)
		s.b.Step(ns.ctx)
		s.next += s.every
		if s.sleep != nil {
			s.wake(r.cfg.tick)
		}
		d.next = s.next
		r.fleet.steps.push(d)
	}
	if r.failed != nil {
		return r.failed
	}
	if r.net.ep != nil {
		r.net.ep.hold(r.net.outbox) // for the next epoch start
		clear(r.net.outbox)
		r.net.outbox = r.net.outbox[:0]
		return nil
	}
	for i, p := range r.net.outbox {
		r.net.backend.Send(p)
		r.net.outbox[i] = nil
	}
	r.net.outbox = r.net.outbox[:0]
	return nil
}

// vehicleRange runs the autopilot and then the physics of vehicles
// [lo, hi). The autopilot phase and the physics phase of the tick protocol
// are fused per vehicle: vehicles do not interact within a tick, so
// "every autopilot, then every physics step" and "each vehicle's autopilot,
// then its physics" give the same result, with one hand-off to the workers
// per tick instead of two.
func (r *Run) vehicleRange(lo, hi int) {
	for i := lo; i < hi; i++ {
		v := r.fleet.veh[i]
		if r.par.curTick%r.fleet.ctrlEv[i] == 0 {
			v.Control(r.par.curT, &r.fleet.vev[i])
		}
		if r.par.curTick%r.fleet.physEv[i] == 0 {
			v.Step(r.par.curT, &r.fleet.vev[i])
		}
		if r.par.gatherMotion {
			r.fleet.motion[i] = v.Motion()
		}
		if r.par.gatherPos {
			r.net.pos[i] = v.Pos()
		}
	}
}

func (r *Run) vehiclePhase(t sim.Time) error {
	r.par.curT, r.par.curTick = t, int64(t)/int64(r.cfg.tick)
	// The next tick's world check and this tick's position update read
	// what the step leaves: the step gathers it (runPar.gather).
	r.par.gatherMotion = r.par.gather && (r.par.curTick+1)%r.cfg.checkEvery == 0
	r.par.gatherPos = r.par.gather && r.par.curTick%r.net.posEvery == 0
	r.par.motionTick, r.par.posTick = -1, -1
	if r.par.gatherMotion {
		r.par.motionTick = r.par.curTick + 1
	}
	if r.par.gatherPos {
		r.par.posTick = r.par.curTick
	}
	// Controllers in other processes get their sensors first, all of
	// them, so that they compute at once while the control steps wait.
	for _, i := range r.fleet.remotes {
		if r.par.curTick%r.fleet.ctrlEv[i] == 0 {
			r.fleet.veh[i].(vehicle.RemoteControlled).Send(t)
		}
	}
	next := t.Add(r.cfg.tick)
	switch posTick := r.par.curTick%r.net.posEvery == 0; {
	case r.par.overlap && next < r.par.until && !posTick:
		// The network's step to the next tick needs nothing the vehicles
		// change in this one (it has the packets the agents sent, and
		// positions only change at position ticks, which are excluded):
		// it runs on this goroutine while the workers step the vehicles,
		// and the network phase of the next tick takes its result. Every
		// output is written in the same order as without it.
		r.par.pool.Go(len(r.fleet.veh), r.par.vehicleFn)
		r.stepAhead(next)
	case r.par.overlap && next < r.par.until && r.par.aroundPos:
		// The same at a position tick, for a backend that applies
		// positions at their time: the events before the next tick run
		// beside the vehicles, those at it once the positions are set.
		r.par.pool.Go(len(r.fleet.veh), r.par.vehicleFn)
		r.stepAroundPositions(t, next)
	default:
		r.par.pool.Run(len(r.fleet.veh), r.par.vehicleFn)
	}
	// Shared worlds step once their vehicles have handed them this
	// tick's actuator commands.
	for k, w := range r.fleet.worldList {
		if r.par.curTick%r.fleet.worldEvery[k] == 0 {
			if err := w.Step(t); err != nil {
				return err
			}
		}
	}
	for _, i := range r.fleet.remotes {
		if err := r.fleet.veh[i].(vehicle.RemoteControlled).Err(); err != nil {
			return fmt.Errorf("vehicle %s: %w", r.fleet.nodes[i].ref.Name, err)
		}
	}
	// Merge vehicle events in vehicle order, whatever the worker count.
	for i := range r.fleet.vev {
		ev := &r.fleet.vev[i]
		for _, e := range ev.List {
			if r.out.rec != nil { // else nothing reads the text: do not format it
				r.event(e.T, netsim.NodeID(i), "vehicle", e.Name, e.Text())
			}
		}
		ev.List = ev.List[:0]
	}
	return nil
}

// stepAhead advances the network to next while the vehicles step, then
// waits for them.
//
// When every receiving behaviour is local (agent.LocalReceiver), the
// deliveries are recorded and received now too: the phases between here
// and the next tick's agent phase (records, world checks, measures) read
// vehicles, and write files no receiver or recording here writes.
func (r *Run) stepAhead(next sim.Time) {
	defer r.par.pool.Join() // also when the network panics
	d, err := r.net.backend.AdvanceTo(next)
	r.par.pre = prefetch{ok: true, t: next, d: d, err: err}
	if err == nil && r.fleet.localRecv {
		r.record(d, next)
		r.receiveAhead(d, next)
		r.par.pre.consumed = true
	}
}

// stepAroundPositions is stepAhead for position tick t: the network runs
// its events before next while the vehicles step, and the deliveries are
// recorded and received; with the vehicles stepped, the positions go to
// the backend (labelled next, as positionPhase would send them), and the
// events at next run. The backend holds positions until their time
// (netsim.TimedPositions), so this is what positionPhase and the next
// tick's network phase give, with the deliveries of next in two parts, in
// the same order.
func (r *Run) stepAroundPositions(t, next sim.Time) {
	defer r.par.pool.Join() // also when the network panics; at once when joined
	d, err := r.net.backend.AdvanceTo(next - 1)
	if err != nil {
		r.par.pre = prefetch{ok: true, t: next, err: err}
		return
	}
	r.record(d, next)
	r.receiveAhead(d, next) // joins the vehicles
	r.sendPositions(t)
	if d, err = r.net.backend.AdvanceTo(next); err != nil {
		r.par.pre = prefetch{ok: true, t: next, err: err}
		return
	}
	r.record(d, next)
	r.receive(d, next)
	r.par.pre = prefetch{ok: true, t: next, consumed: true}
}

func (r *Run) positionPhase(t sim.Time) error {
	if r.par.posSent != int64(t)/int64(r.cfg.tick) { // else the vehicle phase sent them
		r.sendPositions(t)
	}
	return nil
}

// sendPositions tells the backend where the vehicles are at the end of
// tick t (read by the vehicle step, or now).
func (r *Run) sendPositions(t sim.Time) {
	idx := int64(t) / int64(r.cfg.tick)
	if r.par.posTick != idx { // else the step gathered them
		for i, v := range r.fleet.veh {
			r.net.pos[i] = v.Pos()
		}
	}
	r.net.backend.SetPositions(t.Add(r.cfg.tick), r.net.pos)
	r.par.posSent = idx
}

func (r *Run) progressPhase(t sim.Time) error {
	if r.opt.Progress != nil {
		r.opt.Progress(t.Add(r.cfg.tick), r.cfg.end)
	}
	return nil
}

// sample records every vehicle's true state at t, for vehicles.csv and
// the trajectory plot.
func (r *Run) sample(t sim.Time) {
	if r.out.rec == nil || !r.out.recVehicles {
		return
	}
	for i, v := range r.fleet.veh {
		tel := v.Telemetry()
		r.out.rec.Vehicle(t, i, &tel)
	}
}

// checkWorld runs the separation, collision, obstacle and bounds checks.
func (r *Run) checkWorld(t sim.Time) {
	m := r.motionBuf()
	if r.par.motionTick != int64(t)/int64(r.cfg.tick) { // else the step gathered them
		for i, v := range r.fleet.veh {
			m[i] = v.Motion()
		}
	}
	r.world.sample(t, m, r.event)
}

func (r *Run) motionBuf() []vehicle.Motion {
	if cap(r.fleet.motion) < len(r.fleet.veh) {
		r.fleet.motion = make([]vehicle.Motion, len(r.fleet.veh))
	}
	return r.fleet.motion[:len(r.fleet.veh)]
}

func (r *Run) summary() *Summary {
	s := &Summary{Scenario: r.cfg.sc.Name, Seed: r.cfg.seed, DurationNs: r.cfg.end, Ticks: int64(r.cfg.end) / int64(r.cfg.tick),
		Backend: r.net.backendName, Nodes: len(r.fleet.nodes), Network: r.met.Summary(r.cfg.end),
		ObstacleHits: r.world.ObstacleHits, BoundsExits: r.world.BoundsExits}
	tot := s.Network.Total
	// Packets a backend reports as end_of_run are still in flight at the
	// end, not lost: they count in packets_in_flight_at_end.
	var dropped uint64
	for reason, n := range tot.Drops {
		if reason != netsim.DropEndOfRun.String() {
			dropped += n
		}
	}
	if tot.Expected > tot.Rx+dropped {
		s.InFlight = tot.Expected - tot.Rx - dropped
	}
	for i, v := range r.fleet.veh {
		tel := v.Telemetry()
		ref := r.fleet.nodes[i].ref
		vs := VehicleSummary{ID: i, Name: ref.Name, Group: ref.Group, Kind: v.Kind(),
			Start: r.world.start[i], Final: tel.Pos, Mode: tel.Mode.String(), DistanceM: round(tel.Distance, 4),
			EnergyJ: round(tel.Energy, 4), MaxSpeed: round(r.world.maxSpeed[i], 4), TurnDeg: round(r.world.turnDeg[i], 2),
			PlanningEnergyJ: round(multirotor.PlanningEnergy(tel.Distance, r.world.turnDeg[i]), 4)}
		if tel.HasTarget {
			tg := tel.Target
			e := round(tel.Pos.Dist(tg), 4)
			vs.Target, vs.ArrivalErrorM = &tg, &e
		}
		s.Vehicles = append(s.Vehicles, vs)
	}
	if len(r.fleet.veh) > 1 && !math.IsInf(r.world.MinSep, 1) {
		s.Separation = &Separation{MinM: round(r.world.MinSep, 4), TNs: r.world.MinSepT, Pair: r.world.MinSepPair, Collisions: r.world.Collisions}
	}
	for _, m := range r.measures {
		if s.Measures == nil {
			s.Measures = map[string]any{}
		}
		s.Measures[m.name()] = m.result()
	}
	for i := range r.fleet.nodes {
		ns := &r.fleet.nodes[i]
		for _, sl := range ns.slots {
			f, ok := sl.b.(agent.Finisher)
			if !ok {
				continue
			}
			if s.Agents == nil {
				s.Agents = map[string]map[string]any{}
			}
			m := s.Agents[ns.ref.Name]
			if m == nil {
				m = map[string]any{}
				s.Agents[ns.ref.Name] = m
			}
			m[sl.typ] = f.Finish(ns.ctx)
		}
	}
	return s
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// Workers returns the number of goroutines that step the vehicles.
func (r *Run) Workers() int { return r.workers }
