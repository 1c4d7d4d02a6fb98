package validation

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Result is one case's comparison.
type Result struct {
	Case   Case
	Length Length
	// Native and NS3 are the two runs' outcomes (nil when the run
	// failed).
	Native, NS3 *Outcome
	// CPU and Wall are each run's CPU time (user + system, ns-3's process
	// included) and wall time: [0] native, [1] ns-3 (0: not measured).
	CPU, Wall [2]time.Duration
	Rows      []Row
	// Err says why the case has no rows.
	Err error
}

// FormatValue writes a row's value in the row's unit.
func (r *Row) FormatValue(v float64) string {
	switch r.Class {
	case PDR:
		return fmt.Sprintf("%.3f", v)
	case Latency:
		return fmt.Sprintf("%.3f ms", v)
	case Hops, HopsStatic:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// FormatDiff writes native - ns-3: in points for PDR, relative to ns-3
// for the classes whose tolerance is relative, else as a difference.
func (r *Row) FormatDiff() string {
	d := r.Native - r.NS3
	// round rounds to the digits shown, without a negative zero.
	round := func(v float64, digits int) float64 {
		f := math.Pow(10, float64(digits))
		return math.Round(v*f)/f + 0
	}
	switch {
	case r.Class == PDR:
		return fmt.Sprintf("%+.1f pt", round(100*d, 1))
	case r.Tolerance().Rel > 0:
		if r.NS3 == 0 {
			if d == 0 {
				return "0"
			}
			return "∞"
		}
		return fmt.Sprintf("%+.1f%%", round(100*d/math.Abs(r.NS3), 1))
	case r.Class == HopsStatic:
		return fmt.Sprintf("%+.2f", round(d, 2))
	default:
		return fmt.Sprintf("%+.0f", d)
	}
}

// FormatTolerance writes the row's tolerance.
func (r *Row) FormatTolerance() string {
	t := r.Tolerance()
	switch r.Class {
	case PDR:
		s := fmt.Sprintf("±%.0f pt", 100*t.Abs)
		if t.Sigmas*r.SE > t.Abs {
			s += fmt.Sprintf(" (%gσ: ±%.1f pt)", t.Sigmas, 100*t.Sigmas*r.SE)
		}
		return s
	case HopsStatic:
		return "equal"
	}
	return t.String()
}

// Counts returns how many rows pass, fail and are known gaps (a known gap
// now within tolerance counts as passing).
func Counts(rows []Row) (pass, fail, gap int) {
	for _, r := range rows {
		switch r.Status {
		case Pass, Closed:
			pass++
		case Fail:
			fail++
		case Gap:
			gap++
		}
	}
	return
}

// Doc holds what docs/validation.md says besides the results.
type Doc struct {
	// Commit is the source the matrix ran on (git describe).
	Commit string
	// Length is the length the cases ran at.
	Length Length
	// Before, when set, is an earlier matrix (Save) shown beside this
	// one, row by row.
	Before *Saved
}

// Saved is a matrix's rows as JSON: the baseline a later document shows
// beside its own (docs/validation-before.json).
type Saved struct {
	Commit string      `json:"commit"`
	Rows   []SavedRow  `json:"rows"`
	CPU    []SavedTime `json:"cpu"`
}

// SavedRow is one row of a saved matrix.
type SavedRow struct {
	Case   string  `json:"case"`
	Metric string  `json:"metric"`
	Class  Class   `json:"class"`
	Native float64 `json:"native"`
	NS3    float64 `json:"ns3"`
	Within bool    `json:"within"`
}

// SavedTime is one case's CPU time in seconds, native and ns-3.
type SavedTime struct {
	Case   string  `json:"case"`
	Native float64 `json:"native_s"`
	NS3    float64 `json:"ns3_s"`
}

// Save returns the results as a baseline.
func Save(commit string, results []Result) *Saved {
	s := &Saved{Commit: commit}
	for _, r := range results {
		for _, row := range r.Rows {
			s.Rows = append(s.Rows, SavedRow{Case: row.Case, Metric: row.Metric, Class: row.Class, Native: row.Native, NS3: row.NS3, Within: row.Within()})
		}
		s.CPU = append(s.CPU, SavedTime{Case: r.Case.Name, Native: r.CPU[0].Seconds(), NS3: r.CPU[1].Seconds()})
	}
	return s
}

// row returns the saved row of a case and metric.
func (s *Saved) row(caseName, metric string) (SavedRow, bool) {
	for _, r := range s.Rows {
		if r.Case == caseName && r.Metric == metric {
			return r, true
		}
	}
	return SavedRow{}, false
}

// WriteMarkdown writes docs/validation.md: the tolerances, the known gaps,
// a summary, CPU times side by side, every row, the relay's per-drone
// forwarding and the munils-50 control traffic. The same results give the
// same text.
func WriteMarkdown(w io.Writer, d Doc, results []Result) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# Validation matrix: native network vs ns-3\n\n")
	p("Every built-in scenario with a radio network, run on skyloop's native network\n")
	p("(`backend: wifi` and its routing layer) and on ns-3 3.37 (`backend: ns3`) with the\n")
	p("same scenario text but for `network.backend` (so the same radio parameters, which\n")
	p("the matrix checks in both runs' config.json), compared on what a run reports\n")
	p("(issue 30). The native value is compared with ns-3's. Each case runs once, with\n")
	p("the scenario's seed, except the cases that say \"seeds 1-5\": they run five times on\n")
	p("each backend and compare the pooled runs (packet and control counts summed, each\n")
	p("latency percentile the median of the five), because one seed's tail there is a\n")
	p("handful of packets that land either side by chance; a seed changes the random\n")
	p("draws of both backends (ns-3's RngSeed comes from it), so the five runs are\n")
	p("independent on each, not paired.\n\n")
	p("This file is generated: do not edit it. To regenerate it (full-length runs, about\n")
	p("30 minutes on two cores, nearly all of it ns-3 on munils-50 and munils-100; ns-3 3.37\n")
	p("needed):\n\n")
	p("```sh\nscripts/validation.sh                  # writes docs/validation.md\n")
	p("scripts/validation.sh -only relay       # the cases whose name contains \"relay\", to stdout\n")
	p("scripts/validation.sh -keep /tmp/vm     # keep the runs; -keep /tmp/vm -reuse rewrites from them\n```\n\n")
	p("The rows of docs/validation-before.json (the matrix before the fixes of issue 30,\n")
	p("written with `-save`) are shown beside the new ones when the file exists. The order\n")
	p("of the cases and rows and the formatting are fixed, so that two documents diff row\n")
	p("by row; only the measured times change between identical runs.\n\n")
	p("The shortened variants run in the test suite (`go test ./validation -run TestMatrix`;\n")
	p("skipped without ns-3 unless `SKYLOOP_REQUIRE_NS3=1`, as in CI; about 70 s of CPU time),\n")
	p("with the same tolerances and known gaps (validation/matrix.go): a row outside its\n")
	p("tolerance fails the test unless it is a known gap, which the test logs as KNOWN GAP.\n\n")
	if d.Length == Short {
		p("**These are the shortened (CI) variants, not the full-length runs.**\n\n")
	}
	var cpu, wall [2]time.Duration
	for _, r := range results {
		for i := range 2 {
			cpu[i] += r.CPU[i]
			wall[i] += r.Wall[i]
		}
	}
	if d.Commit != "" {
		p("Generated on commit `%s`.", d.Commit)
	}
	if wall[0]+wall[1] > 0 {
		p(" The runs took %s of wall time one after the other (native %s, ns-3 %s) and %s of CPU time (native %s, ns-3 %s).",
			(wall[0] + wall[1]).Round(time.Second), wall[0].Round(time.Second), wall[1].Round(time.Second),
			(cpu[0] + cpu[1]).Round(time.Second), cpu[0].Round(time.Second), cpu[1].Round(time.Second))
	}
	p("\n\n")
	p("## What is compared\n\n")
	p("| metric | from | tolerance |\n|---|---|---|\n")
	p("| `pdr/<kind>` | summary.json `network.by_kind`: receptions / expected receptions (broadcasts: every other node) | %s |\n", rowTol(PDR))
	p("| `p50/<kind>`, `p95/<kind>` | summary.json: one-way latency, send to arrival (ns-3's arrival times are exact; its 10 ms synchronisation epoch delays only their consumption) | %s |\n", rowTol(Latency))
	p("| `control_packets`, `control_bytes` | routing.csv: routing control packets and IP bytes sent, all nodes | %s |\n", rowTol(Control))
	p("| `hops` | routing.csv: 1 + forwarded / delivered data packets (the mean hop count when no packet is lost on the way) | %s; static topologies: %s |\n", rowTol(Hops), rowTol(HopsStatic))
	p("| `pdr/station` | node-to-node cases: PDR per station (trace.csv, deliveries.csv); the row is the station furthest outside (or nearest to) its tolerance | %s |\n", rowTol(PDR))
	p("| `completed` | summary.json: vehicles whose mission a ground station saw completed | %s |\n", rowTol(MissionOutcome))
	p("| `collisions` | summary.json: vehicle-vehicle collisions + obstacle hits | %s |\n\n", rowTol(MissionOutcome))
	p("PDR's tolerance is 3 points, or 3 standard errors of the difference of the two\n")
	p("binomial proportions when that is larger (few packets, such as 100 per station in CI).\n")
	p("The routing protocols' own packets (kinds `aodv`, `olsr`) are compared only through\n")
	p("routing.csv: the native routing layer traces them, ns-3 does not.\n\n")

	var all []Row
	for _, r := range results {
		all = append(all, r.Rows...)
	}
	pass, fail, gap := Counts(all)
	p("## Summary\n\n")
	p("%d rows: %d within tolerance, %d outside (FAIL), %d outside and listed as known gaps.\n\n", len(all), pass, fail, gap)
	p("| case | rows | pass | FAIL | known gap | native CPU | ns-3 CPU | ns-3 / native | native wall | ns-3 wall |\n")
	p("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		pa, fa, ga := Counts(r.Rows)
		ratio := "—"
		if r.CPU[0] > 0 && r.CPU[1] > 0 {
			ratio = fmt.Sprintf("%.1fx", r.CPU[1].Seconds()/r.CPU[0].Seconds())
		}
		if r.Err != nil {
			p("| %s | error: %s | | | | | | | | |\n", r.Case.Name, oneLine(r.Err.Error()))
			continue
		}
		p("| %s | %d | %d | %d | %d | %s | %s | %s | %s | %s |\n", r.Case.Name, len(r.Rows), pa, fa, ga,
			secs(r.CPU[0]), secs(r.CPU[1]), ratio, secs(r.Wall[0]), secs(r.Wall[1]))
	}
	p("\nCPU is user + system time of the run (from building the scenario to its last output file)\n")
	p("in its own process, with its children (ns-3's program), measured side by side on the same\n")
	p("machine, one run at a time; the process's start-up and the matrix's own set-up (the same for\n")
	p("both backends, about 0.03 s) are not counted. Wall time is the whole process's.\n\n")

	p("## Every row\n\n")
	if d.Before != nil {
		within, outside := 0, 0
		for _, r := range d.Before.Rows {
			if r.Within {
				within++
			} else {
				outside++
			}
		}
		p("Before: the matrix on commit `%s` (docs/validation-before.json): %d rows, %d within tolerance, %d outside.\n\n",
			d.Before.Commit, len(d.Before.Rows), within, outside)
		p("| case | metric | native | ns-3 | native − ns-3 | tolerance | result | before: native | before: ns-3 | before |\n")
		p("|---|---|---|---|---|---|---|---|---|---|\n")
	} else {
		p("| case | metric | native | ns-3 | native − ns-3 | tolerance | result |\n|---|---|---|---|---|---|---|\n")
	}
	for _, r := range results {
		for _, row := range r.Rows {
			m := "`" + row.Metric + "`"
			if row.Detail != "" {
				m += " " + row.Detail
			}
			res := string(row.Status)
			if row.Status == Fail {
				res = "**FAIL**"
			}
			p("| %s | %s | %s | %s | %s | %s | %s |", r.Case.Name, m, row.FormatValue(row.Native), row.FormatValue(row.NS3),
				row.FormatDiff(), row.FormatTolerance(), res)
			if d.Before != nil {
				if b, ok := d.Before.row(row.Case, row.Metric); ok {
					verdict := "within"
					if !b.Within {
						verdict = "outside"
					}
					p(" %s | %s | %s |", row.FormatValue(b.Native), row.FormatValue(b.NS3), verdict)
				} else {
					p(" — | — | — |")
				}
			}
			p("\n")
		}
	}
	p("\n## Known gaps\n\n")
	if len(knownGaps) == 0 {
		p("None listed.\n\n")
	} else {
		p("Rows outside tolerance that the test reports as KNOWN GAP instead of failing\n")
		p("(validation/matrix.go, `knownGaps`), by reason:\n\n")
		p("| reason | rows |\n|---|---|\n")
		var reasons []string
		byReason := map[string][]string{}
		for _, g := range knownGaps {
			if _, ok := byReason[g.Reason]; !ok {
				reasons = append(reasons, g.Reason)
			}
			row := g.Case + " `" + g.Metric + "`"
			switch g.Only {
			case onlyFull:
				row += " (full length only)"
			case onlyShort:
				row += " (CI only)"
			}
			byReason[g.Reason] = append(byReason[g.Reason], row)
		}
		for _, r := range reasons {
			p("| %s | %s |\n", r, strings.Join(byReason[r], "<br>"))
		}
		p("\n")
	}
	forwarding(&b, results)
	control(&b, results)
	p("## The cases\n\n")
	p("| case | scenario | changes (both backends) | CI test adds | why |\n|---|---|---|---|---|\n")
	for _, r := range results {
		c := r.Case
		src := "`" + c.Scenario + "`"
		if c.Experiment != "" {
			src = fmt.Sprintf("`%s` variant `%s`", c.Experiment, c.Variant)
		}
		ci := "not in CI"
		if c.CI {
			ci = code(c.Short)
		}
		set := code(c.Set)
		if len(c.Native) > 0 {
			set += "; native only: " + code(c.Native)
		}
		p("| %s | %s | %s | %s | %s |\n", c.Name, src, set, ci, c.Why)
	}
	p("\nEvery run writes no per-packet files (`%s`) but the node-to-node cases' trace.csv\n", quiet)
	p("and deliveries.csv.")
	p("\n\nLeft out: bench-full1000 (1000 nodes: ns-3 does not finish in hours),\n")
	p("ubanc-chain-ardupilot (needs ArduCopter SITL; its network is ubanc-chain's) and\n")
	p("bench-ns3-20 (written for ns-3 only; bench-full100 covers its traffic). No netbots\n")
	p("scenario uses a radio network, so the platoon runs over 802.11a here (platoon-wifi).\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// forwarding writes the per-drone forwarding of the relay cases.
func forwarding(b *strings.Builder, results []Result) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("## UB-ANC relay: per-drone forwarding (routing.csv)\n\n")
	p("Data packets each drone forwarded, and routing control packets it sent; drone 1 is\n")
	p("the source (node 0), drone 7 the destination (node 6).\n\n")
	any := false
	for _, r := range results {
		if !strings.HasPrefix(r.Case.Name, "ubanc-relay") || r.Native == nil || r.NS3 == nil {
			continue
		}
		any = true
		if r.Case.Seeds > 0 {
			p("**%s** (summed over seeds 1-%d)\n\n| |", r.Case.Name, r.Case.Seeds)
		} else {
			p("**%s**\n\n| |", r.Case.Name)
		}
		for i := range r.Native.Nodes {
			p(" drone %d |", i+1)
		}
		p("\n|---|")
		for range r.Native.Nodes {
			p("---|")
		}
		p("\n")
		for _, line := range []struct {
			name string
			o    *Outcome
			f    func(NodeCounts) uint64
		}{
			{"forwarded, native", r.Native, func(n NodeCounts) uint64 { return n.Forwarded }},
			{"forwarded, ns-3", r.NS3, func(n NodeCounts) uint64 { return n.Forwarded }},
			{"control sent, native", r.Native, func(n NodeCounts) uint64 { return n.ControlTx }},
			{"control sent, ns-3", r.NS3, func(n NodeCounts) uint64 { return n.ControlTx }},
		} {
			p("| %s |", line.name)
			for _, n := range line.o.Nodes {
				p(" %d |", line.f(n))
			}
			p("\n")
		}
		p("\n")
	}
	if !any {
		p("No relay case ran.\n\n")
	}
}

// control writes the munils-50 control traffic.
func control(b *strings.Builder, results []Result) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	for _, r := range results {
		if r.Case.Name != "munils-50-wifi" || r.Native == nil || r.NS3 == nil {
			continue
		}
		p("## munils-50-wifi: AODV control traffic (routing.csv)\n\n")
		p("| | control packets sent | control bytes sent | control packets received | data packets forwarded |\n|---|---|---|---|---|\n")
		for _, s := range []struct {
			name string
			o    *Outcome
		}{{"native", r.Native}, {"ns-3", r.NS3}} {
			var rx, fwd uint64
			for _, n := range s.o.Nodes {
				rx += n.ControlRx
				fwd += n.Forwarded
			}
			pk, by := s.o.ControlTotals()
			p("| %s | %d | %d | %d | %d |\n", s.name, pk, by, rx, fwd)
		}
		p("\n")
	}
}

func rowTol(c Class) string {
	r := Row{Class: c}
	return r.FormatTolerance()
}

func secs(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func code(sets []string) string {
	if len(sets) == 0 {
		return "—"
	}
	var out []string
	for _, s := range sets {
		if s == quiet || s == withTrace {
			continue
		}
		out = append(out, "`"+strings.ReplaceAll(s, "|", "\\|")+"`")
	}
	if len(out) == 0 {
		return "—"
	}
	return strings.Join(out, "<br>")
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "\\|")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
