// Package validation is the validation matrix of issue 30: every built-in
// scenario with a radio network runs on skyloop's native network (the
// wifi backend and its routing layer) and on ns-3 3.37 (backend ns3) with
// the same radio parameters, and the two are compared on what users read
// from a run: packet delivery ratio and latency (p50, p95) per traffic
// kind, routing control packets and bytes, hops per delivered packet, and
// the mission's outcome (vehicles that completed, collisions). How far the
// native value may be from ns-3's is one table (tolerances); the rows known
// to be outside it today are another (knownGaps), reported, never hidden.
//
// The test (TestMatrix) runs shortened variants that fit CI on two cores;
// scripts/validation.sh runs the full-length ones and writes
// docs/validation.md (Markdown).
package validation

import (
	"fmt"
	"strings"

	"skyloop/sim"
)

// Case is one scenario of the matrix, run on both backends.
type Case struct {
	// Name labels the case's rows: the scenario's name, or
	// experiment/variant.
	Name string
	// Scenario is a built-in scenario ("munils-50-wifi",
	// "netbots/platoon"); Experiment and Variant name a built-in
	// experiment's variant instead ("ubanc/relay", "aodv-100pps").
	Scenario            string
	Experiment, Variant string
	// Set changes the scenario on both backends ("path: value" lines, as
	// in an experiment's set), for the full-length run; Short adds more
	// for the shortened run of the CI test.
	Set, Short []string
	// Native changes the scenario on the native backend only: a native
	// setting that copies an ns-3 behaviour, to show that it explains a
	// known gap.
	Native []string
	// Seeds, when set, runs the case with seeds 1 to Seeds on each
	// backend and compares the pooled outcomes (Pool): for cases whose
	// latency tail is a handful of packets, where one seed's percentile
	// lands either side by chance.
	Seeds int
	// CI says that the test runs the shortened variant.
	CI bool
	// Static says that the nodes do not move (or not out of their
	// neighbours' range): hop counts must be identical.
	Static bool
	// Mission says that the scenario's vehicles have a mission whose
	// completion is compared.
	Mission bool
	// Stations, when set, is a node-to-node scenario: a sender visits
	// stations for Dwell each, and the PDR is also compared per station.
	Stations *Stations
	// Why explains the case's changes (shown in docs/validation.md).
	Why string
}

// Stations describe a node-to-node scenario's stations: station i starts
// at i*Dwell and lies First + i*Step metres from the receiver.
type Stations struct {
	Dwell       sim.Duration
	First, Step float64
}

// Label names station i by its distance.
func (s *Stations) Label(i int) string {
	return fmt.Sprintf("%g m", s.First+float64(i)*s.Step)
}

// quiet are the output settings of every matrix run: the metrics are
// exact without per-packet files, which node-to-node cases add back.
const (
	quiet     = "outputs: {trace: false, deliveries: false, vehicles: false, events: false, plots: false, report: false}"
	withTrace = "outputs: {trace: true, deliveries: true, vehicles: false, events: false, plots: false, report: false}"
)

// Cases returns the matrix, in the order of docs/validation.md.
//
// Left out: bench-full1000 (1000 nodes: ns-3 does not finish in hours),
// ubanc-chain-ardupilot (needs ArduCopter SITL; its network is
// ubanc-chain's) and bench-ns3-20 (ns-3 only, its native twin is
// bench-full100 on another scale). No netbots scenario runs over a radio
// network (they use the impaired network), so the platoon is run over
// native 802.11a here.
func Cases() []Case {
	var cs []Case
	cs = append(cs,
		Case{Name: "munils-50-wifi", Scenario: "munils-50-wifi", Mission: true, CI: true,
			Short: []string{"duration: 12s"},
			Why:   "CI: the first 12 s (the climb and the start of the fan-out)"},
		Case{Name: "munils-50-wifi/aodv-routed", Scenario: "munils-50-wifi", Mission: true,
			Native: []string{"network.aodv_control: routed"},
			Short:  []string{"duration: 12s"},
			Why: "native AODV sends its unicast control through its own routes as ns-3 3.37 does (aodv_control: routed), " +
				"to show how much of munils-50-wifi's known gaps this one ns-3 behaviour explains; not in CI " +
				"(in the first 12 s it changes little)"},
		Case{Name: "munils-100-wifi", Scenario: "munils-100-wifi", Mission: true,
			Set: []string{"duration: 40s"},
			Why: "40 s of 90 (natively every UAV completes by 36.6 s; ns-3 takes about 3 CPU minutes per simulated 10 s)"},
	)
	for _, v := range []string{"aodv-1pps", "olsr-1pps", "aodv-100pps", "olsr-100pps"} {
		c := Case{Name: "ubanc-relay/" + v, Experiment: "ubanc/relay", Variant: v, CI: true,
			Short: []string{"duration: 40s"}, Why: "CI: 40 s (data from 10 s)"}
		if v != "aodv-100pps" {
			// One seed's p95 is a handful of packets that meet a HELLO or
			// a route change, on either backend: at 1 packet/s over seeds
			// 1-9 ns-3's p95 is above the 3-hop 4.43 ms in seeds 2, 4 and
			// 6, native's in seeds 1, 6 and 9. AODV at 100 packets/s keeps
			// one seed: its forwarding counts are exact.
			c.Seeds = 5
			c.Why = "seeds 1-5, pooled (one seed's latency tail is a few packets); " + c.Why
		}
		cs = append(cs, c)
	}
	for _, v := range []string{"aodv-100pps", "olsr-100pps"} {
		cs = append(cs, Case{Name: "ubanc-relay-static/" + v, Experiment: "ubanc/relay", Variant: v, Static: true, CI: true,
			Set: []string{
				"vehicles[src].behaviors: [{type: traffic, dst: drone-5, rate: 51200, size: 64, start: 10s, kind: data}]",
				"vehicles[drone].behaviors: []",
				"vehicles[src].spawn.origin: [20, 0, 5]",
				"vehicles[drone].spawn.origin: [100, 0, 5]",
				"duration: 60s",
			},
			Short: []string{"duration: 30s"},
			Why:   "the relay's drones hovering at their orbits' east points (80 m apart): a static line, 3 hops; CI: 30 s"})
	}
	rates := []string{"1Mbps", "2Mbps", "5.5Mbps", "11Mbps"}
	for _, exp := range []struct {
		name string
		step float64
	}{
		{"range", 5},
		{"range-wide", 12.5},
	} {
		for _, pre := range []string{"on", "off"} {
			for _, r := range rates {
				v := r + "-preamble-" + pre
				cs = append(cs, Case{Name: "ubanc-" + exp.name + "/" + v, Experiment: "ubanc/" + exp.name, Variant: v, CI: true,
					Stations: &Stations{Dwell: 1000 * sim.Second, First: exp.step, Step: exp.step},
					Set:      []string{withTrace},
					Short:    []string{"duration: 2000s", "vehicles[sender].behaviors[stations].dwell: 100s"},
					Why:      "CI: 100 packets per station, not 1000"})
			}
		}
	}
	cs = append(cs,
		Case{Name: "ubanc-chain", Scenario: "ubanc-chain", Mission: true, CI: true,
			Short: []string{"duration: 30s"},
			Why:   "CI: 30 s (drone 1's mission, drone 2's start)"},
		Case{Name: "ubanc-leader-follower", Scenario: "ubanc-leader-follower", CI: true,
			Short: []string{"duration: 30s"}, Why: "CI: 30 s"},
		Case{Name: "flock-10", Scenario: "flock-10", CI: true,
			Short: []string{"duration: 20s"}, Why: "CI: 20 s"},
		Case{Name: "flock-100", Scenario: "flock-100",
			Set: []string{"duration: 20s"}, Why: "20 s of 60"},
		Case{Name: "platoon-wifi", Scenario: "netbots/platoon", CI: true,
			Set:   []string{"network: {backend: wifi, epoch: 10ms}"},
			Short: []string{"duration: 20s"},
			Why:   "the netbots platoon over native 802.11a instead of the impaired network; CI: 20 s"},
		Case{Name: "platoon-wifi-load", Scenario: "netbots/platoon", CI: true,
			Set:   []string{"network: {backend: wifi, epoch: 10ms}", "vehicles[robot].behaviors[traffic].rate: 1000e3"},
			Short: []string{"duration: 20s"},
			Why:   "as platoon-wifi with 1 Mbit/s of 1000-byte broadcasts per robot; CI: 20 s"},
		Case{Name: "bench-full100", Scenario: "bench-full100", CI: true,
			Set:   []string{"duration: 20s"},
			Short: []string{"duration: 5s"},
			Why:   "20 s of 120 (ns-3 takes minutes); CI: 5 s"},
	)
	return cs
}

// Full reports the changes of the full-length run (and the output
// settings every run has).
func (c *Case) full() []string {
	out := []string{quiet}
	return append(out, c.Set...)
}

// short reports the changes of the CI run.
func (c *Case) short() []string {
	return append(c.full(), c.Short...)
}

// Metric classes: what a row compares, which decides its tolerance.
type Class string

// The classes of metrics.
const (
	PDR            Class = "pdr"         // delivered / expected receptions
	Latency        Class = "latency"     // one-way latency percentile (send to arrival)
	Control        Class = "control"     // routing control packets or bytes sent (routing.csv)
	Hops           Class = "hops"        // hops per delivered packet, nodes moving
	HopsStatic     Class = "hops-static" // hops per delivered packet, static topology
	MissionOutcome Class = "outcome"     // vehicles that completed their mission, collisions
)

// Tolerance is how far a native value may be from ns-3's: within Abs, or
// within Rel times ns-3's value, or (PDR) within Sigmas standard errors of
// the difference of two binomial proportions (so that a station of 100
// packets at the range edge is not failed for its sampling noise).
type Tolerance struct {
	Abs, Rel, Sigmas float64
}

// tolerances is THE table: every comparison of the matrix uses it.
var tolerances = map[Class]Tolerance{
	PDR:            {Abs: 0.03, Sigmas: 3}, // 3 points (or 3 standard errors)
	Latency:        {Rel: 0.10},            // 10%
	Control:        {Rel: 0.20},            // 20%
	Hops:           {Rel: 0.10},            // 10% where routes change as nodes move
	HopsStatic:     {Abs: 0.005},           // identical (to two decimals) on a static topology
	MissionOutcome: {},                     // identical
}

// String describes the tolerance as docs/validation.md shows it.
func (t Tolerance) String() string {
	var parts []string
	if t.Abs > 0 {
		parts = append(parts, fmt.Sprintf("±%g", t.Abs))
	}
	if t.Rel > 0 {
		parts = append(parts, fmt.Sprintf("±%g%%", t.Rel*100))
	}
	if t.Sigmas > 0 {
		parts = append(parts, fmt.Sprintf("%gσ", t.Sigmas))
	}
	if len(parts) == 0 {
		return "equal"
	}
	return strings.Join(parts, " or ")
}

// gap is a row known to be outside its tolerance today.
type gap struct {
	Case, Metric string
	Reason       string
	// Only, when set, limits the gap to one length: the row is outside
	// tolerance in the full-length run (onlyFull) or in the shortened CI
	// run (onlyShort) alone.
	Only gapLength
}

// gapLength limits a known gap to one length of run.
type gapLength int

const (
	both gapLength = iota
	onlyFull
	onlyShort
)

// knownGaps are the rows outside tolerance today, each with the reason as
// far as it is known; all belong to issue 30, whose fixes will shorten the
// list. The matrix test reports them as KNOWN GAP (t.Log) instead of
// failing; every other row outside tolerance fails. Keep this list as
// short as the truth allows: a listed row that passes is reported so that
// it can be removed.
var knownGaps = []gap{
	{Case: "munils-50-wifi", Metric: "pdr/cmd", Reason: swarmAODV},
	{Case: "munils-50-wifi", Metric: "p50/cmd", Reason: swarmAODV, Only: onlyShort},
	{Case: "munils-50-wifi", Metric: "p95/cmd", Reason: swarmAODV},
	{Case: "munils-50-wifi", Metric: "pdr/telem", Reason: swarmAODV},
	{Case: "munils-50-wifi", Metric: "p50/telem", Reason: swarmAODV},
	{Case: "munils-50-wifi", Metric: "p95/telem", Reason: swarmAODV},
	{Case: "munils-50-wifi", Metric: "control_packets", Reason: swarmAODV},
	{Case: "munils-50-wifi", Metric: "control_bytes", Reason: swarmAODV},
	{Case: "munils-50-wifi", Metric: "hops", Reason: swarmAODV},
	{Case: "munils-50-wifi", Metric: "completed", Reason: "in the first 12 s (CI) the fan-out has just begun and the number of UAVs done differs (after 60 s all 50 are done on both): " + swarmAODV, Only: onlyShort},
	{Case: "ubanc-relay/olsr-1pps", Metric: "p95/data", Reason: olsrTail},
	{Case: "ubanc-relay/olsr-100pps", Metric: "pdr/data", Reason: "in the first 30 s of data (CI), pooled over seeds 1-5, " +
		"native OLSR delivers 92.8% and ns-3's 96.3%: one seed on each backend forms its routes late (native seed 4: 70%, " +
		"ns-3 seed 1: 86%); over 110 s the two agree (issue 30)", Only: onlyShort},
	{Case: "ubanc-relay-static/olsr-100pps", Metric: "hops", Reason: "on ns-3 drone 4 missed three HELLOs of drone 6 in a row " +
		"(26.1, 30.2, 32.0 s, lost to its own relaying), so its link to 6 stopped being symmetric at 34.03 s and 37 packets " +
		"went 4-5-6 until 6's next HELLO at 34.41 s (8 more at 54 s): 45 of 4956 packets took 4 hops, as OLSR does; native " +
		"lost no three in a row on this seed (SKYLOOP_NS3_DEBUG log, issue 30)", Only: onlyFull},
	{Case: "munils-100-wifi", Metric: "hops", Reason: munilsLoops},
	{Case: "munils-100-wifi", Metric: "p50/cmd", Reason: "the station's command median is its queue, which moves with the " +
		"fan-out's timing from seed to seed: 40 s runs of seeds 1-3 give 12.6, 9.6 and 10.2 ms on ns-3 and 10.9, 9.8 and " +
		"9.8 ms natively (the p95 is another matter: 241, 60 and 121 ms on ns-3, 273, 255 and 284 ms natively, with " +
		"command PDR 0.77-0.79 on ns-3 and 0.73-0.74 natively on seeds 2-3: not explained, and not listed here)", Only: onlyFull},
	{Case: "munils-100-wifi", Metric: "p50/telem", Reason: munilsLoops},
	{Case: "munils-100-wifi", Metric: "p95/telem", Reason: munilsLoops},
	{Case: "ubanc-range-wide/2Mbps-preamble-off", Metric: "p95/data", Reason: edgeTail, Only: onlyShort},
	{Case: "ubanc-range-wide/11Mbps-preamble-off", Metric: "p95/data", Reason: edgeTail, Only: onlyShort},
}

// The reasons of knownGaps, as far as they are known (issue 30 has the
// measurements behind them).
const (
	swarmAODV = "ns-3's swarm storm is mostly an artefact of its implementation that native does not copy by default: " +
		"ns-3 sends its unicast RREP, RREP-ACK and RERR through AODV's own route lookup, and when HELLOs are skipped " +
		"during the RREQ flood, neighbours time out together and the RERRs to precursors start route discoveries for " +
		"neighbours (185 UAV-to-UAV discoveries in seconds 3-5, though no data flows between UAVs); RFC 3561 and real " +
		"stacks send these messages one hop. network.aodv_control: routed copies it (first 12 s: 170 such discoveries, " +
		"10,651 RREQs against ns-3's 10,806; over 60 s control within 13% and command latency within 7%, PDR 5 points " +
		"above; case munils-50-wifi/aodv-routed, docs/routing.md)"
	olsrTail = "at 1 packet/s ns-3's OLSR delays more packets by about 2 ms (a frame in the way on one hop) than native's: " +
		"11 of 232 over seeds 1-8, native 3 (both deliver the same packets, p50 4.43 ms on both), so ns-3's pooled p95 is " +
		"6.4 ms and native's 4.4 ms; which of ns-3's OLSR messages meet the data is not isolated yet (issue 30)"
	munilsLoops = "seed 1 natively has two-node routing loops that ns-3's seed 1 has not: 152 packets loop (6554 of " +
		"12814 forwards, 70 TTL drops; ns-3: 16 packets, 1008 of 6366, at 24-28 s); without them native's hops are 1.53 (ns-3 " +
		"1.45); native seeds 2, 3 and 4 give 1.54, 1.52 and 1.42 (11, 7 and 0 TTL drops). The loops are OLSR's own: after the fan-out every UAV's link to a node it no longer hears " +
		"stays symmetric for the 6 s hold time and is advertised in HELLOs built up to 0.5 s before they leave, so neighbours " +
		"route to it through each other (e.g. 56 and 63 to the station at 18.1-20 s, once its HELLOs waited 265-396 ms behind " +
		"commands on links broken by the fan-out). The mission itself differs by chance (native fans out at 10.7 s, ns-3 at " +
		"12.9 s after two lost reports), and the latency medians follow the mix of 1-, 2- and 3-hop deliveries (1-hop " +
		"telemetry: 0.226 ms on both)"
	edgeTail = "the ACK timeout is now ns-3's (netsim/wifi TestEdgeLatencyMatchesNS3: mean latency within 4% over 8000 " +
		"packets per distance); with 100 packets per station (CI) the p95 is one of the last 5 packets and moves either way"
)

// knownGap returns the reason a row of a run of length l is a known gap
// ("" if it is not).
func knownGap(caseName, metric string, l Length) string {
	for _, g := range knownGaps {
		if g.Only == onlyFull && l != Full || g.Only == onlyShort && l != Short {
			continue
		}
		if g.Case == caseName && g.Metric == metric {
			return g.Reason
		}
	}
	return ""
}
