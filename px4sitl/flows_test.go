package px4sitl_test

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"
	"github.com/bluenviron/gomavlib/v3/pkg/message"

	"skyloop/engine"
	"skyloop/mavlink"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/sim"
)

// flowClient is a ground station outside skyloop, behind the mavlink_udp
// gateway, that runs the same command flows against the stand-in and
// against real PX4 and notes what each answers.
type flowClient struct {
	t     *testing.T
	conn  *net.UDPConn
	gw    *net.UDPAddr
	enc   *mavlink.Encoder
	dec   *mavlink.Decoder
	buf   []byte
	start time.Time
	speed float64 // real-time factor of the run

	// What the vehicle (system 1) last reported.
	mode   mavlink.FlightMode
	armed  bool
	relAlt float64 // m
	landed common.MAV_LANDED_STATE
	acks   []*common.MessageCommandAck
	texts  []string
	modes  []string // every mode change, "t MODE"
}

// sim returns the simulated time since the client started (approximate:
// wall time times the pace).
func (c *flowClient) sim() float64 { return time.Since(c.start).Seconds() * c.speed }

// poll reads what arrives for up to d of wall time.
func (c *flowClient) poll(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		c.conn.SetReadDeadline(end)
		n, from, err := c.conn.ReadFromUDP(c.buf)
		if err != nil {
			return
		}
		c.gw = from
		c.dec.Decode(c.buf[:n], func(f frame.Frame) {
			if f.GetSystemID() != 1 {
				return
			}
			switch m := f.GetMessage().(type) {
			case *common.MessageHeartbeat:
				if f.GetComponentID() != 1 {
					return
				}
				mode := mavlink.ModeFromCustom(m.CustomMode)
				armed := m.BaseMode&common.MAV_MODE_FLAG_SAFETY_ARMED != 0
				if mode != c.mode || armed != c.armed || len(c.modes) == 0 {
					c.modes = append(c.modes, fmt.Sprintf("%.1f %s armed=%v", c.sim(), mode, armed))
				}
				c.mode, c.armed = mode, armed
			case *common.MessageGlobalPositionInt:
				c.relAlt = float64(m.RelativeAlt) / 1000
			case *common.MessageExtendedSysState:
				c.landed = m.LandedState
			case *common.MessageCommandAck:
				c.acks = append(c.acks, m)
			case *common.MessageStatustext:
				c.texts = append(c.texts, m.Text)
			}
		})
	}
}

// until polls until cond holds or d of wall time passed.
func (c *flowClient) until(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		c.poll(50 * time.Millisecond)
	}
	return cond()
}

func (c *flowClient) send(m message.Message) {
	b, err := c.enc.Encode(m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.conn.WriteToUDP(b, c.gw)
}

// command sends a COMMAND_LONG to system 1 (component comp) and returns
// the ACK's result, or -1 when none came within a second of wall time.
func (c *flowClient) command(comp uint8, cmd common.MAV_CMD, p ...float32) int {
	var ps [7]float32
	copy(ps[:], p)
	c.acks = c.acks[:0]
	c.send(&common.MessageCommandLong{TargetSystem: 1, TargetComponent: comp, Command: cmd,
		Param1: ps[0], Param2: ps[1], Param3: ps[2], Param4: ps[3], Param5: ps[4], Param6: ps[5], Param7: ps[6]})
	res := -1
	c.until(time.Second, func() bool {
		for _, a := range c.acks {
			if a.Command == cmd {
				res = int(a.Result)
				return true
			}
		}
		return false
	})
	return res
}

func (c *flowClient) textHas(s string) bool {
	for _, t := range c.texts {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}

// flowResult is what one controller did in the flows.
type flowResult struct {
	armAck, takeoffAck, posctlAck, camLandAck, rtlAck int
	defaultAltText                                    bool
	takeoffAlt                                        float64 // highest relative altitude before POSCTL
	posctlMode                                        string
	altAfterCamLand                                   float64
	rtlModes                                          []string
	disarmedAfterLanding                              bool
	modeAfterLanding                                  string
	modes                                             []string
	// lowTakeoff: NAV_TAKEOFF to 0.2 m above home, then 8 m below it:
	// the ACKs and the altitudes reached.
	lowAck, belowAck [2]int
	lowAlt, belowAlt float64
}

// runFlows runs the flows against one vehicle flown by controller.
func runFlows(t *testing.T, controller string) flowResult {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	text := fmt.Sprintf(`
name: flows
seed: 1
duration: 600s
tick: 1ms
vehicles:
  - name: iris
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params: {preset: iris, controller: %s}
    behaviors:
      - {type: mavlink, gcs: [qgc]}
nodes:
  - name: qgc
    position: [0, -10, 1]
    behaviors:
      - {type: mavlink_udp, remote: "127.0.0.1:%d"}
network:
  backend: ideal
`, controller, conn.LocalAddr().(*net.UDPAddr).Port)
	sc, err := scenario.Parse("flows.yaml", []byte(text), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	const speed = 2
	var halt atomic.Bool
	r, err := engine.Build(sc, engine.Options{Registry: registry, Realtime: speed, Stop: halt.Load})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := runner.Execute(r, "", runner.Options{})
		done <- err
	}()
	defer func() {
		halt.Store(true)
		if err := <-done; err != nil && !errors.Is(err, sim.ErrStopped) {
			t.Error(err)
		}
	}()
	c := &flowClient{t: t, conn: conn, enc: mavlink.NewEncoder(255, 190), dec: mavlink.NewDecoder(), buf: make([]byte, 65536),
		start: time.Now(), speed: speed}
	var res flowResult
	if !c.until(60*time.Second, func() bool { return c.gw != nil && len(c.modes) > 0 }) {
		t.Fatalf("%s: no heartbeat", controller)
	}
	nan := float32(math.NaN())
	// Arm (retried until the vehicle is ready), then take off without an
	// altitude: PX4 uses MIS_TAKEOFF_ALT (2.5 m).
	c.until(60*time.Second, func() bool {
		res.armAck = c.command(1, common.MAV_CMD_COMPONENT_ARM_DISARM, 1)
		return res.armAck == int(common.MAV_RESULT_ACCEPTED)
	})
	res.takeoffAck = c.command(1, common.MAV_CMD_NAV_TAKEOFF, nan, 0, 0, nan, nan, nan, nan)
	c.until(20*time.Second, func() bool { return c.relAlt > 2 && c.sim() > 0 })
	c.poll(4 * time.Second)
	res.takeoffAlt = c.relAlt
	res.defaultAltText = c.textHas("default takeoff altitude")
	// Position mode: PX4 reports it (and, without sticks, holds).
	res.posctlAck = c.command(1, common.MAV_CMD_DO_SET_MODE, float32(common.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED), mavlink.MainPosctl)
	c.poll(time.Second)
	res.posctlMode = c.mode.String()
	// A LAND for another component (a camera) is not the autopilot's.
	res.camLandAck = c.command(100, common.MAV_CMD_NAV_LAND, 0, 0, 0, nan, nan, nan, nan)
	c.poll(2 * time.Second)
	res.altAfterCamLand = c.relAlt
	// Return to launch, then watch the modes until it has landed.
	n := len(c.modes)
	res.rtlAck = c.command(1, common.MAV_CMD_NAV_RETURN_TO_LAUNCH)
	c.until(60*time.Second, func() bool { return !c.armed })
	c.poll(3 * time.Second)
	res.rtlModes = append(res.rtlModes, c.modes[n:]...)
	res.disarmedAfterLanding = !c.armed
	res.modeAfterLanding = c.mode.String()
	// Take-offs to low altitudes: 0.2 m above home, then below home.
	for i, alt := range []float32{488 + 0.2, 480} {
		arm := -1
		c.until(20*time.Second, func() bool {
			arm = c.command(1, common.MAV_CMD_COMPONENT_ARM_DISARM, 1)
			return arm == int(common.MAV_RESULT_ACCEPTED)
		})
		ack := c.command(1, common.MAV_CMD_NAV_TAKEOFF, nan, 0, 0, nan, nan, nan, alt)
		best := 0.0
		end := time.Now().Add(8 * time.Second)
		for time.Now().Before(end) {
			c.poll(100 * time.Millisecond)
			best = max(best, c.relAlt)
		}
		if i == 0 {
			res.lowAck, res.lowAlt = [2]int{arm, ack}, best
		} else {
			res.belowAck, res.belowAlt = [2]int{arm, ack}, best
		}
		c.command(1, common.MAV_CMD_NAV_LAND, 0, 0, 0, nan, nan, nan, nan)
		c.until(40*time.Second, func() bool { return !c.armed })
	}
	res.modes = c.modes
	return res
}

// TestFlowsSideBySide runs the same ground-station flows against real PX4
// and against the stand-in, through the gateway, and reports both; it
// fails where they disagree on what docs/px4.md says they agree on.
func TestFlowsSideBySide(t *testing.T) {
	needPX4(t)
	px4 := runFlows(t, "px4-sitl")
	stand := runFlows(t, "px4like")
	for _, r := range []struct {
		name string
		res  flowResult
	}{{"real PX4", px4}, {"stand-in", stand}} {
		t.Logf("%s: arm ACK %d, takeoff(no altitude) ACK %d, default-altitude text %v, climbed to %.2f m; POSCTL ACK %d -> %s; "+
			"LAND to component 100: ACK %d, altitude after %.2f m; RTL ACK %d, modes %v; disarmed after landing %v, mode %s",
			r.name, r.res.armAck, r.res.takeoffAck, r.res.defaultAltText, r.res.takeoffAlt, r.res.posctlAck, r.res.posctlMode,
			r.res.camLandAck, r.res.altAfterCamLand, r.res.rtlAck, r.res.rtlModes, r.res.disarmedAfterLanding, r.res.modeAfterLanding)
		t.Logf("%s: takeoff to home+0.2 m: arm/takeoff ACK %v, highest %.2f m; to home-8 m: ACK %v, highest %.2f m",
			r.name, r.res.lowAck, r.res.lowAlt, r.res.belowAck, r.res.belowAlt)
	}
	if px4.takeoffAck != stand.takeoffAck || math.Abs(px4.takeoffAlt-stand.takeoffAlt) > 0.5 {
		t.Errorf("NAV_TAKEOFF without an altitude: PX4 ACK %d to %.2f m, stand-in ACK %d to %.2f m", px4.takeoffAck, px4.takeoffAlt, stand.takeoffAck, stand.takeoffAlt)
	}
	if px4.posctlMode != stand.posctlMode || px4.posctlAck != stand.posctlAck {
		t.Errorf("DO_SET_MODE POSCTL: PX4 ACK %d and reports %s, the stand-in ACK %d and %s", px4.posctlAck, px4.posctlMode, stand.posctlAck, stand.posctlMode)
	}
	if px4.rtlAck != stand.rtlAck || strings.Join(modeNames(px4.rtlModes), " ") != strings.Join(modeNames(stand.rtlModes), " ") {
		t.Errorf("RTL: PX4 ACK %d, modes %v; stand-in ACK %d, modes %v", px4.rtlAck, px4.rtlModes, stand.rtlAck, stand.rtlModes)
	}
	if px4.camLandAck != stand.camLandAck || (px4.altAfterCamLand > 1) != (stand.altAfterCamLand > 1) {
		t.Errorf("LAND to component 100: PX4 ACK %d at %.2f m, stand-in ACK %d at %.2f m", px4.camLandAck, px4.altAfterCamLand, stand.camLandAck, stand.altAfterCamLand)
	}
	if px4.disarmedAfterLanding != stand.disarmedAfterLanding || px4.modeAfterLanding != stand.modeAfterLanding {
		t.Errorf("after RTL's landing: PX4 disarmed %v in %s, stand-in disarmed %v in %s", px4.disarmedAfterLanding, px4.modeAfterLanding,
			stand.disarmedAfterLanding, stand.modeAfterLanding)
	}
}

// modeNames drops the times from "t MODE armed=..." entries.
func modeNames(ms []string) []string {
	var out []string
	for _, m := range ms {
		if i := strings.IndexByte(m, ' '); i >= 0 {
			out = append(out, m[i+1:])
		}
	}
	return out
}
