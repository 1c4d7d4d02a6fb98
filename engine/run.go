package engine

import (
	"errors"
	"fmt"
	"math"

	"skyloop/agent"
	"skyloop/geom"
	"skyloop/metrics"
	"skyloop/netsim"
	"skyloop/record"
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
	MaxSpeed  float64   `json:"max_speed_mps"` // at the sample period
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
	var dir *record.Dir
	if dest != "" {
		if dir, err = record.Create(dest); err != nil {
			return nil, err
		}
	}
	if r.out, err = openOutputs(dir, r.sc.Outputs, r.opt.NoFiles); err != nil {
		dir.Discard()
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error (please report with the scenario): %v", p)
		}
		if err != nil && dir != nil {
			kept := dir.Abort(err)
			err = fmt.Errorf("%w (partial outputs kept in %s)", err, kept)
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
	if err = r.start(); err != nil {
		return nil, err
	}
	defer r.pool.Close()
	runErr := r.kernel.Run(r.end)
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
	if err := r.backend.Start(infos); err != nil {
		return fmt.Errorf("starting the %s network: %w", r.backendName, err)
	}
	r.pool = sim.NewPool(r.workers)
	r.controlFn, r.physicsFn = r.controlRange, r.physicsRange
	sampleEvery := int64(r.sc.Outputs.SamplePeriod / r.tick)
	second := max(int64(sim.Second/r.tick), 1)
	phases := []sim.Phase{
		{Name: "record", Every: sampleEvery, Run: func(t sim.Time) error { r.sample(t); return nil }},
		{Name: "world", Every: r.checkEvery, Run: func(t sim.Time) error { r.checkWorld(t); return nil }},
		{Name: "network", Every: 1, Run: r.networkPhase},
		{Name: "agents", Every: 1, Run: r.agentPhase},
		{Name: "autopilot", Every: 1, Run: r.autopilotPhase},
		{Name: "physics", Every: 1, Run: r.physicsPhase},
		{Name: "positions", Every: r.posEvery, Run: r.positionPhase},
		{Name: "progress", Every: second, Offset: second - 1, Run: r.progressPhase},
	}
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
	for i, p := range r.outbox {
		r.backend.Send(p)
		r.outbox[i] = nil
	}
	r.outbox = r.outbox[:0]
	return nil
}

func (r *Run) controlRange(lo, hi int) {
	for i := lo; i < hi; i++ {
		if r.curTick%r.ctrlEv[i] == 0 {
			r.veh[i].Control(r.curT, &r.vev[i])
		}
	}
}

func (r *Run) physicsRange(lo, hi int) {
	for i := lo; i < hi; i++ {
		if r.curTick%r.physEv[i] == 0 {
			r.veh[i].Step(r.curT, &r.vev[i])
		}
	}
}

func (r *Run) autopilotPhase(t sim.Time) error {
	r.curT, r.curTick = t, int64(t)/int64(r.tick)
	r.pool.Run(len(r.veh), r.controlFn)
	return nil
}

func (r *Run) physicsPhase(t sim.Time) error {
	r.curT, r.curTick = t, int64(t)/int64(r.tick)
	r.pool.Run(len(r.veh), r.physicsFn)
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
	if r.opt.Stop != nil && r.opt.Stop() {
		return sim.ErrStopped
	}
	if r.opt.Progress != nil {
		r.opt.Progress(t.Add(r.tick), r.end)
	}
	return nil
}

// sample records every vehicle's true state at t.
func (r *Run) sample(t sim.Time) {
	if r.out == nil || r.out.vehicles == nil {
		return
	}
	for i, v := range r.veh {
		tel := v.Telemetry()
		r.out.vehicle(t, i, &tel)
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
		ObstacleHits: r.world.ObstacleHits, BoundsExits: r.world.BoundsExits}
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
		s.Vehicles = append(s.Vehicles, VehicleSummary{ID: i, Name: ref.Name, Group: ref.Group, Kind: v.Kind(),
			Start: r.world.start[i], Final: tel.Pos, Mode: tel.Mode.String(), DistanceM: round(tel.Distance, 4),
			EnergyJ: round(tel.Energy, 4), MaxSpeed: round(r.world.maxSpeed[i], 4)})
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
