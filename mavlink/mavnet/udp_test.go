package mavnet_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/gomavlib/v3"
	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/message"

	"skyloop/engine"
	"skyloop/internal/short"
	"skyloop/mavlink"
	"skyloop/mavlink/mavnet"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/sim"
)

const live = `
name: mavlink-live
seed: 1
duration: 600s
tick: 1ms
vehicles:
  - name: drone
    kind: multirotor
    count: 1
    spawn: {layout: explicit, positions: [[0, 0, 0]]}
    behaviors:
      - type: mavlink
network:
  backend: ideal
`

// freePorts returns n UDP ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var conns []*net.UDPConn
	for i := 0; i < n; i++ {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		ports = append(ports, c.LocalAddr().(*net.UDPAddr).Port)
	}
	for _, c := range conns {
		c.Close()
	}
	return ports
}

// startLive runs the one-drone scenario paced at 10x real time with its
// MAVLink endpoint on UDP; stop ends it.
func startLive(t *testing.T) (cfg mavnet.UDPConfig, stop func()) {
	t.Helper()
	p := freePorts(t, 3)
	cfg = mavnet.UDPConfig{Host: "127.0.0.1", BindBase: p[0], OffboardBase: p[1], GCSPort: p[2]}
	sc, err := scenario.Parse("live.yaml", []byte(live), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	var halt atomic.Bool
	r, err := engine.Build(sc, engine.Options{Registry: registry, Realtime: 10, Stop: halt.Load})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := runner.Execute(r, "", runner.Options{Attach: mavnet.UDPAttacher(cfg)})
		done <- err
	}()
	return cfg, func() {
		halt.Store(true)
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, sim.ErrStopped) {
				t.Errorf("run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the run did not stop")
		}
	}
}

// gcs is a small gomavlib ground station for the test.
type gcs struct {
	t    *testing.T
	node *gomavlib.Node
	ch   *gomavlib.Channel
	last map[uint32]message.Message
}

func (g *gcs) next(timeout time.Duration, want func(m message.Message) bool) message.Message {
	g.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case e := <-g.node.Events():
			if fr, ok := e.(*gomavlib.EventFrame); ok && fr.Frame.GetSystemID() == 1 {
				g.ch = fr.Channel
				m := fr.Message()
				g.last[m.GetID()] = m
				if want(m) {
					return m
				}
			}
		case <-deadline:
			g.t.Fatalf("timed out after %v", timeout)
			return nil
		}
	}
}

func (g *gcs) send(m message.Message) {
	g.t.Helper()
	if err := g.node.WriteMessageTo(g.ch, m); err != nil {
		g.t.Fatal(err)
	}
}

func (g *gcs) command(cmd common.MAV_CMD, p ...float32) {
	g.t.Helper()
	var ps [7]float32
	copy(ps[:], p)
	for try := 0; try < 5; try++ {
		g.send(&common.MessageCommandLong{TargetSystem: 1, TargetComponent: 1, Command: cmd, Confirmation: uint8(try),
			Param1: ps[0], Param2: ps[1], Param3: ps[2], Param4: ps[3], Param5: ps[4], Param6: ps[5], Param7: ps[6]})
		ack := g.next(2*time.Second, func(m message.Message) bool {
			a, ok := m.(*common.MessageCommandAck)
			return ok && a.Command == cmd
		}).(*common.MessageCommandAck)
		if ack.Result == common.MAV_RESULT_ACCEPTED {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	g.t.Fatalf("command %v not accepted", cmd)
}

// TestGomavlibClientOverUDP flies the drone from a gomavlib ground station
// over UDP on loopback, as an SDK user would.
func TestGomavlibClientOverUDP(t *testing.T) {
	cfg, stop := startLive(t)
	defer stop()
	node := &gomavlib.Node{
		Endpoints:   []gomavlib.EndpointConf{gomavlib.EndpointUDPServer{Address: fmt.Sprintf("127.0.0.1:%d", cfg.OffboardBase)}},
		Dialect:     common.Dialect,
		OutVersion:  gomavlib.V2,
		OutSystemID: 250,
	}
	if err := node.Initialize(); err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	g := &gcs{t: t, node: node, last: map[uint32]message.Message{}}
	hb := g.next(5*time.Second, func(m message.Message) bool { _, ok := m.(*common.MessageHeartbeat); return ok }).(*common.MessageHeartbeat)
	if hb.Autopilot != common.MAV_AUTOPILOT_PX4 || hb.Type != common.MAV_TYPE_QUADROTOR {
		t.Fatalf("heartbeat %+v", hb)
	}
	home := g.next(5*time.Second, func(m message.Message) bool { _, ok := m.(*common.MessageGlobalPositionInt); return ok }).(*common.MessageGlobalPositionInt)

	g.command(common.MAV_CMD_COMPONENT_ARM_DISARM, 1)
	g.command(common.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, float32(math.NaN()), float32(math.NaN()), float32(math.NaN()), float32(home.Alt)/1000+5)
	g.next(30*time.Second, func(m message.Message) bool {
		p, ok := m.(*common.MessageGlobalPositionInt)
		return ok && p.RelativeAlt > 4500
	})

	// Upload a 2-waypoint mission: 10 m east, then 10 m east and 10 m north.
	const degPerM = 180 / math.Pi / 6371000
	lat0, lon0 := float64(home.Lat)/1e7, float64(home.Lon)/1e7
	wp := [][2]float64{{0, 10}, {10, 10}} // north, east
	g.send(&common.MessageMissionCount{TargetSystem: 1, TargetComponent: 1, Count: 2})
	for sent := 0; sent < 2; {
		req := g.next(5*time.Second, func(m message.Message) bool { _, ok := m.(*common.MessageMissionRequestInt); return ok }).(*common.MessageMissionRequestInt)
		w := wp[req.Seq]
		g.send(&common.MessageMissionItemInt{TargetSystem: 1, TargetComponent: 1, Seq: req.Seq, Frame: common.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT,
			Command: common.MAV_CMD_NAV_WAYPOINT, Autocontinue: 1, Param4: float32(math.NaN()),
			X: int32(math.Round((lat0 + w[0]*degPerM) * 1e7)), Y: int32(math.Round((lon0 + w[1]*degPerM/math.Cos(lat0*math.Pi/180)) * 1e7)), Z: 5})
		sent = max(sent, int(req.Seq)+1)
	}
	ack := g.next(5*time.Second, func(m message.Message) bool { _, ok := m.(*common.MessageMissionAck); return ok }).(*common.MessageMissionAck)
	if ack.Type != common.MAV_MISSION_ACCEPTED {
		t.Fatalf("mission ack %v", ack.Type)
	}
	g.command(common.MAV_CMD_MISSION_START)
	g.next(60*time.Second, func(m message.Message) bool { r, ok := m.(*common.MessageMissionItemReached); return ok && r.Seq == 1 })
	at := g.last[33].(*common.MessageGlobalPositionInt)
	north := (float64(at.Lat)/1e7 - lat0) / degPerM
	east := (float64(at.Lon)/1e7 - lon0) / degPerM * math.Cos(lat0*math.Pi/180)
	if math.Hypot(north-10, east-10) > 3.5 || math.Abs(float64(at.RelativeAlt)/1000-5) > 1 {
		t.Fatalf("at the second waypoint the drone reports %.1f m north, %.1f m east, %.1f m up", north, east, float64(at.RelativeAlt)/1000)
	}
	if mode := mavlink.ModeFromCustom(g.last[0].(*common.MessageHeartbeat).CustomMode); mode != mavlink.ModeMission {
		t.Errorf("mode during the mission: %v", mode)
	}
	g.command(common.MAV_CMD_NAV_LAND)
	g.next(60*time.Second, func(m message.Message) bool {
		h, ok := m.(*common.MessageHeartbeat)
		es, _ := g.last[245].(*common.MessageExtendedSysState)
		return ok && h.BaseMode&common.MAV_MODE_FLAG_SAFETY_ARMED == 0 && es != nil && es.LandedState == common.MAV_LANDED_STATE_ON_GROUND
	})
}

// TestNodeMavlinkClientOverUDP flies the drone with node-mavlink, a MAVLink
// library for Node.js that skyloop did not write (mavlink/testdata/node/fly.js).
func TestNodeMavlinkClientOverUDP(t *testing.T) {
	short.Skip(t, "needs Node.js")
	dir := filepath.Join("..", "testdata", "node")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "node-mavlink"))
	}
	if err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_NODE") != "" {
			t.Fatalf("node-mavlink is required (SKYLOOP_REQUIRE_NODE) but missing: %v; run npm ci in mavlink/testdata/node", err)
		}
		t.Skipf("skipping: Node.js or node-mavlink missing (%v); install Node.js and run `npm ci` in mavlink/testdata/node (CI does)", err)
	}
	cfg, stop := startLive(t)
	defer stop()
	cmd := exec.Command(node, "fly.js", fmt.Sprint(cfg.OffboardBase), fmt.Sprint(cfg.BindBase), "488")
	cmd.Dir = dir
	out, err := cmd.Output()
	var res struct {
		OK    bool    `json:"ok"`
		Why   string  `json:"why"`
		North float64 `json:"north_at_wp2"`
		East  float64 `json:"east_at_wp2"`
		Seen  struct {
			Heartbeats     int     `json:"heartbeats"`
			MaxRelAlt      float64 `json:"maxRelAlt"`
			Reached        []int   `json:"reached"`
			ArmedSeen      bool    `json:"armedSeen"`
			LandedDisarmed bool    `json:"landedDisarmed"`
		} `json:"seen"`
	}
	if jerr := json.Unmarshal([]byte(strings.TrimSpace(string(out))), &res); jerr != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node fly.js: %v; stdout %q; stderr %s", err, out, stderr)
	}
	if !res.OK || err != nil {
		t.Fatalf("node-mavlink flight failed: %s (%+v)", res.Why, res.Seen)
	}
	s := res.Seen
	if s.Heartbeats < 3 || !s.ArmedSeen || !s.LandedDisarmed || len(s.Reached) != 2 || s.MaxRelAlt < 4.5 || s.MaxRelAlt > 6 {
		t.Fatalf("telemetry seen by node-mavlink: %+v", s)
	}
	if math.Hypot(res.North-10, res.East-10) > 3.5 { // reached at NAV_ACC_RAD (2 m), position sampled at 5 Hz
		t.Fatalf("at the second waypoint: %.1f m north, %.1f m east; want 10, 10", res.North, res.East)
	}
	t.Logf("node-mavlink flew the mission: %d heartbeats, max %.2f m, second waypoint at %.1f N %.1f E", s.Heartbeats, s.MaxRelAlt, res.North, res.East)
}
