package px4sitl_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"skyloop/engine"
	"skyloop/internal/fwtest"
	"skyloop/internal/nstest"
	"skyloop/internal/short"
	"skyloop/orchestrate"
	"skyloop/runner"
	"skyloop/scenario"
)

// TestReplayOnAllAddresses replays the recorded PX4 flight against a
// simulator port open on every address (px4.listen 0.0.0.0, px4.peer a
// firmware network): the bridge flies it exactly as on loopback.
func TestReplayOnAllAddresses(t *testing.T) {
	short.Skip(t, "takes several seconds")
	port := freePort(t)
	// Open beyond loopback without naming the firmware hosts: refused.
	open := strings.Replace(fmt.Sprintf(replayScenario, port), "launch: false,", "launch: false, listen: 0.0.0.0,", 1)
	if _, err := scenario.Parse("replay.yaml", []byte(open), registry.Schema()); err == nil ||
		!strings.Contains(err.Error(), "px4.listen: listen 0.0.0.0 is not a loopback address: set peer") {
		t.Errorf("listen without peer: %v", err)
	}
	replayFlight(t, strings.Replace(fmt.Sprintf(replayScenario, port), "launch: false,", "launch: false, listen: 0.0.0.0, peer: 10.77.0.0/24,", 1), port)
}

// TestSimulatorPortRefusesStrangers: with the port open beyond loopback, a
// host that px4.peer does not name (here a network namespace the test
// makes, 10.79.0.2) is refused, and the run's error says so.
func TestSimulatorPortRefusesStrangers(t *testing.T) {
	nstest.Need(t, orchestrate.CheckPrivileges, "ip", "bash")
	ns := nstest.Neighbour(t, "10.79.0.1/24", "10.79.0.2/24")

	port := freePort(t)
	text := strings.Replace(fmt.Sprintf(replayScenario, port), "launch: false, port: "+strconv.Itoa(port)+", connect_timeout: 20s",
		"launch: false, port: "+strconv.Itoa(port)+", connect_timeout: 3s, listen: 10.79.0.1, peer: 10.79.0.9", 1)
	sc, err := scenario.Parse("replay.yaml", []byte(text), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		// A stranger on 10.79.0.2 tries until the port is open.
		for i := 0; i < 100; i++ {
			c := exec.Command("ip", "netns", "exec", ns, "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/10.79.0.1/%d && sleep 0.2", port))
			if c.Run() == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	_, err = runner.Execute(r, "", runner.Options{})
	if err == nil || !strings.Contains(err.Error(), "did not connect within 3s; a connection from 10.79.0.2:") ||
		!strings.Contains(err.Error(), "was refused: not in px4.peer (10.79.0.9)") {
		t.Fatalf("run: %v", err)
	}
}

// TestPX4InTwoNamespaces: two real PX4s, each in a network namespace
// standing in for a host of its own (a veth pair to this one), started
// with the command `skyloop firmware` uses (RemoteCommand: PX4_SIM_HOST_ADDR
// this end of their veth), fly the mission in one run: each connects to
// its simulator port across its veth, and the relay reaches each one's
// MAVLink port at the address it connected from.
func TestPX4InTwoNamespaces(t *testing.T) {
	needPX4(t)
	nstest.Need(t, orchestrate.CheckPrivileges, "ip")
	hosts := fwtest.Hosts(t, 85, 2)
	text := strings.Replace(missionScenarioFor(2, 1, 90, "  backend: wifi"), "px4: {params: {NAV_ACC_RAD: 2}}",
		`px4: {params: {NAV_ACC_RAD: 2}, launch: false, listen: 0.0.0.0, peer: "10.85.1.2,10.85.2.2", connect_timeout: 60s}`, 1)
	sc, err := scenario.Parse("two-hosts.yaml", []byte(text), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	fwtest.StartRemote(t, r, sc.World.Origin, 85, hosts)
	dir := filepath.Join(t.TempDir(), "run")
	res, err := runner.Execute(r, dir, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkMission(t, res, dir, 2)
}
