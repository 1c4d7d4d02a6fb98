package extern_test

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"skyloop/engine"
	"skyloop/extern"
	"skyloop/extern/client"
	"skyloop/runner"
	"skyloop/scenario"
)

// peerModes are helper modes (see helper) that break one rule of the
// protocol with values that are well-formed JSON: each is a peer we must
// not trust. They act at the agent's first step after 0.5 s.
var peerModes = map[string]func(a *client.Agent) error{
	"bigsend": func(a *client.Agent) error { return rawSend(a, 1<<60) },
	"negsend": func(a *client.Agent) error { return rawSend(a, -5) },
	"goto-huge": func(a *client.Agent) error {
		return a.Goto(1e308, 0, 10)
	},
	"goto-far":     func(a *client.Agent) error { return a.Goto(2e6, 0, 10) },
	"goto-deep":    func(a *client.Agent) error { return a.Goto(0, 0, -2e4) },
	"vel-huge":     func(a *client.Agent) error { return a.Velocity(0, 1e308, 0) },
	"vel-fast":     func(a *client.Agent) error { return a.Velocity(800, 800, 0) },
	"takeoff-huge": func(a *client.Agent) error { return a.Takeoff(1e308) },
	"speed-huge": func(a *client.Agent) error {
		return rawFrame(a, &extern.Frame{Type: extern.TypeCommand, Vehicle: a.ID(), Cmd: "goto", Pos: &extern.Vec3{1, 2, 3}, Speed: 1e300})
	},
	"yaw-huge": func(a *client.Agent) error {
		y := 1e300
		return rawFrame(a, &extern.Frame{Type: extern.TypeCommand, Vehicle: a.ID(), Cmd: "goto", Pos: &extern.Vec3{1, 2, 3}, Yaw: &y})
	},
	"goto-short": func(a *client.Agent) error {
		raw(a, fmt.Appendf(nil, `{"type":"command","vehicle":%d,"cmd":"goto","pos":[1]}`, a.ID()))
		return nil
	},
	"vel-long": func(a *client.Agent) error {
		raw(a, fmt.Appendf(nil, `{"type":"command","vehicle":%d,"cmd":"velocity","vel":[1,2,3,4]}`, a.ID()))
		return nil
	},
	"flood-frames": func(a *client.Agent) error {
		for i := 0; i < 5000; i++ {
			if err := a.Event("flood", "x"); err != nil {
				return err
			}
		}
		return nil
	},
	"flood-bytes": func(a *client.Agent) error {
		big := strings.Repeat("x", extern.MaxFrame-200)
		for i := 0; i < 40; i++ {
			if err := a.Event("flood", big); err != nil {
				return err
			}
		}
		return nil
	},
	"early-done": func(a *client.Agent) error {
		raw(a, fmt.Appendf(nil, `{"type":"done","vehicle":%d}`, a.ID()))
		raw(a, fmt.Appendf(nil, `{"type":"done","vehicle":%d}`, a.ID()))
		return nil
	},
	"longname":  func(a *client.Agent) error { return a.Event(strings.Repeat("n", 65), "x") },
	"bigdetail": func(a *client.Agent) error { return a.Event("note", strings.Repeat("é", 5000)) },
}

func rawFrame(a *client.Agent, f *extern.Frame) error {
	b, err := extern.AppendFrame(nil, f)
	if err != nil {
		return err
	}
	return a.RawWrite(b)
}

func rawSend(a *client.Agent, size int) error {
	dst := -1
	return rawFrame(a, &extern.Frame{Type: extern.TypeSend, Vehicle: a.ID(), Dst: &dst, Size: size})
}

// runPeerMode is the client side of a peer mode.
func runPeerMode(a *client.Agent, fn func(a *client.Agent) error) error {
	for a.Time() < 500*time.Millisecond {
		if err := a.Sleep(100 * time.Millisecond); err != nil {
			return err
		}
	}
	if err := fn(a); err != nil {
		return err
	}
	for {
		if err := a.Sleep(100 * time.Millisecond); err != nil {
			return err
		}
	}
}

// TestUntrustedAgentValues: an agent's send size, command numbers and event
// names are checked where they cross the boundary; a violation ends the run
// naming the agent and the offending value (it used to overflow time,
// turn the vehicle state into NaN or fly it to 1e308 m).
func TestUntrustedAgentValues(t *testing.T) {
	cases := []struct{ mode, want string }{
		{"bigsend", "size 1152921504606846976"},
		{"negsend", "size -5"},
		{"goto-huge", "goto position [1e+308 0 10]"},
		{"goto-far", "goto position [2e+06 0 10]"},
		{"goto-deep", "goto position [0 0 -20000]"},
		{"vel-huge", "velocity [0 1e+308 0]"},
		{"vel-fast", "velocity [800 800 0]"},
		{"takeoff-huge", "takeoff altitude 1e+308"},
		{"speed-huge", "goto speed 1e+300"},
		{"yaw-huge", "yaw 1e+300"},
		{"longname", "event name of 65 bytes"},
		{"goto-short", "field pos: want exactly 3 finite numbers [x, y, z], got an array of 1 number"},
		{"flood-frames", "sent more than 4096 frames in one step (at most 4096 per step"},
		{"flood-bytes", "sent more than 16 MiB in one step"},
		{"early-done", "a done frame for node"},
		{"vel-long", "field vel: want exactly 3 finite numbers [x, y, z], got an array of 4 numbers"},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "run")
			_, err := runner.Execute(build(t, withBehavior(`{type: extern, period: 100ms, command: "`+helperCommand(t, c.mode)+`"}`)), dir, runner.Options{})
			if err == nil {
				t.Fatal("the run succeeded")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "external agent uav-") ||
				!strings.Contains(err.Error(), "pid ") {
				t.Fatalf("error %q lacks %q, the agent's name or its pid", err, c.want)
			}
		})
	}
}

// TestEventTextBounded: an event's detail reaches events.csv at most
// MaxEventDetail bytes long and valid UTF-8.
func TestEventTextBounded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	_, err := runner.Execute(build(t, withBehavior(`{type: extern, period: 100ms, command: "`+helperCommand(t, "bigdetail")+`"}`)), dir, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "events.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, r := range rows {
		if len(r) == 5 && r[3] == "note" {
			found++
			if len(r[4]) > extern.MaxEventDetail || !strings.HasPrefix(r[4], "ééé") {
				t.Errorf("event detail of %d bytes (limit %d): %.40q...", len(r[4]), extern.MaxEventDetail, r[4])
			}
		}
	}
	if found != 4 {
		t.Fatalf("%d note events, want 4", found)
	}
}

const netLies = `
name: net-lies
seed: 1
duration: 2s
tick: 1ms
vehicles:
  - name: uav
    kind: pointmass
    count: 3
    spawn: {layout: line, origin: [0, 0, 0], spacing: 4}
    behaviors:
      - {type: traffic, rate: 8000, size: 100, dst: sink-0}
  - name: sink
    kind: pointmass
    count: 1
    spawn: {layout: line, origin: [0, 10, 0], spacing: 4}
    behaviors:
      - {type: traffic, rate: 8000, size: 100}
network:
  backend: extern
  connect_timeout: 120s
`

// lyingNetwork is an in-process network simulator: every packet reaches
// every intended receiver 5 ms after it was sent, except for the one lie
// of mode at the first packet it fits.
func lyingNetwork(mode string, addr, token string, errs chan<- error) {
	n, err := client.ConnectNetwork(client.Options{Addr: addr, Token: token, Name: "liar " + mode})
	if err != nil {
		errs <- err
		return
	}
	defer n.Close()
	nodes := len(n.Welcome.Nodes)
	type rx struct {
		id   uint64
		dst  int
		at   int64
		drop string
	}
	var sched []rx
	left := map[uint64]int{}
	lied := false
	for {
		f, err := n.Next()
		if err != nil {
			if !client.IsEnd(err) {
				errs <- err
			}
			return
		}
		var ev []extern.NetEvent
		var rel []uint64
		for _, p := range f.Packets {
			dsts := receivers(p, nodes)
			for _, d := range dsts {
				sched = append(sched, rx{id: p.ID, dst: d, at: p.TSend + 5e6})
				left[p.ID]++
			}
			if lied {
				continue
			}
			switch {
			case mode == "dup":
				sched = append(sched, rx{id: p.ID, dst: dsts[0], at: p.TSend + 5e6})
			case mode == "self" && p.Dst < 0:
				sched = append(sched, rx{id: p.ID, dst: p.Src, at: p.TSend + 5e6})
			case mode == "wrongdst" && p.Dst >= 0:
				other := 0
				for other == p.Src || other == p.Dst {
					other++
				}
				sched = append(sched, rx{id: p.ID, dst: other, at: p.TSend + 5e6})
			case mode == "droprx":
				ev = append(ev, extern.NetEvent{ID: p.ID, Dst: dsts[0], At: p.TSend, Drop: "collision"})
			case mode == "early":
				sched[len(sched)-1].at = p.TSend - 1
			default:
				continue
			}
			lied = true
		}
		kept := sched[:0]
		for _, r := range sched {
			if r.at > f.T {
				kept = append(kept, r)
				continue
			}
			ev = append(ev, extern.NetEvent{ID: r.id, Dst: r.dst, At: r.at, Drop: r.drop})
			if left[r.id]--; left[r.id] == 0 {
				delete(left, r.id)
				rel = append(rel, r.id)
			}
		}
		sched = kept
		if err := n.Done(ev, rel); err != nil {
			errs <- err
			return
		}
	}
}

// TestLyingNetworkSimulator: every verdict of an external network
// simulator is checked against what is in flight: at most one verdict per
// receiver and packet, never at the sender, a unicast packet only at its
// destination, never before it was sent. (Each lie used to be accepted: a
// duplicate reception counted twice, PDR above what happened, exit 0.)
func TestLyingNetworkSimulator(t *testing.T) {
	cases := []struct{ mode, want string }{
		{"honest", ""},
		{"dup", "second verdict"},
		{"self", "its sender"},
		{"wrongdst", "not its destination"},
		{"droprx", "second verdict"},
		{"early", "before its send time"},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			sc, err := scenario.Parse("net-lies.yaml", []byte(netLies), registry.Schema())
			if err != nil {
				t.Fatal(err)
			}
			errs := make(chan error, 2)
			ropt0 := runner.Options{ExternReady: func(socket, addr, token string) {
				go lyingNetwork(c.mode, addr, token, errs)
			}}
			r, err := engine.Build(sc, engine.Options{Registry: registry})
			if err != nil {
				t.Fatal(err)
			}
			res, err := runner.Execute(r, "", ropt0)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tot := res.Summary.Network.Total; tot.Rx == 0 || tot.PDR != 1 {
					t.Fatalf("honest network: %d receptions, PDR %v", tot.Rx, tot.PDR)
				}
				return
			}
			if err == nil {
				tot := res.Summary.Network.Total
				t.Fatalf("the lie was accepted: %d receptions of %d expected, PDR %v", tot.Rx, tot.Expected, tot.PDR)
			}
			if !strings.Contains(err.Error(), "external network simulator") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q lacks the simulator or %q", err, c.want)
			}
		})
	}
}

// hello sends one hello on a fresh connection and returns the answer.
func hello(socket string, h *extern.Frame) (*extern.Frame, error) {
	c, err := net.Dial("unix", socket)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	h.Type = extern.TypeHello
	b, _ := extern.AppendFrame(nil, h)
	if _, err := c.Write(b); err != nil {
		return nil, err
	}
	var buf []byte
	return extern.ReadFrame(bufio.NewReader(c), &buf)
}

// TestHelloRefusalReported: a hello with the run's token refused for a
// vehicle that is waiting ends the wait at once with the reason (it used
// to be reported as "did not connect" after the whole connect timeout); a
// refusal that names no waiting vehicle, or comes from a stranger (no
// token), is logged, and the eventual timeout names it.
func TestHelloRefusalReported(t *testing.T) {
	cases := []struct {
		name    string
		timeout string
		hello   func(token string) *extern.Frame
		want    []string
		not     string
	}{
		{"wrong version", "60s", func(tok string) *extern.Frame {
			return &extern.Frame{Version: 7, Token: tok, Vehicles: []int{1}}
		}, []string{"external agent uav-1", "(pid ", "refused", "protocol version 7"}, "did not connect"},
		{"unknown vehicle", "60s", func(tok string) *extern.Frame {
			return &extern.Frame{Version: extern.Version, Token: tok, Vehicles: []int{3, 9}}
		}, []string{"external agent uav-3", "node 9"}, "did not connect"},
		{"vehicle twice", "60s", func(tok string) *extern.Frame {
			return &extern.Frame{Version: extern.Version, Token: tok, Vehicles: []int{1, 1}}
		}, []string{"external agent uav-1", "node 1 twice"}, "did not connect"},
		{"nobody to blame", "1s", func(tok string) *extern.Frame {
			return &extern.Frame{Version: extern.Version, Token: tok, Role: 1}
		}, []string{"did not connect within 1s", "role 1 (network simulator) not wanted"}, ""},
		{"a stranger", "1s", func(string) *extern.Frame {
			return &extern.Frame{Version: extern.Version, Token: "nope", Vehicles: []int{2}}
		}, []string{"did not connect within 1s", "the last connection refused: the Unix socket (pid ", "wrong token (no token: it could be anyone's)"}, "connected for node"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sc, err := scenario.Parse("x.yaml", []byte(withBehavior("{type: extern, connect_timeout: "+c.timeout+"}")), registry.Schema())
			if err != nil {
				t.Fatal(err)
			}
			// The hello is answered before the server waits for the
			// agents: its refusal is recorded first, whatever the load.
			var answer *extern.Frame
			ropt1 := runner.Options{ExternReady: func(socket, addr, token string) {
				f, err := hello(socket, c.hello(token))
				if err != nil {
					f = &extern.Frame{Type: "io", Reason: err.Error()}
				}
				answer = f
			}}
			r, err := engine.Build(sc, engine.Options{Registry: registry})
			if err != nil {
				t.Fatal(err)
			}
			_, err = runner.Execute(r, "", ropt1)
			if err == nil {
				t.Fatal("the run succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if c.not != "" && strings.Contains(err.Error(), c.not) {
				t.Errorf("error %q: the refusal was not reported at once", err)
			}
			if answer.Type != extern.TypeError {
				t.Errorf("the client got %s %q, want an error frame", answer.Type, answer.Reason)
			}
		})
	}
}
