package relay_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"skyloop/components"
	"skyloop/engine"
	"skyloop/extern/client"
	"skyloop/internal/short"
	"skyloop/internal/syncbuf"
	"skyloop/relay"
	"skyloop/runner"
	"skyloop/scenario"
)

// TestMain doubles as the external agents: with SKYLOOP_HELPER=fleet the
// test binary runs one agent per node of SKYLOOP_VEHICLES, each on its own
// connection to SKYLOOP_ADDR (TLS when SKYLOOP_FINGERPRINT is set).
func TestMain(m *testing.M) {
	if ok, err := helperMode(); ok {
		if err != nil {
			fmt.Fprintln(os.Stderr, os.Getenv("SKYLOOP_HELPER")+":", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if mode := os.Getenv("SKYLOOP_HELPER"); mode == "fleet" || mode == "steps" {
		if err := fleet(); err != nil {
			fmt.Fprintln(os.Stderr, "fleet:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fleet runs the agents of SKYLOOP_VEHICLES. SKYLOOP_DIE=N makes node N's
// agent exit at 2 s of simulated time.
func fleet() error {
	die, _ := strconv.Atoi(os.Getenv("SKYLOOP_DIE"))
	if os.Getenv("SKYLOOP_DIE") == "" {
		die = -1
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for _, s := range strings.Split(os.Getenv("SKYLOOP_VEHICLES"), ",") {
		id, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("SKYLOOP_VEHICLES=%q", os.Getenv("SKYLOOP_VEHICLES"))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := client.Connect(client.Options{Vehicle: id, Name: "fleet " + s})
			if err != nil {
				errs <- err
				return
			}
			defer a.Close()
			run := func() error { return fly(a, id, die == id) }
			if os.Getenv("SKYLOOP_HELPER") == "steps" {
				// Step and do nothing else: the protocol's own cost.
				run = func() error {
					for {
						if err := a.Step(); err != nil {
							return err
						}
					}
				}
			}
			if err := run(); err != nil && !client.IsEnd(err) {
				errs <- fmt.Errorf("node %d: %w", id, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// fly is a small swarm mission: every 100 ms broadcast the own position,
// take off, fly towards the centre of the positions heard, land at 8 s.
func fly(a *client.Agent, id int, die bool) error {
	heard := map[int][3]float64{}
	var payload [24]byte
	took, landed := false, false
	for {
		now := a.Time()
		if die && now >= 2*time.Second {
			if os.Getenv("SKYLOOP_HANG") != "" {
				select {} // hung: never answers again
			}
			os.Exit(3)
		}
		for _, d := range a.Inbox() {
			if len(d.Payload) == 24 {
				var p [3]float64
				for i := range p {
					p[i] = math.Float64frombits(binary.LittleEndian.Uint64(d.Payload[8*i:]))
				}
				heard[d.Src] = p
			}
		}
		tel := a.Telemetry()
		for i := 0; i < 3; i++ {
			binary.LittleEndian.PutUint64(payload[8*i:], math.Float64bits(tel.Pos[i]))
		}
		if err := a.Broadcast(payload[:]); err != nil {
			return err
		}
		switch {
		case now >= 8*time.Second && !landed:
			landed = true
			if err := a.Land(); err != nil {
				return err
			}
		case !took:
			took = true
			if err := a.Takeoff(4 + float64(id%3)); err != nil {
				return err
			}
		case !landed && tel.Pos[2] > 3.5 && len(heard) > 0:
			var c [3]float64
			n := 0
			for k := 0; k < 1000; k++ { // fixed order: map iteration is random
				if p, ok := heard[k]; ok {
					for i := range c {
						c[i] += p[i]
					}
					n++
				}
			}
			if err := a.Goto(c[0]/float64(n), c[1]/float64(n), tel.Pos[2]); err != nil {
				return err
			}
		}
		if err := a.Sleep(100 * time.Millisecond); err != nil {
			return err
		}
	}
}

func swarm(n int, onFailure string) string { return swarmFor(n, onFailure, "100ms", "10s") }

func swarmFor(n int, onFailure, period, duration string) string {
	return fmt.Sprintf(`
name: relay-test
seed: 3
duration: %s
tick: 1ms
vehicles:
  - name: uav
    kind: pointmass
    count: %d
    spawn: {layout: grid, origin: [0, 0, 0], spacing: 3}
    behaviors:
      - {type: extern, period: %s, connect_timeout: 300s, timeout: 60s, on_failure: %s}
network:
  backend: impair
  latency: 5ms
  jitter: 3ms
  loss: 0.2
`, duration, n, period, onFailure)
}

var registry = components.Registry()

func buildErr(sc *scenario.Scenario) (*engine.Run, error) {
	return engine.Build(sc, engine.Options{Registry: registry})
}

func build(t testing.TB, text string) *engine.Run {
	t.Helper()
	sc, err := scenario.Parse("relay-test.yaml", []byte(text), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// startFleet starts the test binary as the agents of nodes ids at addr.
func startFleet(t testing.TB, addr, fingerprint, token string, ids []int, extra ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.Itoa(id)
	}
	c := exec.Command(exe)
	c.Env = append(os.Environ(), "SKYLOOP_HELPER=fleet", "SKYLOOP_ADDR="+addr, "SKYLOOP_TOKEN="+token,
		"SKYLOOP_FINGERPRINT="+fingerprint, "SKYLOOP_SOCKET=", "SKYLOOP_VEHICLES="+strings.Join(list, ","))
	c.Env = append(c.Env, extra...)
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

func span(lo, hi int) []int {
	var s []int
	for i := lo; i <= hi; i++ {
		s = append(s, i)
	}
	return s
}

// TestRelayMatchesDirect: eight agents connected directly to skyloop's TLS
// listener, and the same agents behind relays (nodes 0-3 behind one relay,
// nodes 4-7 behind a chain of two) give byte-identical outputs.
func TestRelayMatchesDirect(t *testing.T) {
	const n = 8
	outputs := func(dir string) map[string][]byte {
		m := map[string][]byte{}
		for _, f := range []string{"trace.csv", "vehicles.csv", "deliveries.csv", "events.csv", "summary.json"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			m[f] = b
		}
		return m
	}
	// Direct, over TLS.
	dirA := filepath.Join(t.TempDir(), "direct")
	_, err := runner.Execute(build(t, swarm(n, "abort")), dirA, runner.Options{ExternListen: "127.0.0.1:0",
		ExternRemote: func(addr, fp, token string) { startFleet(t, addr, fp, token, span(0, n-1)) }})
	if err != nil {
		t.Fatal(err)
	}
	// Through relays.
	dirB := filepath.Join(t.TempDir(), "relayed")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	stats := make([]relay.Stats, 3)
	errs := make([]error, 3)
	start := func(i int, cfg relay.Config) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats[i], errs[i] = relay.Run(ctx, cfg)
		}()
	}
	_, err = runner.Execute(build(t, swarm(n, "abort")), dirB, runner.Options{ExternListen: "127.0.0.1:0",
		ExternRemote: func(addr, fp, token string) {
			start(0, relay.Config{Upstream: addr, Fingerprint: fp, Token: token, Vehicles: span(0, 3), Name: "relay A",
				Ready: func(local, _ string) { startFleet(t, local, "", token, span(0, 3)) }})
			start(1, relay.Config{Upstream: addr, Fingerprint: fp, Token: token, Vehicles: span(4, 7), Name: "relay B (upper)",
				Ready: func(upper, _ string) {
					start(2, relay.Config{Upstream: upper, Token: token, Vehicles: span(4, 7), Name: "relay C (lower)",
						Ready: func(local, _ string) { startFleet(t, local, "", token, span(4, 7)) }})
				}})
		}})
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("relay %d: %v", i, err)
		}
	}
	t.Logf("relay stats: %+v", stats)
	// 100 rounds of 10 s at 100 ms; a round is one batch per relay.
	if stats[0].Rounds != 100 || stats[0].Down != 400 || stats[1].Rounds != 100 || stats[2].Down != 400 {
		t.Errorf("relays carried %+v; want 100 rounds of 4 ticks each", stats)
	}
	a, b := outputs(dirA), outputs(dirB)
	for f := range a {
		if f == "summary.json" {
			continue // it names the connections' peers
		}
		if len(a[f]) < 500 || !bytes.Equal(a[f], b[f]) {
			t.Errorf("%s differs between direct and relayed agents (%d vs %d bytes)", f, len(a[f]), len(b[f]))
		}
	}
}

// TestRelayAgentFailure: an agent that dies, or hangs, behind a relay
// fails only its own node upstream (on_failure: continue), with a message
// naming the relay; the others fly on to the end.
func TestRelayAgentFailure(t *testing.T) {
	short.Skip(t, "takes several seconds")
	for _, c := range []struct{ name, env, want string }{
		{"dies", "SKYLOOP_DIE=1", "via relay: connection closed by the agent"},
		{"hangs", "SKYLOOP_HANG=1", "no END-TICK within"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var rerr error
			done := make(chan struct{})
			res, err := runner.Execute(build(t, swarm(4, "continue")), "", runner.Options{ExternListen: "127.0.0.1:0",
				ExternRemote: func(addr, fp, token string) {
					go func() {
						defer close(done)
						_, rerr = relay.Run(ctx, relay.Config{Upstream: addr, Fingerprint: fp, Token: token, Vehicles: span(0, 3),
							// Long enough for a healthy agent on a loaded
							// machine; the hung one is found when it is up.
							StepTimeout: 5 * time.Second,
							Ready: func(local, _ string) {
								startFleet(t, local, "", token, span(0, 0))
								startFleet(t, local, "", token, span(1, 1), c.env, "SKYLOOP_DIE=1")
								startFleet(t, local, "", token, span(2, 3))
							}})
					}()
				}})
			if err != nil {
				t.Fatal(err)
			}
			<-done
			if rerr != nil {
				t.Errorf("relay: %v", rerr)
			}
			for name, want := range map[string]bool{"uav-0": false, "uav-1": true, "uav-2": false, "uav-3": false} {
				ag := res.Summary.Agents[name]["extern"].(map[string]any)
				if ag["dead"] != want {
					t.Errorf("%s: dead %v, want %v (%v)", name, ag["dead"], want, ag)
				}
				if want && !strings.Contains(fmt.Sprint(ag["failure"]), c.want) {
					t.Errorf("%s: failure %v, want %q", name, ag["failure"], c.want)
				}
				if !want && ag["steps"] != 100 {
					t.Errorf("%s stepped %v times, want 100", name, ag["steps"])
				}
			}
		})
	}
}

// TestRelayExitsWithFailedRun: when the run a relay serves fails (here,
// because an agent behind the relay dies under on_failure: abort), the
// relay returns an error, so that skyloop relay exits 1 (it used to end
// as after a run that finished).
func TestRelayExitsWithFailedRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rerr error
	done := make(chan struct{})
	_, err := runner.Execute(build(t, swarm(2, "abort")), "", runner.Options{ExternListen: "127.0.0.1:0",
		ExternRemote: func(addr, fp, token string) {
			go func() {
				defer close(done)
				_, rerr = relay.Run(ctx, relay.Config{Upstream: addr, Fingerprint: fp, Token: token, Vehicles: span(0, 1), Name: "relay A",
					Ready: func(local, _ string) {
						startFleet(t, local, "", token, span(0, 0))
						startFleet(t, local, "", token, span(1, 1), "SKYLOOP_DIE=1")
					}})
			}()
		}})
	if err == nil || !strings.Contains(err.Error(), "external agent uav-1 via relay \"relay A\"") {
		t.Fatalf("run: %v", err)
	}
	<-done
	if rerr == nil || !strings.Contains(rerr.Error(), "the run failed") || !strings.Contains(rerr.Error(), "uav-1") {
		t.Fatalf("relay: %v; want the run's failure", rerr)
	}
}

// TestRelayRefusals: bad hellos and bad configurations are refused with
// messages that say what to fix; a stranger (wrong token) is counted and
// changes nothing.
func TestRelayRefusals(t *testing.T) {
	ctx := context.Background()
	if _, err := relay.Run(ctx, relay.Config{Upstream: "127.0.0.1:1", Token: "t"}); err == nil || !strings.Contains(err.Error(), "no vehicles") {
		t.Errorf("no vehicles: %v", err)
	}
	// Nobody connects.
	_, err := relay.Run(ctx, relay.Config{Upstream: "127.0.0.1:1", Token: "t", Vehicles: []int{3, 4, 5, 9}, ConnectTimeout: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "nodes 3-5,9 did not connect within 300ms") {
		t.Errorf("timeout: %v", err)
	}
	// A wrong token, then a node the relay does not serve, then the
	// agent, which the relay takes upstream (not there: the relay stops).
	// Each waits for the answer to the one before: no wall-clock race.
	got := make(chan error, 3)
	var logs syncbuf.Buffer
	st, err := relay.Run(ctx, relay.Config{Upstream: "127.0.0.1:1", Token: "secret", Vehicles: []int{0}, ConnectTimeout: 5 * time.Minute,
		Log: slog.New(slog.NewTextHandler(&logs, nil)),
		Ready: func(addr, _ string) {
			go func() {
				_, err := client.Connect(client.Options{Addr: addr, Token: "nope", Vehicle: 0})
				got <- err
				_, err = client.Connect(client.Options{Addr: addr, Token: "secret", Vehicle: 7})
				got <- err
				_, err = client.Connect(client.Options{Addr: addr, Token: "secret", Vehicle: 0})
				got <- err
			}()
		}})
	if err == nil || !strings.Contains(err.Error(), "upstream 127.0.0.1:1") {
		t.Errorf("relay: %v", err)
	}
	if e := <-got; e == nil || !strings.Contains(e.Error(), "wrong token") {
		t.Errorf("wrong token: %v", e)
	}
	if e := <-got; e == nil || !strings.Contains(e.Error(), "node 7 is not served by this relay (--vehicles 0)") {
		t.Errorf("unknown node: %v", e)
	}
	if e := <-got; e == nil || !strings.Contains(e.Error(), "upstream 127.0.0.1:1") {
		t.Errorf("the agent: %v", e)
	}
	for _, want := range []string{"connection refused before authentication", "wrong token", "node 7 is not served"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the relay's log lacks %q:\n%s", want, logs.String())
		}
	}
	if st.Refused.Total != 1 || st.Refused.Reasons["wrong token"] != 1 {
		t.Errorf("refused before authentication: %+v, want the wrong token", st.Refused)
	}
	// Plain TCP to another host is refused: the token would go in clear.
	_, err = relay.Run(ctx, relay.Config{Upstream: "192.0.2.1:7000", Token: "secret", Vehicles: []int{0}, ConnectTimeout: 5 * time.Minute,
		Ready: func(addr, _ string) {
			go client.Connect(client.Options{Addr: addr, Token: "secret", Vehicle: 0})
		}})
	if err == nil || !strings.Contains(err.Error(), "not a loopback address: give the certificate fingerprint") {
		t.Errorf("plain remote upstream: %v", err)
	}
	// Lists beyond what a run can have are refused before anything.
	if _, err := relay.Run(ctx, relay.Config{Upstream: "127.0.0.1:1", Token: "t", Vehicles: []int{4_000_000_000}}); err == nil || !strings.Contains(err.Error(), "node ids are 0 to 99999") {
		t.Errorf("a huge node id: %v", err)
	}
	if _, err := relay.Run(ctx, relay.Config{Upstream: "127.0.0.1:1", Token: "t", Vehicles: make([]int, relay.MaxNodes+1)}); err == nil || !strings.Contains(err.Error(), "at most 100000") {
		t.Errorf("too many nodes: %v", err)
	}
}

// TestLists: node lists parse and print as ranges.
func TestLists(t *testing.T) {
	ids, err := relay.ParseList("0-3, 7,9-10")
	if err != nil || fmt.Sprint(ids) != "[0 1 2 3 7 9 10]" {
		t.Fatalf("%v %v", ids, err)
	}
	if s := relay.FormatList([]int{10, 0, 1, 2, 3, 7, 9}); s != "0-3,7,9-10" {
		t.Errorf("FormatList: %s", s)
	}
	for _, bad := range []string{"", "a", "3-1", "1,1", "-2", "0-x"} {
		if _, err := relay.ParseList(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestListsBounded: node lists are bounded before anything is allocated:
// an id beyond what a run can have, or more nodes than it can have, is
// refused at once. ("0-4000000000" and its kin used to hang, allocating
// billions of ids.)
func TestListsBounded(t *testing.T) {
	if relay.MaxNodes != scenario.MaxVehicles {
		t.Errorf("relay.MaxNodes %d, scenario.MaxVehicles %d: a relay serves as many nodes as a run has vehicles", relay.MaxNodes, scenario.MaxVehicles)
	}
	var many []string
	for lo := 0; lo < 4_000_000; lo += 1 << 20 {
		many = append(many, fmt.Sprintf("%d-%d", lo, lo+1<<20-1))
	}
	for _, bad := range []string{"0-4000000000", "4000000000", "99999999999999999999", "100000", "0-100000", strings.Join(many, ","),
		"0-99999,0-99999"} {
		ids, err := relay.ParseList(bad)
		if err == nil {
			t.Errorf("%.40q parsed: %d ids", bad, len(ids))
			continue
		}
		t.Logf("%.40q: %v", bad, err)
	}
	if ids, err := relay.ParseList("0-99999"); err != nil || len(ids) != relay.MaxNodes {
		t.Errorf("the largest list: %d ids, %v", len(ids), err)
	}
}
