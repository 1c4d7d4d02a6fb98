package px4sitl_test

import (
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"skyloop/internal/runtest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"

	"skyloop/engine"
	"skyloop/geom"
	"skyloop/internal/fwtest"
	"skyloop/mavlink"
	"skyloop/px4sitl"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/sim"
	"skyloop/transcript"
)

// The real-firmware tests run PX4 SITL (SKYLOOP_PX4_DIR: its
// build/px4_sitl_default directory) and skip without it. They run one at a
// time: PX4 instances are numbered from 0 in every run, and an instance
// number (its ports, its lock file) can be used by one PX4 at a time.

func needPX4(t *testing.T) {
	t.Helper()
	if os.Getenv(px4sitl.EnvDir) == "" {
		t.Skipf("%s is not set: the real-firmware tests need a PX4 SITL build (scripts/build-px4-sitl.sh, docs/px4.md); CI replays transcripts instead", px4sitl.EnvDir)
	}
}

// missionScenario flies count PX4 Iris, 5 m apart, through takeoff to 5 m,
// three waypoints of a 12 m square and a landing at home, commanded by the
// built-in ground station over network (a network section).
func missionScenario(count int, seed int, network string) string {
	return missionScenarioFor(count, seed, 60, network)
}

// missionScenarioFor is missionScenario lasting secs simulated seconds.
func missionScenarioFor(count, seed, secs int, network string) string {
	return fmt.Sprintf(`
name: px4-test
seed: %d
duration: %ds
tick: 1ms
vehicles:
  - name: iris
    kind: multirotor
    count: %d
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params:
      preset: iris
      controller: px4-sitl
      px4: {params: {NAV_ACC_RAD: 2}}
    behaviors:
      - {type: mavlink, gcs: [gcs]}
nodes:
  - name: gcs
    position: [-10, 10, 1]
    behaviors:
      - type: mavlink_gcs
        group: iris
        start: 1s
        mission:
          - {cmd: takeoff, alt: 5}
          - {cmd: waypoint, offset: [12, 0, 5], time: 1s}
          - {cmd: waypoint, offset: [12, 12, 5], time: 1s}
          - {cmd: waypoint, offset: [0, 12, 5], time: 1s}
          - {cmd: land, offset: [0, 0, 0]}
network:
%s
outputs:
  sample_period: 100ms
`, seed, secs, count, network)
}

func runText(t *testing.T, text string) (*runner.Result, string) {
	t.Helper()
	return runtest.Run(t, registry, "px4-test.yaml", text)
}

// track is one vehicle's sampled positions.
type track []geom.Vec3

func readTracks(t *testing.T, dir string) map[int]track {
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
	out := map[int]track{}
	for _, row := range rows[1:] {
		id, _ := strconv.Atoi(row[1])
		x, _ := strconv.ParseFloat(row[2], 64)
		y, _ := strconv.ParseFloat(row[3], 64)
		z, _ := strconv.ParseFloat(row[4], 64)
		out[id] = append(out[id], geom.V(x, y, z))
	}
	return out
}

// closest returns the track's closest approach to p.
func (tr track) closest(p geom.Vec3) float64 {
	d := math.Inf(1)
	for _, q := range tr {
		d = min(d, q.Dist(p))
	}
	return d
}

// checkMission checks that every vehicle flew the square and landed at
// home, disarmed, and that the ground station saw it through.
func checkMission(t *testing.T, res *runner.Result, dir string, count int) {
	t.Helper()
	tracks := readTracks(t, dir)
	for i := 0; i < count; i++ {
		home := geom.V(5*float64(i), 0, 0)
		tr := tracks[i]
		for _, wp := range []geom.Vec3{{X: 0, Y: 0, Z: 5}, {X: 12, Y: 0, Z: 5}, {X: 12, Y: 12, Z: 5}, {X: 0, Y: 12, Z: 5}} {
			if d := tr.closest(home.Add(wp)); d > 2.5 {
				t.Errorf("vehicle %d passed %.2f m from waypoint %v (home + %v)", i, d, home.Add(wp), wp)
			}
		}
		v := res.Summary.Vehicles[i]
		if v.Final.Dist(home) > 1.5 || v.Mode != "disarmed" {
			t.Errorf("vehicle %d ended at %v in mode %s, want landed near home %v, disarmed", i, v.Final, v.Mode, home)
		}
	}
	gcs, _ := res.Summary.Agents["gcs"]["mavlink_gcs"].(map[string]any)
	if gcs == nil {
		t.Fatalf("no ground station report in %v", res.Summary.Agents)
	}
	scripts := 0
	for k, v := range gcs {
		if m, ok := v.(map[string]any); ok {
			scripts++
			if m["complete"] != true {
				t.Errorf("ground station script for %s incomplete: %v", k, m)
			}
		}
	}
	if scripts != count {
		t.Errorf("the ground station reports %d scripts, want %d", scripts, count)
	}
}

// TestPX4MissionOverWiFi: one real PX4 arms, takes off to 5 m, flies three
// waypoints and lands on skyloop's physics, commanded by the built-in
// ground station across the native 802.11a model.
func TestPX4MissionOverWiFi(t *testing.T) {
	needPX4(t)
	res, dir := runText(t, missionScenario(1, 1, "  backend: wifi"))
	checkMission(t, res, dir, 1)
}

// TestPX4ExampleOnALoadedMachine runs examples/px4/mission.yaml as a user
// would, with two CPU-bound loops beside it: PX4's links come up later in
// simulated time than on a quiet machine, and the ground station waits for
// PX4's readiness (heartbeat, home, pre-arm checks) instead of a fixed
// time, so the mission still completes and the vehicle lands disarmed.
func TestPX4ExampleOnALoadedMachine(t *testing.T) {
	needPX4(t)
	text, err := os.ReadFile(filepath.Join("..", "examples", "px4", "mission.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fwtest.Busy(t, 2)
	res, _ := runText(t, string(text))
	gcs, _ := res.Summary.Agents["gcs"]["mavlink_gcs"].(map[string]any)
	for k, v := range gcs {
		if m, ok := v.(map[string]any); ok && m["complete"] != true {
			t.Errorf("ground station script for %s incomplete on a loaded machine: %v", k, m)
		}
	}
	if v := res.Summary.Vehicles[0]; v.Mode != "disarmed" || v.Final.Z > 0.05 {
		t.Errorf("ended at %v in mode %s, want landed and disarmed", v.Final, v.Mode)
	}
}

// TestPX4MissionLossy: the same with 30% of the packets lost each way; the
// ground station's retries get the mission through (later: arming and the
// start take some tries, hence the longer run).
func TestPX4MissionLossy(t *testing.T) {
	needPX4(t)
	res, dir := runText(t, missionScenarioFor(1, 1, 90, "  backend: impair\n  loss: 0.3\n  latency: 5ms"))
	checkMission(t, res, dir, 1)
	if pdr := res.Summary.Network.Total.PDR; pdr > 0.75 || pdr < 0.65 {
		t.Errorf("PDR %.3f, want about 0.7", pdr)
	}
}

// TestPX4Three: three PX4 instances at once, each flying the square from
// its own home.
func TestPX4Three(t *testing.T) {
	needPX4(t)
	res, dir := runText(t, missionScenario(3, 1, "  backend: wifi"))
	checkMission(t, res, dir, 3)
}

// TestPX4Determinism runs the same scenario twice with the simulator
// link's transcript on and compares what it claims: the vehicle state
// (vehicles.csv) is identical until the first arming, and the simulator
// link (the transcript: PX4's bytes whole, skyloop's as digests) is
// identical up to the exact boundary below, which it reports.
//
// The boundary is PX4's first answer. Until PX4 first answers a
// HIL_SENSOR (its modules take some tens of steps to start), steps go on
// at real-time pace with the motors stopped, so the step PX4 first answers
// depends on the wall clock; after it, PX4 reads and answers MAVLink in
// threads lockstep does not hold, and its startup script brings up the
// MAVLink links at a wall-clock moment (docs/px4.md, Determinism).
func TestPX4Determinism(t *testing.T) {
	needPX4(t)
	var files [2][]byte
	var armed [2]float64
	var recs [2][]transcript.Record
	text := strings.Replace(missionScenario(1, 3, "  backend: ideal"), "px4: {params: {NAV_ACC_RAD: 2}}", "px4: {params: {NAV_ACC_RAD: 2}, transcript: true}", 1)
	for i := range files {
		_, dir := runText(t, text)
		b, err := os.ReadFile(filepath.Join(dir, "vehicles.csv"))
		if err != nil {
			t.Fatal(err)
		}
		files[i] = b
		armed[i] = firstArmed(t, b)
		f, err := os.Open(filepath.Join(dir, "procs", "px4-0.transcript.gz"))
		if err != nil {
			t.Fatal(err)
		}
		recs[i], err = transcript.Read(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	upTo := min(armed[0], armed[1])
	a, b := linesBefore(files[0], upTo), linesBefore(files[1], upTo)
	if !bytes.Equal(a, b) || len(a) == 0 {
		t.Fatalf("the runs differ before the first arming (t = %.1f s): %d and %d bytes", upTo, len(a), len(b))
	}
	// The transcripts: identical until PX4's first answer (its first
	// HIL_ACTUATOR_CONTROLS, message 93) in either run.
	first := [2]int{-1, -1}
	for i := range recs {
		for k, r := range recs[i] {
			if r.FromFirmware && strings.Contains(" "+messageIDs(r.Data)+" ", " 93 ") {
				first[i] = k
				break
			}
		}
		if first[i] < 0 {
			t.Fatalf("run %d: PX4 never answered", i)
		}
	}
	diverge := 0
	for diverge < min(len(recs[0]), len(recs[1])) && sameRecord(recs[0][diverge], recs[1][diverge]) {
		diverge++
	}
	t.Logf("PX4's first answer (HIL_ACTUATOR_CONTROLS): record %d (after %d us) and %d (after %d us); transcripts identical for %d records, the first difference after %d us",
		first[0], recs[0][first[0]].After, first[1], recs[1][first[1]].After, diverge, recs[0][min(diverge, len(recs[0])-1)].After)
	if diverge < min(len(recs[0]), len(recs[1])) {
		t.Logf("first difference: run 0 %s; run 1 %s", describeRecord(recs[0][diverge]), describeRecord(recs[1][diverge]))
	}
	if m := min(first[0], first[1]); diverge < m {
		t.Errorf("the transcripts differ at record %d (after %d us), before PX4's first answer (record %d)", diverge, recs[0][diverge].After, m)
	}
	t.Logf("vehicle state identical until arming (%.1f s and %.1f s); whole files identical: %v", armed[0], armed[1], bytes.Equal(files[0], files[1]))
}

// describeRecord names a transcript record: its direction, step, size
// and, for PX4's, the MAVLink message ids in it.
func describeRecord(r transcript.Record) string {
	if !r.FromFirmware {
		return fmt.Sprintf("skyloop's frames after %d us (digest %x)", r.After, r.Data)
	}
	return fmt.Sprintf("PX4's %d bytes after %d us (message ids %s)", len(r.Data), r.After, messageIDs(r.Data))
}

// messageIDs lists the ids of the MAVLink 2 frames in b.
func messageIDs(b []byte) string {
	var ids []string
	for len(b) >= 10 && b[0] == 0xfd {
		n := 12 + int(b[1])
		if b[2]&1 != 0 {
			n += 13
		}
		ids = append(ids, strconv.Itoa(int(b[7])|int(b[8])<<8|int(b[9])<<16))
		if n > len(b) {
			break
		}
		b = b[n:]
	}
	return strings.Join(ids, " ")
}

func sameRecord(a, b transcript.Record) bool {
	return a.FromFirmware == b.FromFirmware && a.After == b.After && bytes.Equal(a.Data, b.Data)
}

func firstArmed(t *testing.T, csvText []byte) float64 {
	for _, line := range strings.Split(string(csvText), "\n")[1:] {
		f := strings.Split(line, ",")
		if len(f) > 12 && f[12] == "1" {
			ns, _ := strconv.ParseFloat(f[0], 64)
			return ns / 1e9
		}
	}
	t.Fatal("never armed")
	return 0
}

func linesBefore(csvText []byte, sec float64) []byte {
	var out []byte
	for _, line := range bytes.SplitAfter(csvText, []byte("\n")) {
		f := bytes.SplitN(line, []byte(","), 2)
		if ns, err := strconv.ParseFloat(string(f[0]), 64); err == nil && ns/1e9 >= sec {
			break
		}
		out = append(out, line...)
	}
	return out
}

// TestPX4EstimatesTruth holds the vehicle still on the ground, level,
// facing north, and checks what PX4 estimates (ATTITUDE,
// LOCAL_POSITION_NED, GLOBAL_POSITION_INT, as relayed to the telemetry log)
// against the truth: the frames and units of every reading skyloop sends
// agree with PX4's.
func TestPX4EstimatesTruth(t *testing.T) {
	needPX4(t)
	_, dir := runText(t, `
name: px4-still
seed: 5
duration: 45s
tick: 1ms
vehicles:
  - name: iris
    kind: multirotor
    count: 1
    yaw: 90
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params: {preset: iris, controller: px4-sitl}
    behaviors:
      - type: mavlink
network:
  backend: ideal
`)
	var att *common.MessageAttitude
	var local *common.MessageLocalPositionNed
	var global *common.MessageGlobalPositionInt
	readTlog(t, filepath.Join(dir, "mavlink-iris-0.tlog"), func(us int64, f frame.Frame) {
		// The last readings count: the estimate has settled by then. (PX4
		// starts its MAVLink links late in its startup script, which runs
		// in wall-clock time: some seconds of simulated time in.)
		switch m := f.GetMessage().(type) {
		case *common.MessageAttitude:
			att = m
		case *common.MessageLocalPositionNed:
			local = m
		case *common.MessageGlobalPositionInt:
			global = m
		}
	})
	if att == nil || local == nil || global == nil {
		t.Fatalf("PX4 sent no estimate (ATTITUDE %v, LOCAL_POSITION_NED %v, GLOBAL_POSITION_INT %v)", att != nil, local != nil, global != nil)
	}
	deg := func(r float32) float64 { return float64(r) * 180 / math.Pi }
	if math.Abs(deg(att.Roll)) > 1 || math.Abs(deg(att.Pitch)) > 1 || math.Abs(deg(att.Yaw)) > 3 {
		t.Errorf("PX4's attitude roll %.2f pitch %.2f yaw %.2f deg, want level and facing north (0 0 0)", deg(att.Roll), deg(att.Pitch), deg(att.Yaw))
	}
	if math.Hypot(float64(local.X), float64(local.Y)) > 0.5 || math.Abs(float64(local.Z)) > 0.5 {
		t.Errorf("PX4's local position %.2f %.2f %.2f m (NED), want the origin", local.X, local.Y, local.Z)
	}
	if math.Abs(float64(global.Lat)-473977420) > 50 || math.Abs(float64(global.Lon)-85455940) > 70 || math.Abs(float64(global.Alt)-488000) > 1000 {
		t.Errorf("PX4's global position %d %d %d mm, want 47.397742 8.545594 488 m", global.Lat, global.Lon, global.Alt)
	}
	if h := float64(global.Hdg) / 100; math.Min(h, 360-h) > 3 {
		t.Errorf("PX4's heading %.2f deg, want 0 (north)", h)
	}
}

// readTlog calls fn with every frame of a telemetry log and its time in
// microseconds of simulated time.
func readTlog(t *testing.T, path string, fn func(us int64, f frame.Frame)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := mavlink.NewDecoder()
	epoch := int64(1767225600000000) // mavlink.DefaultEpoch in µs
	for len(b) >= 8 {
		us := int64(binary.BigEndian.Uint64(b)) - epoch
		n := mavlink.FrameLen(b[8:])
		if n == 0 || 8+n > len(b) {
			t.Fatalf("telemetry log %s: record at %d us is not one whole frame", path, us)
		}
		dec.Decode(b[8:8+n], func(f frame.Frame) { fn(us, f) })
		b = b[8+n:]
	}
}

// BenchmarkPX4OnSkyloop runs n PX4 instances on skyloop's physics for 60
// simulated seconds (no behaviours, ideal network), to compare with
// BenchmarkPX4Alone. Run with SKYLOOP_PX4_DIR set and -benchtime 1x.
func BenchmarkPX4OnSkyloop(b *testing.B) {
	if os.Getenv(px4sitl.EnvDir) == "" {
		b.Skipf("%s is not set: this benchmark runs PX4 SITL", px4sitl.EnvDir)
	}
	for _, n := range []int{1, 10, 20} {
		b.Run(fmt.Sprintf("vehicles=%d", n), func(b *testing.B) {
			text := fmt.Sprintf(`
name: px4-bench
seed: 1
duration: 60s
tick: 1ms
vehicles:
  - name: iris
    kind: multirotor
    count: %d
    spawn: {layout: grid, origin: [0, 0, 0], spacing: 5}
    params: {preset: iris, controller: px4-sitl}
network:
  backend: ideal
`, n)
			sc, err := scenario.Parse("px4-bench.yaml", []byte(text), registry.Schema())
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				r, err := engine.Build(sc, engine.Options{Registry: registry})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if _, err := runner.Execute(r, "", runner.Options{}); err != nil {
					b.Fatal(err)
				}
				wall := time.Since(start)
				b.ReportMetric(60/wall.Seconds(), "x_realtime")
				b.ReportMetric(wall.Seconds(), "wall_s")
			}
		})
	}
}

// TestPX4ThroughGateway plays an external ground station on UDP (as
// QGroundControl listens on 14550) in front of two real PX4s: through the
// mavlink_udp gateway and the simulated network it hears both, arms and
// launches the second only, and sees it climb.
func TestPX4ThroughGateway(t *testing.T) {
	needPX4(t)
	gcs, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer gcs.Close()
	text := fmt.Sprintf(`
name: px4-gateway
seed: 1
duration: 300s
tick: 1ms
vehicles:
  - name: iris
    kind: multirotor
    count: 2
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params: {preset: iris, controller: px4-sitl}
    behaviors:
      - {type: mavlink, gcs: [qgc]}
nodes:
  - name: qgc
    position: [0, -20, 1]
    behaviors:
      - {type: mavlink_udp, remote: "127.0.0.1:%d"}
network:
  backend: wifi
`, gcs.LocalAddr().(*net.UDPAddr).Port)
	sc, err := scenario.Parse("gateway.yaml", []byte(text), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	var halt atomic.Bool
	r, err := engine.Build(sc, engine.Options{Registry: registry, Realtime: 2, Stop: halt.Load})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := runner.Execute(r, "", runner.Options{})
		done <- err
	}()
	enc := mavlink.NewEncoder(255, 190)
	dec := mavlink.NewDecoder()
	buf := make([]byte, 65536)
	heard := map[uint8]bool{}
	var gw *net.UDPAddr
	var lastArm time.Time
	armed, tookOff, climbed := false, false, false
	var alt1 int32
	send := func(m *common.MessageCommandLong) {
		b, err := enc.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		gcs.WriteToUDP(b, gw)
	}
	deadline := time.Now().Add(90 * time.Second)
	for !climbed && time.Now().Before(deadline) {
		gcs.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if n, from, err := gcs.ReadFromUDP(buf); err == nil {
			gw = from
			dec.Decode(buf[:n], func(f frame.Frame) {
				switch m := f.GetMessage().(type) {
				case *common.MessageHeartbeat:
					heard[f.GetSystemID()] = true
					if f.GetSystemID() == 2 && m.BaseMode&common.MAV_MODE_FLAG_SAFETY_ARMED != 0 {
						armed = true
					}
				case *common.MessageGlobalPositionInt:
					if f.GetSystemID() == 1 {
						alt1 = max(alt1, m.RelativeAlt)
					}
					if f.GetSystemID() == 2 && m.RelativeAlt > 3000 {
						climbed = true
					}
				}
			})
		}
		switch {
		case gw == nil || !heard[1] || !heard[2]:
		case !armed && time.Since(lastArm) > time.Second: // until PX4 is ready to arm
			lastArm = time.Now()
			send(&common.MessageCommandLong{TargetSystem: 2, TargetComponent: 1, Command: common.MAV_CMD_COMPONENT_ARM_DISARM, Param1: 1})
		case armed && !tookOff:
			tookOff = true
			send(&common.MessageCommandLong{TargetSystem: 2, TargetComponent: 1, Command: common.MAV_CMD_NAV_TAKEOFF,
				Param1: float32(math.NaN()), Param4: float32(math.NaN()), Param5: float32(math.NaN()), Param6: float32(math.NaN()), Param7: 488 + 5})
		}
	}
	halt.Store(true)
	if err := <-done; err != nil && !errors.Is(err, sim.ErrStopped) {
		t.Fatal(err)
	}
	if !climbed {
		t.Fatalf("PX4 2 did not climb through the gateway (heard %v, armed %v, takeoff sent %v)", heard, armed, tookOff)
	}
	if alt1 > 500 {
		t.Errorf("PX4 1 climbed to %d mm though only PX4 2 was commanded", alt1)
	}
}

// TestPX4GroundAltitude flies real PX4 up to 5 m and back down at home and
// checks its altitude estimate on the ground against the truth (0 m):
// GLOBAL_POSITION_INT.relative_alt, and the change of LOCAL_POSITION_NED z
// from its value at arming (its origin is where the estimator started, not
// home), as relayed to the telemetry log, over the last 2 s before arming
// and from 1 s after the touchdown to the end of the run. The bound,
// 0.2 m, is twice the GPS's vertical sigma (0.1 m; the barometer's is
// 0.05 m): the estimate wanders by up to 0.05 m with PX4's defaults (three
// runs) and 0.13 m in one run without its ground-effect deadzone; before
// the accelerometer felt the touchdown, the estimate sank 0.56-0.67 m
// below the ground at touchdown and took some 8 s to come back.
func TestPX4GroundAltitude(t *testing.T) {
	needPX4(t)
	res, dir := runText(t, `
name: px4-ground-alt
seed: 7
duration: 50s
tick: 1ms
vehicles:
  - name: iris
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params: {preset: iris, controller: px4-sitl}
    behaviors:
      - {type: mavlink, gcs: [gcs]}
nodes:
  - name: gcs
    position: [-10, 10, 1]
    behaviors:
      - type: mavlink_gcs
        group: iris
        start: 1s
        mission:
          - {cmd: takeoff, alt: 5}
          - {cmd: waypoint, offset: [0, 0, 5], time: 2s}
          - {cmd: land, offset: [0, 0, 0]}
network:
  backend: ideal
outputs:
  sample_period: 100ms
`)
	v := res.Summary.Vehicles[0]
	if v.Final.Norm() > 1 || v.Mode != "disarmed" {
		t.Fatalf("the vehicle ended at %v in mode %s, want landed at home, disarmed", v.Final, v.Mode)
	}
	// The touchdown, from the truth.
	ev, err := os.ReadFile(filepath.Join(dir, "events.csv"))
	if err != nil {
		t.Fatal(err)
	}
	touchdown := int64(-1)
	for _, line := range strings.Split(string(ev), "\n") {
		if f := strings.Split(line, ","); len(f) > 3 && f[3] == "touchdown" {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			touchdown = ns / 1000
		}
	}
	if touchdown < 0 {
		t.Fatalf("no touchdown in events.csv:\n%s", ev)
	}
	type est struct {
		us     int64
		rel, z float64 // relative altitude (m, up), local z (m, down)
	}
	var ests []est
	var z float64
	haveZ := false
	armedAt := int64(-1)
	readTlog(t, filepath.Join(dir, "mavlink-iris-0.tlog"), func(us int64, f frame.Frame) {
		if f.GetSystemID() != 1 {
			return // the ground station's frames
		}
		switch m := f.GetMessage().(type) {
		case *common.MessageHeartbeat:
			if armedAt < 0 && m.BaseMode&common.MAV_MODE_FLAG_SAFETY_ARMED != 0 {
				armedAt = us
			}
		case *common.MessageLocalPositionNed:
			z, haveZ = float64(m.Z), true
		case *common.MessageGlobalPositionInt:
			if haveZ {
				ests = append(ests, est{us, float64(m.RelativeAlt) / 1000, z})
			}
		}
	})
	if armedAt < 0 || armedAt > touchdown {
		t.Fatalf("PX4 armed at %d us, touchdown at %d us", armedAt, touchdown)
	}
	var z0 float64 // local z at arming
	var before, after int
	var worstBefore, worstAfter est
	for _, e := range ests {
		if e.us <= armedAt {
			z0 = e.z
		}
	}
	for _, e := range ests {
		switch {
		case e.us <= armedAt && e.us > armedAt-2000000:
			before++
			if math.Abs(e.rel) >= math.Abs(worstBefore.rel) {
				worstBefore = e
			}
		case e.us > touchdown+1000000:
			after++
			e.z -= z0
			if max(math.Abs(e.rel), math.Abs(e.z)) >= max(math.Abs(worstAfter.rel), math.Abs(worstAfter.z)) {
				worstAfter = e
			}
		}
	}
	if before == 0 || after < 10 {
		t.Fatalf("%d estimates in the 2 s before arming, %d from 1 s after touchdown: too few to judge", before, after)
	}
	t.Logf("armed at %.2f s, touchdown at %.2f s; largest error before arming: relative altitude %.3f m at %.2f s; after touchdown: relative altitude %.3f m, local z - z at arming %.3f m at %.2f s",
		float64(armedAt)/1e6, float64(touchdown)/1e6, worstBefore.rel, float64(worstBefore.us)/1e6, worstAfter.rel, worstAfter.z, float64(worstAfter.us)/1e6)
	const bound = 0.2
	if math.Abs(worstBefore.rel) > bound {
		t.Errorf("before arming PX4 estimated %.3f m relative altitude at %.2f s, want 0 (within %.2f m)", worstBefore.rel, float64(worstBefore.us)/1e6, bound)
	}
	if math.Abs(worstAfter.rel) > bound || math.Abs(worstAfter.z) > bound {
		t.Errorf("on the ground after landing PX4 estimated %.3f m relative altitude (local z %.3f m from where it armed) at %.2f s, want 0 (within %.2f m)",
			worstAfter.rel, worstAfter.z, float64(worstAfter.us)/1e6, bound)
	}
}
