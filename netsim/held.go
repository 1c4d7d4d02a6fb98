package netsim

import (
	"skyloop/geom"
	"skyloop/sim"
)

// HeldPositions keeps a position update until its time. SetPositions
// tells a backend where every node is at time t, which may lie after the
// events the backend has run so far (the engine reads the positions at
// the end of a tick's vehicle step and labels them with the next tick):
// a backend holds them and applies them before its first event at or
// after t, so that no event before t sees where the nodes will be at t.
// ns-3 does the same (it schedules each position change at its time).
type HeldPositions struct {
	pos  []geom.Vec3
	at   sim.Time
	held bool
}

// Hold keeps a copy of pos for time t, replacing any update held before,
// when t is after now, the latest time the backend has run its events
// to, and reports whether it did; else the positions apply at once and
// the backend places them itself.
func (h *HeldPositions) Hold(t, now sim.Time, pos []geom.Vec3) bool {
	if t <= now {
		return false
	}
	h.pos = append(h.pos[:0], pos...)
	h.at, h.held = t, true
	return true
}

// Due returns the held positions, and lets go of them, when they apply
// to an event at et (et is not before their time); else nil. The slice
// stays valid until the next Hold.
func (h *HeldPositions) Due(et sim.Time) []geom.Vec3 {
	if !h.held || et < h.at {
		return nil
	}
	h.held = false
	return h.pos
}

// TimedPositions is implemented by backends that apply SetPositions at
// its time t and not before (HeldPositions) when it reports true: running
// the events before t first and setting the positions after gives what
// setting them first gives. The engine then lets the network run the
// events of a tick that ends with a position update beside the vehicle
// step that computes the positions.
type TimedPositions interface {
	PositionsAtTheirTime() bool
}
