package ardupilot_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// TestReplayOnAllAddresses replays the recorded ArduCopter flight against
// a physics port open on every address (ardupilot.listen 0.0.0.0,
// ardupilot.peer a firmware network): the bridge flies it as on loopback.
func TestReplayOnAllAddresses(t *testing.T) {
	short.Skip(t, "takes several seconds")
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

// TestArduCopterInTwoNamespaces: two real ArduCopters, each in a network
// namespace standing in for a host of its own (a veth pair to this one),
// started with the command `skyloop firmware` uses (RemoteCommand, sending
// to this end of their veth), fly one run: skyloop steps both over their
// physics links, and the built-in ground station flies both through the
// relay, which reaches each one's MAVLink link at its namespace's address.
// The flight is the one the same scenario flies with both ArduCopters
// launched by skyloop on loopback: vehicles.csv, events.csv and trace.csv
// are byte-identical.
func TestArduCopterInTwoNamespaces(t *testing.T) {
	needArduPilot(t)
	nstest.Need(t, orchestrate.CheckPrivileges, "ip")
	hosts := fwtest.Hosts(t, 83, 2)
	text := `
name: ap-two-hosts
seed: 1
duration: 100s
tick: 1ms
vehicles:
  - name: copter
    kind: multirotor
    count: 2
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params:
      preset: iris
      controller: ardupilot-sitl
      ardupilot: {launch: false, listen: 0.0.0.0, peer: "10.83.1.2,10.83.2.2", connect_timeout: 60s}
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
`
	sc, err := scenario.Parse("two-hosts.yaml", []byte(text), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	fwtest.StartRemote(t, r, sc.World.Origin, 83, hosts)
	dir := filepath.Join(t.TempDir(), "run")
	res, err := runner.Execute(r, dir, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pos, _ := tracks(t, dir)
	for i := 0; i < 2; i++ {
		v := res.Summary.Vehicles[i]
		if h := highest(pos[i]); math.Abs(h-5) > 0.8 || v.Final.Z > 0.05 || v.Mode != "disarmed" {
			t.Errorf("copter %d: highest %.2f m, ended at %v in mode %s; want about 5 m, landed, motors stopped", i, h, v.Final, v.Mode)
		}
		if names := eventNames(t, dir, strconv.Itoa(i)); !slices.Contains(names, "armed") || !slices.Contains(names, "disarmed") {
			t.Errorf("copter %d: events %q lack armed/disarmed from its heartbeats", i, names)
		}
	}
	gcsComplete(t, res, "gcs", 2)

	_, local := runText(t, "two-local.yaml", strings.Replace(text, `launch: false, listen: 0.0.0.0, peer: "10.83.1.2,10.83.2.2", `, "", 1))
	for _, f := range []string{"vehicles.csv", "events.csv", "trace.csv"} {
		a, errA := os.ReadFile(filepath.Join(dir, f))
		b, errB := os.ReadFile(filepath.Join(local, f))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from the run with both ArduCopters on loopback (%v, %v)", f, errA, errB)
		}
	}
}
