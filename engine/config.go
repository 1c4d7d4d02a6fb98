package engine

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"strings"

	"skyloop/agent"
	"skyloop/fields"
	"skyloop/fileerr"
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/netsim/replay"
	"skyloop/netsim/routing"
	"skyloop/scenario"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Config is a scenario decoded and checked against a registry: every
// component's parameters decoded into their own types (presets applied,
// defaults filled in), the periods in ticks, the behaviours and measures
// with their types, and the network's engine keys typed apart from the
// backend's own parameters. Validate makes one; Build constructs a run
// from it without reading the scenario again.
type Config struct {
	sc   *scenario.Scenario
	opt  Options
	reg  *Registry
	seed uint64
	end  sim.Time
	tick sim.Duration

	checkEvery int64 // world checks, ticks
	groups     []groupConfig
	fixed      []fixedConfig
	vehicles   int // vehicle nodes (0..vehicles-1); fixed nodes follow
	measures   []measureConfig
	net        netConfig
	realtime   float64
	workers    int
	stepNs     float64 // estimated cost of stepping every vehicle once
	aerial     bool    // the run has multirotors (profile.png)
	effective  map[string]any

	// netAt and vehiclesAt are where problems found while constructing
	// (a backend that cannot start, a MuJoCo model that does not load)
	// are reported: the file and line of the section, taken while
	// decoding.
	netAt, vehiclesAt scenario.Error
}

// groupConfig is a vehicle group, decoded: the kind with its parameters,
// the controller that flies it, its periods and its vehicles' places.
type groupConfig struct {
	index      int // in the scenario's vehicles
	name       string
	kind       KindSpec
	params     fields.Validator
	ctrl       *ControllerSpec // nil: the kind's own
	ctrlParams fields.Validator
	ctrlEvery  int64 // control period, ticks
	physEvery  int64 // physics period, ticks
	first      int   // node id of the group's first vehicle
	points     []geom.Vec3
	yaw        float64 // radians
	behaviors  []built
}

// fixedConfig is a fixed node and its behaviours.
type fixedConfig struct {
	name      string
	pos       geom.Vec3
	behaviors []built
}

// measureConfig is a measure with its decoded, checked parameters.
type measureConfig struct {
	spec   measureSpec
	name   string
	params validator
}

// netMode is how a run drives its network (network.mode).
type netMode uint8

const (
	modeCoupled netMode = iota // the network steps beside the vehicles
	modeReplay                 // the network runs first (netsim/replay)
)

// String returns the mode as scenarios write it.
func (m netMode) String() string {
	if m == modeReplay {
		return "replay"
	}
	return "coupled"
}

// netConfig is the network section, decoded: the engine's keys, typed, and
// the backend's own parameters.
type netConfig struct {
	name       string
	spec       netsim.BackendSpec
	params     netsim.Params
	posEvery   int64 // position updates, ticks
	epochEvery int64 // network epoch in ticks; 0 = every tick
	mode       netMode
	// newBackend constructs the backend for a run with the given seed,
	// with the routing layer or the replay on top when the scenario asks
	// for them; every trace event goes to tr.
	newBackend func(seed uint64, tr netsim.Tracer) (netsim.Backend, error)
}

// stack returns the constructor of the backend n describes: the backend
// spec's own, under the routing layer (rt) or the replay (mode: replay)
// when the scenario asks for one.
func (n *netConfig) stack(rt string, ro routing.Options) func(seed uint64, tr netsim.Tracer) (netsim.Backend, error) {
	spec, p := n.spec, n.params
	inner := func(seed uint64) func(netsim.Tracer) (netsim.Backend, error) {
		return func(tr netsim.Tracer) (netsim.Backend, error) { return spec.New(p, seed, tr) }
	}
	switch {
	case n.mode == modeReplay:
		return func(seed uint64, tr netsim.Tracer) (netsim.Backend, error) { return replay.New(inner(seed), tr) }
	case rt != routing.None:
		return func(seed uint64, tr netsim.Tracer) (netsim.Backend, error) {
			return routing.NewWith(rt, ro, seed, tr, inner(seed))
		}
	}
	return func(seed uint64, tr netsim.Tracer) (netsim.Backend, error) { return spec.New(p, seed, tr) }
}

// built is a behaviour type with decoded, valid parameters.
type built struct {
	spec   agent.Spec
	params agent.Params
	path   string
	// engine marks a behaviour the engine adds (the TAP bridge), which
	// the effective configuration leaves out.
	engine bool
}

// networkKeys are the keys of the network section that belong to the
// engine, not to the backend's parameters.
var networkKeys = []string{"backend", "position_period", "epoch", "mode"}

// Effective returns the configuration the run uses, every default filled
// in; it is what config.json holds.
func (c *Config) Effective() map[string]any { return c.effective }

// Validate checks a scenario that scenario.Parse decoded with the
// registry's schema (Registry.Schema) against the registry of opt (nil:
// Core()), constructing nothing: no vehicle, no network backend. It turns
// periods into ticks and checks what spans parts of the file (a measure's
// group, replay and epoch rules, processes' groups, model files);
// behaviours are started on contexts without a vehicle (a behaviour's
// Start must not need one), so that what they refuse (a group that does
// not exist, a step time off the tick) is reported too. It reads the
// decoded scenario as data and calls nothing of package scenario.
// Problems in the file, those Parse found included, come back together
// as a scenario.Errors value naming file, line and field path; problems
// in opt or with the machine as an *OptionError.
func Validate(sc *scenario.Scenario, opt Options) (*Config, error) {
	if sc.Schema == nil {
		return nil, fmt.Errorf("engine: scenario %s was parsed without a schema: parse it with scenario.Parse(name, text, registry.Schema())", sc.File)
	}
	d := &decoding{sc: sc, probs: newProblems(sc)}
	return d.decode(opt)
}

// decoding is the state of one Validate.
type decoding struct {
	sc     *scenario.Scenario
	probs  *problems
	c      *Config
	kernel *sim.Kernel
	// perGroup are the behaviours of each scenario group, by index.
	perGroup [][]built
	groupEff []map[string]any // by scenario group index; nil: skipped
}

// errorf records a problem at a field path of the scenario.
func (d *decoding) errorf(path, format string, args ...any) { d.probs.errorf(path, format, args...) }

func (d *decoding) decode(opt Options) (*Config, error) {
	sc := d.sc
	c := &Config{sc: sc, opt: opt, seed: sc.Seed, tick: sc.Tick, reg: opt.Registry}
	d.c = c
	if c.reg == nil {
		c.reg = Core()
	}
	if opt.Seed != nil {
		c.seed = *opt.Seed
	}
	if sc.Tick <= 0 {
		if err := d.probs.err(); err != nil {
			return nil, err // the tick is reported
		}
	}
	dur := sc.Duration
	if opt.Duration != nil {
		dur = *opt.Duration
		if dur <= 0 || dur%sc.Tick != 0 {
			return nil, &OptionError{fmt.Errorf("--duration %v must be a positive whole number of ticks of %v", dur, sc.Tick)}
		}
	}
	c.end = sim.Time(dur)
	k, err := sim.NewKernel(sc.Tick)
	if err != nil {
		return nil, err
	}
	d.kernel = k
	c.checkEvery = d.ticks("world.check_period", sc.World.CheckPeriod)
	c.netAt, c.vehiclesAt = d.probs.locate("network"), d.probs.locate("vehicles")
	outs := sc.Outputs
	if opt.NoFiles {
		outs.Trace, outs.Deliveries, outs.Vehicles = false, false, false
	}
	c.effective = map[string]any{"name": sc.Name, "description": sc.Description, "seed": c.seed,
		"duration": sim.Duration(c.end), "tick": sc.Tick, "world": sc.World, "outputs": outs}
	if sc.Coverage != nil {
		c.effective["coverage"] = sc.Coverage
	}

	d.vehicles()
	d.fixed()
	d.measures()
	d.network()
	d.behaviors() // starts behaviours only if all is well so far
	d.files()     // only if all is well so far
	if err := d.probs.err(); err != nil {
		return nil, err
	}
	c.realtime = sc.Realtime
	if opt.Realtime > 0 {
		c.realtime = opt.Realtime
	}
	if c.realtime == 0 {
		c.realtime = behaviourPace(sc)
	}
	if sc.Isolation == "netns" && c.realtime == 0 {
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
	c.workers = sc.Workers
	if opt.Workers > 0 {
		c.workers = opt.Workers
	}
	if c.workers == 0 {
		// Handing work to other goroutines costs a few microseconds per
		// phase: worth it only when a tick's vehicle work is far larger.
		c.workers = 1
		if c.stepNs >= 30_000 {
			c.workers = min(runtime.GOMAXPROCS(0), 8)
		}
	}
	return c, nil
}

// ticks converts a period to ticks, recording a problem at path when it is
// not a whole number of them (1 then).
func (d *decoding) ticks(path string, dur sim.Duration) int64 {
	n, err := d.kernel.Ticks(dur)
	if err != nil {
		if _, set := d.sc.Lines[path]; !set {
			d.errorf(path, "%v (the default; set %s to a multiple of the tick)", err, path)
		} else {
			d.errorf(path, "%v", err)
		}
		return 1
	}
	return n
}

func (d *decoding) vehicles() {
	sc, c := d.sc, d.c
	var groups []any
	d.groupEff = make([]map[string]any, len(sc.Vehicles))
	// Too many vehicles in all (reported by the scenario's own check):
	// check the groups' parameters but place no vehicle.
	total := 0
	for _, g := range sc.Vehicles {
		total += min(max(g.Count, 0), scenario.MaxVehicles+1)
	}
	tooMany := total > scenario.MaxVehicles
	for gi := range sc.Vehicles {
		g := &sc.Vehicles[gi]
		path := fmt.Sprintf("vehicles[%d]", gi)
		ks, ok := c.reg.Kind(g.Kind)
		p := g.KindParams
		if !ok || p == nil {
			continue // reported by Parse
		}
		var cs *ControllerSpec
		var cp fields.Validator
		if g.Controller != nil {
			spec, ok := c.reg.Controller(g.Kind, g.Controller.Name)
			if !ok {
				continue
			}
			cs, cp = &spec, g.Controller.Params
		}
		tm := ks.Timing(p)
		if cs != nil {
			tm.Control = cs.Period(cp)
		}
		ce := d.ticks(path+".params.control_period", tm.Control)
		pe := d.ticks(path+".params.physics_period", tm.Physics)
		if tooMany || g.Count < 1 || len(g.Spawn.Check(g.Count)) > 0 {
			continue
		}
		pts := g.Spawn.Points(g.Count)
		if cs != nil {
			for i, pt := range pts {
				if pt.Z > 0 {
					d.errorf(path+".spawn", "vehicle %d starts %.3g m above the ground: the %s controller boots on the ground (spawn z = 0)", i, pt.Z, cs.Name)
					break
				}
			}
		}
		c.groups = append(c.groups, groupConfig{index: gi, name: g.Name, kind: ks, params: p, ctrl: cs, ctrlParams: cp,
			ctrlEvery: ce, physEvery: pe, first: c.vehicles, points: pts, yaw: g.Yaw * math.Pi / 180})
		c.vehicles += g.Count
		for range g.Count {
			c.stepNs += ks.StepNs
		}
		if ks.Aerial {
			c.aerial = true
		}
		eff := map[string]any{"name": g.Name, "kind": g.Kind, "count": g.Count, "spawn": g.Spawn, "yaw": g.Yaw, "params": p}
		if cs != nil {
			// Written only for another controller, so that the
			// configuration of other runs stays as it was.
			eff["controller"] = map[string]any{"name": cs.Name, "params": cp}
		}
		d.groupEff[gi] = eff
		groups = append(groups, eff)
	}
	c.effective["vehicles"] = groups
}

func (d *decoding) fixed() {
	c := d.c
	var nodes []any
	for i, fn := range d.sc.Nodes {
		c.fixed = append(c.fixed, fixedConfig{name: fn.Name, pos: fn.Position})
		nodes = append(nodes, map[string]any{"name": fn.Name, "position": fn.Position, "id": netsim.NodeID(c.vehicles + i)})
	}
	c.effective["nodes"] = nodes
}

func (d *decoding) network() {
	sc, c := d.sc, d.c
	n := sc.NetworkConfig
	if n == nil {
		return // reported by Parse
	}
	name := n.Backend
	bs, ok := c.reg.Backend(name)
	if !ok {
		return
	}
	rt := n.Routing
	ro := routing.Options{AODVControl: n.AODVControl}
	if !bs.Routes {
		if !slices.Contains(routing.Protocols, rt) {
			d.errorf("network.routing", "must be one of %s, got %q", strings.Join(routing.Protocols, ", "), rt)
		}
		switch {
		case ro.AODVControl == "":
		case !slices.Contains(routing.ControlModes, ro.AODVControl):
			d.errorf("network.aodv_control", "must be one of %s, got %q", strings.Join(routing.ControlModes, ", "), ro.AODVControl)
		case rt != routing.AODV:
			d.errorf("network.aodv_control", "applies to routing: aodv only (routing is %s)", rt)
		}
	}
	p := n.Params
	if p == nil {
		return // reported by Parse
	}
	epoch, mode := n.Epoch, n.Mode
	nc := netConfig{name: name, spec: bs, params: p}
	nc.posEvery = d.ticks("network.position_period", n.PositionPeriod)
	switch {
	case epoch < 0:
		d.errorf("network.epoch", "must be >= 0 (0 advances the network every tick), got %v", epoch)
	case epoch > 0:
		nc.epochEvery = d.ticks("network.epoch", epoch)
	}
	if mode == scenario.Replay {
		if rt != routing.None {
			d.errorf("network.mode", "cannot replay a network with routing: routes follow node positions; use mode: coupled")
		}
		if epoch == 0 {
			d.errorf("network.mode", "replay runs the network first, epoch by epoch: set network.epoch (e.g. 10ms)")
		} else if why := bs.NotReplayable(p); why != "" {
			d.errorf("network.mode", "cannot replay the %s network: %s; use mode: coupled", name, why)
		}
		nc.mode = modeReplay
	}
	nc.newBackend = nc.stack(rt, ro)
	c.net = nc
	eff := map[string]any{"backend": name, "position_period": n.PositionPeriod, "params": p}
	if rt != routing.None {
		eff["routing"] = rt // written only when set, as epoch below
	}
	if ro.AODVControl != "" {
		eff["aodv_control"] = ro.AODVControl
	}
	if epoch > 0 || mode != scenario.Coupled {
		// Written only when set, so that the configuration of runs
		// without epochs stays as it was.
		eff["epoch"], eff["mode"] = epoch, nc.mode.String()
	}
	c.effective["network"] = eff
}

// behaviors decodes every group's and fixed node's behaviours and, if all
// is well so far, starts them on contexts without a vehicle.
func (d *decoding) behaviors() {
	sc, c := d.sc, d.c
	// Every vehicle of a group shares the parameters decoded once.
	decode := func(list []scenario.Component, base string) []built {
		var out []built
		for i, b := range list {
			spec, ok := c.reg.Behavior(b.Type)
			p, valid := b.Params.(agent.Params)
			if ok && valid && b.Params != nil {
				out = append(out, built{spec: spec, params: p, path: fmt.Sprintf("%s.behaviors[%d]", base, i)})
			}
		}
		return out
	}
	for gi := range sc.Vehicles {
		list := decode(sc.Vehicles[gi].BehaviorParams, fmt.Sprintf("vehicles[%d]", gi))
		if eff := d.groupEff[gi]; eff != nil {
			eff["behaviors"] = effBehaviors(list)
		}
		d.perGroup = append(d.perGroup, list)
	}
	nodesEff, _ := c.effective["nodes"].([]any)
	for i := range sc.Nodes {
		list := decode(sc.Nodes[i].BehaviorParams, fmt.Sprintf("nodes[%d]", i))
		nodesEff[i].(map[string]any)["behaviors"] = effBehaviors(list)
		c.fixed[i].behaviors = list
	}
	if d.probs.n > 0 {
		return
	}
	var tap []built
	if sc.Isolation == "netns" && c.vehicles > 0 {
		// The bridge between each vehicle's TAP and the network.
		spec, ok := c.reg.Behavior(TAPBridge)
		if !ok {
			d.errorf("isolation", "this program cannot bridge namespaces: the %q behaviour is not linked (import skyloop/components)", TAPBridge)
			return
		}
		tap = []built{{spec: spec, params: spec.Params(), path: "isolation", engine: true}}
	}
	for gi := range c.groups {
		g := &c.groups[gi]
		g.behaviors = append(d.perGroup[g.index][:len(d.perGroup[g.index]):len(d.perGroup[g.index])], tap...)
	}
	d.start()
}

// start starts every behaviour, in node order, on a context without a
// vehicle; problems found now (a group that does not exist, too few
// explicit targets, a step off the tick) are scenario errors.
func (d *decoding) start() {
	sc, c := d.sc, d.c
	host := &checkHost{refs: c.refs(), tick: c.tick, origin: sc.World.Origin, net: c.networkMode()}
	log := c.opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for i, ref := range host.refs {
		list, fixedTel := c.node(i)
		ctx, _ := agent.NewContext(ref, host, nil, fixedTel, sim.Stream(c.seed, "agent", i), log)
		insts := make([]agent.Behavior, len(list))
		for k := range list {
			insts[k] = list[k].spec.New(list[k].params)
		}
		for k, b := range insts {
			path := list[k].path
			if err := b.Start(ctx); err != nil {
				var fe *fields.Error
				if errors.As(err, &fe) {
					fe.Fields.Report(path, func(path, format string, args ...any) {
						d.errorf(path, format+" (node %s)", append(args, ref.Name)...)
					})
				} else {
					d.errorf(path, "%v (node %s)", err, ref.Name)
				}
				continue
			}
			if period, offset := b.Schedule(); period > 0 {
				d.ticks(path+".period", period)
				if offset < 0 || offset%c.tick != 0 {
					d.errorf(path, "first step at %v (from its start/stagger parameters, node %s) is not a multiple of the tick %v", offset, ref.Name, c.tick)
				}
			}
		}
	}
}

// refs lists the run's nodes in id order: the groups' vehicles, then the
// fixed nodes.
func (c *Config) refs() []agent.NodeRef {
	refs := make([]agent.NodeRef, 0, c.vehicles+len(c.fixed))
	for _, g := range c.groups {
		for i := range g.points {
			refs = append(refs, agent.NodeRef{ID: netsim.NodeID(len(refs)), Name: fmt.Sprintf("%s-%d", g.name, i), Group: g.name, Index: i})
		}
	}
	for _, f := range c.fixed {
		refs = append(refs, agent.NodeRef{ID: netsim.NodeID(len(refs)), Name: f.name})
	}
	return refs
}

// node returns the behaviours of node i and, for a fixed node, its
// telemetry.
func (c *Config) node(i int) ([]built, vehicle.Telemetry) {
	if i >= c.vehicles {
		f := &c.fixed[i-c.vehicles]
		return f.behaviors, vehicle.Telemetry{Pos: f.pos, Landed: true}
	}
	k, _ := slices.BinarySearchFunc(c.groups, i, func(g groupConfig, id int) int {
		switch {
		case g.first+len(g.points) <= id:
			return -1
		case g.first > id:
			return 1
		}
		return 0
	})
	return c.groups[k].behaviors, vehicle.Telemetry{}
}

// networkMode is how the run drives its network, as behaviours see it.
func (c *Config) networkMode() agent.NetworkMode {
	return agent.NetworkMode{Epoch: sim.Duration(c.net.epochEvery) * c.tick, Replay: c.net.mode == modeReplay}
}

// checkHost is the agent.Host of the behaviours Validate starts: it knows
// the nodes, the tick and the network, sends nothing and, as a run that
// has not started, creates no files.
type checkHost struct {
	refs   []agent.NodeRef
	tick   sim.Duration
	origin geom.Geodetic
	net    agent.NetworkMode
}

func (h *checkHost) Send(netsim.NodeID, *agent.Message)            {}
func (h *checkHost) Event(sim.Time, netsim.NodeID, string, string) {}
func (h *checkHost) Tick() sim.Duration                            { return h.tick }
func (h *checkHost) Nodes() []agent.NodeRef                        { return h.refs }
func (h *checkHost) Origin() geom.Geodetic                         { return h.origin }
func (h *checkHost) Fail(netsim.NodeID, error)                     {}
func (h *checkHost) Network() agent.NetworkMode                    { return h.net }
func (h *checkHost) File(name string) (io.Writer, error)           { return nil, errStartFile(name) }

// errStartFile is the error of a behaviour that asks for an output file
// in Start.
func errStartFile(name string) error {
	// Behaviours start while the run is built, before it has a
	// directory: a file asked for then would silently be nil.
	return fmt.Errorf("output file %s: files can be created once the run starts (in Step), not in Start", name)
}

func effBehaviors(list []built) []any {
	out := make([]any, 0, len(list))
	for _, b := range list {
		if !b.engine {
			out = append(out, map[string]any{"type": b.spec.Name, "params": b.params})
		}
	}
	return out
}

// files checks the files the groups' parameters name (a MuJoCo model, say)
// as the run will read them, once everything else is well, so that a
// file is reported against the field that names it.
func (d *decoding) files() {
	if d.probs.n > 0 {
		return
	}
	for _, g := range d.c.groups {
		if f, ok := g.params.(filesValidator); ok {
			f.ValidateFiles(d.sc.Dir).Report(fmt.Sprintf("vehicles[%d].params", g.index), d.errorf)
		}
	}
}

// problems are the problems of a scenario: those scenario.Parse found,
// then the engine's, each located with the scenario's table of lines. As
// when Parse records them, a problem at a path that has one, or below it,
// is dropped (one mistake, one message), at most scenario.MaxKeptErrors
// are kept, and the first scenario.MaxErrors are listed in line order.
type problems struct {
	file  string
	lines map[string]int
	errs  scenario.Errors
	n     int // problems found, kept or not
	at    map[problemAt]bool
	paths map[string]bool
}

type problemAt struct {
	path string
	line int
}

func newProblems(sc *scenario.Scenario) *problems {
	p := &problems{file: sc.File, lines: sc.Lines, errs: slices.Clone(sc.Problems), n: sc.ProblemCount,
		at: map[problemAt]bool{}, paths: map[string]bool{}}
	for _, e := range p.errs {
		p.at[problemAt{e.Path, e.Line}] = true
		p.paths[e.Path] = true
	}
	return p
}

// line returns the line of the value at path, or of its nearest parent
// the file sets (0 if none).
func (p *problems) line(path string) int {
	for {
		if l, ok := p.lines[path]; ok {
			return l
		}
		if path == "" {
			return 0
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			path = ""
		} else {
			path = path[:i]
		}
	}
}

// locate returns the place of a problem at path, without a message.
func (p *problems) locate(path string) scenario.Error {
	return scenario.Error{File: p.file, Line: p.line(path), Path: path}
}

// full reports whether no more problems are kept; it counts the report.
func (p *problems) full() bool {
	if len(p.errs) < scenario.MaxKeptErrors {
		return false
	}
	p.n++
	return true
}

// covered reports whether a problem is recorded at path or above it.
func (p *problems) covered(path string) bool {
	if p.paths[path] {
		return true
	}
	for i := 0; i < len(path); i++ {
		if (path[i] == '.' || path[i] == '[') && p.paths[path[:i]] {
			return true
		}
	}
	return false
}

func (p *problems) errorf(path, format string, args ...any) {
	if p.covered(path) || p.full() {
		return
	}
	k := problemAt{path, p.line(path)}
	if p.at[k] {
		return
	}
	p.at[k] = true
	p.paths[path] = true
	p.n++
	p.errs = append(p.errs, &scenario.Error{File: p.file, Line: k.line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// err returns the problems, the first scenario.MaxErrors in line order and
// a count of the others, or nil.
func (p *problems) err() error {
	if p.n == 0 {
		return nil
	}
	return fileerr.List(p.errs, p.file, scenario.MaxErrors, p.n > len(p.errs))
}

// behaviourPace is the largest real-time factor the scenario's behaviours
// ask for (agent.Pacer), or 0.
func behaviourPace(sc *scenario.Scenario) float64 {
	pace := 0.0
	visit := func(list []scenario.Component) {
		for _, b := range list {
			if p, ok := b.Params.(agent.Pacer); ok {
				pace = max(pace, p.Pace())
			}
		}
	}
	for _, g := range sc.Vehicles {
		visit(g.BehaviorParams)
	}
	for _, n := range sc.Nodes {
		visit(n.BehaviorParams)
	}
	return pace
}
