package ardupilot_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"skyloop/ardupilot"
	"skyloop/internal/fwtest"
	"skyloop/internal/short"
)

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
// relative output directory, with SKYLOOP_ARDUPILOT_DIR absolute, then
// relative, and a stand-in ArduCopter launched by the real launch code:
// every path it is handed must be absolute and name a file that exists
// from its working directory (procs/ardupilot-0). With relative paths
// ArduCopter failed to load skyloop.parm and the run waited a minute for
// its first packet.
func TestLaunchPathsAbsolute(t *testing.T) {
	short.Skip(t, "takes several seconds")
	fwtest.Launch{
		EnvDir: ardupilot.EnvDir,
		Dir:    "fw/ardupilot",
		Files: map[string]string{
			"build/sitl/bin/arducopter":                 fwtest.StandIn,
			"Tools/autotest/default_params/copter.parm": "FRAME_CLASS 1\n",
		},
		Scenario: `name: paths
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
`,
		Registry: registry,
		Out:      "ap",
		Exited:   "ArduCopter exited",
	}.Run(t, func(t *testing.T, log string) {
		for _, w := range []string{"procs/ardupilot-0/skyloop.parm", "copter.parm"} {
			if !strings.Contains(log, w) {
				t.Errorf("the stand-in's log has no %q:\n%s", w, log)
			}
		}
		if strings.Count(log, "path ") < 2 {
			t.Errorf("want the stand-in's own path and its defaults files:\n%s", log)
		}
	})
}
