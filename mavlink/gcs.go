package mavlink

import (
	"fmt"
	"math"
	"sort"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"

	"skyloop/agent"
	"skyloop/behavior"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/plan"
	"skyloop/sim"
)

// MissionItem is a mission item in a scenario file.
type MissionItem struct {
	// Cmd is takeoff, waypoint, loiter, land or rtl.
	Cmd string `yaml:"cmd" json:"cmd"`
	// Offset is the item's position from the vehicle's home (x east,
	// y north, z above home); a loiter or land without one happens where
	// the vehicle is.
	Offset *geom.Vec3 `yaml:"offset" json:"offset,omitempty"`
	// Alt is the takeoff altitude above home, m.
	Alt float64 `yaml:"alt" json:"alt,omitempty"`
	// Time is the loiter time, or the hold time at a waypoint.
	Time sim.Duration `yaml:"time" json:"time,omitempty"`
}

var itemCmds = map[string]common.MAV_CMD{
	"takeoff": common.MAV_CMD_NAV_TAKEOFF, "waypoint": common.MAV_CMD_NAV_WAYPOINT,
	"loiter": common.MAV_CMD_NAV_LOITER_TIME, "land": common.MAV_CMD_NAV_LAND, "rtl": common.MAV_CMD_NAV_RETURN_TO_LAUNCH,
}

// item converts a scenario item to a client item.
func (m *MissionItem) item() Item {
	it := Item{Cmd: itemCmds[m.Cmd], Hold: m.Time}
	switch {
	case m.Cmd == "takeoff":
		it.Offset = geom.V(0, 0, m.Alt)
	case m.Offset != nil:
		it.Offset = *m.Offset
	default:
		it.Here = true
	}
	return it
}

// GCSParams configure the scripted ground station.
type GCSParams struct {
	Group    string       `yaml:"group" json:"group"`       // vehicle group to fly; empty = every vehicle
	Vehicles []int        `yaml:"vehicles" json:"vehicles"` // group indices to fly; empty = all
	Port     uint16       `yaml:"port" json:"port"`
	SystemID int          `yaml:"system_id" json:"system_id"`
	Start    sim.Duration `yaml:"start" json:"start"`   // when the script starts
	Retry    sim.Duration `yaml:"retry" json:"retry"`   // resend period of unacknowledged frames
	Period   sim.Duration `yaml:"period" json:"period"` // how often the station runs
	// ReadyTimeout bounds the wait for each vehicle's readiness (link up,
	// home set, pre-arm checks passed when its SYS_STATUS reports them),
	// from start; after it the run fails, naming what was missing.
	ReadyTimeout sim.Duration       `yaml:"ready_timeout" json:"ready_timeout"`
	Params       map[string]float64 `yaml:"params" json:"params"` // parameters written before the mission
	Mission      []MissionItem      `yaml:"mission" json:"mission"`
	// Coverage, when its area is set (instead of a mission), plans a
	// coverage path as the coverage behaviour does and flies it as the
	// mission: takeoff to its altitude above home, a waypoint at every
	// turn point, then its final action.
	Coverage behavior.CoverageParams `yaml:"coverage" json:"coverage"`
}

// covers reports whether the station flies a coverage plan.
func (p *GCSParams) covers() bool { return p.Coverage.Area != [2]float64{} }

// Validate checks the parameters.
func (p *GCSParams) Validate() fields.Errors {
	bad := fields.Errors{}
	if p.Port == 0 {
		bad["port"] = "must be a port number 1-65535"
	}
	if p.SystemID < 1 || p.SystemID > 255 {
		bad["system_id"] = fmt.Sprintf("must be in 1-255, got %d", p.SystemID)
	}
	if p.Start < 0 {
		bad["start"] = fmt.Sprintf("must be >= 0, got %v", p.Start)
	}
	if p.Retry <= 0 {
		bad["retry"] = fmt.Sprintf("must be a positive duration, got %v", p.Retry)
	}
	if p.Period <= 0 {
		bad["period"] = fmt.Sprintf("must be a positive duration, got %v", p.Period)
	}
	if p.ReadyTimeout <= 0 {
		bad["ready_timeout"] = fmt.Sprintf("must be a positive duration such as 120s, got %v", p.ReadyTimeout)
	}
	for name, v := range p.Params {
		if paramIndex(name) < 0 {
			bad["params."+name] = "unknown parameter (see docs/mavlink.md for the list)"
		} else if math.IsNaN(v) || math.IsInf(v, 0) {
			bad["params."+name] = fmt.Sprintf("must be a number, got %v", v)
		}
	}
	switch {
	case p.covers() && len(p.Mission) > 0:
		bad["mission"] = "give a mission or a coverage area, not both"
	case p.covers():
		for k, v := range p.Coverage.Validate() {
			bad["coverage."+k] = v
		}
	case len(p.Mission) == 0:
		bad["mission"] = "needs at least one item, or a coverage area (coverage: {area: ...})"
	}
	for i, it := range p.Mission {
		path := fmt.Sprintf("mission[%d]", i)
		if _, ok := itemCmds[it.Cmd]; !ok {
			bad[path+".cmd"] = fmt.Sprintf("must be takeoff, waypoint, loiter, land or rtl, got %q", it.Cmd)
			continue
		}
		if it.Cmd == "takeoff" && !(it.Alt >= 0.5) {
			bad[path+".alt"] = fmt.Sprintf("takeoff needs alt >= 0.5 m above home, got %v", it.Alt)
		}
		if it.Cmd == "waypoint" && it.Offset == nil {
			bad[path+".offset"] = "a waypoint needs an offset from home"
		}
		if it.Time < 0 {
			bad[path+".time"] = fmt.Sprintf("must be >= 0, got %v", it.Time)
		}
	}
	return bad
}

// ArduCopter's custom modes (ArduCopter/mode.h).
const (
	apGuided = 4
	apAuto   = 3
)

// startMission returns the operations that arm the vehicle and start its
// mission. PX4: arm, MISSION_START. ArduPilot, whose AUTO mode does not
// take off from the ground without a pilot's throttle (AUTO_OPTIONS): the
// usual GUIDED takeoff, as DroneKit scripts do: GUIDED, arm, NAV_TAKEOFF to
// the mission's first takeoff altitude (ArduPilot reads param7 relative to
// home), wait until 90% of it, then AUTO (the takeoff item then completes
// at once).
func startMission(items []Item) []Op {
	alt := float32(0)
	for _, it := range items {
		if it.Cmd == common.MAV_CMD_NAV_TAKEOFF {
			alt = float32(it.Offset.Z)
			break
		}
	}
	return startOps(alt)
}

// startOps are startMission's operations for a mission whose first
// takeoff climbs alt metres above home (0: none).
func startOps(alt float32) []Op {
	arm := Op{Kind: OpCommand, Name: "arm", Cmd: common.MAV_CMD_COMPONENT_ARM_DISARM, Params: [7]float32{1}}
	ops := []Op{}
	if alt > 0 {
		ops = append(ops, Op{Kind: OpMode, Name: "guided", Value: apGuided, Only: common.MAV_AUTOPILOT_ARDUPILOTMEGA})
	}
	ops = append(ops, arm)
	if alt > 0 {
		ops = append(ops,
			Op{Kind: OpCommand, Name: "takeoff", Cmd: common.MAV_CMD_NAV_TAKEOFF, Params: [7]float32{6: alt}, Only: common.MAV_AUTOPILOT_ARDUPILOTMEGA},
			Op{Kind: OpWaitAlt, Name: "climbed", Value: 0.9 * alt, Only: common.MAV_AUTOPILOT_ARDUPILOTMEGA},
			Op{Kind: OpMode, Name: "auto", Value: apAuto, Only: common.MAV_AUTOPILOT_ARDUPILOTMEGA})
	}
	return append(ops, Op{Kind: OpCommand, Name: "mission_start", Cmd: common.MAV_CMD_MISSION_START, Only: common.MAV_AUTOPILOT_PX4})
}

// GCSBehavior is a scripted ground station.
type GCSBehavior struct {
	p       *GCSParams
	ctx     *agent.Context
	dec     *Decoder
	clients []*Client
	nodes   []netsim.NodeID
	bySys   map[uint8]int
	plan    *plan.Plan // the coverage plan flown, if any
	failed  []bool     // the client's readiness failure has failed the run
}

// Clients returns the per-vehicle clients (after Start).
func (g *GCSBehavior) Clients() []*Client { return g.clients }

// vehicles returns the vehicles the ground station flies.
func (g *GCSBehavior) vehicles(ctx *agent.Context) ([]netsim.NodeID, error) {
	var ids []netsim.NodeID
	if g.p.Group == "" {
		for _, n := range ctx.Nodes() {
			if n.Group != "" {
				ids = append(ids, n.ID)
			}
		}
	} else {
		ids = ctx.Group(g.p.Group)
		if len(ids) == 0 {
			return nil, fields.Errors{"group": fmt.Sprintf("no vehicle group %q", g.p.Group)}.Err("")
		}
	}
	if len(g.p.Vehicles) > 0 {
		var sel []netsim.NodeID
		for i, k := range g.p.Vehicles {
			if k < 0 || k >= len(ids) {
				return nil, fields.Errors{fmt.Sprintf("vehicles[%d]", i): fmt.Sprintf("group has %d vehicles, no index %d", len(ids), k)}.Err("")
			}
			sel = append(sel, ids[k])
		}
		ids = sel
	}
	for _, id := range ids {
		if id > 249 {
			return nil, fmt.Errorf("vehicle node %d has no MAVLink system id (at most 250 vehicles)", id)
		}
	}
	return ids, nil
}

// Start implements agent.Behavior.
func (g *GCSBehavior) Start(ctx *agent.Context) error {
	ids, err := g.vehicles(ctx)
	if err != nil {
		return err
	}
	g.ctx = ctx
	g.dec = NewDecoder()
	g.dec.Want = ClientWants
	g.bySys = map[uint8]int{}
	var items []Item
	for i := range g.p.Mission {
		items = append(items, g.p.Mission[i].item())
	}
	last := ""
	if len(g.p.Mission) > 0 {
		last = g.p.Mission[len(g.p.Mission)-1].Cmd
	}
	if g.p.covers() {
		if items, last, err = g.coverageMission(ctx); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(g.p.Params))
	for n := range g.p.Params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, id := range ids {
		sys := uint8(id + 1)
		c := NewClient(uint8(g.p.SystemID), uint8(common.MAV_COMP_ID_MISSIONPLANNER), sys, ctx.Origin(), g.p.Retry,
			common.MAV_TYPE_GCS, gcsHost{g, id})
		c.ReadyTimeout = g.p.ReadyTimeout
		c.Add(Op{Kind: OpConnect, Name: "connect"})
		for _, n := range names {
			c.Add(Op{Kind: OpSetParam, Name: "param " + n, Param: n, Value: float32(g.p.Params[n])})
		}
		c.Add(Op{Kind: OpUpload, Name: "upload", Items: items})
		c.Add(startMission(items)...)
		if last == "land" || last == "rtl" {
			c.Add(Op{Kind: OpWaitLanded, Name: "landed"})
		}
		g.bySys[sys] = len(g.clients)
		g.clients = append(g.clients, c)
		g.failed = append(g.failed, false)
		g.nodes = append(g.nodes, id)
	}
	return nil
}

// coverageMission plans the coverage path and returns it as mission items
// and the mission's last command.
func (g *GCSBehavior) coverageMission(ctx *agent.Context) ([]Item, string, error) {
	cp := &g.p.Coverage
	pl, err := cp.Plan()
	if err != nil {
		return nil, "", fmt.Errorf("coverage plan: %w", err)
	}
	g.plan = &pl
	items := []Item{{Cmd: common.MAV_CMD_NAV_TAKEOFF, Offset: geom.V(0, 0, cp.Altitude)}}
	for _, p := range cp.TurnPoints(pl) {
		items = append(items, Item{Cmd: common.MAV_CMD_NAV_WAYPOINT, Offset: p, Absolute: true})
	}
	last := "waypoint"
	if cp.Final == "land" || cp.Final == "rtl" {
		last = cp.Final
		items = append(items, Item{Cmd: itemCmds[last], Here: true})
	}
	ctx.Event("coverage_plan", fmt.Sprintf("%s: %d cells, %.1f m, %d turns, %.1f J, %d mission items",
		cp.Planner, pl.Covered, pl.Distance, pl.Turns, pl.Energy, len(items)))
	return items, last, nil
}

// Schedule implements agent.Behavior.
func (g *GCSBehavior) Schedule() (period, offset sim.Duration) { return g.p.Period, g.p.Start }

// Step implements agent.Behavior.
func (g *GCSBehavior) Step(ctx *agent.Context) {
	for i, c := range g.clients {
		c.Step(ctx.Now())
		if c.Err != nil && !g.failed[i] {
			g.failed[i] = true
			ctx.Fail(fmt.Errorf("mavlink_gcs: %w", c.Err))
		}
	}
}

// Receive implements agent.Receiver.
func (g *GCSBehavior) Receive(ctx *agent.Context, m *agent.Message) {
	if m.Port != g.p.Port || ctx.Now() < sim.Time(g.p.Start) {
		return
	}
	g.dec.Decode(m.Payload, func(f frame.Frame) {
		if i, ok := g.bySys[f.GetSystemID()]; ok {
			g.clients[i].Handle(ctx.Now(), f)
		}
	})
}

// Finish implements agent.Finisher: per vehicle, when each operation
// finished and how many sends it took.
func (g *GCSBehavior) Finish(ctx *agent.Context) map[string]any {
	out := map[string]any{"bad_frames": g.dec.Bad, "skipped_frames": g.dec.Skipped}
	if pl := g.plan; pl != nil {
		out["coverage_plan"] = map[string]any{"planner": g.p.Coverage.Planner, "cells": pl.Covered, "crossings": pl.Crossings,
			"distance_m": pl.Distance, "turns": pl.Turns, "turn_deg": pl.TurnDeg, "energy_j": pl.Energy}
	}
	for i, c := range g.clients {
		r := results(c)
		// The mission runs from MISSION_START (PX4) or AUTO (ArduPilot).
		for _, name := range []string{"mission_start", "auto"} {
			if res, ok := c.Result(name); ok && res.OK {
				r["commands_done_s"] = res.End.Sub(sim.Time(g.p.Start)).Seconds()
			}
		}
		if res, ok := c.Result("landed"); ok && res.OK {
			r["mission_done_s"] = res.End.Sub(sim.Time(g.p.Start)).Seconds()
			r["mission_done_ns"] = int64(res.End) // run time, for the ideal-network twin's comparison
		}
		sends := 0
		for _, res := range c.Results {
			sends += res.Attempts
		}
		r["sends"] = sends
		out[ctx.Nodes()[g.nodes[i]].Name] = r
	}
	return out
}

type gcsHost struct {
	g  *GCSBehavior
	to netsim.NodeID
}

func (h gcsHost) Send(fr []byte) {
	g := h.g
	if err := g.ctx.Send(agent.Message{Dst: h.to, Port: g.p.Port, Kind: KindMAVLink, Payload: fr}); err != nil {
		g.ctx.Log().Warn("MAVLink send failed", "dst", h.to, "err", err)
	}
}

func (h gcsHost) Event(name, detail string) { h.g.ctx.Event(name, detail) }
