// Package netbots is SPEC.md C's network-impairment testbed: a platoon of
// differential-drive robots in a warehouse whose followers only know their
// predecessor through 56-byte state updates crossing an impaired network,
// run in trace-replay or coupled mode, measured against an ideal-network
// reference, and swept over impairments by experiment files.
//
// Runs use the project's parts directly — groundbot physics, the impair
// network, the beliefs and receiver rules and the follower law of the agent
// package, the metrics collector — in a loop built for the study's two
// modes:
//
//   - coupled: the network advances in lockstep epochs (10 ms by default).
//     At each epoch start the robots hand the network every packet they send
//     in the epoch (periodic updates at their scheduled times; event-triggered
//     ones decided on the state at the epoch start), the network runs the
//     epoch, and the robots then step through it tick by tick, consuming each
//     delivery at the first tick at or after its arrival.
//   - replay: the network runs the whole duration first with the same sends
//     (valid only when sending does not depend on state), fixing every
//     packet's fate; the robots then replay the deliveries.
//
// In both modes a state update's content is bound when it is consumed: the
// sender's true state at the update's generation time, from the sender's
// state history. With periodic traffic both modes give the same network
// events in the same order, hence byte-identical traces.
package netbots

import (
	"fmt"
	"math"

	"skyloop/geom"
	"skyloop/sim"
)

// Params configure one run. Experiment files set them (base and per
// variant); every field is a column of summary.csv.
type Params struct {
	Robots   int          `yaml:"robots" json:"robots"`
	Duration sim.Duration `yaml:"duration" json:"duration"`
	Mode     string       `yaml:"mode" json:"mode"`   // coupled or replay
	Epoch    sim.Duration `yaml:"epoch" json:"epoch"` // network lockstep epoch
	Tick     sim.Duration `yaml:"tick" json:"tick"`   // physics and control step

	Policy     string       `yaml:"policy" json:"policy"`                 // periodic or event
	Period     sim.Duration `yaml:"period" json:"period"`                 // periodic send period
	Stagger    sim.Duration `yaml:"stagger" json:"stagger"`               // robot i starts sending at i*stagger
	MoveThresh float64      `yaml:"move_threshold" json:"move_threshold"` // event: send after moving this far, m
	TurnThresh float64      `yaml:"turn_threshold" json:"turn_threshold"` // event: or turning this much, deg
	Heartbeat  sim.Duration `yaml:"heartbeat" json:"heartbeat"`           // event: or after this long
	Stale      sim.Duration `yaml:"stale" json:"stale"`                   // beliefs older than this are withheld

	Latency     sim.Duration `yaml:"latency" json:"latency"`           // base channel delay
	Jitter      sim.Duration `yaml:"jitter" json:"jitter"`             // per-receiver extra delay U(0, jitter)
	Loss        float64      `yaml:"loss" json:"loss"`                 // per-receiver loss probability
	LoadKbps    float64      `yaml:"load_kbps" json:"load_kbps"`       // background CBR broadcast per robot, kbit/s of payload
	BGSize      int          `yaml:"bg_size" json:"bg_size"`           // background packet payload, bytes
	Rate        float64      `yaml:"rate" json:"rate"`                 // device rate, bit/s
	Queue       int          `yaml:"queue" json:"queue"`               // FIFO packets before the device queue
	DeviceQueue int          `yaml:"device_queue" json:"device_queue"` // device queue packets

	Speed       float64      `yaml:"speed" json:"speed"`               // leader speed, m/s
	Gap         float64      `yaml:"gap" json:"gap"`                   // desired gap, m
	GapGain     float64      `yaml:"gap_gain" json:"gap_gain"`         // v = v_pred + gap_gain*(dist - gap)
	HeadingGain float64      `yaml:"heading_gain" json:"heading_gain"` // omega = heading_gain * heading error
	MaxSpeed    float64      `yaml:"max_speed" json:"max_speed"`       // follower speed limit
	Waypoints   []geom.Vec3  `yaml:"waypoints" json:"waypoints"`       // the leader's loop
	Warmup      sim.Duration `yaml:"warmup" json:"warmup"`             // gap error counts after this
	Sample      sim.Duration `yaml:"sample" json:"sample"`             // robots.csv and trajectory sampling
}

// Defaults returns SPEC.md C's setup: 3 robots, 60 s, coupled with 10 ms
// epochs, 2 ms steps, periodic 10 Hz updates staggered by 10 ms, a 2 Mbit/s
// device with a 100-packet FIFO and a 1-packet device queue, 0.1 ms base
// latency, no jitter, loss or load; the leader loops a 12 x 8 m rectangle
// at 0.5 m/s, followers keep 1 m with gain 1.2.
func Defaults() Params {
	return Params{
		Robots: 3, Duration: 60 * sim.Second, Mode: "coupled", Epoch: 10 * sim.Millisecond, Tick: 2 * sim.Millisecond,
		Policy: "periodic", Period: 100 * sim.Millisecond, Stagger: 10 * sim.Millisecond,
		MoveThresh: 0.1, TurnThresh: 10, Heartbeat: sim.Second, Stale: sim.Second,
		Latency: 100 * sim.Microsecond, BGSize: 1000, Rate: 2e6, Queue: 100, DeviceQueue: 1,
		Speed: 0.5, Gap: 1.0, GapGain: 1.2, HeadingGain: 2.0, MaxSpeed: 1.0,
		Waypoints: []geom.Vec3{{X: 0, Y: 0}, {X: 12, Y: 0}, {X: 12, Y: 8}, {X: 0, Y: 8}},
		Warmup:    5 * sim.Second, Sample: 100 * sim.Millisecond,
	}
}

// Validate returns field -> message for every bad field.
func (p *Params) Validate() map[string]string {
	bad := map[string]string{}
	if p.Robots < 2 || p.Robots > 1000 {
		bad["robots"] = fmt.Sprintf("must be 2..1000, got %d", p.Robots)
	}
	if p.Mode != "coupled" && p.Mode != "replay" {
		bad["mode"] = fmt.Sprintf("must be coupled or replay, got %q", p.Mode)
	}
	if p.Policy != "periodic" && p.Policy != "event" {
		bad["policy"] = fmt.Sprintf("must be periodic or event, got %q", p.Policy)
	}
	if p.Mode == "replay" && p.Policy == "event" {
		bad["policy"] = "event-triggered sending depends on the robots' state, so the network cannot run first: use mode: coupled"
	}
	for name, d := range map[string]sim.Duration{"duration": p.Duration, "epoch": p.Epoch, "tick": p.Tick, "period": p.Period,
		"heartbeat": p.Heartbeat, "stale": p.Stale, "sample": p.Sample} {
		if d <= 0 {
			bad[name] = fmt.Sprintf("must be positive, got %v", d)
		}
	}
	if p.Tick > 0 {
		for name, d := range map[string]sim.Duration{"duration": p.Duration, "epoch": p.Epoch, "period": p.Period, "stagger": p.Stagger, "sample": p.Sample} {
			if d%p.Tick != 0 {
				bad[name] = fmt.Sprintf("%v is not a multiple of the tick %v", d, p.Tick)
			}
		}
	}
	for name, d := range map[string]sim.Duration{"stagger": p.Stagger, "latency": p.Latency, "jitter": p.Jitter, "warmup": p.Warmup} {
		if d < 0 {
			bad[name] = fmt.Sprintf("must be >= 0, got %v", d)
		}
	}
	if !(p.Loss >= 0 && p.Loss <= 1) {
		bad["loss"] = fmt.Sprintf("must be a probability in [0, 1], got %v", p.Loss)
	}
	if !(p.LoadKbps >= 0) || math.IsInf(p.LoadKbps, 0) {
		bad["load_kbps"] = fmt.Sprintf("must be >= 0, got %v", p.LoadKbps)
	}
	if p.LoadKbps > 0 && p.LoadKbps < 0.001 {
		bad["load_kbps"] = "below 1 bit/s: use 0 for no load"
	}
	if p.BGSize < 1 || p.BGSize > 65507 {
		bad["bg_size"] = fmt.Sprintf("must be 1..65507 bytes, got %d", p.BGSize)
	}
	if !(p.Rate >= 1) || math.IsInf(p.Rate, 0) {
		bad["rate"] = fmt.Sprintf("must be at least 1 bit/s, got %v", p.Rate)
	}
	if p.Queue < 0 || p.DeviceQueue < 0 {
		bad["queue"] = "queue and device_queue must be >= 0"
	}
	for name, v := range map[string]float64{"speed": p.Speed, "gap": p.Gap, "gap_gain": p.GapGain, "heading_gain": p.HeadingGain,
		"max_speed": p.MaxSpeed, "move_threshold": p.MoveThresh, "turn_threshold": p.TurnThresh} {
		if !(v > 0) || math.IsInf(v, 0) {
			bad[name] = fmt.Sprintf("must be > 0, got %v", v)
		}
	}
	if p.MaxSpeed > 1 || p.Speed > 1 {
		bad["max_speed"] = "the robots' wheels top out at 1 m/s: speed and max_speed must be <= 1"
	}
	if len(p.Waypoints) < 2 {
		bad["waypoints"] = fmt.Sprintf("the leader needs at least 2 waypoints, got %d", len(p.Waypoints))
	}
	return bad
}

// shelves are the warehouse's scenery: racks inside and around the loop.
var shelves = []geom.Box{
	{Min: geom.V(2, 2.5, 0), Max: geom.V(10, 3.2, 2)},
	{Min: geom.V(2, 4.8, 0), Max: geom.V(10, 5.5, 2)},
	{Min: geom.V(-2, -2.2, 0), Max: geom.V(14, -1.5, 2)},
	{Min: geom.V(-2, 9.5, 0), Max: geom.V(14, 10.2, 2)},
}
