package sweep

import (
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"skyloop/components"
	"skyloop/internal/ns3test"
	"skyloop/scenarios"
	"skyloop/sim"
)

// ubancScenario finds the scenarios of the ubanc experiments, as skyloop
// sweep does.
func ubancScenario(name string) (string, []byte, string, error) {
	base := strings.TrimSuffix(name, ".yaml")
	if b, ok := scenarios.Lookup(path.Join("ubanc", base)); ok {
		return base + ".yaml", b, "", nil
	}
	return "", nil, "", fmt.Errorf("no built-in scenario %q", name)
}

func parseUbanc(t *testing.T, name string, opts ...Option) (*Experiment, error) {
	t.Helper()
	b, ok := scenarios.Lookup(name)
	if !ok {
		t.Fatalf("no built-in experiment %s", name)
	}
	return ParseExperiment(path.Base(name)+".yaml", b, ubancScenario, components.Registry(), opts...)
}

// TestUbancExperimentsParse: the built-in UB-ANC experiments parse
// and expand into their variants, on the native Wi-Fi backend and, with
// --backend ns3, on ns-3.
func TestUbancExperimentsParse(t *testing.T) {
	names := scenarios.CollectionExperiments("ubanc")
	want := map[string]int{"ubanc/range": 8, "ubanc/range-wide": 8, "ubanc/relay": 4}
	if len(names) != len(want) {
		t.Fatalf("ubanc experiments %v, want %d", names, len(want))
	}
	for _, n := range names {
		for _, backend := range []string{"", "ns3"} {
			var opts []Option
			if backend != "" {
				opts = append(opts, Backend(backend))
			}
			e, err := parseUbanc(t, n, opts...)
			if err != nil {
				t.Fatalf("%s backend %q: %v", n, backend, err)
			}
			if len(e.Variants) != want[n] || e.Analysis == nil {
				t.Errorf("%s: %d variants, analysis %v; want %d and an analysis", n, len(e.Variants), e.Analysis, want[n])
			}
			wantBackend := "backend: wifi"
			if backend != "" {
				wantBackend = "backend: " + backend
				if !strings.HasSuffix(e.Name, "-"+backend) {
					t.Errorf("%s on %s: named %s", n, backend, e.Name)
				}
			}
			for _, v := range e.Variants {
				if !strings.Contains(string(v.Text), wantBackend) {
					t.Errorf("%s %s: no %q in\n%s", n, v.Name, wantBackend, v.Text)
				}
			}
		}
	}
}

// TestBackendOption: --backend refuses unknown backends, and a backend
// without a parameter the experiment uses is reported at that parameter.
func TestBackendOption(t *testing.T) {
	_, err := parseUbanc(t, "ubanc/range", Backend("nope"))
	var oe *OptionError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "ns3") {
		t.Errorf("unknown backend: %v", err)
	}
	_, err = parseUbanc(t, "ubanc/range", Backend("impair"))
	if err == nil || !strings.Contains(err.Error(), `unknown field "standard"`) {
		t.Errorf("impair has no standard: %v", err)
	}
}

// shortRange is experiment (2) shortened: three stations at 20, 60 and
// 120 m, 19 packets each, 11 Mbit/s with and without preamble detection.
const shortRange = `experiment: short-range
scenario: node2node.yaml
seeds: 1
base:
  duration: 60s
  vehicles[sender].spawn.origin: [20, 0, 5]
  vehicles[sender].behaviors[stations].dwell: 20s
  vehicles[sender].behaviors[stations].points: [[20, 0, 5], [60, 0, 5], [120, 0, 5]]
  network.mode: DsssRate11Mbps
analysis: {type: node-to-node, lines: network.params.mode, panels: network.params.preamble_detection}
variants:
  - {name: pd-on, set: {network.preamble_detection: true}}
  - {name: pd-off, set: {network.preamble_detection: false}}
`

// TestNodeToNodeShort runs experiment (2) shortened and checks its table
// and figures: every station's packets are counted, the received count
// falls with distance (preamble detection cuts at ~51 m, 11 Mbit/s
// without it reaches 60 m but not 120 m), and the mean RSS is the
// log-distance channel's.
func TestNodeToNodeShort(t *testing.T) {
	e, err := ParseExperiment("short.yaml", []byte(shortRange), ubancScenario, components.Registry())
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := Sweep(e, Options{Out: out, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, "short-range")
	rows, err := readCSVFile(filepath.Join(dir, "node2node.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+2*3 {
		t.Fatalf("node2node.csv has %d rows, want a header and 6", len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	rx := map[string][]string{}
	for _, r := range rows[1:] {
		tx, _ := strconv.Atoi(r[col["tx_packets"]])
		n, _ := strconv.Atoi(r[col["rx_packets"]])
		d, _ := strconv.ParseFloat(r[col["distance_m"]], 64)
		// Packets at 0.95 s + j s: 20 at the first station; at the others
		// the ones sent after the 40 or 60 m move, which takes 1-2 s.
		if st := r[col["station"]]; st == "0" && tx != 20 || st != "0" && tx != 19 && tx != 18 {
			t.Errorf("%s at %v m: %d packets sent at the station", r[col["variant"]], d, tx)
		}
		if n > 0 {
			rss, err := strconv.ParseFloat(r[col["rss_mean_dbm"]], 64)
			want := 16.0206 - 46.6777 - 30*math.Log10(d)
			if err != nil || math.Abs(rss-want) > 0.01 {
				t.Errorf("%s at %v m: mean RSS %q, want %.3f", r[col["variant"]], d, r[col["rss_mean_dbm"]], want)
			}
		}
		got := "none"
		switch {
		case n == tx:
			got = "all"
		case n > 0:
			got = "some"
		}
		rx[r[col["variant"]]] = append(rx[r[col["variant"]]], got)
	}
	if got := fmt.Sprint(rx["pd-on"]); got != "[all none none]" {
		t.Errorf("preamble detection on: received %s at 20/60/120 m, want [all none none]", got)
	}
	if got := fmt.Sprint(rx["pd-off"]); got != "[all all none]" {
		t.Errorf("preamble detection off: received %s at 20/60/120 m, want [all all none]", got)
	}
	for _, f := range []string{"received_vs_distance-true.png", "received_vs_distance-false.png", "received_vs_rss-true.png", "received_vs_rss-false.png"} {
		checkPNG(t, filepath.Join(dir, "figures", f))
	}
}

func checkPNG(t *testing.T, p string) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Errorf("%s: %v", p, err)
		return
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Errorf("%s: %v image", p, b)
	}
}

// writeRun makes a finished run directory of an end-to-end experiment:
// config.json, summary.json, deliveries.csv, trace.csv and, when routing
// is not empty, routing.csv.
func writeRun(t *testing.T, dir, routing string) {
	t.Helper()
	files := map[string]string{
		"config.json": `{"duration": "10s", "nodes": [],
 "vehicles": [{"name": "src", "behaviors": [{"type": "orbit", "params": {}}, {"type": "traffic", "params": {"dst": "drone-1", "kind": "data", "rate": 512}}]},
              {"name": "drone", "behaviors": [{"type": "orbit", "params": {}}]}],
 "network": {"params": {"routing": "aodv"}}}`,
		"summary.json": `{"vehicles": [{"id": 0, "name": "src-0"}, {"id": 1, "name": "drone-0"}, {"id": 2, "name": "drone-1"}]}`,
		"deliveries.csv": `t_rx_ns,t_tick_ns,src,dst,seq,t_gen_ns,t_send_ns,bytes,kind,latency_ns,rx_dbm
1004000000,1010000000,0,2,0,1000000000,1000000000,64,data,4000000,-80.000
2006000000,2010000000,0,2,1,2000000000,2000000000,64,data,6000000,-80.000
3100000000,3110000000,1,0,7,3000000000,3000000000,40,aodv,100000000,-70.000
`,
		"trace.csv": `event,t_ns,src,dst,seq,t_gen_ns,bytes,kind,reason
tx,1000000000,0,2,0,1000000000,64,data,
tx,2000000000,0,2,1,2000000000,64,data,
tx,3000000000,0,2,2,3000000000,64,data,
tx,3000000000,1,-1,7,3000000000,40,aodv,
`,
	}
	if routing != "" {
		files["routing.csv"] = routing
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for n, s := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEndToEndFixtures: the end-to-end tables and figures from hand-made
// runs, one with the routing layer's routing.csv (whose counts are taken
// as they are) and one without (data sent at the origin, received at the
// destination and control packets from trace.csv and deliveries.csv).
func TestEndToEndFixtures(t *testing.T) {
	dir := t.TempDir()
	routing := RoutingHeader + "\n0,30,1920,0,0,0,5,400,9\ndrone-0,25,1600,25,0,0,6,480,8\n2,0,0,0,24,1536,4,320,10\n"
	writeRun(t, filepath.Join(dir, "with", "seed1"), routing)
	writeRun(t, filepath.Join(dir, "without", "seed1"), "")
	e := &Experiment{Name: "fx", Analysis: &Analysis{Type: EndToEnd, Lines: "network.params.routing", Panels: "vehicles[0].behaviors[1].params.rate"}}
	preps := []prepared{{v: &Variant{Name: "with"}}, {v: &Variant{Name: "without"}}}
	if err := analyse(dir, e, preps, 1); err != nil {
		t.Fatal(err)
	}
	rows, err := readCSVFile(filepath.Join(dir, "end2end.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows[1:] {
		got = append(got, strings.Join(r[1:], ","))
	}
	want := []string{
		// node, data tx packets/bytes, forwarded, rx packets/bytes, control tx packets/bytes, control rx, B/s: data tx, rx, control; source
		"with,,1,aodv,512,src-0,30,1920,0,0,0,5,400,9,192.000,0.000,40.000,routing.csv",
		"with,,1,aodv,512,drone-0,25,1600,25,0,0,6,480,8,160.000,0.000,48.000,routing.csv",
		"with,,1,aodv,512,drone-1,0,0,0,24,1536,4,320,10,0.000,153.600,32.000,routing.csv",
		"without,,1,aodv,512,src-0,3,192,,0,0,0,0,1,19.200,0.000,0.000,trace",
		"without,,1,aodv,512,drone-0,0,0,,0,0,1,40,0,0.000,0.000,4.000,trace",
		"without,,1,aodv,512,drone-1,0,0,,2,128,0,0,0,0.000,12.800,0.000,trace",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("end2end.csv:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, f := range []string{"data_tx-512.png", "data_rx-512.png", "overhead-512.png", "delay_cdf-512.png", "delay_cdf.png"} {
		checkPNG(t, filepath.Join(dir, "figures", f))
	}
	// A routing.csv that names a node the run does not have is an error.
	writeRun(t, filepath.Join(dir, "with", "seed1"), RoutingHeader+"\n9,0,0,0,0,0,0,0,0\n")
	if err := analyse(dir, e, preps, 1); err == nil || !strings.Contains(err.Error(), `unknown node "9"`) {
		t.Errorf("routing.csv with an unknown node: %v", err)
	}
}

// TestEndToEndNS3Short runs experiment (3) on ns-3 for 30 s at 1 and 100
// packets/s: drone 7 gets data from drone 1 over the relays with both
// protocols, end2end.csv has a row per drone and variant, and the figures
// decode.
func TestEndToEndNS3Short(t *testing.T) {
	ns3test.Need(t)
	e, err := parseUbanc(t, "ubanc/relay", Backend("ns3"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := Sweep(e, Options{Out: out, Workers: 2, Duration: 30 * sim.Second, NoFiles: false}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, "ubanc-relay-ns3")
	rows, err := readCSVFile(filepath.Join(dir, "end2end.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+4*7 {
		t.Fatalf("end2end.csv has %d rows, want a header and 28", len(rows))
	}
	srcTx := map[string]int{} // rows: src-0 before drone-5
	for _, r := range rows[1:] {
		variant, node := r[1], r[6]
		tx, _ := strconv.Atoi(r[7])
		rx, _ := strconv.Atoi(r[10])
		if r[len(r)-1] != "routing.csv" {
			t.Errorf("%s %s: counts from %s, want routing.csv", variant, node, r[len(r)-1])
		}
		// 20 s of data at 1 or 100 packets/s; a packet without a route
		// is not sent.
		gen := map[bool]int{false: 20, true: 2000}[strings.HasSuffix(variant, "100pps")]
		switch node {
		case "src-0":
			srcTx[variant] = tx
			if tx < gen/2 || tx > gen {
				t.Errorf("%s: drone 1 sent %d of its %d data packets", variant, tx, gen)
			}
		case "drone-5":
			if rx < gen/2 || rx > srcTx[variant] {
				t.Errorf("%s: drone 7 received %d data packets; drone 1 sent %d of %d", variant, rx, srcTx[variant], gen)
			}
		}
	}
	for _, f := range []string{"data_tx-512.png", "data_rx-51200.png", "overhead-512.png", "delay_cdf-51200.png", "delay_cdf.png"} {
		checkPNG(t, filepath.Join(dir, "figures", f))
	}
}
