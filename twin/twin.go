// Package twin runs a scenario's ideal-network twin and says what the
// network cost: the same scenario, seed, physics and agents on the ideal
// network (netsim/ideal: no latency beyond the tick, no loss, no range
// limit), compared with the run vehicle by vehicle (Compare). skyloop run
// --twin and outputs: {twin: true} make one; sweeps report the comparison
// as columns, and the netbots experiments compare their runs with their
// ideal-network references through the same Compare.
package twin

import (
	"errors"
	"fmt"
	"strings"

	"skyloop/agent"
	"skyloop/edge"
	"skyloop/engine"
	"skyloop/mavlink"
	"skyloop/scenario"
)

// keptNetworkKeys are the keys of the network section that the twin keeps:
// they belong to the engine, not to the backend, and decide how the agents
// plan their sends (epochs), so that the twin runs the same agents.
var keptNetworkKeys = map[string]bool{"epoch": true, "mode": true, "position_period": true}

// idealText is the change that makes a scenario its twin. The twin draws
// no plots and writes no report.html of its own: the run's twin.png draws
// both runs, and the twin costs no more than the run.
const idealText = "network: {backend: ideal}\noutputs.twin: false\noutputs.plots: false\noutputs.report: false\n"

// Text returns the scenario text of the ideal-network twin of the scenario
// text (name is the file name, for messages): the same scenario with its
// network section replaced by {backend: ideal}, keeping the engine's keys
// network.epoch, network.mode (coupled or replay; a radio's transmission
// mode is dropped with the radio) and network.position_period, and with
// outputs.twin, plots and report off. Everything else (seed, tick, vehicles, agents,
// measures, outputs) is unchanged.
func Text(name string, text []byte) ([]byte, error) {
	doc, err := scenario.ParseDocument(name, text)
	if err != nil {
		return nil, err
	}
	ideal, err := scenario.ParseDocument("twin", []byte(idealText))
	if err != nil {
		return nil, fmt.Errorf("internal error: the twin's network: %w", err)
	}
	var sets []scenario.Set
	for _, f := range ideal.Fields(ideal.Root, "") {
		sets = append(sets, scenario.Set{Path: f.Key, Value: f.Value, Doc: ideal, At: f.KeyAt})
	}
	for _, top := range doc.Fields(doc.Root, "") {
		if top.Key != "network" {
			continue
		}
		for _, f := range doc.Fields(top.Value, "network") {
			if !keptNetworkKeys[f.Key] {
				continue
			}
			if m := doc.Text(f.Value); f.Key == "mode" && m != "coupled" && m != "replay" {
				continue
			}
			sets = append(sets, scenario.Set{Path: "network." + f.Key, Value: f.Value, Doc: doc, At: f.KeyAt})
		}
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	ov, err := scenario.Override(doc, sets)
	if err != nil {
		return nil, err
	}
	return ov.Text, nil
}

// Scenario parses the twin of the scenario text (see Text) with the
// schema of the components (a registry's Schema); dir is the directory the
// scenario's relative paths start in.
func Scenario(name string, text []byte, dir string, schema ...*scenario.Schema) (*scenario.Scenario, error) {
	t, err := Text(name, text)
	if err != nil {
		return nil, err
	}
	sc, err := scenario.Parse(name, t, schema...)
	if err != nil {
		return nil, fmt.Errorf("the ideal-network twin of %s: %w", name, err)
	}
	sc.Dir = dir
	return sc, nil
}

// ErrUnsupported is wrapped by Check's refusals.
var ErrUnsupported = errors.New("the ideal-network twin cannot run the same agents")

// Supported lists what a twin needs, for messages and documentation.
const Supported = "twins run scenarios whose vehicles and agents all live inside skyloop: " +
	"no external agents (extern), no real firmware (px4-sitl, ardupilot-sitl), no MAVLink UDP links " +
	"(--mavlink-udp, mavlink_udp), no TAP bridges, no isolation: netns and no --realtime"

// Check refuses a run whose twin (tw, built from the twin scenario with
// the same options) would not run the same agents: a real-time run, one in
// network namespaces, or one with parts that reach outside the simulation
// (external agents, real firmware, UDP or TAP links), whose programs and
// peers could not take part in a second run in the same way.
func Check(r, tw *engine.Run) error {
	refuse := func(why string) error {
		return fmt.Errorf("%w: %s (%s)", ErrUnsupported, why, Supported)
	}
	sc := r.Scenario()
	if r.Realtime() > 0 {
		return refuse(fmt.Sprintf("the run is paced to the wall clock (real-time factor %g), so people or programs outside take part", r.Realtime()))
	}
	if sc.Isolation == "netns" {
		return refuse("the scenario runs programs in network namespaces (isolation: netns)")
	}
	comps := tw.Components()
	if len(comps) == 0 {
		return nil
	}
	owned := map[edge.Component]string{}
	tw.Behaviors(func(i int, b agent.Behavior) {
		if c, ok := b.(edge.Component); ok {
			owned[c] = tw.Nodes()[i].Name
		}
	})
	var bad []string
	for _, c := range comps {
		node, isBehavior := owned[c]
		if _, ok := c.(interface{ Endpoint() *mavlink.Vehicle }); ok && isBehavior {
			// A MAVLink vehicle reaches outside only to real firmware (a
			// component of its own, refused below) or through links the
			// twin is not given (UDP, namespaces).
			continue
		}
		what := strings.TrimPrefix(fmt.Sprintf("%T", c), "*")
		if isBehavior {
			bad = append(bad, fmt.Sprintf("node %s: behaviour %s", node, what))
		} else {
			bad = append(bad, fmt.Sprintf("vehicle controller %s (real firmware)", what))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	if len(bad) > 3 {
		bad = append(bad[:3], fmt.Sprintf("and %d more", len(bad)-3))
	}
	return refuse("parts of it reach outside the simulation: " + strings.Join(bad, ", "))
}
