package validation

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/internal/ns3test"
	"skyloop/scenario"
)

// TestMatrix runs the shortened variant of every CI case on the native
// network and on ns-3 and checks every row against the tolerances: a row
// outside fails, unless knownGaps lists it (then it is logged as KNOWN
// GAP). The two backends of a case run at the same time (ns-3 is a process
// of its own); the cases one after the other.
func TestMatrix(t *testing.T) {
	ns3test.Need(t)
	for _, c := range Cases() {
		if !c.CI {
			continue
		}
		t.Run(strings.ReplaceAll(c.Name, "/", "_"), func(t *testing.T) {
			res := RunCase(&c, Short, t.TempDir(), nil, true)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			for _, r := range res.Rows {
				line := r.Metric
				if r.Detail != "" {
					line += " " + r.Detail
				}
				line += ": native " + r.FormatValue(r.Native) + ", ns-3 " + r.FormatValue(r.NS3) + " (" + r.FormatDiff() + ", tolerance " + r.FormatTolerance() + ")"
				switch r.Status {
				case Fail:
					t.Errorf("%s", line)
				case Gap:
					t.Logf("KNOWN GAP %s: %s", line, r.Reason)
				case Closed:
					t.Logf("KNOWN GAP CLOSED (remove it from knownGaps) %s", line)
				default:
					t.Logf("ok %s", line)
				}
			}
		})
	}
}

// TestCasesBuild checks that every case, full and shortened, is a valid
// scenario on both backends, with the native one on the wifi backend.
func TestCasesBuild(t *testing.T) {
	names := map[string]bool{}
	for _, c := range Cases() {
		if names[c.Name] {
			t.Errorf("two cases named %s", c.Name)
		}
		names[c.Name] = true
		for _, l := range []Length{Full, Short} {
			for _, b := range []string{Native, NS3} {
				name, text, err := c.SeedText(b, l, 0)
				if err != nil {
					t.Errorf("%s: %v", c.Name, err)
					continue
				}
				sc, err := scenario.Parse(name, text, registry().Schema())
				if err != nil {
					t.Errorf("%s on %s: %v", c.Name, b, err)
					continue
				}
				r, err := engine.Validate(sc, engine.Options{Registry: registry()})
				if err != nil {
					t.Errorf("%s on %s: %v", c.Name, b, err)
					continue
				}
				if got := r.Effective()["network"].(map[string]any)["backend"]; got != b {
					t.Errorf("%s: network.backend %v, want %s", c.Name, got, b)
				}
			}
		}
	}
}

// TestKnownGapsNameRows checks that every known gap names a case of the
// matrix and a metric written as Compare writes them, once.
func TestKnownGapsNameRows(t *testing.T) {
	cases := map[string]bool{}
	for _, c := range Cases() {
		cases[c.Name] = true
	}
	metric := regexp.MustCompile(`^((pdr|p50|p95)/[a-z]+|pdr/station|control_packets|control_bytes|hops|completed|collisions)$`)
	seen := map[gap]bool{}
	for _, g := range knownGaps {
		if !cases[g.Case] {
			t.Errorf("known gap %s %s: no such case", g.Case, g.Metric)
		}
		if !metric.MatchString(g.Metric) {
			t.Errorf("known gap %s %s: no such metric", g.Case, g.Metric)
		}
		if g.Reason == "" {
			t.Errorf("known gap %s %s: no reason", g.Case, g.Metric)
		}
		k := gap{Case: g.Case, Metric: g.Metric}
		if seen[k] {
			t.Errorf("known gap %s %s listed twice", g.Case, g.Metric)
		}
		seen[k] = true
	}
}

// TestCompareTolerances checks the verdicts at the edges of the
// tolerances and the handling of known gaps.
func TestCompareTolerances(t *testing.T) {
	old := knownGaps
	defer func() { knownGaps = old }()
	knownGaps = []gap{{Case: "x", Metric: "control_packets", Reason: "test"}, {Case: "x", Metric: "hops", Reason: "test"},
		{Case: "x", Metric: "completed", Reason: "test", Only: onlyShort}}
	c := &Case{Name: "x", Mission: true}
	radio := map[string]any{"standard": "80211a"}
	nat := &Outcome{Radio: radio, Routing: "aodv", Completed: 3,
		Kinds: map[string]KindFigures{"cmd": {Expected: 10000, Rx: 9000, Latencies: 9000, P50: 1_090_000, P95: 2_300_000}},
		Nodes: []NodeCounts{{ControlTx: 100, ControlTxBytes: 1000, Forwarded: 0, DataRx: 0}, {ControlTx: 10, ControlTxBytes: 119, Forwarded: 10, DataRx: 10}}}
	ns := &Outcome{Radio: radio, Routing: "aodv", Completed: 2,
		Kinds: map[string]KindFigures{"cmd": {Expected: 10000, Rx: 9300, Latencies: 9300, P50: 1_000_000, P95: 2_000_000}},
		Nodes: []NodeCounts{{ControlTx: 50, ControlTxBytes: 500}, {ControlTx: 50, ControlTxBytes: 500, Forwarded: 10, DataRx: 10}}}
	rows, err := Compare(c, Full, nat, ns)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Status{
		"pdr/cmd":         Pass,   // -3.0 points
		"p50/cmd":         Pass,   // +9%
		"p95/cmd":         Fail,   // +15%
		"control_packets": Closed, // +10%, listed
		"control_bytes":   Pass,   // +11.9%
		"hops":            Closed, // 2 = 2, listed
		"completed":       Fail,   // 3 vs 2
		"collisions":      Pass,
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for _, r := range rows {
		if r.Status != want[r.Metric] {
			t.Errorf("%s: %s (native %v, ns-3 %v), want %s", r.Metric, r.Status, r.Native, r.NS3, want[r.Metric])
		}
	}
	ns.Radio = map[string]any{"standard": "80211b"}
	if _, err := Compare(c, Full, nat, ns); err == nil || !strings.Contains(err.Error(), "different radio parameters") {
		t.Errorf("different radio parameters: %v", err)
	}
}

// TestStationSigmas checks that a station's PDR difference within three
// standard errors passes and one beyond fails.
func TestStationSigmas(t *testing.T) {
	c := &Case{Name: "s", Stations: &Stations{Dwell: 1, First: 5, Step: 5}}
	nat := []StationCount{{100, 100}, {100, 50}}
	ns := []StationCount{{100, 100}, {100, 62}} // 12 points; SE = 0.069: 3σ = 20.7 points
	r, ok := worstStation(c, nat, ns)
	if !ok || !r.Within() || r.Detail != "at 10 m (worst of 2 stations; 0 outside)" {
		t.Errorf("got %+v, within %v", r, r.Within())
	}
	ns[1].Received = 80 // 30 points
	r, _ = worstStation(c, nat, ns)
	if r.Within() || !strings.Contains(r.Detail, "1 outside") {
		t.Errorf("got %+v, within %v", r, r.Within())
	}
}

// TestLoad reads a run directory's files.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("summary.json", `{"backend":"wifi","network":{"by_kind":{"aodv":{"expected_rx":5,"rx":1},"data":{"expected_rx":4,"rx":3,"latency":{"count":3,"p50_ns":1000,"p95_ns":2000}}}},
		"separation":{"collisions":1},"obstacle_hits":2,"vehicles":[{"id":0,"name":"v-0"}],
		"agents":{"gcs":{"gcs":{"legs":1,"vehicles":[{"vehicle":0,"legs_done":1,"leg_done_ns":[5]}]}}}}`)
	write("config.json", `{"network":{"backend":"wifi","routing":"aodv","params":{"standard":"80211b","mode":"DsssRate1Mbps"}}}`)
	write("routing.csv", "node,data_tx_packets,data_tx_bytes,forwarded_packets,data_rx_packets,data_rx_bytes,control_tx_packets,control_tx_bytes,control_rx_packets\n0,4,368,0,0,0,7,300,9\n1,3,276,3,0,0,8,320,9\n2,0,0,0,3,276,6,280,5\n")
	write("trace.csv", "event,t_ns,src,dst,seq,t_gen_ns,bytes,kind,reason\ntx,5,0,2,0,5,29,data,\ntx,6,0,2,0,5,20,aodv,\ntx,15,0,2,1,15,29,data,\ntx,16,0,2,2,16,29,data,\n")
	write("deliveries.csv", "t_rx_ns,t_tick_ns,src,dst,seq,t_gen_ns,t_send_ns,bytes,kind,latency_ns,rx_dbm\n7,10,0,2,0,5,5,29,data,2,-90\n17,20,0,2,1,15,15,29,data,2,-90\n")
	c := &Case{Name: "t", Stations: &Stations{Dwell: 10}}
	o, err := Load(c, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := o.Kinds["aodv"]; ok || o.Kinds["data"].PDR() != 0.75 || o.Kinds["data"].P95 != 2000 {
		t.Errorf("kinds %+v", o.Kinds)
	}
	if p, b := o.ControlTotals(); p != 21 || b != 900 {
		t.Errorf("control %d packets %d bytes", p, b)
	}
	if h, ok := o.Hops(); !ok || h != 2 {
		t.Errorf("hops %v %v", h, ok)
	}
	if o.Routing != "aodv" || o.Collisions != 3 || o.Completed != 1 || o.Radio["mode"] != "DsssRate1Mbps" {
		t.Errorf("outcome %+v", o)
	}
	if want := []StationCount{{1, 1}, {2, 1}}; len(o.Stations) != 2 || o.Stations[0] != want[0] || o.Stations[1] != want[1] {
		t.Errorf("stations %+v, want %+v", o.Stations, want)
	}
	// A run directory is another process's output: a short row or a send
	// time far past any station is an error naming the file and line, not
	// a panic or a huge allocation.
	for _, bad := range []struct{ file, text, want string }{
		{"routing.csv", "node,data_tx_packets,data_tx_bytes,forwarded_packets,data_rx_packets,data_rx_bytes,control_tx_packets,control_tx_bytes,control_rx_packets\n0,4\n", "routing.csv line 2: 2 fields"},
		{"trace.csv", "event,t_ns,src,dst,seq,t_gen_ns,bytes,kind,reason\ntx,18446744073709551615,0,2,0,5,29,data,\n", "trace.csv line 2: send time"},
	} {
		good, err := os.ReadFile(filepath.Join(dir, bad.file))
		if err != nil {
			t.Fatal(err)
		}
		write(bad.file, bad.text)
		if _, err := Load(c, dir); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s %q: error %v, want one with %q", bad.file, bad.text, err, bad.want)
		}
		write(bad.file, string(good))
	}
}

// TestMarkdownStable checks that the same results give the same text.
func TestMarkdownStable(t *testing.T) {
	var c Case
	for _, k := range Cases() {
		if k.Name == "ubanc-relay/aodv-1pps" {
			c = k
		}
	}
	o := &Outcome{Routing: "aodv", Kinds: map[string]KindFigures{"data": {Expected: 10, Rx: 9, Latencies: 9, P50: 4e6, P95: 6e6}, "b": {Expected: 1, Rx: 1}},
		Nodes: make([]NodeCounts, 7)}
	rows, err := Compare(&c, Full, o, o)
	if err != nil {
		t.Fatal(err)
	}
	res := []Result{{Case: c, Native: o, NS3: o, Rows: rows}}
	var a, b bytes.Buffer
	if err := WriteMarkdown(&a, Doc{}, res); err != nil {
		t.Fatal(err)
	}
	WriteMarkdown(&b, Doc{}, res)
	if a.String() != b.String() {
		t.Error("two writes differ")
	}
	var c2 bytes.Buffer
	saved := Save("abc", res)
	saved.Rows[0].Native, saved.Rows[0].Within = 0.5, false
	WriteMarkdown(&c2, Doc{Before: saved}, res)
	if want := "| ubanc-relay/aodv-1pps | `pdr/b` | 1.000 | 1.000 | +0.0 pt | ±3 pt | pass | 0.500 | 1.000 | outside |"; !strings.Contains(c2.String(), want) {
		t.Errorf("no %q in\n%s", want, c2.String())
	}
	for _, want := range []string{"| ubanc-relay/aodv-1pps | `pdr/b` | 1.000 | 1.000 | +0.0 pt |", "| forwarded, ns-3 | 0 | 0 |"} {
		if !strings.Contains(a.String(), want) {
			t.Errorf("no %q in\n%s", want, a.String())
		}
	}
}

// TestPool: pooled runs sum their counts and take the median of each
// latency percentile over the runs that delivered the kind; runs with
// different radio parameters or node counts are refused.
func TestPool(t *testing.T) {
	run := func(rx, p95 uint64, completed int) *Outcome {
		return &Outcome{Backend: Native, Routing: "olsr", Radio: map[string]any{"mode": "DsssRate1Mbps"},
			Kinds:     map[string]KindFigures{"data": {Expected: 30, Rx: rx, Latencies: rx, P50: 4, P95: int64(p95)}},
			Nodes:     []NodeCounts{{Forwarded: rx, ControlTx: 10}, {DataRx: rx}},
			Completed: completed}
	}
	p, err := Pool([]*Outcome{run(30, 9, 1), run(29, 4, 1), run(0, 0, 0), run(28, 5, 1)})
	if err != nil {
		t.Fatal(err)
	}
	d := p.Kinds["data"]
	if d.Expected != 120 || d.Rx != 87 || d.Latencies != 87 {
		t.Errorf("pooled counts %+v, want 120 expected, 87 received", d)
	}
	if d.P95 != 5 || d.P50 != 4 {
		t.Errorf("pooled p50/p95 %d/%d, want 4/5 (the median of 9, 4, 5: the run without deliveries has no percentile)", d.P50, d.P95)
	}
	if p.Nodes[0].ControlTx != 40 || p.Nodes[1].DataRx != 87 || p.Completed != 3 {
		t.Errorf("pooled nodes %+v, completed %d", p.Nodes, p.Completed)
	}
	other := run(30, 4, 1)
	other.Radio = map[string]any{"mode": "DsssRate2Mbps"}
	if _, err := Pool([]*Outcome{run(30, 4, 1), other}); err == nil {
		t.Error("runs with different radio parameters were pooled")
	}
	short := run(30, 4, 1)
	short.Nodes = short.Nodes[:1]
	if _, err := Pool([]*Outcome{run(30, 4, 1), short}); err == nil {
		t.Error("runs with different node counts were pooled")
	}
}
