// Package behavior holds the behaviours skyloop ships with, written
// against the API of package agent: waypoints, beacon (the state updates
// that feed agent.Beliefs), platoon, formation, flock, gcs, remote,
// traffic, stations, orbit and coverage, and the wire formats of the
// ground-station link (commands and telemetry). Builtins lists their
// types; engine.Core registers them.
package behavior

import (
	"fmt"

	"skyloop/agent"
	"skyloop/fields"
	"skyloop/netsim"
	"skyloop/sim"
)

// Builtins returns the behaviour types of this package: waypoints, beacon, platoon, formation, flock, gcs, remote, traffic, stations, orbit, coverage.
func Builtins() []agent.Spec {
	return []agent.Spec{waypointsSpec, beaconSpec, platoonSpec, formationSpec, flockSpec, gcsSpec, remoteSpec, trafficSpec, stationsSpec, orbitSpec, coverageSpec}
}

// positive adds a message to bad when d is not a positive duration.
func positive(bad fields.Errors, name string, d sim.Duration) {
	if d <= 0 {
		bad[name] = fmt.Sprintf("must be a positive duration, got %v", d)
	}
}

// nonNegative adds a message to bad when d is negative.
func nonNegative(bad fields.Errors, name string, d sim.Duration) {
	if d < 0 {
		bad[name] = fmt.Sprintf("must be >= 0, got %v", d)
	}
}

// nodeNamed returns the id of the node called name.
func nodeNamed(ctx *agent.Context, name string) (netsim.NodeID, bool) {
	for _, n := range ctx.Nodes() {
		if n.Name == name {
			return n.ID, true
		}
	}
	return 0, false
}

// checkJitter adds a message to bad when j is not a bound below period p
// (a larger one could reorder a sender's own sends); what names p in the
// message.
func checkJitter(bad fields.Errors, j agent.Jitter, p sim.Duration, what string) {
	switch {
	case j.Pct != 0 && !(j.Pct > 0 && j.Pct < 100):
		bad["jitter"] = fmt.Sprintf("a percentage of the period must lie in [0%%, 100%%), got %v", j)
	case j.Pct == 0 && j.D < 0:
		bad["jitter"] = fmt.Sprintf("must be >= 0 (0 turns it off), got %v", j.D)
	case j.Pct == 0 && p > 0 && j.D >= p:
		bad["jitter"] = fmt.Sprintf("must be below %s %v (or a percentage of it, such as 10%%), got %v", what, p, j.D)
	}
}

// Senders that draw their timing from the node's key; the tag keeps the
// draws of different senders on one node apart.
const (
	tagBeacon uint64 = iota + 1
	tagTraffic
	tagRemote
)
