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
// Phase order at every tick t (DESIGN.md):
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
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"

	"skyloop/agent"
	"skyloop/behavior"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/metrics"
	"skyloop/netsim"
	"skyloop/netsim/replay"
	"skyloop/netsim/routing"
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
	// CheckOnly decodes and checks everything and constructs nothing: no
	// vehicle, no network backend. Behaviours are started on contexts
	// without a vehicle (a behaviour's Start must not need one), so that
	// what they refuse (a group that does not exist, a step time off the
	// tick) is reported too. The run it returns cannot be started.
	CheckOnly bool
	// Registry names the component types the scenario may use; nil means
	// Core().
	Registry *Registry
	// Realtime, when > 0, paces the run to the wall clock: simulated time
	// advances Realtime times as fast as real time (1 = real time), so
	// that people and outside programs can take part.
	Realtime float64
	// parsing is set by Registry.Check, which runs while the scenario is
	// parsed, before the caller has set its directory: files named
	// relative to it are checked by the Build that follows.
	parsing bool
	// wallClock is the wall clock the worker pool times its jobs with,
	// given by the edge (Run.SetWallClock); the core reads none itself.
	wallClock sim.WallClock
}

// OptionError reports bad input that is not a mistake in the scenario file:
// a bad value in Options (a command-line override), or something a scenario
// needs from the machine (privileges, programs, namespaces not in use).
type OptionError struct{ Err error }

func (e *OptionError) Error() string { return e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// filesValidator is a parameter set that names files (a MuJoCo model,
// say), relative to the scenario's directory: ValidateFiles checks them as
// the run will read them, so that validate reports a file that cannot be
// used against the field that names it.
type filesValidator interface {
	ValidateFiles(dir string) fields.Errors
}

// epochParams are a backend's parameters with a synchronisation period of
// their own (ns-3's: it runs at most once per epoch). network.epoch is the
// engine's key, so a backend never decodes it; the engine hands it on, so
// that the key means one epoch on every backend.
type epochParams interface {
	SetEpoch(d sim.Duration)
}

type slot struct {
	b     agent.Behavior
	made  *built // what it was made from; nil for engine-made behaviours (tap)
	recv  agent.Receiver
	prep  agent.Preparer
	every int64 // ticks; 0 = never steps
	next  int64 // next tick index to step
	path  string
	typ   string
}

type nodeState struct {
	ref   agent.NodeRef
	ctx   *agent.Context
	drv   agent.Driver
	slots []slot
	veh   vehicle.Vehicle // nil for fixed nodes
	fixed geom.Vec3
}

// Run is a built, ready-to-execute run.
type Run struct {
	sc      *scenario.Scenario
	seed    uint64
	end     sim.Time
	tick    sim.Duration
	kernel  *sim.Kernel
	log     *slog.Logger
	opt     Options
	workers int

	nodes   []nodeState
	refs    []agent.NodeRef
	veh     []vehicle.Vehicle
	vev     []vehicle.Events
	ctrlEv  []int64 // control period per vehicle, ticks
	physEv  []int64 // physics period per vehicle, ticks
	groupOf []int   // vehicle -> group index
	stepNs  float64 // estimated cost of stepping every vehicle once

	checkEvery int64 // world checks, ticks

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
	msg         agent.Message

	met      *metrics.Collector
	world    worldCheck
	measures []measure
	// worlds are the shared physics worlds (MuJoCo); worldList and
	// worldEvery, once built, the worlds and their periods in ticks.
	worlds     vehicle.Worlds
	worldList  []vehicle.World
	worldEvery []int64

	pool      *sim.Pool
	curTick   int64
	curT      sim.Time
	vehicleFn func(lo, hi int)
	// overlap lets the network step to the next tick while the workers
	// step the vehicles (see vehiclePhase); until is where the current
	// RunUntil stops, pre the step taken ahead.
	overlap bool
	until   sim.Time
	pre     prefetch
	// localRecv is set when every receiving behaviour is an
	// agent.LocalReceiver: deliveries stepped ahead are then consumed
	// ahead too.
	localRecv  bool
	sharedRecv bool // some receiving behaviour is not local

	effective   map[string]any
	rec         Recorder // nil: nothing is recorded
	recVehicles bool     // rec wants vehicle samples
	openFile    func(name string) (io.Writer, error)
	files       map[string]bool  // behaviour output files created
	motion      []vehicle.Motion // world checks' buffer
	aerial      bool             // the run has multirotors (profile.png)
	remotes     []int            // vehicles flown by controllers in other processes
	preparers   bool             // some behaviour steps in two passes (external agents)
	realtime    float64          // real-time factor (0 = as fast as possible)
	failed      error            // a behaviour's Fail: ends the run after the agent phase
	started     bool             // Start was called: output files may be created
	reg         *Registry        // the component types
	finished    bool
}

// Build checks every part of the scenario, component parameters included,
// and constructs the run. It writes nothing. Problems come back as a
// scenario.Errors value naming file, line and field path.
func Build(sc *scenario.Scenario, opt Options) (*Run, error) {
	r := &Run{sc: sc, opt: opt, seed: sc.Seed, tick: sc.Tick, log: opt.Logger, reg: opt.Registry}
	if r.reg == nil {
		r.reg = Core()
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if opt.Seed != nil {
		r.seed = *opt.Seed
	}
	dur := sc.Duration
	if opt.Duration != nil {
		dur = *opt.Duration
		if dur <= 0 || dur%sc.Tick != 0 {
			return nil, &OptionError{fmt.Errorf("--duration %v must be a positive whole number of ticks of %v", dur, sc.Tick)}
		}
	}
	r.end = sim.Time(dur)
	k, err := sim.NewKernel(sc.Tick)
	if err != nil {
		return nil, err
	}
	r.kernel = k
	r.checkEvery = r.ticks("world.check_period", sc.World.CheckPeriod)
	outs := sc.Outputs
	if opt.NoFiles {
		outs.Trace, outs.Deliveries, outs.Vehicles = false, false, false
	}
	r.effective = map[string]any{"name": sc.Name, "description": sc.Description, "seed": r.seed,
		"duration": sim.Duration(r.end), "tick": sc.Tick, "world": sc.World, "outputs": outs}
	if sc.Coverage != nil {
		r.effective["coverage"] = sc.Coverage
	}

	r.buildVehicles()
	r.buildFixed()
	r.buildMeasures()
	r.buildNetwork()
	r.buildBehaviors() // decodes parameters always; starts behaviours only if all is well so far
	if err := sc.Err(); err != nil {
		return nil, err
	}
	r.realtime = sc.Realtime
	if opt.Realtime > 0 {
		r.realtime = opt.Realtime
	}
	if sc.Isolation == "netns" && r.realtime == 0 {
		return nil, &OptionError{errors.New("isolation: netns needs a real-time run (--realtime or realtime in the scenario)")}
	}
	for i, p := range sc.Processes {
		if p.Group != "" {
			found := false
			for _, g := range sc.Vehicles {
				found = found || g.Name == p.Group
			}
			if !found {
				return nil, &OptionError{fmt.Errorf("processes[%d].group: no vehicle group %q", i, p.Group)}
			}
		}
	}
	r.workers = sc.Workers
	if opt.Workers > 0 {
		r.workers = opt.Workers
	}
	if r.workers == 0 {
		// Handing work to other goroutines costs a few microseconds per
		// phase: worth it only when a tick's vehicle work is far larger.
		r.workers = 1
		if r.stepNs >= 30_000 {
			r.workers = min(runtime.GOMAXPROCS(0), 8)
		}
	}
	if opt.CheckOnly {
		return r, nil // no vehicles: nothing to measure or check
	}
	if err := r.buildWorlds(); err != nil {
		return nil, err
	}
	r.met = metrics.New(len(r.nodes))
	r.world = newWorldCheck(sc.World, r.veh)
	return r, nil
}

func (r *Run) ticks(path string, d sim.Duration) int64 {
	n, err := r.kernel.Ticks(d)
	if err != nil {
		if !r.sc.IsSet(path) {
			r.sc.Errorf(path, "%v (the default; set %s to a multiple of the tick)", err, path)
		} else {
			r.sc.Errorf(path, "%v", err)
		}
		return 1
	}
	return n
}

func (r *Run) buildVehicles() {
	sc := r.sc
	r.worlds.Dir = sc.Dir
	var groups []any
	// Too many vehicles in all (reported by the scenario's own check):
	// check the groups' parameters but build no vehicle.
	total := 0
	for _, g := range sc.Vehicles {
		total += min(max(g.Count, 0), scenario.MaxVehicles+1)
	}
	tooMany := total > scenario.MaxVehicles
	if !tooMany {
		n := total + len(sc.Nodes)
		r.nodes = make([]nodeState, 0, n)
		r.veh = make([]vehicle.Vehicle, 0, total)
		r.ctrlEv, r.physEv, r.groupOf = make([]int64, 0, total), make([]int64, 0, total), make([]int, 0, total)
	}
	for gi := range sc.Vehicles {
		g := &sc.Vehicles[gi]
		path := fmt.Sprintf("vehicles[%d]", gi)
		ks, ok := r.reg.Kind(g.Kind)
		if !ok {
			if g.Kind != "" {
				sc.Errorf(path+".kind", "unknown vehicle kind %q: want one of %s", g.Kind, strings.Join(r.reg.KindNames(), ", "))
			}
			continue
		}
		p := ks.Params()
		if ks.Preset != nil {
			name := ks.Presets[0]
			sc.DecodeKey(g.Params, path+".params", "preset", &name)
			valid := false
			for _, n := range ks.Presets {
				valid = valid || n == name
			}
			if !valid {
				sc.Errorf(path+".params.preset", "unknown %s preset %q: want one of %s", g.Kind, name, strings.Join(ks.Presets, ", "))
				continue
			}
			p = ks.Preset(name)
		}
		cs, cp, skip, ok := r.controller(ks, g.Params, path+".params")
		if cs != nil && cs.Defaults != nil {
			cs.Defaults(p)
		}
		if !sc.Decode(g.Params, path+".params", p, skip...) || !ok {
			continue
		}
		bad := p.Validate()
		if f, ok := p.(filesValidator); ok && len(bad) == 0 && !r.opt.parsing {
			if fb := f.ValidateFiles(sc.Dir); len(fb) > 0 {
				bad = fb
			}
		}
		if cs != nil && cs.Check != nil {
			for k, v := range cs.Check(p, cp) {
				bad[k] = v
			}
		}
		bad.Report(path+".params", sc.Errorf)
		if len(bad) > 0 {
			continue
		}
		tm := ks.Timing(p)
		if cs != nil {
			tm.Control = cs.Period(cp)
		}
		ce := r.ticks(path+".params.control_period", tm.Control)
		pe := r.ticks(path+".params.physics_period", tm.Physics)
		if tooMany || g.Count < 1 || len(g.Spawn.Check(g.Count)) > 0 {
			continue
		}
		pts := g.Spawn.Points(g.Count)
		yaw := g.Yaw * math.Pi / 180
		var newVehicle func(geom.Vec3, float64, func(string) *rand.Rand) vehicle.Vehicle
		if cs != nil {
			for i, pt := range pts {
				if pt.Z > 0 {
					sc.Errorf(path+".spawn", "vehicle %d starts %.3g m above the ground: the %s controller boots on the ground (spawn z = 0)", i, pt.Z, cs.Name)
					break
				}
			}
		}
		if !r.opt.CheckOnly {
			// A check builds no vehicle: its parameters are checked
			// above, and a hundred thousand multirotors would cost
			// hundreds of MB for nothing.
			if cs != nil {
				phys, ctrl, first := ks.NewPhysics(p), cs.NewGroup(p, cp), len(r.nodes)
				newVehicle = func(pos geom.Vec3, yaw float64, stream func(string) *rand.Rand) vehicle.Vehicle {
					id := len(r.nodes) // the node being built
					return vehicle.Compose(phys(pos, yaw, stream), ctrl(id, fmt.Sprintf("%s-%d", g.Name, id-first), pos, yaw))
				}
			} else if ks.NewGroupIn != nil {
				newVehicle = ks.NewGroupIn(p, &r.worlds)
			} else {
				newVehicle = ks.NewGroup(p)
			}
		}
		for i := 0; i < g.Count; i++ {
			id := netsim.NodeID(len(r.nodes))
			var v vehicle.Vehicle
			if newVehicle != nil {
				// Each purpose (turbulence, sensor noise, ...) draws
				// from its own stream keyed by (seed, purpose, vehicle).
				v = newVehicle(pts[i], yaw, func(purpose string) *rand.Rand { return sim.Stream(r.seed, purpose, int(id)) })
			}
			ref := agent.NodeRef{ID: id, Name: fmt.Sprintf("%s-%d", g.Name, i), Group: g.Name, Index: i}
			if rc, ok := v.(vehicle.RemoteControlled); ok && rc.Remote() {
				r.remotes = append(r.remotes, int(id))
			}
			r.nodes = append(r.nodes, nodeState{ref: ref, veh: v})
			r.veh = append(r.veh, v)
			r.ctrlEv = append(r.ctrlEv, ce)
			r.physEv = append(r.physEv, pe)
			r.groupOf = append(r.groupOf, gi)
			r.stepNs += ks.StepNs
		}
		if ks.Aerial {
			r.aerial = true
		}
		eff := map[string]any{"name": g.Name, "kind": g.Kind, "count": g.Count, "spawn": g.Spawn, "yaw": g.Yaw, "params": p}
		if cs != nil {
			// Written only for another controller, so that the
			// configuration of other runs stays as it was.
			eff["controller"] = map[string]any{"name": cs.Name, "params": cp}
		}
		groups = append(groups, eff)
	}
	r.vev = make([]vehicle.Events, len(r.veh))
	r.effective["vehicles"] = groups
}

// buildWorlds builds the shared physics worlds (MuJoCo) with the
// scenario's obstacles, and notes how often each steps.
func (r *Run) buildWorlds() error {
	var boxes []geom.Box
	for _, o := range r.sc.World.Obstacles {
		boxes = append(boxes, geom.Box{Min: o.Min, Max: o.Max})
	}
	for _, w := range r.worlds.All() {
		if err := w.Build(boxes); err != nil {
			r.closeWorlds()
			// Mostly a robot model's problem: bad input.
			r.sc.Errorf("vehicles", "MuJoCo: %v", err)
			return r.sc.Err()
		}
		every := int64(w.Period() / r.tick)
		if every < 1 || sim.Duration(every)*r.tick != w.Period() {
			r.closeWorlds()
			return fmt.Errorf("a shared physics world steps every %v: not a whole number of ticks of %v", w.Period(), r.tick)
		}
		r.worldList = append(r.worldList, w)
		r.worldEvery = append(r.worldEvery, every)
	}
	return nil
}

// closeWorlds frees the shared physics worlds.
func (r *Run) closeWorlds() {
	for _, w := range r.worlds.All() {
		w.Close()
	}
}

// controller reads the `controller:` choice of a vehicle group's params:
// nil for the kind's own controller, else the chosen one with its
// parameters (from params.<Key>). skip lists the keys the kind's own
// parameters must not decode; ok is false when the choice is bad (and
// reported).
func (r *Run) controller(ks KindSpec, params scenario.Raw, path string) (cs *ControllerSpec, cp fields.Validator, skip []string, ok bool) {
	if ks.Controller == "" {
		return nil, nil, nil, true // the kind has no choice; `controller:` is an unknown field
	}
	sc := r.sc
	others := r.reg.Controllers(ks.Name)
	skip = []string{"controller"}
	for _, c := range others {
		if c.Key != "" {
			skip = append(skip, c.Key)
		}
	}
	name := ks.Controller
	sc.DecodeKey(params, path, "controller", &name)
	names := []string{ks.Controller}
	for _, c := range others {
		names = append(names, c.Name)
		if c.Name == name {
			cs = &c
		}
	}
	if cs == nil && name != ks.Controller {
		sc.Errorf(path+".controller", "unknown %s controller %q: want one of %s", ks.Name, name, strings.Join(names, ", "))
		return nil, nil, skip, false
	}
	ok = true
	for _, c := range others {
		if c.Key != "" && (cs == nil || c.Key != cs.Key) && sc.HasKey(params, c.Key) {
			sc.Errorf(path+"."+c.Key, "only read with controller: %s (the group is flown by %s)", c.Name, name)
			ok = false
		}
	}
	if cs == nil {
		return nil, nil, skip, ok
	}
	cp = cs.Params()
	if cs.Key != "" && sc.HasKey(params, cs.Key) {
		if !sc.DecodeKey(params, path, cs.Key, cp) {
			return nil, nil, skip, false
		}
	}
	bad := cp.Validate()
	bad.Report(path+"."+cs.Key, sc.Errorf)
	return cs, cp, skip, len(bad) == 0
}

func (r *Run) buildFixed() {
	var nodes []any
	for _, fn := range r.sc.Nodes {
		id := netsim.NodeID(len(r.nodes))
		r.nodes = append(r.nodes, nodeState{ref: agent.NodeRef{ID: id, Name: fn.Name}, fixed: fn.Position})
		nodes = append(nodes, map[string]any{"name": fn.Name, "position": fn.Position, "id": id})
	}
	r.effective["nodes"] = nodes
	r.refs = make([]agent.NodeRef, len(r.nodes))
	for i := range r.nodes {
		r.refs[i] = r.nodes[i].ref
	}
}

func (r *Run) buildNetwork() {
	sc := r.sc
	name := "ideal"
	n := sc.Network
	if !n.IsZero() {
		var ok bool
		if name, ok = sc.TypeOf(n, "network", "backend"); !ok {
			return
		}
	}
	bs, ok := r.reg.Backend(name)
	if !ok {
		sc.Errorf("network.backend", "unknown network backend %q: want one of %s", name, strings.Join(r.reg.BackendNames(), ", "))
		return
	}
	posPeriod := 10 * sim.Millisecond
	sc.DecodeKey(n, "network", "position_period", &posPeriod)
	var epoch sim.Duration
	sc.DecodeKey(n, "network", "epoch", &epoch)
	mode := "coupled"
	sc.DecodeKey(n, "network", "mode", &mode)
	rt := routing.None
	var ro routing.Options
	keys := networkKeys
	if bs.Routes {
		var c string
		if sc.DecodeKey(n, "network", "aodv_control", &c) && c != "" {
			// Reported here, not as an unknown field: the question is
			// whether ns-3 can do it.
			sc.Errorf("network.aodv_control", "the %s backend routes with its own protocols, whose AODV always sends control messages as aodv_control: routed does; remove the key", name)
			keys = append(keys[:len(keys):len(keys)], "aodv_control")
		}
	} else {
		// network.routing belongs to the routing layer, not the backend.
		sc.DecodeKey(n, "network", "routing", &rt)
		sc.DecodeKey(n, "network", "aodv_control", &ro.AODVControl)
		keys = append(keys[:len(keys):len(keys)], "routing", "aodv_control")
		if !slices.Contains(routing.Protocols, rt) {
			sc.Errorf("network.routing", "must be one of %s, got %q", strings.Join(routing.Protocols, ", "), rt)
		}
		switch {
		case ro.AODVControl == "":
		case !slices.Contains(routing.ControlModes, ro.AODVControl):
			sc.Errorf("network.aodv_control", "must be one of %s, got %q", strings.Join(routing.ControlModes, ", "), ro.AODVControl)
		case rt != routing.AODV:
			sc.Errorf("network.aodv_control", "applies to routing: aodv only (routing is %s)", rt)
		}
	}
	p := bs.Params()
	if mode != "coupled" && mode != "replay" && hasYAMLField(p, "mode") {
		// The radio backends (wifi, ns3) have a mode of their own, the
		// transmission rate (mode: DsssRate11Mbps): a value that is not one
		// of the engine's is theirs, and the network is coupled.
		keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == "mode" })
		mode = "coupled"
	}
	if !sc.Decode(n, "network", p, keys...) {
		return
	}
	if e, ok := p.(epochParams); ok && epoch > 0 {
		e.SetEpoch(epoch)
	}
	bad := p.Validate()
	bad.Report("network", sc.Errorf)
	if len(bad) > 0 {
		return
	}
	r.posEvery = r.ticks("network.position_period", posPeriod)
	switch {
	case epoch < 0:
		sc.Errorf("network.epoch", "must be >= 0 (0 advances the network every tick), got %v", epoch)
	case epoch > 0:
		r.epochEvery = r.ticks("network.epoch", epoch)
	}
	switch mode {
	case "coupled":
	case "replay":
		if rt != routing.None {
			sc.Errorf("network.mode", "cannot replay a network with routing: routes follow node positions; use mode: coupled")
		}
		if epoch == 0 {
			sc.Errorf("network.mode", "replay runs the network first, epoch by epoch: set network.epoch (e.g. 10ms)")
		} else if why := bs.NotReplayable(p); why != "" {
			sc.Errorf("network.mode", "cannot replay the %s network: %s; use mode: coupled", name, why)
		}
		r.replay = true
	default:
		sc.Errorf("network.mode", "must be coupled or replay, got %q", mode)
	}
	r.backendName = name
	eff := map[string]any{"backend": name, "position_period": posPeriod, "params": p}
	if rt != routing.None {
		eff["routing"] = rt // written only when set, as epoch below
	}
	if ro.AODVControl != "" {
		eff["aodv_control"] = ro.AODVControl
	}
	if epoch > 0 || mode != "coupled" {
		// Written only when set, so that the configuration of runs
		// without epochs stays as it was.
		eff["epoch"], eff["mode"] = epoch, mode
	}
	r.effective["network"] = eff
	if r.opt.CheckOnly || sc.Err() != nil {
		return
	}
	var b netsim.Backend
	var err error
	switch {
	case r.replay:
		b, err = replay.New(func(tr netsim.Tracer) (netsim.Backend, error) { return bs.New(p, r.seed, tr) }, r)
	case rt != routing.None:
		b, err = routing.NewWith(rt, ro, r.seed, r, func(tr netsim.Tracer) (netsim.Backend, error) { return bs.New(p, r.seed, tr) })
	default:
		b, err = bs.New(p, r.seed, r)
	}
	if err != nil {
		sc.Errorf("network", "%v", err)
		return
	}
	r.backend = b
}

// networkKeys are the keys of the network section that belong to the
// engine, not to the backend's parameters.
var networkKeys = []string{"backend", "position_period", "epoch", "mode"}

// hasYAMLField reports whether the struct p points to has a field named
// name in YAML.
func hasYAMLField(p any, name string) bool {
	t := reflect.TypeOf(p)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return false
	}
	t = t.Elem()
	for i := 0; i < t.NumField(); i++ {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); tag == name {
			return true
		}
	}
	return false
}

func (r *Run) buildBehaviors() {
	sc := r.sc
	// Decode each behaviour once per group or fixed node; every vehicle of a
	// group shares the parameters.
	decode := func(list []scenario.Raw, base string, fixed bool) []built {
		var out []built
		for i, n := range list {
			path := fmt.Sprintf("%s.behaviors[%d]", base, i)
			typ, ok := sc.TypeOf(n, path, "type")
			if !ok {
				continue
			}
			spec, ok := r.reg.Behavior(typ)
			if !ok || spec.Internal {
				sc.Errorf(path+".type", "unknown behaviour %q: want one of %s", typ, strings.Join(r.reg.behaviorNames(), ", "))
				continue
			}
			if fixed && !spec.Fixed {
				sc.Errorf(path+".type", "behaviour %q needs a vehicle; it cannot run on a fixed node", typ)
				continue
			}
			if !fixed && !spec.Vehicle {
				sc.Errorf(path+".type", "behaviour %q runs on fixed nodes only (put it under nodes:)", typ)
				continue
			}
			p := spec.Params()
			if au, ok := p.(behavior.AreaUser); ok && sc.Coverage != nil {
				c := sc.Coverage
				au.UseArea(c.Origin, c.Area, c.Cell, c.Obstacles)
			}
			if !sc.Decode(n, path, p, "type") {
				continue
			}
			bad := p.Validate()
			bad.Report(path, sc.Errorf)
			if len(bad) == 0 {
				out = append(out, built{spec: spec, params: p, path: path})
			}
		}
		return out
	}
	perGroup := make([][]built, len(sc.Vehicles))
	groupsEff, _ := r.effective["vehicles"].([]any)
	for gi := range sc.Vehicles {
		perGroup[gi] = decode(sc.Vehicles[gi].Behaviors, fmt.Sprintf("vehicles[%d]", gi), false)
		if gi < len(groupsEff) {
			groupsEff[gi].(map[string]any)["behaviors"] = effBehaviors(perGroup[gi])
		}
	}
	nodesEff, _ := r.effective["nodes"].([]any)
	fixedBuilt := make([][]built, len(sc.Nodes))
	for i := range sc.Nodes {
		fixedBuilt[i] = decode(sc.Nodes[i].Behaviors, fmt.Sprintf("nodes[%d]", i), true)
		nodesEff[i].(map[string]any)["behaviors"] = effBehaviors(fixedBuilt[i])
	}
	if sc.Err() != nil {
		return
	}
	nv := len(r.veh)
	for i := range r.nodes {
		ns := &r.nodes[i]
		var list []built
		var fixedTel vehicle.Telemetry
		if i < nv {
			list = perGroup[r.groupOf[i]]
		} else {
			list = fixedBuilt[i-nv]
			fixedTel = vehicle.Telemetry{Pos: ns.fixed, Landed: true}
		}
		ns.ctx, ns.drv = agent.NewContext(ns.ref, r, ns.veh, fixedTel, sim.Stream(r.seed, "agent", i), r.log)
		for k := range list {
			b := &list[k]
			inst := b.spec.New(b.params)
			ns.slots = append(ns.slots, slot{b: inst, made: b, path: b.path, typ: b.spec.Name})
		}
		if i < nv && sc.Isolation == "netns" {
			// The bridge between the vehicle's TAP and the network.
			spec, ok := r.reg.Behavior(TAPBridge)
			if !ok {
				sc.Errorf("isolation", "this program cannot bridge namespaces: the %q behaviour is not linked (import skyloop/components)", TAPBridge)
				return
			}
			ns.slots = append(ns.slots, slot{b: spec.New(spec.Params()), path: "isolation", typ: TAPBridge})
		}
	}
	// Start every behaviour, in node order; problems found now (a group
	// that does not exist, too few explicit targets) are scenario errors.
	for i := range r.nodes {
		ns := &r.nodes[i]
		for j := range ns.slots {
			s := &ns.slots[j]
			if err := s.b.Start(ns.ctx); err != nil {
				var fe *fields.Error
				if errors.As(err, &fe) {
					fe.Fields.Report(s.path, func(path, format string, args ...any) {
						sc.Errorf(path, format+" (node %s)", append(args, ns.ref.Name)...)
					})
				} else {
					sc.Errorf(s.path, "%v (node %s)", err, ns.ref.Name)
				}
				continue
			}
			period, offset := s.b.Schedule()
			if rc, ok := s.b.(agent.Receiver); ok {
				s.recv = rc
				if lr, ok := rc.(agent.LocalReceiver); !ok || !lr.ReceivesLocally() {
					r.sharedRecv = true
				}
			}
			if pp, ok := s.b.(agent.Preparer); ok {
				s.prep = pp
				r.preparers = true
			}
			if period > 0 {
				s.every = r.ticks(s.path+".period", period)
				if offset < 0 || offset%r.tick != 0 {
					sc.Errorf(s.path, "first step at %v (from its start/stagger parameters, node %s) is not a multiple of the tick %v", offset, ns.ref.Name, r.tick)
				}
				s.next = int64(offset / r.tick)
			}
		}
	}
}

// built is a behaviour type with decoded, valid parameters.
type built struct {
	spec   agent.Spec
	params agent.Params
	path   string
}

func effBehaviors(list []built) []any {
	out := make([]any, 0, len(list))
	for _, b := range list {
		out = append(out, map[string]any{"type": b.spec.Name, "params": b.params})
	}
	return out
}

// Nodes lists the run's nodes in id order.
func (r *Run) Nodes() []agent.NodeRef { return r.refs }

// HasBehavior reports whether node id runs a behaviour of the named type.
func (r *Run) HasBehavior(id netsim.NodeID, typ string) bool {
	if id < 0 || int(id) >= len(r.nodes) {
		return false
	}
	for _, s := range r.nodes[id].slots {
		if s.typ == typ {
			return true
		}
	}
	return false
}

// Origin returns the scenario's geodetic origin (agent.Host).
func (r *Run) Origin() geom.Geodetic { return r.sc.World.Origin }

// File creates a behaviour's output file in the run directory (agent.Host);
// nil when the run writes no files.
func (r *Run) File(name string) (io.Writer, error) {
	if !r.started {
		// Behaviours start while the run is built, before it has a
		// directory: a file asked for then would silently be nil.
		return nil, fmt.Errorf("output file %s: files can be created once the run starts (in Step), not in Start", name)
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
	if r.openFile == nil {
		return nil, nil
	}
	if name == "" || strings.ContainsAny(name, `/\`) || name[0] == '.' {
		return nil, fmt.Errorf("output file name %q must be a plain file name", name)
	}
	if r.files == nil {
		r.files = map[string]bool{}
	}
	if r.files[name] {
		return nil, fmt.Errorf("output file %s created twice", name)
	}
	r.files[name] = true
	return r.openFile(name)
}

// Tick returns the kernel tick.
func (r *Run) Tick() sim.Duration { return r.tick }

// Network says how the run drives its network (agent.Host).
func (r *Run) Network() agent.NetworkMode {
	return agent.NetworkMode{Epoch: sim.Duration(r.epochEvery) * r.tick, Replay: r.replay}
}

// Send queues a packet from an agent; part of agent.Host.
func (r *Run) Send(src netsim.NodeID, m *agent.Message) {
	p := r.pktPool.Get(len(m.Payload))
	p.ID, p.Src, p.Dst, p.Port, p.Kind, p.Seq = r.nextPktID, src, m.Dst, m.Port, m.Kind, m.Seq
	p.TGen, p.TSend, p.Size = m.TGen, m.TSend, m.Size
	p.Payload = append(p.Payload, m.Payload...)
	r.nextPktID++
	r.outbox = append(r.outbox, p)
	if m.Deferred && r.ep != nil {
		r.ep.deferredSent(p, m)
	}
}

// Event records an agent event; part of agent.Host.
func (r *Run) Event(t sim.Time, node netsim.NodeID, name, detail string) {
	r.event(t, node, "agent", name, detail)
}

// Fail ends the run with err after the current agent phase; part of
// agent.Host. The first failure wins.
func (r *Run) Fail(node netsim.NodeID, err error) {
	if r.failed == nil {
		r.failed = err
	}
}

func (r *Run) event(t sim.Time, node netsim.NodeID, source, name, detail string) {
	if r.rec != nil {
		r.rec.Event(t, node, source, name, detail)
	}
}

// Trace receives the backend's trace events.
func (r *Run) Trace(e *netsim.TraceEvent) {
	r.met.Trace(e)
	if r.rec != nil {
		r.rec.Trace(e)
	}
}

// CountsDrops implements netsim.DropCounter: drops may be counted in bulk
// unless the recorder writes each one (trace.csv).
func (r *Run) CountsDrops() bool {
	if r.rec == nil {
		return true
	}
	d, ok := r.rec.(DropRecorder)
	return ok && !d.RecordsDrops()
}

// TraceDrops implements netsim.DropCounter.
func (r *Run) TraceDrops(e *netsim.TraceEvent, n int) { r.met.TraceDrops(e, n) }

// SetOptions replaces the run-time options (progress, stop) after Build.
func (r *Run) SetOptions(opt Options) {
	r.opt.Progress, r.opt.Stop = opt.Progress, opt.Stop
	if opt.Logger != nil {
		r.log = opt.Logger
	}
}

// Effective returns the configuration the run uses, every default filled
// in; it is what config.json holds.
func (r *Run) Effective() map[string]any { return r.effective }

// Describe returns a one-line description of the run.
func (r *Run) Describe() string {
	return fmt.Sprintf("%d vehicles, %d fixed nodes, %s network, %v at tick %v, seed %d",
		len(r.veh), len(r.nodes)-len(r.veh), r.backendName, sim.Duration(r.end), r.tick, r.seed)
}
