package extern_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"skyloop/engine"
	"skyloop/extern"
	"skyloop/internal/short"
	"skyloop/runner"
	"skyloop/scenario/scenariofile"
	"skyloop/sim"
)

// python returns the Python 3 interpreter, skipping (or failing under
// SKYLOOP_REQUIRE_PYTHON) when there is none.
func python(t *testing.T) string {
	t.Helper()
	short.Skip(t, "needs python3")
	p, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_PYTHON") != "" {
			t.Fatalf("python3 is required (SKYLOOP_REQUIRE_PYTHON) but missing: %v", err)
		}
		t.Skipf("skipping: no python3 (%v); install Python 3 (CI does)", err)
	}
	return p
}

// TestPythonClientFliesOneUAV: the standard-library Python client takes a
// multirotor through takeoff, go-to and landing.
func TestPythonClientFliesOneUAV(t *testing.T) {
	py := python(t)
	script, _ := filepath.Abs(filepath.Join("testdata", "fly_one.py"))
	text := `
name: python-one
seed: 1
duration: 40s
tick: 1ms
vehicles:
  - name: uav
    kind: multirotor
    count: 1
    spawn: {layout: explicit, positions: [[0, 0, 0]]}
    behaviors:
      - {type: extern, period: 10ms, timeout: 60s, connect_timeout: 120s, command: "` + py + ` ` + script + `"}
network:
  backend: ideal
`
	dir := filepath.Join(t.TempDir(), "run")
	res, err := runner.Execute(build(t, text), dir, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := os.ReadFile(filepath.Join(dir, "events.csv"))
	for _, e := range []string{"py_start", "py_airborne", "py_arrived", "py_landed"} {
		if !strings.Contains(string(ev), ","+e+",") {
			t.Errorf("events.csv lacks %s", e)
		}
	}
	v := res.Summary.Vehicles[0]
	if d := v.Final.Sub(v.Start); d.X < 9.6 || d.X > 10.4 || v.Final.Z > 0.05 || v.Mode != "disarmed" {
		t.Fatalf("the UAV ended at %v (mode %s), want landed 10 m east", v.Final, v.Mode)
	}
}

// TestFlockingExample runs examples/flocking for 20 s: ten Python processes
// flock over the Wi-Fi model without collisions.
func TestFlockingExample(t *testing.T) {
	python(t)
	sc, err := scenariofile.Load(filepath.Join("..", "examples", "flocking", "flocking.yaml"), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	d := 20 * sim.Second
	r, err := engine.Build(sc, engine.Options{Registry: registry, Duration: &d, NoFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Execute(r, "", runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Network.Total.PDR < 0.9 || s.Separation == nil || s.Separation.Collisions != 0 || s.Separation.MinM < 1 {
		t.Fatalf("PDR %.3f, separation %+v", s.Network.Total.PDR, s.Separation)
	}
	for _, v := range s.Vehicles {
		if v.Final.Z < 8 || v.DistanceM < 40 {
			t.Errorf("%s: at %v after %.0f m; the flock should cruise at 10 m", v.Name, v.Final, v.DistanceM)
		}
	}
}

// TestPythonClientOverTLS: the Python client on "another host" connects to
// skyloop's --listen address over TLS with the printed fingerprint and
// token, and flies; with a wrong fingerprint it refuses the server. The
// time limits are for a slow interpreter on a loaded machine: what the test
// waits for is the client's exit, not a clock.
func TestPythonClientOverTLS(t *testing.T) {
	py := python(t)
	script, _ := filepath.Abs(filepath.Join("testdata", "fly_one.py"))
	text := `
name: python-tls
seed: 1
duration: 40s
tick: 1ms
vehicles:
  - name: uav
    kind: multirotor
    count: 1
    spawn: {layout: explicit, positions: [[0, 0, 0]]}
    behaviors:
      - {type: extern, period: 10ms, timeout: 60s, connect_timeout: 120s}
network:
  backend: ideal
`
	start := func(addr, fp, token string, out *bytes.Buffer) *exec.Cmd {
		c := exec.Command(py, script)
		c.Env = append(os.Environ(), "SKYLOOP_ADDR="+addr, "SKYLOOP_FINGERPRINT="+fp, "SKYLOOP_TOKEN="+token, "SKYLOOP_VEHICLE=0", "SKYLOOP_SOCKET=")
		c.Stderr = out
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	var stderr bytes.Buffer
	var proc *exec.Cmd
	res, err := runner.Execute(build(t, text), "", runner.Options{ExternListen: "127.0.0.1:0",
		ExternRemote: func(addr, fp, token string) { proc = start(addr, fp, token, &stderr) }})
	if err != nil {
		t.Fatalf("%v; python: %s", err, stderr.String())
	}
	proc.Wait()
	if v := res.Summary.Vehicles[0]; v.Final.Sub(v.Start).X < 9.6 || v.Mode != "disarmed" {
		t.Fatalf("the UAV ended at %v (mode %s), want landed 10 m east; python: %s", v.Final, v.Mode, stderr.String())
	}
	// A wrong fingerprint: the client refuses a run's certificate that is
	// not the one given, and sends nothing. (A run whose agent never says
	// hello fails at its connect timeout: TestFaults.)
	cert, _, err := extern.NewCertificate()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", extern.ServerTLS(cert))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sent := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			sent <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Minute))
		n, err := c.Read(make([]byte, 1))
		if n > 0 {
			err = errors.New("the client sent data to a server whose certificate it should refuse")
		} else {
			err = nil
		}
		sent <- err
	}()
	stderr.Reset()
	wrong := "sha256:" + strings.Repeat("ab", 32)
	proc = start(ln.Addr().String(), wrong, "token", &stderr)
	exited := make(chan error, 1)
	go func() { exited <- proc.Wait() }()
	select {
	case err := <-exited:
		if err == nil {
			t.Errorf("python with a wrong fingerprint exited 0")
		}
	case <-time.After(5 * time.Minute):
		t.Fatalf("python with a wrong fingerprint did not exit; stderr: %s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "not the sha256:"+strings.Repeat("ab", 32)+" given") {
		t.Errorf("python with a wrong fingerprint said: %s", stderr.String())
	}
	if err := <-sent; err != nil {
		t.Error(err)
	}
}
