package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRunListenAndRelay: `skyloop run --listen` prints where and how
// remote agents connect; `skyloop relay` with those values and --command
// starts four Python agents, which fly the run to its end through it.
func TestRunListenAndRelay(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_PYTHON") != "" {
			t.Fatalf("python3 is required (SKYLOOP_REQUIRE_PYTHON): %v", err)
		}
		t.Skipf("skipping: no python3 (%v)", err)
	}
	dir := t.TempDir()
	client, _ := filepath.Abs(filepath.Join("..", "..", "clients", "python"))
	agent := filepath.Join(dir, "agent.py")
	if err := os.WriteFile(agent, []byte(`import sys
sys.path.insert(0, `+"'"+client+"'"+`)
from skyloop_client import run

def mission(uav):
    uav.vehicle.takeoff(3 + uav.id)
    while True:
        uav.broadcast(b"hello from %d" % uav.id)
        uav.sleep(0.1)

run(mission)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	scen := filepath.Join(dir, "remote.yaml")
	if err := os.WriteFile(scen, []byte(`
name: remote
seed: 2
duration: 10s
tick: 1ms
vehicles:
  - name: uav
    kind: multirotor
    count: 4
    spawn: {layout: line, origin: [0, 0, 0], spacing: 4}
    behaviors:
      - {type: extern, period: 100ms, connect_timeout: 30s}
network: {backend: ideal}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	run := startCLI(t, "run", scen, "--out", out, "--listen", "127.0.0.1:0")
	re := regexp.MustCompile(`connect to (\S+) \(TLS\) with --fingerprint (sha256:[0-9a-f]{64}) --token ([0-9a-f]+)`)
	var m []string
	if !eventually(20*time.Second, func() bool { m = re.FindStringSubmatch(run.stderr.String()); return m != nil }) {
		t.Fatalf("skyloop run --listen did not print the remote address; stderr:\n%s", run.stderr.String())
	}
	rl := startCLI(t, "relay", "--upstream", m[1], "--fingerprint", m[2], "--token", m[3], "--vehicles", "0-3",
		"--listen", "127.0.0.1:0", "--command", py+" "+agent+" {id}")
	if code := run.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("run exit %d; stderr:\n%s\nrelay:\n%s", code, run.stderr.String(), rl.stderr.String())
	}
	if code := rl.wait(t, 20*time.Second); code != 0 || !strings.Contains(rl.stderr.String(), "the run ended; 100 rounds, 400 ticks fanned out") {
		t.Fatalf("relay exit %d; stderr:\n%s", code, rl.stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Agents  map[string]map[string]map[string]any `json:"agents"`
		Network struct {
			Total struct {
				Tx int `json:"tx"`
			} `json:"total"`
		} `json:"network"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"uav-0", "uav-1", "uav-2", "uav-3"} {
		if e := s.Agents[name]["extern"]; e["steps"] != 100.0 || e["dead"] != false {
			t.Errorf("%s: %v", name, e)
		}
	}
	if s.Network.Total.Tx < 390 {
		t.Errorf("%d packets sent; the agents broadcast every 100 ms", s.Network.Total.Tx)
	}
}

// TestRelayBadFlags: the relay's flags are checked before anything starts.
func TestRelayBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"relay", "--vehicles", "0-3", "--token", "x"}, "--upstream is required"},
		{[]string{"relay", "--upstream", "h:1", "--vehicles", "0-3"}, "--token is required"},
		{[]string{"relay", "--upstream", "h:1", "--token", "x"}, "--vehicles is required"},
		{[]string{"relay", "--upstream", "h:1", "--token", "x", "--vehicles", "3-1"}, `"3-1" is not a range`},
		{[]string{"relay", "--upstream", "h:1", "--token", "x", "--vehicles", "1", "--fingerprint", "zz"}, "want sha256: and 64 hex digits"},
		{[]string{"relay", "--upstream", "nohostport", "--token", "x", "--vehicles", "1"}, "--upstream"},
		{[]string{"run", "quickstart", "--listen", "7000"}, "--listen \"7000\": want host:port"},
	} {
		ch := startCLI(t, c.args...)
		if code := ch.wait(t, 20*time.Second); code != 2 || !strings.Contains(ch.stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, ch.stderr.String(), c.want)
		}
	}
}
