package px4sitl_test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/px4sitl"
	"skyloop/runner"
	"skyloop/scenario/scenariofile"
)

// standInPX4 is a stand-in for bin/px4: from the working directory skyloop
// starts it in, it writes that directory and, for its own path and every
// argument with a slash, whether the path exists from there, to
// $SKYLOOP_FAKE_LOG, and exits.
const standInPX4 = `#!/bin/sh
{
echo "cwd $(pwd)"
for a in "$0" "$@"; do
  case "$a" in */*) ;; *) continue ;; esac
  if [ -e "$a" ]; then echo "path yes $a"; else echo "path no $a"; fi
done
} > "$SKYLOOP_FAKE_LOG"
`

// TestLaunchPathsAbsolute runs a scenario given by a relative path into a
// relative output directory, with SKYLOOP_PX4_DIR absolute, then relative,
// and a stand-in PX4 launched by the real launch code: every path it is
// handed (itself, -w, the rootfs) must be absolute and exist from its
// working directory (procs/px4-0).
func TestLaunchPathsAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	build := filepath.Join("fw", "px4_sitl_default")
	for _, d := range []string{"bin", "etc/init.d-posix/airframes", "../../scn"} {
		if err := os.MkdirAll(filepath.Join(build, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range map[string]string{"bin/px4": standInPX4, "etc/init.d-posix/rcS": "#!/bin/sh\n", "etc/init.d-posix/airframes/10016_none_iris": "#!/bin/sh\n"} {
		if err := os.WriteFile(filepath.Join(build, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	scn := `name: paths
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
`
	if err := os.WriteFile(filepath.Join("scn", "paths.yaml"), []byte(scn), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(build)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, dir string }{{"absolute_build", abs}, {"relative_build", build}} {
		t.Run(c.name, func(t *testing.T) {
			log, err := filepath.Abs(filepath.Join(t.Name(), "fake.log"))
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv("SKYLOOP_FAKE_LOG", log)
			t.Setenv(px4sitl.EnvDir, c.dir)
			sc, err := scenariofile.Load(filepath.Join("scn", "paths.yaml"), registry.Schema())
			if err != nil {
				t.Fatal(err)
			}
			r, err := engine.Build(sc, engine.Options{Registry: registry})
			if err != nil {
				t.Fatal(err)
			}
			_, err = runner.Execute(r, filepath.Join(t.Name(), "runs", "px4"), runner.Options{})
			if err == nil || !strings.Contains(err.Error(), "PX4 exited") {
				t.Errorf("run: got %v, want the stand-in's exit", err)
			}
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatalf("the stand-in PX4 did not run: %v", err)
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
						t.Errorf("path %s handed to PX4 is not absolute", f[2])
					}
					if f[1] != "yes" {
						t.Errorf("path %s handed to PX4 does not exist from its working directory", f[2])
					}
				}
			}
			if paths != 3 || !strings.Contains(text, "procs/px4-0\n") || !strings.Contains(text, "/etc\n") {
				t.Errorf("want PX4's path, its working directory (-w) and its rootfs:\n%s", text)
			}
		})
	}
}
