package validation

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
)

// Status is a row's verdict.
type Status string

// The verdicts.
const (
	Pass   Status = "pass"
	Fail   Status = "FAIL"
	Gap    Status = "known gap" // outside tolerance, listed in knownGaps
	Closed Status = "pass (listed as known gap: remove it)"
)

// Row is one metric of one case: the native value against ns-3's.
type Row struct {
	Case   string
	Metric string // e.g. pdr/cmd, p95/telem, control_packets
	Class  Class
	// Native and NS3 are the values (PDR as a fraction, latency in ms,
	// counts as counts).
	Native, NS3 float64
	// SE is the standard error of the difference (PDR rows; 0 otherwise).
	SE float64
	// Detail qualifies the row (the station of a per-station PDR).
	Detail string
	Status Status
	// Reason is the known gap's reason.
	Reason string
}

// Tolerance returns the row's tolerance.
func (r *Row) Tolerance() Tolerance { return tolerances[r.Class] }

// Within reports whether the row is within its tolerance.
func (r *Row) Within() bool {
	t := r.Tolerance()
	d := math.Abs(r.Native - r.NS3)
	const eps = 1e-9
	return d <= t.Abs+eps || (t.Rel > 0 && d <= t.Rel*math.Abs(r.NS3)+eps) || (t.Sigmas > 0 && d <= t.Sigmas*r.SE+eps)
}

// Compare compares a case's native and ns-3 outcomes of runs of length l,
// row by row, in a
// fixed order: per traffic kind (sorted) PDR, p50 and p95 latency; then
// the routing control packets and bytes and the hops per delivered
// packet (with routing); the worst station (node-to-node cases); the
// vehicles that completed their mission (cases with one) and the
// collisions. It fails when the two runs did not have the same radio
// parameters and routing protocol.
func Compare(c *Case, l Length, nat, ns *Outcome) ([]Row, error) {
	if !reflect.DeepEqual(nat.Radio, ns.Radio) {
		return nil, fmt.Errorf("case %s: the backends ran with different radio parameters: native %v, ns-3 %v", c.Name, nat.Radio, ns.Radio)
	}
	if nat.Routing != ns.Routing {
		return nil, fmt.Errorf("case %s: native routing %q, ns-3 routing %q", c.Name, nat.Routing, ns.Routing)
	}
	var rows []Row
	add := func(metric string, class Class, n, s float64) *Row {
		rows = append(rows, Row{Case: c.Name, Metric: metric, Class: class, Native: n, NS3: s})
		return &rows[len(rows)-1]
	}
	kinds := slices.Sorted(maps.Keys(nat.Kinds))
	for k := range ns.Kinds {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		a, b := nat.Kinds[k], ns.Kinds[k]
		if a.Expected == 0 && b.Expected == 0 {
			continue
		}
		r := add("pdr/"+k, PDR, a.PDR(), b.PDR())
		r.SE = pdrSE(a.Rx, a.Expected, b.Rx, b.Expected)
		if a.Latencies > 0 && b.Latencies > 0 {
			add("p50/"+k, Latency, float64(a.P50)/1e6, float64(b.P50)/1e6)
			add("p95/"+k, Latency, float64(a.P95)/1e6, float64(b.P95)/1e6)
		}
	}
	if nat.Routing != "" {
		np, nb := nat.ControlTotals()
		sp, sb := ns.ControlTotals()
		add("control_packets", Control, float64(np), float64(sp))
		add("control_bytes", Control, float64(nb), float64(sb))
		nh, nok := nat.Hops()
		sh, sok := ns.Hops()
		if nok && sok {
			cl := Hops
			if c.Static {
				cl = HopsStatic
			}
			add("hops", cl, nh, sh)
		}
	}
	if c.Stations != nil {
		if r, ok := worstStation(c, nat.Stations, ns.Stations); ok {
			rows = append(rows, r)
		}
	}
	if c.Mission {
		add("completed", MissionOutcome, float64(nat.Completed), float64(ns.Completed))
	}
	add("collisions", MissionOutcome, float64(nat.Collisions), float64(ns.Collisions))
	for i := range rows {
		r := &rows[i]
		reason := knownGap(r.Case, r.Metric, l)
		switch {
		case r.Within() && reason != "":
			r.Status, r.Reason = Closed, reason
		case r.Within():
			r.Status = Pass
		case reason != "":
			r.Status, r.Reason = Gap, reason
		default:
			r.Status = Fail
		}
	}
	return rows, nil
}

// pdrSE is the standard error of the difference of two delivery ratios,
// each a binomial proportion.
func pdrSE(rxA, nA, rxB, nB uint64) float64 {
	v := 0.0
	for _, p := range [][2]uint64{{rxA, nA}, {rxB, nB}} {
		if p[1] > 0 {
			q := float64(p[0]) / float64(p[1])
			v += q * (1 - q) / float64(p[1])
		}
	}
	return math.Sqrt(v)
}

// worstStation returns the per-station PDR row of a node-to-node case:
// the station furthest outside the tolerance (or, all within, closest to
// its edge, relative to the tolerance), with how many stations are outside in Detail.
func worstStation(c *Case, nat, ns []StationCount) (Row, bool) {
	var best Row
	found, outside, n := false, 0, 0
	worst := math.Inf(-1)
	for i := 0; i < min(len(nat), len(ns)); i++ {
		a, b := nat[i], ns[i]
		if a.Sent == 0 || b.Sent == 0 {
			continue
		}
		n++
		r := Row{Case: c.Name, Metric: "pdr/station", Class: PDR,
			Native: float64(a.Received) / float64(a.Sent), NS3: float64(b.Received) / float64(b.Sent),
			SE: pdrSE(a.Received, a.Sent, b.Received, b.Sent), Detail: "at " + c.Stations.Label(i)}
		t := r.Tolerance()
		allowed := max(t.Abs, t.Sigmas*r.SE)
		if !r.Within() {
			outside++
		}
		// Ties (all stations equal, say) go to the noisiest station: the
		// range edge, where the two models are most likely to part.
		if ratio := math.Abs(r.Native-r.NS3) / allowed; ratio > worst || (ratio == worst && r.SE > best.SE) {
			worst, best, found = ratio, r, true
		}
	}
	if found {
		best.Detail += fmt.Sprintf(" (worst of %d stations; %d outside)", n, outside)
	}
	return best, found
}
