package ardupilot_test

import (
	"encoding/csv"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"skyloop/internal/runtest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"skyloop/ardupilot"
	"skyloop/engine"
	"skyloop/geom"
	"skyloop/mavlink"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/scenarios"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"
)

// The real-firmware tests run ArduCopter SITL (SKYLOOP_ARDUPILOT_DIR: the
// ArduPilot tree it was built in) and skip without it. They run one at a
// time: instance numbers (ports, working directories) start from 0 in
// every run.

func needArduPilot(t *testing.T) {
	t.Helper()
	if os.Getenv(ardupilot.EnvDir) == "" {
		t.Skipf("%s is not set: the real-firmware tests need an ArduCopter SITL build (scripts/build-ardupilot-sitl.sh, docs/ardupilot.md); CI replays a transcript instead", ardupilot.EnvDir)
	}
}

func runText(t *testing.T, name, text string) (*runner.Result, string) {
	t.Helper()
	return runtest.Run(t, registry, name, text)
}

// tracks reads vehicles.csv: per vehicle, its positions and whether its
// motors spun.
func tracks(t *testing.T, dir string) (map[int][]geom.Vec3, map[int]bool) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "vehicles.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	pos, armed := map[int][]geom.Vec3{}, map[int]bool{}
	for _, row := range rows[1:] {
		id, _ := strconv.Atoi(row[1])
		x, _ := strconv.ParseFloat(row[2], 64)
		y, _ := strconv.ParseFloat(row[3], 64)
		z, _ := strconv.ParseFloat(row[4], 64)
		pos[id] = append(pos[id], geom.V(x, y, z))
		armed[id] = armed[id] || row[12] == "1"
	}
	return pos, armed
}

func highest(tr []geom.Vec3) float64 {
	h := 0.0
	for _, p := range tr {
		h = max(h, p.Z)
	}
	return h
}

// gcsComplete checks that the ground station's scripts all completed.
func gcsComplete(t *testing.T, res *runner.Result, node string, n int) {
	t.Helper()
	gcs, _ := res.Summary.Agents[node]["mavlink_gcs"].(map[string]any)
	scripts := 0
	for k, v := range gcs {
		if m, ok := v.(map[string]any); ok {
			scripts++
			if m["complete"] != true {
				t.Errorf("ground station %s's script for %s incomplete: %v", node, k, m)
			}
		}
	}
	if scripts != n {
		t.Errorf("ground station %s reports %d scripts, want %d", node, scripts, n)
	}
}

// TestArduCopterGuidedTakeoffLand: one ArduCopter passes its pre-arm
// checks, is armed in GUIDED by the built-in ground station across the
// Wi-Fi model, takes off to 5 m (relative), lands and disarms by itself.
func TestArduCopterGuidedTakeoffLand(t *testing.T) {
	needArduPilot(t)
	res, dir := runText(t, "ap.yaml", `
name: ap-takeoff-land
seed: 1
duration: 100s
tick: 1ms
vehicles:
  - name: copter
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params: {preset: iris, controller: ardupilot-sitl}
    behaviors:
      - {type: mavlink, gcs: [gcs]}
nodes:
  - name: gcs
    position: [-10, 10, 1]
    behaviors:
      - type: mavlink_gcs
        group: copter
        mission:
          - {cmd: takeoff, alt: 5}
          - {cmd: land}
network:
  backend: wifi
`)
	pos, armed := tracks(t, dir)
	if h := highest(pos[0]); !armed[0] || math.Abs(h-5) > 0.8 {
		t.Errorf("motors spun %v, highest %.2f m; want about 5 m", armed[0], h)
	}
	v := res.Summary.Vehicles[0]
	if v.Final.Z > 0.05 || math.Hypot(v.Final.X, v.Final.Y) > 2 || v.Mode != "disarmed" {
		t.Errorf("ended at %v in mode %s, want landed near home with the motors stopped", v.Final, v.Mode)
	}
	gcsComplete(t, res, "gcs", 1)
	// events.csv tells the flight as the stand-in's does: armed (from
	// ArduPilot's heartbeats), takeoff and touchdown (from the truth),
	// disarmed, with ArduPilot's mode changes between.
	var got []string
	for _, e := range eventNames(t, dir, "0") {
		if e == "armed" || e == "takeoff" || e == "touchdown" || e == "disarmed" {
			got = append(got, e)
		}
	}
	if want := "armed takeoff touchdown disarmed"; strings.Join(got, " ") != want {
		t.Errorf("events of copter-0 (node 0) %q, want %q", got, want)
	}
	if !slices.Contains(eventNames(t, dir, "0"), "mode") {
		t.Error("no mode event for copter-0 (node 0)")
	}
}

// eventNames returns the names of the events of node (its number) in
// events.csv, in order.
func eventNames(t *testing.T, dir, node string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "events.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rows[1:] {
		if len(r) > 3 && r[1] == node {
			names = append(names, r[3])
		}
	}
	return names
}

// TestArduPilotChain runs scenarios/ubanc-chain-ardupilot.yaml: the three
// drones fly in turn, each started by the one before across the network.
func TestArduPilotChain(t *testing.T) {
	needArduPilot(t)
	text, _ := scenarios.Lookup("ubanc-chain-ardupilot")
	res, dir := runText(t, "ubanc-chain-ardupilot.yaml", string(text))
	pos, _ := tracks(t, dir)
	for i := 0; i < 3; i++ {
		start := res.Summary.Vehicles[i].Start
		loiter := start.Add(geom.V(5, 0, 5))
		best := math.Inf(1)
		for _, p := range pos[i] {
			best = min(best, p.Dist(loiter))
		}
		if best > 1.5 {
			t.Errorf("drone %d came no closer than %.2f m to its loiter point %v", i, best, loiter)
		}
		if v := res.Summary.Vehicles[i]; v.Final.Z > 0.05 {
			t.Errorf("drone %d ended at %v, not landed", i, v.Final)
		}
	}
	gcsComplete(t, res, "gcs", 1)
	t.Logf("%s", fmt.Sprint(res.Summary.Agents))
}

// TestMixedSwarm: a PX4, an ArduCopter and a stand-in in one run, each
// flown through the same ground-station script (takeoff 5 m, 5 m east,
// land) across the Wi-Fi model. Needs SKYLOOP_PX4_DIR too.
func TestMixedSwarm(t *testing.T) {
	needArduPilot(t)
	if os.Getenv("SKYLOOP_PX4_DIR") == "" {
		t.Skip("SKYLOOP_PX4_DIR is not set: the mixed swarm needs PX4 SITL too")
	}
	mission := `
        mission:
          - {cmd: takeoff, alt: 5}
          - {cmd: waypoint, offset: [5, 0, 5], time: 1s}
          - {cmd: land, offset: [5, 0, 0]}`
	res, dir := runText(t, "mixed.yaml", `
name: mixed
seed: 1
duration: 110s
tick: 1ms
vehicles:
  - name: px4
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 10}
    params: {preset: iris, controller: px4-sitl, px4: {params: {NAV_ACC_RAD: 2}}}
    behaviors: [{type: mavlink, gcs: [gcs]}]
  - name: ardu
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 10, 0], spacing: 10}
    params: {preset: iris, controller: ardupilot-sitl}
    behaviors: [{type: mavlink, gcs: [gcs]}]
  - name: standin
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 20, 0], spacing: 10}
    params: {preset: iris}
    behaviors: [{type: mavlink, gcs: [gcs]}]
nodes:
  - name: gcs
    position: [-10, 10, 1]
    behaviors:
      - type: mavlink_gcs
        group: px4`+mission+`
      - type: mavlink_gcs
        group: ardu`+mission+`
      - type: mavlink_gcs
        group: standin`+mission+`
network:
  backend: wifi
`)
	pos, _ := tracks(t, dir)
	for i := 0; i < 3; i++ {
		v := res.Summary.Vehicles[i]
		if h := highest(pos[i]); math.Abs(h-5) > 1 {
			t.Errorf("%s: highest %.2f m, want about 5", v.Name, h)
		}
		if want := v.Start.Add(geom.V(5, 0, 0)); v.Final.Dist(want) > 1.5 || v.Mode != "disarmed" {
			t.Errorf("%s: ended at %v in mode %s, want landed near %v, disarmed", v.Name, v.Final, v.Mode, want)
		}
	}
}

// TestArduPilotEstimatesTruth holds the vehicle still on the ground, level,
// facing north, and checks what ArduPilot estimates (ATTITUDE,
// LOCAL_POSITION_NED, GLOBAL_POSITION_INT, asked for and read by a ground
// station behind the mavlink_udp gateway) against the truth.
func TestArduPilotEstimatesTruth(t *testing.T) {
	needArduPilot(t)
	gcs, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer gcs.Close()
	text := fmt.Sprintf(`
name: ap-still
seed: 5
duration: 60s
tick: 1ms
vehicles:
  - name: copter
    kind: multirotor
    count: 1
    yaw: 90
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params: {preset: iris, controller: ardupilot-sitl}
    behaviors:
      - {type: mavlink, gcs: [qgc]}
nodes:
  - name: qgc
    position: [-5, 0, 1]
    behaviors:
      - {type: mavlink_udp, remote: "127.0.0.1:%d"}
network:
  backend: ideal
`, gcs.LocalAddr().(*net.UDPAddr).Port)
	done := startRun("still.yaml", text, "")
	enc, dec := mavlink.NewEncoder(255, 190), mavlink.NewDecoder()
	buf := make([]byte, 65536)
	var att *common.MessageAttitude
	var local *common.MessageLocalPositionNed
	var global *common.MessageGlobalPositionInt
	var gw *net.UDPAddr
	var asked time.Time
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
			continue
		default:
		}
		gcs.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if n, from, err := gcs.ReadFromUDP(buf); err == nil {
			gw = from
			dec.Decode(buf[:n], func(f frame.Frame) {
				switch m := f.GetMessage().(type) {
				case *common.MessageAttitude:
					att = m
				case *common.MessageLocalPositionNed:
					local = m
				case *common.MessageGlobalPositionInt:
					if m.Lat != 0 || m.Lon != 0 {
						global = m
					}
				}
			})
		}
		if gw != nil && time.Since(asked) > 200*time.Millisecond {
			asked = time.Now()
			b, _ := enc.Encode(&common.MessageRequestDataStream{TargetSystem: 1, TargetComponent: 1,
				ReqStreamId: uint8(common.MAV_DATA_STREAM_ALL), ReqMessageRate: 4, StartStop: 1})
			gcs.WriteToUDP(b, gw)
		}
	}
	deg := func(r float32) float64 { return float64(r) * 180 / math.Pi }
	if att == nil || local == nil || global == nil {
		t.Fatalf("ArduPilot sent no estimate (ATTITUDE %v, LOCAL_POSITION_NED %v, GLOBAL_POSITION_INT %v)", att != nil, local != nil, global != nil)
	}
	if math.Abs(deg(att.Roll)) > 1 || math.Abs(deg(att.Pitch)) > 1 || math.Abs(deg(att.Yaw)) > 3 {
		t.Errorf("ArduPilot's attitude roll %.2f pitch %.2f yaw %.2f deg, want level and facing north", deg(att.Roll), deg(att.Pitch), deg(att.Yaw))
	}
	if math.Hypot(float64(local.X), float64(local.Y)) > 0.5 || math.Abs(float64(local.Z)) > 0.5 {
		t.Errorf("ArduPilot's local position %.2f %.2f %.2f m (NED), want the origin", local.X, local.Y, local.Z)
	}
	if math.Abs(float64(global.Lat)-473977420) > 50 || math.Abs(float64(global.Lon)-85455940) > 70 {
		t.Errorf("ArduPilot's global position %d %d, want 47.397742 8.545594", global.Lat, global.Lon)
	}
	t.Logf("attitude %.2f %.2f %.2f deg; local %.2f %.2f %.2f m; global %d %d", deg(att.Roll), deg(att.Pitch), deg(att.Yaw), local.X, local.Y, local.Z, global.Lat, global.Lon)
}

// TestArduCopterRebootMidRun: a ground station behind the gateway reboots
// ArduCopter (MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN); SITL starts again in the
// same process with a new socket and its frame count from 0, the bridge
// follows it (a "restarted" event), and ArduCopter talks again.
func TestArduCopterRebootMidRun(t *testing.T) {
	needArduPilot(t)
	gcs, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer gcs.Close()
	text := fmt.Sprintf(`
name: ap-reboot
seed: 5
duration: 40s
tick: 1ms
vehicles:
  - name: copter
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params: {preset: iris, controller: ardupilot-sitl}
    behaviors:
      - {type: mavlink, gcs: [qgc]}
nodes:
  - name: qgc
    position: [-5, 0, 1]
    behaviors:
      - {type: mavlink_udp, remote: "127.0.0.1:%d"}
network:
  backend: ideal
`, gcs.LocalAddr().(*net.UDPAddr).Port)
	dir := filepath.Join(t.TempDir(), "run")
	done := startRun("reboot.yaml", text, dir)
	enc, dec := mavlink.NewEncoder(255, 190), mavlink.NewDecoder()
	buf := make([]byte, 65536)
	var gw *net.UDPAddr
	rebooted, heardAfter := false, 0
	var sentAt time.Time
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
			continue
		default:
		}
		gcs.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if n, from, err := gcs.ReadFromUDP(buf); err == nil {
			gw = from
			dec.Decode(buf[:n], func(f frame.Frame) {
				if _, ok := f.GetMessage().(*common.MessageHeartbeat); ok && rebooted && time.Since(sentAt) > 500*time.Millisecond {
					heardAfter++
				}
			})
		}
		if gw != nil && !rebooted {
			rebooted, sentAt = true, time.Now()
			b, _ := enc.Encode(&common.MessageCommandLong{TargetSystem: 1, TargetComponent: 1,
				Command: common.MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN, Param1: 1})
			gcs.WriteToUDP(b, gw)
		}
	}
	ev, err := os.ReadFile(filepath.Join(dir, "events.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ev), "restarted,ArduPilot") {
		t.Errorf("no restart in events.csv:\n%s", ev)
	}
	if heardAfter == 0 {
		t.Error("no heartbeat from ArduCopter after its reboot")
	}
}

// startRun runs a scenario in the background, writing its files to dir
// ("" for none); the channel gets how it ended.
func startRun(name, text, dir string) <-chan error {
	done := make(chan error, 1)
	go func() {
		sc, err := scenario.Parse(name, []byte(text), registry.Schema())
		if err != nil {
			done <- err
			return
		}
		r, err := engine.Build(sc, engine.Options{Registry: registry})
		if err != nil {
			done <- err
			return
		}
		_, err = runner.Execute(r, dir, runner.Options{})
		done <- err
	}()
	return done
}
