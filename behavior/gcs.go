package behavior

import (
	"fmt"
	"math"

	"skyloop/agent"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

// GCSParams configure the ground-station behaviour.
type GCSParams struct {
	Group     string        `yaml:"group" json:"group"`         // vehicle group to command; empty = every vehicle
	Legs      []geom.Layout `yaml:"legs" json:"legs"`           // each leg gives one target per vehicle
	Accept    float64       `yaml:"accept" json:"accept"`       // a leg is done when telemetry shows the vehicle this close, m
	Speed     float64       `yaml:"speed" json:"speed"`         // speed limit sent with each goto, m/s; 0 = vehicle's own
	Resend    sim.Duration  `yaml:"resend" json:"resend"`       // resend an unacknowledged (or abandoned) command after this long
	Heartbeat sim.Duration  `yaml:"heartbeat" json:"heartbeat"` // send a heartbeat when nothing else was sent for this long; 0 = never
	SyncLegs  bool          `yaml:"sync_legs" json:"sync_legs"` // start a leg only when every vehicle finished the one before
	Clearance float64       `yaml:"clearance" json:"clearance"` // a vehicle starts a leg only after those whose start its path passes closer than this (seen from above), m; 0 = off
	StopAt    sim.Duration  `yaml:"stop_at" json:"stop_at"`     // the station falls silent at this time (a crash, for failsafe studies); 0 = never
	Period    sim.Duration  `yaml:"period" json:"period"`       // how often the station checks progress
	Final     string        `yaml:"final" json:"final"`         // after the last leg: hold, land or rtl
	Port      uint16        `yaml:"port" json:"port"`           // UDP port of commands (default GCSPort, 5001; what captures show)
}

// Validate checks the parameters that do not depend on the run.
func (p *GCSParams) Validate() fields.Errors {
	bad := fields.Errors{}
	if len(p.Legs) == 0 {
		bad["legs"] = "needs at least one leg"
	}
	for i := range p.Legs {
		// Counts are checked at start, when the group size is known.
		for k, v := range p.Legs[i].Check(len(p.Legs[i].Positions)) {
			bad[fmt.Sprintf("legs[%d].%s", i, k)] = v
		}
	}
	if !(p.Accept > 0) {
		bad["accept"] = fmt.Sprintf("must be > 0, got %v", p.Accept)
	}
	if !(p.Clearance >= 0) || math.IsInf(p.Clearance, 0) {
		bad["clearance"] = fmt.Sprintf("must be >= 0, got %v", p.Clearance)
	}
	if p.Speed < 0 {
		bad["speed"] = fmt.Sprintf("must be >= 0, got %v", p.Speed)
	}
	positive(bad, "resend", p.Resend)
	nonNegative(bad, "heartbeat", p.Heartbeat)
	nonNegative(bad, "stop_at", p.StopAt)
	positive(bad, "period", p.Period)
	checkFinal(bad, p.Final)
	return bad
}

type gcsVehicle struct {
	id       netsim.NodeID
	msgSeq   uint32      // sequence number of every packet to this vehicle
	targets  []geom.Vec3 // per leg
	leg      int         // leg being commanded; len(targets) = final command
	seq      uint32
	lastSend sim.Time // any packet
	lastCmd  sim.Time // the last command
	sentLeg  int
	telem    TelemMsg
	hasTelem bool
	legDone  []sim.Time
	sends    int
	waitFor  [][]int // per leg: vehicles that must start that leg before this one
}

// GCS is a ground station on a fixed node. It commands every vehicle of a
// group through a sequence of legs over the simulated network: it sends
// each vehicle its target for the current leg (resending until the
// vehicle's telemetry acknowledges it), moves the vehicle on to the next leg
// when its telemetry shows it within `accept` of the target, and sends the
// final command after the last leg. Both the commands and the telemetry it
// relies on cross the network, so delay and loss show up in the flight.
type GCS struct {
	stopped bool
	p       *GCSParams
	v       []gcsVehicle
	buf     []byte
	idx     map[netsim.NodeID]int
}

// gcsSpec is the gcs behaviour type (see Builtins).
var gcsSpec = agent.Spec{
	Name: "gcs",
	Doc: "Ground station (fixed node): commands each vehicle of `group` through `legs` (one target layout per leg) over the network, resending every `resend` " +
		"until the vehicle's telemetry acknowledges it (or again when it stops flying it), advancing a vehicle when its telemetry shows it within `accept` of the target " +
		"(all together with `sync_legs`), then sends `final`; with `clearance` > 0 a vehicle is sent a leg only once every vehicle whose position at the start of the leg lies closer than that to its path has acknowledged the leg (a lost command then delays, and never overtakes, the vehicle ahead on a shared line); " +
		" between commands it sends heartbeats every `heartbeat` for the autopilots' link-loss failsafe. Vehicles need the `remote` behaviour.",
	Fixed: true,
	Params: func() agent.Params {
		return &GCSParams{Accept: 1.0, Resend: sim.Second, Heartbeat: 250 * sim.Millisecond, Period: 100 * sim.Millisecond, Final: "hold", Port: GCSPort}
	},
	New: func(p agent.Params) agent.Behavior { return &GCS{p: p.(*GCSParams)} },
}

// vehicles returns the vehicles the ground station commands.
func (g *GCS) vehicles(ctx *agent.Context) []netsim.NodeID {
	var ids []netsim.NodeID
	for _, n := range ctx.Nodes() {
		if n.Group == "" || n.ID == ctx.ID() {
			continue
		}
		if g.p.Group == "" || n.Group == g.p.Group {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// check reports what Start refuses: the group must have vehicles, and every leg's
// layout must fit their number.
func (g *GCS) check(ctx *agent.Context) error {
	n := len(g.vehicles(ctx))
	if n == 0 {
		return fieldErr("group", fmt.Sprintf("no vehicles in group %q", g.p.Group))
	}
	for l := range g.p.Legs {
		if bad := g.p.Legs[l].Check(n); len(bad) > 0 {
			k := bad.Keys()[0]
			return fieldErr(fmt.Sprintf("legs[%d].%s", l, k), bad[k])
		}
	}
	return nil
}

// Start resolves the group and the per-vehicle targets of every leg.
func (g *GCS) Start(ctx *agent.Context) error {
	if err := g.check(ctx); err != nil {
		return err
	}
	ids := g.vehicles(ctx)
	g.idx = make(map[netsim.NodeID]int, len(ids))
	g.v = make([]gcsVehicle, len(ids))
	for i, id := range ids {
		g.v[i] = gcsVehicle{id: id, targets: make([]geom.Vec3, len(g.p.Legs)), sentLeg: -1}
		g.idx[id] = i
	}
	for l := range g.p.Legs {
		lay := &g.p.Legs[l]
		for i, pt := range lay.Points(len(ids)) {
			g.v[i].targets[l] = pt
		}
	}
	if g.p.Clearance > 0 {
		g.orderStarts()
	}
	return nil
}

// orderStarts finds, for every leg after the first, the vehicles each
// vehicle must let go first: those whose previous target (where they wait
// for the leg) lies within the clearance of its path seen from above (a
// path that climbs over a waiting vehicle can still catch it up when that
// vehicle leaves late). Paths that pass
// through each other's start points (a head-on swap) cannot be ordered that
// way, and neither can longer cycles: those vehicles wait for nobody.
func (g *GCS) orderStarts() {
	n := len(g.v)
	for i := range g.v {
		g.v[i].waitFor = make([][]int, len(g.p.Legs))
	}
	for l := 1; l < len(g.p.Legs); l++ {
		near := func(i, j int) bool { // j's start lies near i's path
			a, b := g.v[i].targets[l-1], g.v[i].targets[l]
			return segmentDist(g.v[j].targets[l-1], a, b) < g.p.Clearance
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if i != j && near(i, j) && !near(j, i) {
					g.v[i].waitFor[l] = append(g.v[i].waitFor[l], j)
				}
			}
		}
		// Kahn's algorithm: whoever is left is in a cycle.
		free := make([]bool, n)
		for changed := true; changed; {
			changed = false
			for i := 0; i < n; i++ {
				if free[i] {
					continue
				}
				ok := true
				for _, j := range g.v[i].waitFor[l] {
					ok = ok && free[j]
				}
				if ok {
					free[i], changed = true, true
				}
			}
		}
		for i := 0; i < n; i++ {
			if !free[i] {
				g.v[i].waitFor[l] = nil
			}
		}
	}
}

// segmentDist returns the horizontal distance from p to the segment from a
// to b.
func segmentDist(p, a, b geom.Vec3) float64 {
	p.Z, a.Z, b.Z = 0, 0, 0
	ab := b.Sub(a)
	t := 0.0
	if l2 := ab.Dot(ab); l2 > 0 {
		t = math.Max(0, math.Min(1, p.Sub(a).Dot(ab)/l2))
	}
	return p.Dist(a.Add(ab.Scale(t)))
}

// started reports whether vehicle j's telemetry shows it has applied leg l
// (or a later one).
func (g *GCS) started(j, l int) bool {
	v := &g.v[j]
	return v.leg > l || v.hasTelem && v.telem.Leg != NoLeg && int(v.telem.Leg) >= l
}

// blocked reports whether vehicle i must not be sent leg l yet: a vehicle
// in its way has not started that leg.
func (g *GCS) blocked(i, l int) bool {
	if l >= len(g.v[i].waitFor) {
		return false
	}
	for _, j := range g.v[i].waitFor[l] {
		if !g.started(j, l) {
			return true
		}
	}
	return false
}

// Schedule returns the check period.
func (g *GCS) Schedule() (sim.Duration, sim.Duration) { return g.p.Period, 0 }

// Receive records vehicle telemetry.
func (g *GCS) Receive(ctx *agent.Context, m *agent.Message) {
	if m.Kind != netsim.KindTelem {
		return
	}
	i, ok := g.idx[m.Src]
	if !ok {
		return
	}
	t, err := DecodeTelem(m.Payload)
	if err != nil {
		return
	}
	v := &g.v[i]
	if !v.hasTelem || t.Seq > v.telem.Seq {
		v.telem, v.hasTelem = t, true
	}
}

// Step advances vehicles whose telemetry shows them at their target and
// (re)sends commands.
func (g *GCS) Step(ctx *agent.Context) {
	now := ctx.Now()
	if g.p.StopAt > 0 && now >= sim.Time(g.p.StopAt) {
		if !g.stopped {
			g.stopped = true
			ctx.Event("gcs_stopped", "")
		}
		return
	}
	for i := range g.v {
		v := &g.v[i]
		if v.leg < len(v.targets) && v.hasTelem && int(v.telem.Leg) == v.leg && v.telem.Pos.Dist(v.targets[v.leg]) <= g.p.Accept {
			v.legDone = append(v.legDone, now)
			ctx.Event("leg_done", fmt.Sprintf("vehicle=%d leg=%d", v.id, v.leg))
			v.leg++
		}
	}
	minLeg := len(g.p.Legs)
	for i := range g.v {
		minLeg = min(minLeg, g.v[i].leg)
	}
	for i := range g.v {
		v := &g.v[i]
		nLegs := len(v.targets)
		acked := v.hasTelem && int(v.telem.Leg) == v.leg
		var needCmd bool
		switch {
		case g.p.SyncLegs && v.leg > minLeg:
			// Done with its leg; it holds there until the others are too.
		case v.sentLeg != v.leg && g.blocked(i, v.leg):
			// A vehicle on its path has not left yet.
		case v.leg == nLegs && g.p.Final == "hold":
			// Done: it keeps holding at its last target.
		case !acked:
			needCmd = true
		case v.leg < nLegs && v.telem.Mode != vehicle.ModeGoto:
			// It acknowledged the leg but no longer flies it (a failsafe
			// hold, say): command it again.
			needCmd = true
		}
		var c CmdMsg
		switch {
		case needCmd && (v.sentLeg != v.leg || now.Sub(v.lastCmd) >= g.p.Resend):
			c = CmdMsg{Seq: v.seq, Leg: uint16(v.leg), Speed: float32(g.p.Speed)}
			if v.leg < nLegs {
				c.Op, c.Pos = OpGoto, v.targets[v.leg]
			} else {
				c.Op = finalOp(g.p.Final)
			}
		case g.p.Heartbeat > 0 && now.Sub(v.lastSend) >= g.p.Heartbeat && v.sentLeg >= 0:
			c = CmdMsg{Op: OpHeartbeat, Seq: v.seq - 1, Leg: uint16(v.sentLeg)}
		default:
			continue
		}
		g.buf = c.Append(g.buf[:0])
		if err := ctx.Send(agent.Message{Dst: v.id, Kind: netsim.KindCmd, Seq: v.msgSeq, Port: g.p.Port, Payload: g.buf}); err != nil {
			ctx.Log().Error("gcs send", "err", err)
			continue
		}
		v.msgSeq++
		v.lastSend = now
		if c.Op != OpHeartbeat {
			v.seq++
			v.sends++
			v.sentLeg, v.lastCmd = v.leg, now
		}
	}
}

// Finish reports per-vehicle progress.
func (g *GCS) Finish(ctx *agent.Context) map[string]any {
	type vrep struct {
		Vehicle    netsim.NodeID `json:"vehicle"`
		LegsDone   int           `json:"legs_done"`
		LegDoneNs  []sim.Time    `json:"leg_done_ns"`
		Commands   int           `json:"commands_sent"`
		LastTelem  geom.Vec3     `json:"last_reported_pos"`
		FinalAcked bool          `json:"final_acked"`
	}
	reps := make([]vrep, len(g.v))
	done := 0
	for i, v := range g.v {
		reps[i] = vrep{Vehicle: v.id, LegsDone: len(v.legDone), LegDoneNs: v.legDone, Commands: v.sends, LastTelem: v.telem.Pos,
			FinalAcked: v.leg == len(v.targets) && (g.p.Final == "hold" || v.hasTelem && int(v.telem.Leg) == v.leg)}
		if len(v.legDone) == len(v.targets) {
			done++
		}
	}
	return map[string]any{"vehicles": reps, "vehicles_done": done, "legs": len(g.p.Legs)}
}

// fieldErr is an error about one parameter of a behaviour found when it
// starts: the engine reports a *fields.Error with the parameter's
// scenario path and line.
func fieldErr(field, msg string) error { return fields.Errors{field: msg}.Err("") }

func finalOp(f string) uint8 {
	switch f {
	case "land":
		return OpLand
	case "rtl":
		return OpRTL
	}
	return OpHold
}
