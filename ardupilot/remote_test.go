package ardupilot_test

import (
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"skyloop/engine"
	"skyloop/internal/nstest"
	"skyloop/orchestrate"
	"skyloop/runner"
	"skyloop/scenario"
)

// TestReplayOnAllAddresses replays the recorded ArduCopter flight against
// a physics port open on every address (ardupilot.listen 0.0.0.0,
// ardupilot.peer a firmware network): the bridge flies it as on loopback.
func TestReplayOnAllAddresses(t *testing.T) {
	port := freeUDPPort(t)
	open := strings.Replace(fmt.Sprintf(replayScenario, port), "launch: false,", "launch: false, listen: 0.0.0.0,", 1)
	if _, err := scenario.Parse("replay.yaml", []byte(open), registry.Schema()); err == nil ||
		!strings.Contains(err.Error(), "ardupilot.listen: listen 0.0.0.0 is not a loopback address: set peer") {
		t.Errorf("listen without peer: %v", err)
	}
	_, res := replayFlight(t, strings.Replace(fmt.Sprintf(replayScenario, port), "launch: false,", "launch: false, listen: 0.0.0.0, peer: 10.77.0.0/24,", 1), port)
	if v := res.Summary.Vehicles[0]; v.Final.Z > 0.05 || math.Hypot(v.Final.X, v.Final.Y) > 2 || v.DistanceM < 5 {
		t.Errorf("ended at %v after %.1f m, want the recorded flight, landed near home", v.Final, v.DistanceM)
	}
}

// TestPhysicsPortDropsStrangers: with the port open beyond loopback,
// packets from a host ardupilot.peer does not name (a network namespace
// the test makes, 10.79.1.2) are dropped, and the run's error says so.
func TestPhysicsPortDropsStrangers(t *testing.T) {
	nstest.Need(t, orchestrate.CheckPrivileges, "ip", "bash")
	ns := nstest.Neighbour(t, "10.79.1.1/24", "10.79.1.2/24")

	port := freeUDPPort(t)
	text := strings.Replace(fmt.Sprintf(replayScenario, port), "launch: false, port: "+strconv.Itoa(port)+", connect_timeout: 20s",
		"launch: false, port: "+strconv.Itoa(port)+", connect_timeout: 3s, listen: 10.79.1.1, peer: 10.79.1.9", 1)
	sc, err := scenario.Parse("replay.yaml", []byte(text), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		// A stranger on 10.79.1.2 sends datagrams until the run gives up.
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			exec.Command("ip", "netns", "exec", ns, "bash", "-c", fmt.Sprintf("echo x > /dev/udp/10.79.1.1/%d", port)).Run()
		}
	}()
	_, err = runner.Execute(r, "", runner.Options{})
	if err == nil || !strings.Contains(err.Error(), "no servo packet within 3s of the start; packets from 10.79.1.2:") ||
		!strings.Contains(err.Error(), "were dropped: not in ardupilot.peer (10.79.1.9)") {
		t.Fatalf("run: %v", err)
	}
}
