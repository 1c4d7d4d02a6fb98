package px4sitl_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"skyloop/internal/fwtest"
	"skyloop/internal/short"
	"skyloop/px4sitl"
)

// TestLaunchPathsAbsolute runs a scenario given by a relative path into a
// relative output directory, with SKYLOOP_PX4_DIR absolute, then relative,
// and a stand-in PX4 launched by the real launch code: every path it is
// handed (itself, -w, the rootfs) must be absolute and exist from its
// working directory (procs/px4-0).
func TestLaunchPathsAbsolute(t *testing.T) {
	short.Skip(t, "takes several seconds")
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	fwtest.Launch{
		EnvDir: px4sitl.EnvDir,
		Dir:    "fw/px4_sitl_default",
		Files: map[string]string{
			"bin/px4":              fwtest.StandIn,
			"etc/init.d-posix/rcS": "#!/bin/sh\n",
			"etc/init.d-posix/airframes/10016_none_iris": "#!/bin/sh\n",
		},
		Scenario: `name: paths
duration: 1s
vehicles:
  - name: iris
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params:
      preset: iris
      controller: px4-sitl
      px4: {port: ` + strconv.Itoa(port) + `, connect_timeout: 20s}
`,
		Registry: registry,
		Out:      "px4",
		Exited:   "PX4 exited",
	}.Run(t, func(t *testing.T, log string) {
		if strings.Count(log, "path ") != 3 || !strings.Contains(log, "procs/px4-0\n") || !strings.Contains(log, "/etc\n") {
			t.Errorf("want PX4's path, its working directory (-w) and its rootfs:\n%s", log)
		}
	})
}
