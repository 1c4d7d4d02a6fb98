package runner

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"skyloop/components"
	"strconv"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/internal/ns3test"
	"skyloop/internal/short"
	"skyloop/scenario"
	"skyloop/scenarios"
	"skyloop/sim"
)

// registry has every component skyloop ships with.
var registry = components.Registry()

// swarmYAML is a mixed scenario that exercises every part of the loop:
// enough vehicles for several workers, two kinds with different physics
// periods, a ground station, beacons, background traffic, and a network
// with latency, jitter, loss, a rate limit and a range.
const swarmYAML = `
name: swarm
seed: 42
duration: 3s
tick: 1ms
world:
  bounds: {min: [-200, -200, 0], max: [200, 200, 100]}
  obstacles:
    - {name: tower, min: [40, -5, 0], max: [45, 5, 30]}
vehicles:
  - name: uav
    kind: pointmass
    count: 80
    spawn: {layout: grid, origin: [0, 0, 0], spacing: 2, columns: 10}
    behaviors:
      - {type: remote, gcs: gcs, telemetry: 200ms, stagger: 2ms}
      - {type: beacon, period: 100ms, stagger: 1ms, policy: event}
  - name: quad
    kind: multirotor
    count: 8
    spawn: {layout: circle, origin: [0, 40, 0], radius: 10}
    params: {preset: iris, wind: [3, 1, 0], turbulence_sigma: 0.8}
    behaviors:
      - {type: waypoints, relative: true, points: [[0, 0, 6], [5, 5, 8]], final: land}
  - name: ugv
    kind: groundbot
    count: 6
    spawn: {layout: line, origin: [0, -20, 0], spacing: 3}
    behaviors:
      - {type: beacon, period: 100ms, stagger: 10ms, format: planar}
      - {type: platoon, waypoints: [[0, -20], [20, -20], [20, -40], [0, -40]]}
      - {type: traffic, rate: 80000, size: 500, stagger: 3ms}
nodes:
  - name: gcs
    position: [0, -5, 1]
    behaviors:
      - type: gcs
        group: uav
        resend: 500ms
        legs:
          - {layout: grid, origin: [0, 0, 10], spacing: 3, columns: 10}
          - {layout: grid, origin: [30, 10, 12], spacing: 3, columns: 10}
network:
  backend: impair
  latency: 2500us
  jitter: 3ms
  loss: 0.1
  range: 30
  rate: 2000000
  queue: 20
`

// schemaOf returns the schema of opt's registry (Core's when it has none).
func schemaOf(opt engine.Options) *scenario.Schema {
	if opt.Registry == nil {
		return engine.Core().Schema()
	}
	return opt.Registry.Schema()
}

func buildYAML(t testing.TB, text string, opt engine.Options) *engine.Run {
	t.Helper()
	sc, err := scenario.Parse("test.yaml", []byte(text), schemaOf(opt))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	r, err := engine.Build(sc, opt)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return r
}

func runYAML(t testing.TB, text string, opt engine.Options, dir string) *Result {
	t.Helper()
	res, err := Execute(buildYAML(t, text, opt), dir, Options{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

// TestDeterminism runs the same scenario and seed three times, with 1, 2
// and 4 workers, and demands byte-identical output files. meta.json is the
// one file that records wall-clock facts and is excluded by design.
func TestDeterminism(t *testing.T) {
	base := t.TempDir()
	var ref map[string][]byte
	for i, workers := range []int{1, 2, 4} {
		dir := filepath.Join(base, strconv.Itoa(i))
		runYAML(t, swarmYAML, engine.Options{Registry: registry, Workers: workers}, dir)
		files := readDir(t, dir)
		for _, want := range []string{"config.json", "meta.json", "summary.json", "trace.csv", "deliveries.csv", "vehicles.csv", "events.csv"} {
			if _, ok := files[want]; !ok {
				t.Fatalf("run %d: %s missing", i, want)
			}
		}
		delete(files, "meta.json")
		if i == 0 {
			ref = files
			if n := bytes.Count(files["trace.csv"], []byte("\n")); n < 10000 {
				t.Fatalf("trace.csv has only %d lines; the scenario should exercise the network", n)
			}
			for _, word := range []string{",queue\n", ",rx_error\n", ",range\n"} {
				if !bytes.Contains(files["trace.csv"], []byte(word)) {
					t.Errorf("trace.csv has no %q drops; the scenario should exercise every impairment", strings.TrimSpace(word))
				}
			}
			continue
		}
		if len(files) != len(ref) {
			t.Fatalf("run %d wrote %d files, run 0 wrote %d", i, len(files), len(ref))
		}
		for name, b := range ref {
			if !bytes.Equal(files[name], b) {
				t.Errorf("run %d (workers=%d): %s differs from run 0", i, workers, name)
			}
		}
	}
	// A different seed must change the network's decisions.
	seed := uint64(43)
	dir := filepath.Join(base, "seed43")
	runYAML(t, swarmYAML, engine.Options{Registry: registry, Workers: 1, Seed: &seed}, dir)
	if bytes.Equal(readDir(t, dir)["trace.csv"], ref["trace.csv"]) {
		t.Error("seed 43 gave the same trace as seed 42")
	}
}

func readCSV(t *testing.T, path string) (header []string, rows [][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return all[0], all[1:]
}

func col(header []string, name string) int {
	for i, h := range header {
		if h == name {
			return i
		}
	}
	panic("no column " + name)
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestDeliveryRule checks that every delivery is consumed at the first tick
// at or after its arrival that comes after the tick it was sent in (the
// network phase of a tick runs before its agents send), never before, and
// that both times are logged. It also runs a zero-latency network, where
// the second condition is the one that decides.
func TestDeliveryRule(t *testing.T) {
	zero := strings.Replace(swarmYAML, "  latency: 2500us\n  jitter: 3ms\n", "  latency: 0\n", 1)
	if zero == swarmYAML {
		t.Fatal("swarmYAML changed; update this test")
	}
	for _, text := range []string{swarmYAML, zero} {
		checkDeliveryRule(t, text)
	}
}

func checkDeliveryRule(t *testing.T, text string) {
	dir := t.TempDir()
	runYAML(t, text, engine.Options{Registry: registry}, dir)
	h, rows := readCSV(t, filepath.Join(dir, "deliveries.csv"))
	rx, tick, send, lat := col(h, "t_rx_ns"), col(h, "t_tick_ns"), col(h, "t_send_ns"), col(h, "latency_ns")
	if len(rows) < 1000 {
		t.Fatalf("only %d deliveries", len(rows))
	}
	dt := int64(sim.Millisecond)
	offTick := 0
	for i, r := range rows {
		a, k, s, l := atoi(t, r[rx]), atoi(t, r[tick]), atoi(t, r[send]), atoi(t, r[lat])
		if k%dt != 0 {
			t.Fatalf("row %d: consumption time %d is not a tick", i, k)
		}
		if k < a {
			t.Fatalf("row %d: consumed at %d before its arrival at %d", i, k, a)
		}
		first := max((a+dt-1)/dt*dt, s/dt*dt+dt) // first tick >= arrival and after the send tick
		if k != first {
			t.Fatalf("row %d: sent %d, arrived %d, consumed at %d; the rule says %d", i, s, a, k, first)
		}
		if l != a-s {
			t.Fatalf("row %d: latency %d != arrival - send %d", i, l, a-s)
		}
		if a%dt != 0 {
			offTick++
		}
	}
	if offTick == 0 && !strings.Contains(text, "latency: 0\n") {
		t.Fatal("no arrival fell between ticks; the test does not exercise the rule")
	}
	// The trace is in time order.
	h, trows := readCSV(t, filepath.Join(dir, "trace.csv"))
	tc := col(h, "t_ns")
	prev := int64(-1)
	for i, r := range trows {
		v := atoi(t, r[tc])
		if v < prev {
			t.Fatalf("trace row %d goes back in time: %d after %d", i, v, prev)
		}
		prev = v
	}
	if strings.Join(h, ",") != "event,t_ns,src,dst,seq,t_gen_ns,bytes,kind,reason" {
		t.Fatalf("trace.csv header %v", h)
	}
}

// TestNetworkIsInTheLoop: every ground-station command and every telemetry
// report crosses the network, so its delay and loss must show in the
// flight, as the munils platform requires.
func TestNetworkIsInTheLoop(t *testing.T) {
	base, ok := scenarios.Lookup("quickstart")
	if !ok {
		t.Fatal("no quickstart")
	}
	run := func(net string) *Summary {
		text := strings.Replace(string(base), "  latency: 10ms\n  loss: 0.05\n", net, 1)
		if text == string(base) {
			t.Fatal("quickstart's network section changed; update this test")
		}
		return runYAML(t, text, engine.Options{Registry: registry}, "").Summary
	}
	missionEnd := func(s *Summary) sim.Time {
		g := s.Agents["gcs"]["gcs"].(map[string]any)
		var end sim.Time
		b, _ := json.Marshal(g["vehicles"])
		var vs []struct {
			LegDoneNs []sim.Time `json:"leg_done_ns"`
		}
		json.Unmarshal(b, &vs)
		for _, v := range vs {
			if len(v.LegDoneNs) != 3 {
				return -1
			}
			end = max(end, v.LegDoneNs[2])
		}
		return end
	}
	fast := run("  latency: 10ms\n")
	slow := run("  latency: 400ms\n")
	lossy := run("  latency: 10ms\n  loss: 0.5\n")
	dead := run("  latency: 10ms\n  loss: 1.0\n")
	ef, es, el := missionEnd(fast), missionEnd(slow), missionEnd(lossy)
	t.Logf("mission end: 10ms %v, 400ms %v, 50%% loss %v", ef, es, el)
	if ef <= 0 || es <= 0 || el <= 0 {
		t.Fatalf("missions did not complete: %v %v %v", ef, es, el)
	}
	// Three legs, each needing a command down and telemetry up, 390 ms
	// slower each way; telemetry and ground-station periods (200 and
	// 100 ms) blur the sum, so ask for three quarters of it.
	if es-ef < sim.Time(3*2*390*sim.Millisecond*3/4) {
		t.Errorf("400 ms latency delayed the mission by only %v", es-ef)
	}
	if el <= ef {
		t.Errorf("50%% loss did not delay the mission (%v vs %v)", el, ef)
	}
	for _, v := range dead.Vehicles {
		if v.DistanceM != 0 {
			t.Fatalf("vehicle %s moved %.2f m although no command can arrive", v.Name, v.DistanceM)
		}
	}
}

// TestInterruptKeepsPartialOutputs: a run stopped early reports
// sim.ErrStopped, writes no run directory, and keeps what it wrote.
func TestInterruptKeepsPartialOutputs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	calls := 0
	r := buildYAML(t, swarmYAML, engine.Options{Registry: registry})
	r.SetOptions(engine.Options{Stop: func() bool { calls++; return calls > 1500 }}) // polled every tick: stop at 1.5 s
	_, err := Execute(r, dir, Options{})
	if !errors.Is(err, sim.ErrStopped) {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("an interrupted run was committed")
	}
	b, err := os.ReadFile(filepath.Join(dir+".incomplete", "trace.csv"))
	if err != nil || bytes.Count(b, []byte("\n")) < 100 {
		t.Fatalf("partial trace: %d bytes, %v", len(b), err)
	}
}

// TestRemoteLinkTimeoutOnHealthyLink: with the remote behaviour's own
// link-loss hold enabled, the ground station's heartbeats keep a healthy
// link alive through long legs, and a mission completes.
func TestRemoteLinkTimeoutOnHealthyLink(t *testing.T) {
	base, _ := scenarios.Lookup("quickstart")
	text := strings.Replace(string(base), "        stagger: 10ms\n      - type: beacon", "        stagger: 10ms\n        link_timeout: 3s\n      - type: beacon", 1)
	if text == string(base) {
		t.Fatal("quickstart changed; update this test")
	}
	s := runYAML(t, text, engine.Options{Registry: registry}, "").Summary
	g := s.Agents["gcs"]["gcs"].(map[string]any)
	if g["vehicles_done"] != 10 {
		t.Fatalf("%v of 10 vehicles completed", g["vehicles_done"])
	}
}

// TestMunils50 runs the munils platform's 50-UAV mission (munils-50): every UAV reaches its own
// waypoint (arrival error from the physics, not the controller's belief),
// with no collisions, all commands and telemetry crossing the network.
func TestMunils50(t *testing.T) {
	text, _ := scenarios.Lookup("munils-50")
	dir := filepath.Join(t.TempDir(), "m50")
	s := runYAML(t, string(text), engine.Options{Registry: registry}, dir).Summary
	g := s.Agents["gcs"]["gcs"].(map[string]any)
	if g["vehicles_done"] != 50 {
		t.Fatalf("%v of 50 vehicles completed", g["vehicles_done"])
	}
	worst := 0.0
	for _, v := range s.Vehicles {
		if v.ArrivalErrorM == nil {
			t.Fatalf("%s has no target", v.Name)
		}
		worst = max(worst, *v.ArrivalErrorM)
	}
	t.Logf("worst arrival error %.3f m, closest approach %.2f m", worst, s.Separation.MinM)
	if worst > 0.3 {
		t.Errorf("worst arrival error %.3f m", worst)
	}
	if s.Separation.Collisions != 0 || s.Separation.MinM < 1 {
		t.Errorf("separation %+v", s.Separation)
	}
	if st, err := os.Stat(filepath.Join(dir, "trajectory.png")); err != nil || st.Size() < 10000 {
		t.Errorf("trajectory.png: %v", err)
	}
	if s.Network.ByKind["cmd"].Tx == 0 || s.Network.ByKind["telem"].Tx == 0 {
		t.Error("no command or telemetry traffic")
	}
}

// TestMunils50LateStart: UAVs 20-24 (and 25-29) fly out along one line.
// With seed 3 the leg-2 command to UAV 22 was lost and resent 1 s later;
// UAV 23 behind it left on time, overtook it and stopped on its path (1
// collision, 0.10 m). With the station's clearance the one ahead leaves
// first, whatever the network loses.
func TestMunils50LateStart(t *testing.T) {
	text, _ := scenarios.Lookup("munils-50")
	mod := strings.Replace(string(text), "\nseed: 1\n", "\nseed: 3\n", 1)
	if mod == string(text) {
		t.Fatal("munils-50 changed; update this test")
	}
	dir := t.TempDir()
	s := runYAML(t, mod, engine.Options{Registry: registry}, dir).Summary
	_, rows := readCSV(t, filepath.Join(dir, "events.csv"))
	left := map[string]int64{}
	for _, r := range rows {
		if r[3] == "command" && strings.HasPrefix(r[4], "leg=1 ") {
			left[r[1]] = atoi(t, r[0])
		}
	}
	for _, line := range [][]string{{"20", "21", "22", "23", "24"}, {"29", "28", "27", "26", "25"}} {
		for k := 1; k < len(line); k++ {
			if a, b := left[line[k-1]], left[line[k]]; b <= a {
				t.Errorf("UAV %s left at %v, before UAV %s ahead of it (%v)", line[k], sim.Duration(b), line[k-1], sim.Duration(a))
			}
		}
	}
	if s.Separation.Collisions != 0 || s.Separation.MinM < 2.5 {
		t.Errorf("separation %+v", s.Separation)
	}
}

// TestMunils50OverWifiLinkLoss flies munils-50 over the native 802.11a
// network with one hop: the ground station reaches only about 51 m, so the
// UAVs flying further lose its heartbeats. Their link-loss failsafe must
// not fly them into each other. Before failsafe_goto: finish and the
// braking hold, UAVs 20-22 and 27-29, whose paths lie on one line, lost the
// link at the same place, held there (overshooting and flying back) and
// collided 18 times.
func TestMunils50OverWifiLinkLoss(t *testing.T) {
	text, _ := scenarios.Lookup("munils-50")
	i := strings.Index(string(text), "\nnetwork:\n")
	if i < 0 {
		t.Fatal("munils-50 has no network block; update this test")
	}
	mod := string(text[:i]) + "\nnetwork: {backend: wifi}\n"
	dir := t.TempDir()
	s := runYAML(t, mod, engine.Options{Registry: registry}, dir).Summary
	_, rows := readCSV(t, filepath.Join(dir, "events.csv"))
	finishing, holds, touchdowns := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		switch {
		case r[3] == "failsafe" && strings.HasSuffix(r[4], ": finishing the goto"):
			finishing[r[1]] = true
		case r[3] == "failsafe" && strings.HasSuffix(r[4], ": hold"):
			holds[r[1]] = true
		case r[3] == "touchdown":
			touchdowns[r[1]] = true
		}
	}
	t.Logf("%d UAVs lost the link, closest approach %.2f m", len(finishing), s.Separation.MinM)
	if len(finishing) < 10 {
		t.Fatalf("only %d UAVs lost the link: the test no longer exercises the failsafe", len(finishing))
	}
	for id := range finishing {
		if !holds[id] || !touchdowns[id] {
			t.Errorf("UAV %s lost the link but did not hold (%v) and land (%v)", id, holds[id], touchdowns[id])
		}
	}
	if s.Separation.Collisions != 0 || s.Separation.MinM < 1 {
		t.Errorf("separation %+v", s.Separation)
	}
}

// TestFailsafeOverTheNetwork: the ground station falls silent; every UAV
// notices the missing heartbeats, holds after 1 s and lands 5 s later.
func TestFailsafeOverTheNetwork(t *testing.T) {
	text, _ := scenarios.Lookup("munils-5")
	mod := strings.Replace(string(text), "        accept: 0.3\n", "        accept: 0.3\n        stop_at: 10s\n", 1)
	if mod == string(text) {
		t.Fatal("munils-5 changed; update this test")
	}
	dir := t.TempDir()
	s := runYAML(t, mod, engine.Options{Registry: registry}, dir).Summary
	_, rows := readCSV(t, filepath.Join(dir, "events.csv"))
	holds, lands := map[string]int64{}, map[string]int64{}
	for _, r := range rows {
		if r[3] == "failsafe" && strings.HasSuffix(r[4], ": hold") {
			holds[r[1]] = atoi(t, r[0])
		}
		if r[3] == "failsafe" && strings.HasSuffix(r[4], ": land") {
			lands[r[1]] = atoi(t, r[0])
		}
	}
	if len(holds) != 5 || len(lands) != 5 {
		t.Fatalf("holds %v lands %v", holds, lands)
	}
	for id, h := range holds {
		// Last heartbeat just before 10 s; hold after the 1 s timeout.
		if h < int64(10*sim.Second) || h > int64(11500*sim.Millisecond) {
			t.Errorf("vehicle %s held at %v", id, sim.Duration(h))
		}
		if d := lands[id] - h; d < int64(5*sim.Second) || d > int64(5100*sim.Millisecond) {
			t.Errorf("vehicle %s landed %v after holding", id, sim.Duration(d))
		}
	}
	for _, v := range s.Vehicles {
		if v.Mode != "disarmed" || v.Final.Z > 0.01 {
			t.Errorf("%s ended %s at z=%.2f", v.Name, v.Mode, v.Final.Z)
		}
	}
}

// TestMunils5 hovers five UAVs at 5 m, commanded over the network.
func TestMunils5(t *testing.T) {
	text, _ := scenarios.Lookup("munils-5")
	s := runYAML(t, string(text), engine.Options{Registry: registry}, "").Summary
	for _, v := range s.Vehicles {
		if math.Abs(v.Final.Z-5) > 0.2 || v.Mode != "goto" || *v.ArrivalErrorM > 0.2 {
			t.Errorf("%s: %+v", v.Name, v)
		}
		if v.EnergyJ <= 0 {
			t.Errorf("%s used no energy", v.Name)
		}
	}
	if s.Separation.MinM < 5 {
		t.Errorf("closest approach %.2f m; they spawn 6 m apart", s.Separation.MinM)
	}
}

// ns3Quickstart is the quickstart scenario with only the backend line
// changed to ns-3.
func ns3Quickstart(t *testing.T) string {
	base, _ := scenarios.Lookup("quickstart")
	text := strings.Replace(string(base), "  backend: impair\n  latency: 10ms\n  loss: 0.05\n", "  backend: ns3\n", 1)
	if text == string(base) {
		t.Fatal("quickstart's network section changed; update this test")
	}
	return text
}

// TestQuickstartOnNS3: a scenario of the core runs on ns-3 with only the
// backend line changed, with the same outputs plus ns-3's pcap files.
func TestQuickstartOnNS3(t *testing.T) {
	ns3test.Need(t)
	text := strings.Replace(ns3Quickstart(t), "  backend: ns3\n", "  backend: ns3\n  pcap: true\n", 1)
	d := sim.Duration(15 * sim.Second)
	dir := filepath.Join(t.TempDir(), "q")
	s := runYAML(t, text, engine.Options{Registry: registry, Duration: &d}, dir).Summary
	if s.Backend != "ns3" || s.Network.Total.Rx == 0 || s.Network.Total.Tx == 0 {
		t.Fatalf("summary %+v", s.Network.Total)
	}
	for _, f := range []string{"trace.csv", "deliveries.csv", "vehicles.csv", "events.csv", "summary.json", "trajectory.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	pcaps, _ := filepath.Glob(filepath.Join(dir, "ns3-*.pcap"))
	if len(pcaps) != 11 {
		t.Fatalf("%d pcap files, want one per node (11)", len(pcaps))
	}
	b, _ := os.ReadFile(pcaps[0])
	if len(b) < 100 || !bytes.Equal(b[:4], []byte{0xd4, 0xc3, 0xb2, 0xa1}) {
		t.Fatalf("%s is not a pcap file with packets (%d bytes)", pcaps[0], len(b))
	}
	// Every intended receiver got an rx or a drop; the packets ns-3 still
	// had in flight at the end are end_of_run, and they are what the
	// summary counts as in flight (not as lost).
	tot := s.Network.Total
	var drops uint64
	for r, n := range tot.Drops {
		if r != "end_of_run" {
			drops += n
		}
	}
	if tot.Rx+drops+s.InFlight != tot.Expected {
		t.Errorf("rx %d + drops %d + in flight %d != expected %d", tot.Rx, drops, s.InFlight, tot.Expected)
	}
	if s.InFlight != tot.Drops["end_of_run"] {
		t.Errorf("in flight %d, but ns-3 reported %d end_of_run", s.InFlight, tot.Drops["end_of_run"])
	}
}

// TestNS3CrashMarksRunIncomplete: when the ns-3 process dies mid-run the
// run fails with ns-3's last words and keeps its partial outputs in
// <dir>.incomplete.
func TestNS3CrashMarksRunIncomplete(t *testing.T) {
	script := filepath.Join(t.TempDir(), "fake-ns3")
	os.WriteFile(script, []byte("#!/bin/sh\nn=0\nwhile read l; do case $l in START) echo 'READY 11';; RUN*) n=$((n+1)); if [ $n -gt 50 ]; then echo 'assertion failed in YansWifiPhy' >&2; exit 134; fi; echo \"DONE ${l#RUN }\";; esac; done\n"), 0o755)
	t.Setenv("SKYLOOP_NS3_BINARY", script)
	dir := filepath.Join(t.TempDir(), "q")
	sc, err := scenario.Parse("q.yaml", []byte(ns3Quickstart(t)), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Execute(r, dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "assertion failed in YansWifiPhy") || !strings.Contains(err.Error(), ".incomplete") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("a failed run was committed")
	}
	if b, err := os.ReadFile(filepath.Join(dir+".incomplete", "ERROR.txt")); err != nil || !strings.Contains(string(b), "ns-3") {
		t.Fatalf("ERROR.txt: %q %v", b, err)
	}
}

// TestQuickstartOnNativeWifi: the quickstart scenario on the native 802.11
// model, pcap on, only the network section changed.
func TestQuickstartOnNativeWifi(t *testing.T) {
	base, _ := scenarios.Lookup("quickstart")
	text := strings.Replace(string(base), "  backend: impair\n  latency: 10ms\n  loss: 0.05\n", "  backend: wifi\n  pcap: true\n", 1)
	dir := filepath.Join(t.TempDir(), "w")
	s := runYAML(t, text, engine.Options{Registry: registry}, dir).Summary
	if s.Backend != "wifi" || s.Network.Total.Rx == 0 {
		t.Fatalf("summary %+v", s.Network.Total)
	}
	tot := s.Network.Total
	var drops uint64
	for r, n := range tot.Drops {
		if r != "end_of_run" { // counted in flight
			drops += n
		}
	}
	if s.InFlight != tot.Drops["end_of_run"] {
		t.Errorf("in flight %d, but the backend reported %d end_of_run", s.InFlight, tot.Drops["end_of_run"])
	}
	if tot.Rx+drops+s.InFlight != tot.Expected {
		t.Errorf("rx %d + drops %d + in flight %d != expected %d", tot.Rx, drops, s.InFlight, tot.Expected)
	}
	if st, err := os.Stat(filepath.Join(dir, "capture.pcap")); err != nil || st.Size() < 1000 {
		t.Fatalf("capture.pcap: %v", err)
	}
	// Deterministic: a second run writes the same trace and capture.
	dir2 := filepath.Join(t.TempDir(), "w2")
	runYAML(t, text, engine.Options{Registry: registry}, dir2)
	for _, f := range []string{"trace.csv", "capture.pcap", "vehicles.csv"} {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, _ := os.ReadFile(filepath.Join(dir2, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two identical runs", f)
		}
	}
}

// TestMunils50WifiRouting: munils-50 over 802.11a with AODV (the built-in
// munils-50-wifi): the UAVs relay the ground station's commands and each
// other's telemetry, every UAV completes both legs, and none collides.
func TestMunils50WifiRouting(t *testing.T) {
	short.Skip(t, "takes several seconds")
	text, ok := scenarios.Lookup("munils-50-wifi")
	if !ok {
		t.Fatal("no built-in munils-50-wifi")
	}
	dir := t.TempDir()
	s := runYAML(t, string(text), engine.Options{Registry: registry}, dir).Summary
	_, rows := readCSV(t, filepath.Join(dir, "routing.csv"))
	var forwarded int
	for _, r := range rows {
		v, _ := strconv.Atoi(r[3])
		forwarded += v
	}
	_, ev := readCSV(t, filepath.Join(dir, "events.csv"))
	done := map[string]bool{}
	for _, r := range ev {
		if r[3] == "leg_done" && strings.HasSuffix(r[4], " leg=1") {
			done[r[4]] = true
		}
	}
	t.Logf("%d UAVs finished leg 2, %d data packets forwarded, separation %+v", len(done), forwarded, s.Separation)
	if forwarded == 0 {
		t.Errorf("no packet was relayed")
	}
	if len(done) != 50 {
		t.Errorf("%d of 50 UAVs finished their last leg", len(done))
	}
	if s.Separation.Collisions != 0 {
		t.Errorf("separation %+v", s.Separation)
	}
}
