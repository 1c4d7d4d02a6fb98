package extern_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"skyloop/components"
	"skyloop/internal/short"
	"strings"
	"testing"
	"time"

	"skyloop/engine"
	"skyloop/extern"
	"skyloop/extern/client"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/sim"
)

// registry has every component and the test_mission behaviour.
var registry = func() *engine.Registry {
	g := components.Registry()
	g.AddBehavior(testMissionSpec)
	return g
}()

const swarm = `
name: extern-test
seed: 5
duration: 10s
tick: 1ms
vehicles:
  - name: uav
    kind: pointmass
    count: 4
    spawn: {layout: line, origin: [0, 0, 0], spacing: 4}
    behaviors:
      - BEHAVIOR
network:
  backend: impair
  latency: 5ms
  jitter: 3ms
  loss: 0.2
`

func build(t *testing.T, text string) *engine.Run {
	t.Helper()
	sc, err := scenario.Parse("extern-test.yaml", []byte(text), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// withBehavior puts behaviour b into the swarm. An extern behaviour that
// sets no connect_timeout gets a generous one: helper processes start
// slowly on a loaded machine, and the tests wait for what they do, not for
// a clock.
func withBehavior(b string) string {
	if strings.Contains(b, "type: extern") && !strings.Contains(b, "connect_timeout") {
		b = strings.TrimSuffix(b, "}") + ", connect_timeout: 120s}"
	}
	return strings.Replace(swarm, "BEHAVIOR", b, 1)
}

// TestExternalAgentMatchesBuiltin: the same mission logic as a built-in Go
// behaviour and as external client processes gives byte-identical traces
// and vehicle logs.
func TestExternalAgentMatchesBuiltin(t *testing.T) {
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	if _, err := runner.Execute(build(t, withBehavior("{type: test_mission}")), dirA, runner.Options{}); err != nil {
		t.Fatal(err)
	}
	res, err := runner.Execute(build(t, withBehavior(`{type: extern, period: 100ms, command: "`+helperCommand(t, "mission")+`"}`)), dirB, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"trace.csv", "vehicles.csv", "deliveries.csv"} {
		a, _ := os.ReadFile(filepath.Join(dirA, f))
		b, err := os.ReadFile(filepath.Join(dirB, f))
		if err != nil || len(a) < 1000 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between the built-in and the external agents (%d vs %d bytes)", f, len(a), len(b))
		}
	}
	ag := res.Summary.Agents["uav-2"]["extern"].(map[string]any)
	if ag["steps"] != 100 || ag["dead"] != false {
		t.Errorf("external agent report %v, want 100 steps", ag)
	}
	for _, v := range res.Summary.Vehicles {
		if v.DistanceM < 5 {
			t.Errorf("%s barely moved (%.1f m)", v.Name, v.DistanceM)
		}
	}
	if _, err := os.Stat(filepath.Join(dirB, "procs", "uav-0.err")); err != nil {
		t.Errorf("no process log: %v", err)
	}
}

// TestFaults: a crashing, hanging, babbling or silent process ends the run
// with a message naming the agent, never a deadlock, and the partial
// outputs are kept and marked.
func TestFaults(t *testing.T) {
	short.Skip(t, "takes several seconds")
	cases := []struct {
		name, behavior, want string
	}{
		{"crash", `{type: extern, period: 100ms, command: "` + helperCommand(t, "crash") + `"}`, "process exited (status 3)"},
		{"hang", `{type: extern, period: 100ms, timeout: 1s, command: "` + helperCommand(t, "hang") + `"}`, "no END-TICK within 1s"},
		{"malformed", `{type: extern, period: 100ms, command: "` + helperCommand(t, "malformed") + `"}`, "malformed frame"},
		{"oversized", `{type: extern, period: 100ms, command: "` + helperCommand(t, "oversized") + `"}`, "larger than the 1 MiB limit"},
		{"bad command", `{type: extern, period: 100ms, command: "` + helperCommand(t, "badcmd") + `"}`, "takeoff altitude -1"},
		{"never connects", `{type: extern, connect_timeout: 1s, command: "sleep 30"}`, "did not connect within 1s"},
		// A slow starter is told what the run waited for, what its process
		// was doing and which setting gives it longer.
		{"starts slowly", `{type: extern, connect_timeout: 1s, command: "echo importing numpy >&2; sleep 30"}`,
			"did not connect within 1s (connect_timeout) while the run waited for its hello on unix:"},
		{"starts slowly", `{type: extern, connect_timeout: 1s, command: "echo importing numpy >&2; sleep 30"}`,
			"was still running without having connected: still starting"},
		{"starts slowly", `{type: extern, connect_timeout: 1s, command: "echo importing numpy >&2; sleep 30"}`,
			`to wait longer, raise connect_timeout in the extern behaviour of group "uav", e.g. {type: extern, connect_timeout: 1m0s}; last lines of its stderr:
  importing numpy`},
		{"exits at once", `{type: extern, command: "echo cannot start >&2; exit 7"}`, "cannot start"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			_, err := runner.Execute(build(t, withBehavior(c.behavior)), dir, runner.Options{})
			if err == nil {
				t.Fatal("the run succeeded")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "external agent uav-") {
				t.Fatalf("error %q lacks %q or the agent's name", err, c.want)
			}
			if _, serr := os.Stat(dir + ".incomplete/ERROR.txt"); serr != nil {
				t.Errorf("partial outputs not marked: %v", serr)
			}
			if _, serr := os.Stat(dir); serr == nil {
				t.Error("a failed run left a complete-looking directory")
			}
		})
	}
}

// TestFailurePolicyContinue: with on_failure: continue the run goes on
// without the dead agent.
func TestFailurePolicyContinue(t *testing.T) {
	res, err := runner.Execute(build(t, withBehavior(`{type: extern, period: 100ms, on_failure: continue, command: "`+helperCommand(t, "crash")+`"}`)), "", runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ag := res.Summary.Agents["uav-1"]["extern"].(map[string]any)
	if ag["dead"] != true || !strings.Contains(ag["failure"].(string), "status 3") {
		t.Fatalf("agent report %v", ag)
	}
}

func TestUnknownPlaceholderRejected(t *testing.T) {
	_, err := scenario.Parse("x.yaml", []byte(withBehavior(`{type: extern, command: "run {vehicle}"}`)), registry.Schema())
	var se scenario.Errors
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "unknown placeholder") {
		t.Fatalf("got %v", err)
	}
}

// TestExternalNetworkSimulator: a type 1 subscriber plays the network: 5 ms
// latency, 10 m range.
func TestExternalNetworkSimulator(t *testing.T) {
	text := strings.Replace(withBehavior("{type: test_mission}"), `  backend: impair
  latency: 5ms
  jitter: 3ms
  loss: 0.2`, `  backend: extern
  connect_timeout: 120s
  command: "`+strings.Replace(helperCommand(t, "net"), "SKYLOOP_VEHICLE={id} ", "", 1)+`"`, 1)
	dir := filepath.Join(t.TempDir(), "run")
	res, err := runner.Execute(build(t, text), dir, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tot := res.Summary.Network.Total
	if tot.Rx == 0 || tot.Drops["range"] == 0 || tot.Latency.Mean != 5e6 || tot.Latency.Max != 5e6 {
		t.Fatalf("network summary %+v", tot)
	}
	// The UAVs spread beyond 10 m, so some broadcasts are lost to range.
	t.Logf("%d receptions, %d range drops, latency %v", tot.Rx, tot.Drops["range"], sim.Duration(tot.Latency.Max))

	bad := strings.Replace(text, "SKYLOOP_HELPER=net ", "SKYLOOP_HELPER=netbad ", 1)
	_, err = runner.Execute(build(t, bad), filepath.Join(t.TempDir(), "bad"), runner.Options{})
	if err == nil || !strings.Contains(err.Error(), "external network simulator") || !strings.Contains(err.Error(), "not in flight") {
		t.Fatalf("a lying network simulator gave %v", err)
	}
}

// TestSelfConnectingAgents: with no command, processes connect on their own
// over TCP with the token the server announces; here the "processes" are
// goroutines of the test, running the shared mission logic.
func TestSelfConnectingAgents(t *testing.T) {
	sc, err := scenario.Parse("x.yaml", []byte(withBehavior("{type: extern, period: 100ms}")), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	ready := func(socket, addr, token string) {
		for id := 0; id < 4; id++ {
			go func() {
				a, err := client.Connect(client.Options{Addr: addr, Token: token, Vehicle: id})
				if err != nil {
					errs <- err
					return
				}
				defer a.Close()
				m := &mission{id: id}
				for {
					m.step(a.Time(), a.Telemetry(), a.Inbox(), a)
					if err := a.Sleep(100 * time.Millisecond); err != nil {
						if !client.IsEnd(err) {
							errs <- err
						}
						return
					}
				}
			}()
		}
	}
	ropt0 := runner.Options{ExternReady: ready}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Execute(r, "", ropt0)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if n := res.Summary.Agents["uav-3"]["extern"].(map[string]any)["steps"]; n != 100 {
		t.Fatalf("uav-3 stepped %v times, want 100", n)
	}
	// A wrong token is refused; the refusal does not end the run (anyone
	// could have sent it), and the agent that never connects names it.
	// The client connects before the server waits (ExternReady), so the
	// refusal is recorded first, however loaded the machine.
	sc2, _ := scenario.Parse("y.yaml", []byte(withBehavior("{type: extern, connect_timeout: 2s}")), registry.Schema())
	var refused error
	ropt1 := runner.Options{ExternReady: func(socket, addr, token string) {
		_, refused = client.Connect(client.Options{Socket: socket, Token: "nope", Vehicle: 0})
	}}
	r2, _ := engine.Build(sc2, engine.Options{Registry: registry})
	if _, err := runner.Execute(r2, "", ropt1); err == nil || !strings.Contains(err.Error(), "did not connect within 2s") ||
		!strings.Contains(err.Error(), "wrong token") {
		t.Fatalf("run without agents: %v", err)
	}
	if refused == nil || !strings.Contains(refused.Error(), "wrong token") {
		t.Fatalf("wrong token: %v", refused)
	}
}

// TestRemoteTLS: the Go client reaches skyloop's --listen address over TLS
// with the printed fingerprint; a wrong fingerprint, a malformed one and a
// wrong token are refused with messages that say which, and the run, which
// none of them could authenticate to, goes on and counts them.
func TestRemoteTLS(t *testing.T) {
	got := make(chan error, 4)
	res, err := runner.Execute(build(t, withBehavior("{type: extern, period: 100ms, connect_timeout: 120s}")), "", runner.Options{
		ExternListen: "127.0.0.1:0",
		ExternRemote: func(addr, fp, token string) {
			go func() {
				_, err := client.Connect(client.Options{Addr: addr, Fingerprint: "sha256:" + strings.Repeat("0", 64), Token: token, Vehicle: 0})
				got <- err
				_, err = client.Connect(client.Options{Addr: addr, Fingerprint: "abc", Token: token, Vehicle: 0})
				got <- err
				_, err = client.Connect(client.Options{Addr: addr, Fingerprint: fp, Token: "nope", Vehicle: 1})
				got <- err
				for id := 0; id < 4; id++ {
					go func() {
						a, err := client.Connect(client.Options{Addr: addr, Fingerprint: fp, Token: token, Vehicle: id})
						if err != nil {
							got <- err
							return
						}
						defer a.Close()
						for a.Step() == nil {
						}
					}()
				}
			}()
		}})
	for i, want := range []string{"not the sha256:0000", "want sha256: and 64 hex digits", "wrong token"} {
		if e := <-got; e == nil || !strings.Contains(e.Error(), want) {
			t.Errorf("case %d: got %v, want %q", i, e, want)
		}
	}
	// The wrong token named node 1: a stranger's hello, which the run
	// refuses and counts without failing the agent.
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	r := res.Summary.Services["extern"].(map[string]any)["refused"].(extern.RefusalReport)
	if r.Total != 2 || r.Reasons[extern.ReasonWrongToken] != 1 || r.Reasons[extern.ReasonTLS] != 1 || r.Hosts["127.0.0.1"] != 2 {
		t.Errorf("refused connections: %+v, want a wrong token and a failed TLS handshake from 127.0.0.1", r)
	}
}
