package ros2

import (
	"encoding/csv"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"skyloop/internal/runtest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"skyloop/dds"
	"skyloop/engine"
	"skyloop/internal/nstest"
	"skyloop/netsim/pcap"
	"skyloop/netsim/tap"
	"skyloop/netsim/wifi"
	"skyloop/orchestrate"
)

// chatterEnv makes this test binary a DDS talker or listener on ROS 2's
// /chatter (std_msgs/String, as the ROS 2 demo nodes talker and listener),
// run in a vehicle's namespace by TestDDSThroughTheSimulatedNetwork.
const chatterEnv = "SKYLOOP_DDS_CHATTER"

func TestMain(m *testing.M) {
	if role := os.Getenv(chatterEnv); role != "" {
		if err := chatter(role); err != nil {
			fmt.Fprintln(os.Stderr, "chatter:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// chatter publishes "hello N" every 100 ms (talker) or prints every
// message heard (listener) until SIGTERM.
func chatter(role string) error {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	p, err := dds.NewParticipant(0)
	if err != nil {
		return err
	}
	defer p.Close()
	tp, err := p.Topic("rt/chatter", descString)
	if err != nil {
		return err
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	switch role {
	case "talker":
		w, err := p.Writer(tp, dds.DefaultQoS)
		if err != nil {
			return err
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return nil
			case <-tick.C:
			}
			text := cString0("hello " + strconv.Itoa(i))
			m := &cString{data: &text[0]}
			if err := w.Write(unsafe.Pointer(m)); err != nil {
				return err
			}
		}
	case "listener":
		r, err := p.Reader(tp, dds.DefaultQoS)
		if err != nil {
			return err
		}
		for {
			select {
			case <-stop:
				return nil
			case <-tick.C:
			}
			if err := drain(r, func(s unsafe.Pointer) {
				fmt.Println("heard", goString((*cString)(s).data, 64))
			}); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("unknown role %q", role)
}

// chatterURI is the Cyclone DDS configuration of the chatter nodes in the
// vehicles' namespaces: the TAP, no multicast (the simulated network has
// none), both vehicles' addresses as unicast peers.
const chatterURI = `<CycloneDDS><Domain><General><Interfaces><NetworkInterface name="wifi_tap"/></Interfaces>` +
	`<AllowMulticast>false</AllowMulticast></General><Discovery><Peers><Peer address="10.0.0.1"/><Peer address="10.0.0.2"/></Peers>` +
	`<ParticipantIndex>auto</ParticipantIndex></Discovery></Domain></CycloneDDS>`

// TestDDSThroughTheSimulatedNetwork: DDS participants (a talker and a
// listener on /chatter, ROS 2's demo topic) in two vehicles' network
// namespaces, configured for unicast discovery over the simulated Wi-Fi
// (docs/ros2.md), find each other and exchange messages across it while
// the vehicles are in range; the rover then flies out of range, and from
// then on the trace shows every frame between them dropped.
func TestDDSThroughTheSimulatedNetwork(t *testing.T) {
	nstest.Need(t, orchestrate.CheckPrivileges, "ip")
	if err := dds.Load(); err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_DDS") != "" {
			t.Fatalf("Cyclone DDS required: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := func(role string) string {
		return fmt.Sprintf("%s=%s CYCLONEDDS_URI='%s' exec %q -test.run=^$", chatterEnv, role, chatterURI, bin)
	}
	chatterAcross(t, "ddsnet", run("talker"), run("listener"))
}

// chatterAcross runs a base and a rover, the talker command in the base's
// namespace and the listener's in the rover's, over the native Wi-Fi; the
// rover leaves at 10 s at 20 m/s and passes 802.11a's range (~140 m) at
// about 16 s. The listener must hear the talker, and after 25 s the trace
// must show the base's frames to the rover sent and none delivered.
func chatterAcross(t *testing.T, name, talker, listener string) {
	t.Helper()
	text := fmt.Sprintf(`
name: %s-%d
seed: 1
duration: 40s
tick: 1ms
realtime: 1
isolation: netns
vehicles:
  - name: base
    kind: pointmass
    count: 1
    spawn: {layout: line, origin: [0, 0, 5], spacing: 5}
  - name: rover
    kind: pointmass
    count: 1
    spawn: {layout: line, origin: [20, 0, 5], spacing: 5}
    params: {max_speed: 20}
    behaviors:
      - {type: waypoints, points: [[20, 0, 5], [600, 0, 5]], hold: 10s}
processes:
  - name: talker
    group: base
    command: |-
      %s
  - name: listener
    group: rover
    command: |-
      %s
network: {backend: wifi}
`, name, os.Getpid(), talker, listener)
	reg := engine.Core()
	reg.AddBackend(wifi.SpecWith(pcap.NewWriter))
	reg.AddBehavior(tap.BridgeSpec)
	_, dir := runtest.Run(t, reg, name+".yaml", text)
	heard, _ := os.ReadFile(filepath.Join(dir, "procs", "1-listener.out"))
	if n := strings.Count(string(heard), "heard hello"); n < 10 {
		errs, _ := os.ReadFile(filepath.Join(dir, "procs", "1-listener.err"))
		talkErr, _ := os.ReadFile(filepath.Join(dir, "procs", "0-talker.err"))
		t.Fatalf("the listener heard %d messages across the simulated network:\n%s\n%s\n%s", n, heard, errs, talkErr)
	}
	f, err := os.Open(filepath.Join(dir, "trace.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	var early, late, lateSent int
	for _, row := range rows[1:] {
		if row[col["kind"]] != "tap" || row[col["src"]] != "0" || row[col["dst"]] != "1" {
			continue
		}
		ns, _ := strconv.ParseInt(row[col["t_ns"]], 10, 64)
		switch ev := row[col["event"]]; {
		case ev == "rx" && ns < 10e9:
			early++
		case ev == "tx" && ns > 25e9:
			lateSent++
		case ev == "rx" && ns > 25e9:
			late++
		}
	}
	t.Logf("the listener heard %d messages; frames base -> rover: %d delivered before 10 s, %d sent and %d delivered after 25 s",
		strings.Count(string(heard), "heard hello"), early, lateSent, late)
	if early == 0 || lateSent == 0 || late != 0 {
		t.Errorf("frames base -> rover: %d delivered before 10 s, %d sent and %d delivered after 25 s; want some, some, none", early, lateSent, late)
	}
}
