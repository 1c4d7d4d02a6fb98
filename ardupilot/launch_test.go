package ardupilot_test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"skyloop/ardupilot"
	"skyloop/engine"
	"skyloop/runner"
	"skyloop/scenario/scenariofile"
)

// fakeArduCopter is a stand-in for arducopter: from the working directory
// skyloop starts it in, it writes that directory and, for its own path and
// every argument with a slash (each part of a comma list), whether the
// path exists from there, to $SKYLOOP_FAKE_LOG, and exits.
const fakeArduCopter = `#!/bin/sh
{
echo "cwd $(pwd)"
for a in "$0" "$@"; do
  case "$a" in */*) ;; *) continue ;; esac
  IFS=,
  for p in $a; do
    if [ -e "$p" ]; then echo "path yes $p"; else echo "path no $p"; fi
  done
  unset IFS
done
} > "$SKYLOOP_FAKE_LOG"
`

// freePort returns a UDP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// TestLaunchPathsAbsolute runs a scenario given by a relative path into a
// relative output directory, with SKYLOOP_ARDUPILOT_DIR relative too, and
// a stand-in ArduCopter launched by the real launch code: every path it is
// handed must be absolute and name a file that exists from its working
// directory (procs/ardupilot-0). With relative paths ArduCopter failed to
// load skyloop.parm and the run waited a minute for its first packet.
func TestLaunchPathsAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	tree := filepath.Join("fw", "ardupilot")
	for _, d := range []string{"build/sitl/bin", "Tools/autotest/default_params"} {
		if err := os.MkdirAll(filepath.Join(tree, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(tree, "build/sitl/bin/arducopter"):                 fakeArduCopter,
		filepath.Join(tree, "Tools/autotest/default_params/copter.parm"): "FRAME_CLASS 1\n",
	}
	for name, text := range files {
		if err := os.WriteFile(name, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll("scn", 0o755); err != nil {
		t.Fatal(err)
	}
	scn := `name: paths
duration: 1s
vehicles:
  - name: copter
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params:
      preset: iris
      controller: ardupilot-sitl
      ardupilot: {port: ` + strconv.Itoa(freePort(t)) + `, connect_timeout: 2s}
`
	if err := os.WriteFile(filepath.Join("scn", "paths.yaml"), []byte(scn), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(tree)
	if err != nil {
		t.Fatal(err)
	}
	// The case (an absolute ArduPilot tree, a relative --out), then
	// a relative tree as well.
	for _, c := range []struct{ name, dir string }{{"absolute_tree", abs}, {"relative_tree", tree}} {
		t.Run(c.name, func(t *testing.T) {
			log, err := filepath.Abs(filepath.Join(t.Name(), "fake.log"))
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv("SKYLOOP_FAKE_LOG", log)
			t.Setenv(ardupilot.EnvDir, c.dir)
			sc, err := scenariofile.Load(filepath.Join("scn", "paths.yaml"), registry.Schema())
			if err != nil {
				t.Fatal(err)
			}
			r, err := engine.Build(sc, engine.Options{Registry: registry})
			if err != nil {
				t.Fatal(err)
			}
			_, err = runner.Execute(r, filepath.Join(t.Name(), "runs", "ap"), runner.Options{})
			if err == nil || !strings.Contains(err.Error(), "ArduCopter exited") {
				t.Errorf("run: got %v, want the stand-in's exit", err)
			}
			checkFakeLog(t, log, "procs/ardupilot-0/skyloop.parm", "copter.parm")
		})
	}
}

// checkFakeLog checks what a stand-in firmware wrote: it ran in a
// directory ending in procs (absolute), and every path it was handed is
// absolute and exists; want are strings the log must contain.
func checkFakeLog(t *testing.T, log string, want ...string) {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("the stand-in firmware did not run: %v", err)
	}
	text := string(b)
	paths := 0
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.SplitN(line, " ", 3)
		switch {
		case f[0] == "cwd" && !filepath.IsAbs(f[1]):
			t.Errorf("working directory %s is not absolute", f[1])
		case f[0] == "path":
			paths++
			if !filepath.IsAbs(f[2]) {
				t.Errorf("path %s handed to the firmware is not absolute", f[2])
			}
			if f[1] != "yes" {
				t.Errorf("path %s handed to the firmware does not exist from its working directory", f[2])
			}
		}
	}
	if paths < 2 {
		t.Errorf("the stand-in saw %d paths, want its own and its files:\n%s", paths, text)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the stand-in's log has no %q:\n%s", w, text)
		}
	}
}
