package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"skyloop/engine"
	"skyloop/extern"
	"skyloop/internal/short"
	"skyloop/runner"
)

// TestRunListenAndRelay follows docs/remote.md with examples/remote:
// `skyloop run --listen` prints where and how remote agents connect;
// `skyloop relay` with those values starts the ten Python flocking agents
// with --command, and the run equals, byte for byte, the flocking example
// whose agents skyloop starts itself.
func TestRunListenAndRelay(t *testing.T) {
	short.Skip(t, "needs python3")
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_PYTHON") != "" {
			t.Fatalf("python3 is required (SKYLOOP_REQUIRE_PYTHON): %v", err)
		}
		t.Skipf("skipping: no python3 (%v)", err)
	}
	examples, _ := filepath.Abs(filepath.Join("..", "..", "examples"))
	dir := t.TempDir()
	direct := filepath.Join(dir, "direct")
	ch := startCLI(t, "run", filepath.Join(examples, "flocking", "flocking.yaml"), "--duration", "8s", "--out", direct)
	if code := ch.wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("direct run: exit %d; stderr:\n%s", code, ch.stderr.String())
	}
	out := filepath.Join(dir, "relayed")
	run := startCLI(t, "run", filepath.Join(examples, "remote", "flocking.yaml"), "--duration", "8s", "--out", out, "--listen", "127.0.0.1:0")
	re := regexp.MustCompile(`connect to (\S+) \(TLS\) with --fingerprint (sha256:[0-9a-f]{64}) --token ([0-9a-f]+)`)
	var m []string
	if !eventually(2*time.Minute, func() bool { m = re.FindStringSubmatch(run.stderr.String()); return m != nil }) {
		t.Fatalf("skyloop run --listen did not print the remote address; stderr:\n%s", run.stderr.String())
	}
	rl := startCLI(t, "relay", "--upstream", m[1], "--fingerprint", m[2], "--token", m[3], "--vehicles", "0-9",
		"--listen", "127.0.0.1:0", "--command", py+" "+filepath.Join(examples, "flocking", "flock.py")+" --id {id}")
	if code := run.wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("run exit %d; stderr:\n%s\nrelay:\n%s", code, run.stderr.String(), rl.stderr.String())
	}
	if code := rl.wait(t, 2*time.Minute); code != 0 || !strings.Contains(rl.stderr.String(), "relay: the run ended;") {
		t.Fatalf("relay exit %d; stderr:\n%s", code, rl.stderr.String())
	}
	for _, f := range []string{"trace.csv", "vehicles.csv", "deliveries.csv"} {
		a, err := os.ReadFile(filepath.Join(direct, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if len(a) < 1000 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between agents started by skyloop and agents behind the relay (%d vs %d bytes)", f, len(a), len(b))
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Agents map[string]map[string]map[string]any `json:"agents"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("uav-%d", i)
		if e := s.Agents[name]["extern"]; e["dead"] != false || e["steps"].(float64) < 50 {
			t.Errorf("%s: %v", name, e)
		}
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
		{[]string{"relay", "--upstream", "h:1", "--token", "x", "--vehicles", "0-4000000000"}, "node ids are 0 to 99999"},
		{[]string{"relay", "--upstream", "h:1", "--token", "x", "--vehicles", "0-1000000,1000001-2000000,2000001-3000000"}, "node ids are 0 to 99999"},
		{[]string{"relay", "--upstream", "h:1", "--token", "x", "--vehicles", "1", "--fingerprint", "zz"}, "want sha256: and 64 hex digits"},
		{[]string{"relay", "--upstream", "nohostport", "--token", "x", "--vehicles", "1"}, "--upstream"},
		{[]string{"run", "quickstart", "--listen", "7000"}, "--listen \"7000\": want host:port"},
		{[]string{"run", "quickstart", "--listen", "127.0.0.1:0", "--out", filepath.Join(t.TempDir(), "q")}, "the scenario has no external agents (behaviour type: extern)"},
	} {
		ch := startCLI(t, c.args...)
		if code := ch.wait(t, 20*time.Second); code != 2 || !strings.Contains(ch.stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, ch.stderr.String(), c.want)
		}
	}
}

// TestSummaryPrintsRefusedStrangers: the printed summary says how many
// connections the run refused before authentication, why and from where.
func TestSummaryPrintsRefusedStrangers(t *testing.T) {
	r := extern.RefusalReport{Total: 3, Reasons: map[string]int{extern.ReasonWrongToken: 2, extern.ReasonNoToken: 1},
		Hosts: map[string]int{"10.0.0.7": 2, "10.0.0.9": 1}}
	res := &runner.Result{Summary: &runner.Summary{Summary: &engine.Summary{}, Services: map[string]any{"extern": map[string]any{"refused": r}}}}
	var b bytes.Buffer
	printSummary(&b, res, time.Second)
	want := "extern: connections refused before authentication: 3 (1 no token, 2 wrong token) from 10.0.0.7, 10.0.0.9 (the run went on; the log has them)\n"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("summary:\n%s\nlacks %q", b.String(), want)
	}
	b.Reset()
	res.Summary.Services = nil
	printSummary(&b, res, time.Second)
	if strings.Contains(b.String(), "refused") {
		t.Fatalf("a run without strangers printed:\n%s", b.String())
	}
}
