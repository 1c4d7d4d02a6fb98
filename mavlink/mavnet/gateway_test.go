package mavnet_test

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"

	"skyloop/agent"
	"skyloop/engine"
	"skyloop/mavlink"
	"skyloop/mavlink/mavnet"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/sim"
)

const gatewayScenario = `
name: gateway
seed: 1
duration: 600s
tick: 1ms
vehicles:
  - name: drone
    kind: multirotor
    count: 2
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    behaviors:
      - {type: mavlink, gcs: [qgc]}
nodes:
  - name: qgc
    position: [0, -20, 1]
    behaviors:
      - {type: mavlink_udp, remote: "127.0.0.1:%d"}
network:
  backend: impair
  latency: 40ms
`

// TestGatewayFliesThroughTheNetwork plays an external ground station on
// UDP (as QGroundControl listens on 14550): it hears both vehicles through
// the gateway, arms and launches vehicle 2 only, and sees it climb, while
// its frames cross the simulated network (40 ms each way).
func TestGatewayFliesThroughTheNetwork(t *testing.T) {
	gcs, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer gcs.Close()
	sc, err := scenario.Parse("gateway.yaml", []byte(fmt.Sprintf(gatewayScenario, gcs.LocalAddr().(*net.UDPAddr).Port)), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	var halt atomic.Bool
	r, err := engine.Build(sc, engine.Options{Registry: registry, Realtime: 5, Stop: halt.Load})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		res *runner.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := runner.Execute(r, "", runner.Options{})
		done <- result{res, err}
	}()

	enc := mavlink.NewEncoder(255, 190)
	dec := mavlink.NewDecoder()
	buf := make([]byte, 65536)
	heard := map[uint8]bool{}
	var gateway *net.UDPAddr
	var rtt time.Duration
	var pinged time.Time
	climbed, sentArm, takeoff, sentTakeoff := false, false, false, false
	deadline := time.Now().Add(30 * time.Second)
	for !climbed && time.Now().Before(deadline) {
		gcs.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, from, err := gcs.ReadFromUDP(buf)
		if err == nil {
			gateway = from
			dec.Decode(buf[:n], func(f frame.Frame) {
				switch m := f.GetMessage().(type) {
				case *common.MessageHeartbeat:
					heard[f.GetSystemID()] = true
				case *common.MessageCommandAck:
					if m.Command == common.MAV_CMD_COMPONENT_ARM_DISARM && rtt == 0 {
						rtt = time.Since(pinged)
						takeoff = true
					}
				case *common.MessageGlobalPositionInt:
					if f.GetSystemID() == 1 && m.RelativeAlt > 500 {
						t.Errorf("vehicle 1 climbs (%d mm) though only vehicle 2 was commanded", m.RelativeAlt)
					}
					if f.GetSystemID() == 2 && m.RelativeAlt > 3000 {
						climbed = true
					}
				}
			})
		}
		if gateway != nil && heard[1] && heard[2] && !sentArm {
			sentArm = true
			pinged = time.Now()
			b, _ := enc.Encode(&common.MessageCommandLong{TargetSystem: 2, TargetComponent: 1, Command: common.MAV_CMD_COMPONENT_ARM_DISARM, Param1: 1})
			gcs.WriteToUDP(b, gateway)
			// A frame for a system that is not here is dropped at the gateway.
			b, _ = enc.Encode(&common.MessageCommandLong{TargetSystem: 9, TargetComponent: 1, Command: common.MAV_CMD_COMPONENT_ARM_DISARM, Param1: 1})
			gcs.WriteToUDP(b, gateway)
		}
		if takeoff && !sentTakeoff {
			sentTakeoff = true
			b, _ := enc.Encode(&common.MessageCommandLong{TargetSystem: 2, TargetComponent: 1, Command: common.MAV_CMD_NAV_TAKEOFF, Param7: 488 + 5}) // AMSL
			gcs.WriteToUDP(b, gateway)
		}
	}
	halt.Store(true)
	res := <-done
	if res.err != nil && !errors.Is(res.err, sim.ErrStopped) {
		t.Fatal(res.err)
	}
	if !climbed {
		t.Fatalf("vehicle 2 did not climb through the gateway (heard %v, armed sent %v)", heard, sentArm)
	}
	// The round trip crossed the network twice at 40 ms, paced at 5x real
	// time: at least 16 ms of wall time.
	if rtt < 16*time.Millisecond {
		t.Errorf("ARM acknowledged after %v: faster than the simulated network allows", rtt)
	}
	var gw *mavnet.Gateway
	r.Behaviors(func(_ int, b agent.Behavior) {
		if g, ok := b.(*mavnet.Gateway); ok {
			gw = g
		}
	})
	if gw.Unroutable != 1 || gw.In < 3 || gw.Out == 0 {
		t.Errorf("gateway: %d frames in, %d unroutable, %d datagrams out; want >= 3, 1, > 0", gw.In, gw.Unroutable, gw.Out)
	}
}
