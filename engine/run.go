package engine

import (
	"errors"
	"fmt"
	"io"
	"math"
	"syscall"

	"skyloop/agent"
	"skyloop/autopilot"
	"skyloop/extern"
	"skyloop/geom"
	"skyloop/metrics"
	"skyloop/netsim"
	"skyloop/orchestrate"
	"skyloop/record"
	"skyloop/report"
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
	// PlanningEnergyJ is SPEC.md D's empirical planning model applied to
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
	// Clock is each module's offset from the master clock (real-time
	// runs); clock.csv has the samples.
	Clock []ClockSummary `json:"clock,omitempty"`
	// Scheduling is the kernel thread's scheduling policy in real-time
	// runs (SCHED_FIFO when permitted).
	Scheduling string `json:"scheduling,omitempty"`
	// Processes says how each orchestrated process ended (isolation:
	// netns).
	Processes []orchestrate.ProcResult `json:"processes,omitempty"`
}

// Result is what Execute returns.
type Result struct {
	// Dir is the committed run directory ("" when no files were written).
	Dir     string
	Summary *Summary
}

// Execute runs the simulation. With a non-empty dest it writes the run
// directory there atomically; meta, when not nil, is called at the end for
// the facts only the caller knows (wall time, host, versions) and written to
// meta.json. On failure the partial files are kept in dest.incomplete.
func (r *Run) Execute(dest string, meta func() map[string]any) (res *Result, err error) {
	if err := r.checkIsolation(); err != nil {
		return nil, &OptionError{err}
	}
	var dir *record.Dir
	if dest != "" {
		if dir, err = record.Create(dest); err != nil {
			return nil, err
		}
	}
	var closers []io.Closer
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	if r.opt.Attach != nil {
		for i := range r.nodes {
			for _, s := range r.nodes[i].slots {
				c, err := r.opt.Attach(r.nodes[i].ref, s.b)
				if err != nil {
					dir.Discard()
					if r.backend != nil {
						r.backend.Close()
					}
					err = fmt.Errorf("connecting %s of node %s: %w", s.typ, r.nodes[i].ref.Name, err)
					if errors.Is(err, syscall.EADDRINUSE) {
						return nil, &OptionError{err} // bad input: a port taken
					}
					return nil, err
				}
				if c != nil {
					closers = append(closers, c)
				}
			}
		}
	}
	r.dir = dir
	if dir != nil && r.realtime > 0 {
		dir.SetAsync() // the disk must not stall ticks
	}
	if r.out, err = openOutputs(dir, r.sc.Outputs, r.opt.NoFiles, r.realtime > 0); err != nil {
		dir.Discard()
		return nil, err
	}
	if dir != nil && r.sc.Outputs.Plots && !r.opt.NoFiles {
		names := make([]string, len(r.veh))
		for i := range r.veh {
			names[i] = r.nodes[i].ref.Name
		}
		r.tracks = report.NewTracker(names, 4000)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error (please report with the scenario): %v", p)
		}
		if err != nil && dir != nil {
			err = dir.Fail(err)
		}
	}()
	if r.backend == nil {
		return nil, errors.New("internal error: Execute on a run built with CheckOnly")
	}
	closed := false
	defer func() {
		if !closed {
			r.backend.Close() // on a panic or an early error
		}
	}()
	err = r.startIsolation()
	if r.iso != nil {
		defer r.iso.close()
	}
	if err != nil {
		return nil, err
	}
	if err = r.startExtern(); err != nil {
		return nil, err
	}
	if r.ext != nil {
		defer r.ext.Close("the run failed")
	}
	if err = r.start(); err != nil {
		return nil, err
	}
	defer r.pool.Close()
	if r.realtime > 0 {
		var restore func()
		r.sched, restore = realtimeThreads()
		r.log.Debug("real-time run", "kernel thread", r.sched)
		defer restore()
	}
	if err = r.startProcesses(); err != nil {
		return nil, err
	}
	runErr := r.kernel.Run(r.end)
	r.iso.close() // stop the processes before the summary
	if r.ext != nil {
		why := "the run is over"
		if runErr != nil {
			why = "the run failed: " + runErr.Error()
		}
		r.ext.Close(why)
	}
	closeErr := r.backend.Close()
	closed = true
	if errors.Is(runErr, sim.ErrStopped) {
		return nil, ErrInterrupted
	}
	if runErr != nil {
		return nil, runErr
	}
	if closeErr != nil {
		return nil, fmt.Errorf("closing the network backend: %w", closeErr)
	}
	if live := r.pktPool.Live(); live != 0 {
		return nil, fmt.Errorf("internal error: the %s backend leaked %d packets", r.backendName, live)
	}
	r.sample(r.end)
	r.checkWorld(r.end)
	sum := r.summary()
	res = &Result{Summary: sum}
	if dir == nil {
		return res, nil
	}
	if err = dir.JSON("config.json", r.effective); err != nil {
		return nil, err
	}
	if r.tracks != nil {
		var obs []geom.Box
		for _, o := range r.sc.World.Obstacles {
			obs = append(obs, geom.Box{Min: o.Min, Max: o.Max})
		}
		png, err := report.TrajectoryPNG(fmt.Sprintf("%s, seed %d: trajectories (circles: starts, crosses: targets)", r.sc.Name, r.seed), r.tracks.Tracks, obs)
		if err != nil {
			return nil, err
		}
		if err = report.WriteFile(dir.Path("trajectory.png"), png); err != nil {
			return nil, err
		}
		if r.aerial && len(r.veh) <= 12 {
			png, err := report.ProfilePNG(fmt.Sprintf("%s, seed %d: altitude and east offset", r.sc.Name, r.seed), r.tracks.Tracks)
			if err != nil {
				return nil, err
			}
			if err = report.WriteFile(dir.Path("profile.png"), png); err != nil {
				return nil, err
			}
		}
	}
	if err = dir.JSON("summary.json", sum); err != nil {
		return nil, err
	}
	m := map[string]any{"scenario": r.sc.Name, "scenario_file": r.sc.File, "seed": r.seed,
		"duration_ns": r.end, "ticks": int64(r.end) / int64(r.tick), "workers": r.workers}
	if meta != nil {
		for k, v := range meta() {
			m[k] = v
		}
	}
	if err = dir.JSON("meta.json", m); err != nil {
		return nil, err
	}
	if err = dir.Commit(); err != nil {
		return nil, err
	}
	res.Dir = dir.Dest()
	return res, nil
}

// startExtern starts the server for external agents, when the scenario has
// any: it launches their processes and waits for them to connect.
func (r *Run) startExtern() error {
	var srv *extern.Server
	newServer := func() {
		cfg := extern.Config{Tick: int64(r.tick), Nodes: r.refs, Origin: r.sc.World.Origin, Dir: r.procDir(), Log: r.log,
			Vehicle: func(id int) bool { return id < len(r.veh) }, Ready: r.opt.ExternReady}
		if r.dir != nil {
			// Written straight through: followed live, kept if skyloop dies.
			cfg.Output = func(name string) (io.Writer, error) {
				f, err := r.dir.Unbuffered(name)
				if err != nil {
					return nil, err
				}
				return f, nil
			}
		}
		srv = extern.NewServer(cfg)
	}
	if nb, ok := r.backend.(*extern.NetBackend); ok {
		newServer()
		srv.AddNetwork(nb)
	}
	for i := range r.nodes {
		for _, s := range r.nodes[i].slots {
			b, ok := s.b.(*extern.Behavior)
			if !ok {
				continue
			}
			if srv == nil {
				newServer()
			}
			srv.Add(r.nodes[i].ref, b)
		}
	}
	if srv == nil {
		return nil
	}
	r.ext = srv
	if err := srv.Start(); err != nil {
		srv.Close("the run could not start: " + err.Error())
		r.ext = nil
		return err
	}
	return nil
}

// start initialises the backend and adds the phases to the kernel.
func (r *Run) start() error {
	infos := make([]netsim.NodeInfo, len(r.nodes))
	r.pos = make([]geom.Vec3, len(r.nodes))
	for i := range r.nodes {
		ns := &r.nodes[i]
		p := ns.fixed
		if ns.veh != nil {
			p = ns.veh.Telemetry().Pos
		}
		r.pos[i] = p
		infos[i] = netsim.NodeInfo{ID: ns.ref.ID, Name: ns.ref.Name, Pos: p, Vehicle: ns.veh != nil}
	}
	if u, ok := r.backend.(netsim.OutputDirUser); ok && r.dir != nil {
		u.SetOutputDir(r.dir.Path(""))
	}
	if err := r.backend.Start(infos); err != nil {
		return fmt.Errorf("starting the %s network: %w", r.backendName, err)
	}
	r.pool = sim.NewPool(r.workers)
	r.vehicleFn = r.vehicleRange
	sampleEvery := int64(r.sc.Outputs.SamplePeriod / r.tick)
	second := max(int64(sim.Second/r.tick), 1)
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
	if r.realtime > 0 {
		p := newPacer(r.realtime, r.log)
		r.clock = newClockLog(r.out, p, r.backend, r.iso)
		phases = append(phases, sim.Phase{Name: "pace", Every: 1, Run: p.wait})
		every := max(int64(10*sim.Millisecond/r.tick), 1)
		phases = append(phases, sim.Phase{Name: "clock", Every: every, Run: r.clock.sample})
	}
	phases = append(phases, []sim.Phase{
		{Name: "record", Every: sampleEvery, Run: func(t sim.Time) error { r.sample(t); return nil }},
		{Name: "world", Every: r.checkEvery, Run: func(t sim.Time) error { r.checkWorld(t); return nil }},
		{Name: "network", Every: 1, Run: r.networkPhase},
		{Name: "agents", Every: 1, Run: r.agentPhase},
		{Name: "vehicles", Every: 1, Run: r.vehiclePhase},
		{Name: "positions", Every: r.posEvery, Run: r.positionPhase},
		{Name: "progress", Every: second, Offset: second - 1, Run: r.progressPhase},
	}...)
	for _, p := range phases {
		if err := r.kernel.Add(p); err != nil {
			return err
		}
	}
	return nil
}

func (r *Run) networkPhase(t sim.Time) error {
	d, err := r.backend.AdvanceTo(t)
	if err != nil {
		return fmt.Errorf("%s network: %w", r.backendName, err)
	}
	r.deliv = d
	for i := range d {
		r.met.Delivered(&d[i], t)
		r.out.delivery(&d[i], t)
	}
	return nil
}

func (r *Run) agentPhase(t sim.Time) error {
	idx := int64(t) / int64(r.tick)
	for i := range r.deliv {
		d := &r.deliv[i]
		ns := &r.nodes[d.Dst]
		if len(ns.slots) == 0 {
			continue
		}
		p := d.P
		r.msg = agent.Message{Src: p.Src, Dst: p.Dst, Port: p.Port, Kind: p.Kind, Seq: p.Seq, TGen: p.TGen,
			TSend: p.TSend, TArrive: d.At, TRecv: t, Size: p.Size, Payload: p.Payload, RxPower: d.RxPower}
		ns.ctx.SetNow(t)
		for j := range ns.slots {
			if rc := ns.slots[j].recv; rc != nil {
				rc.Receive(ns.ctx, &r.msg)
			}
		}
	}
	r.deliv = nil
	if r.preparers {
		for i := range r.nodes {
			ns := &r.nodes[i]
			for j := range ns.slots {
				s := &ns.slots[j]
				if s.prep != nil && s.every > 0 && s.next == idx {
					ns.ctx.SetNow(t)
					s.prep.Prepare(ns.ctx)
				}
			}
		}
	}
	for i := range r.nodes {
		ns := &r.nodes[i]
		for j := range ns.slots {
			s := &ns.slots[j]
			if s.every > 0 && s.next == idx {
				ns.ctx.SetNow(t)
				s.b.Step(ns.ctx)
				s.next += s.every
			}
		}
	}
	if r.ext != nil {
		if err := r.ext.Err(); err != nil {
			return err
		}
	}
	for i, p := range r.outbox {
		r.backend.Send(p)
		r.outbox[i] = nil
	}
	r.outbox = r.outbox[:0]
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
		if r.curTick%r.ctrlEv[i] == 0 {
			r.veh[i].Control(r.curT, &r.vev[i])
		}
		if r.curTick%r.physEv[i] == 0 {
			r.veh[i].Step(r.curT, &r.vev[i])
		}
	}
}

func (r *Run) vehiclePhase(t sim.Time) error {
	r.curT, r.curTick = t, int64(t)/int64(r.tick)
	r.pool.Run(len(r.veh), r.vehicleFn)
	// Merge vehicle events in vehicle order, whatever the worker count.
	for i := range r.vev {
		ev := &r.vev[i]
		for _, e := range ev.List {
			r.out.event(e.T, netsim.NodeID(i), "vehicle", e.Name, e.Detail)
		}
		ev.List = ev.List[:0]
	}
	return nil
}

func (r *Run) positionPhase(t sim.Time) error {
	for i, v := range r.veh {
		r.pos[i] = v.Telemetry().Pos
	}
	r.backend.SetPositions(t.Add(r.tick), r.pos)
	return nil
}

func (r *Run) progressPhase(t sim.Time) error {
	if r.opt.Progress != nil {
		r.opt.Progress(t.Add(r.tick), r.end)
	}
	return nil
}

// sample records every vehicle's true state at t, for vehicles.csv and
// the trajectory plot.
func (r *Run) sample(t sim.Time) {
	if r.out == nil || r.out.vehicles == nil && r.tracks == nil {
		return
	}
	for i, v := range r.veh {
		tel := v.Telemetry()
		r.out.vehicle(t, i, &tel)
		if r.tracks != nil {
			r.tracks.Add(i, t.Seconds(), tel.Pos, tel.Target, tel.HasTarget)
		}
	}
}

// checkWorld runs the separation, collision, obstacle and bounds checks.
func (r *Run) checkWorld(t sim.Time) {
	tel := r.telBuf()
	for i, v := range r.veh {
		tel[i] = v.Telemetry()
	}
	r.world.sample(t, tel, r.out.event)
}

func (r *Run) telBuf() []vehicle.Telemetry {
	if cap(r.tel) < len(r.veh) {
		r.tel = make([]vehicle.Telemetry, len(r.veh))
	}
	return r.tel[:len(r.veh)]
}

func (r *Run) summary() *Summary {
	s := &Summary{Scenario: r.sc.Name, Seed: r.seed, DurationNs: r.end, Ticks: int64(r.end) / int64(r.tick),
		Backend: r.backendName, Nodes: len(r.nodes), Network: r.met.Summary(r.end),
		ObstacleHits: r.world.ObstacleHits, BoundsExits: r.world.BoundsExits, Clock: r.clock.summary(), Scheduling: r.sched}
	if r.iso != nil {
		s.Processes = r.iso.results
		if s.Processes == nil {
			s.Processes = []orchestrate.ProcResult{}
		}
	}
	tot := s.Network.Total
	var dropped uint64
	for _, n := range tot.Drops {
		dropped += n
	}
	if tot.Expected > tot.Rx+dropped {
		s.InFlight = tot.Expected - tot.Rx - dropped
	}
	for i, v := range r.veh {
		tel := v.Telemetry()
		ref := r.nodes[i].ref
		vs := VehicleSummary{ID: i, Name: ref.Name, Group: ref.Group, Kind: v.Kind(),
			Start: r.world.start[i], Final: tel.Pos, Mode: tel.Mode.String(), DistanceM: round(tel.Distance, 4),
			EnergyJ: round(tel.Energy, 4), MaxSpeed: round(r.world.maxSpeed[i], 4), TurnDeg: round(r.world.turnDeg[i], 2),
			PlanningEnergyJ: round(autopilot.PlanningEnergy(tel.Distance, r.world.turnDeg[i]), 4)}
		if tel.HasTarget {
			tg := tel.Target
			e := round(tel.Pos.Dist(tg), 4)
			vs.Target, vs.ArrivalErrorM = &tg, &e
		}
		s.Vehicles = append(s.Vehicles, vs)
	}
	if len(r.veh) > 1 && !math.IsInf(r.world.MinSep, 1) {
		s.Separation = &Separation{MinM: round(r.world.MinSep, 4), TNs: r.world.MinSepT, Pair: r.world.MinSepPair, Collisions: r.world.Collisions}
	}
	for i := range r.nodes {
		ns := &r.nodes[i]
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
