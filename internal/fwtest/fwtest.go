// Package fwtest is what the real-firmware bridges' tests (px4sitl,
// ardupilot) share: a stand-in firmware program that records where it runs
// and the paths it is handed, and a launch of it through the real launch
// code from a relative scenario path into a relative run directory. It is
// an edge (docs/boundary.txt): it writes files and runs processes.
package fwtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/runner"
	"skyloop/scenario/scenariofile"
)

// StandIn is a shell script standing in for a firmware binary: from the
// working directory skyloop starts it in, it writes that directory and,
// for its own path and every argument with a slash (each part of a comma
// list), whether the path exists from there, to $SKYLOOP_FAKE_LOG, and
// exits.
const StandIn = `#!/bin/sh
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

// Launch is a launch of a stand-in firmware from relative paths.
type Launch struct {
	// EnvDir is the variable that names the firmware's directory
	// (SKYLOOP_PX4_DIR, SKYLOOP_ARDUPILOT_DIR); Dir is that directory,
	// relative, and Files the files in it by relative path (StandIn as
	// the binary), all made executable.
	EnvDir, Dir string
	Files       map[string]string
	// Scenario is the scenario's text, run from scn/paths.yaml.
	Scenario string
	Registry *engine.Registry
	// Out is the run directory's name; Exited is what the run's error
	// must contain (the stand-in exits at once).
	Out, Exited string
}

// Run changes to a new temporary directory, writes the firmware's files
// and the scenario, and runs the scenario twice, with the firmware's
// directory absolute and then relative. Each time the stand-in must have
// run in an absolute directory and been handed only absolute paths that
// exist from there; check then gets the stand-in's log to look for what the
// firmware needs.
func (l Launch) Run(t *testing.T, check func(t *testing.T, log string)) {
	t.Helper()
	t.Chdir(t.TempDir())
	for name, text := range l.Files {
		p := filepath.Join(l.Dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll("scn", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("scn", "paths.yaml"), []byte(l.Scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(l.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, dir string }{{"absolute_dir", abs}, {"relative_dir", l.Dir}} {
		t.Run(c.name, func(t *testing.T) {
			log, err := filepath.Abs(filepath.Join(t.Name(), "fake.log"))
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv("SKYLOOP_FAKE_LOG", log)
			t.Setenv(l.EnvDir, c.dir)
			sc, err := scenariofile.Load(filepath.Join("scn", "paths.yaml"), l.Registry.Schema())
			if err != nil {
				t.Fatal(err)
			}
			r, err := engine.Build(sc, engine.Options{Registry: l.Registry})
			if err != nil {
				t.Fatal(err)
			}
			_, err = runner.Execute(r, filepath.Join(t.Name(), "runs", l.Out), runner.Options{})
			if err == nil || !strings.Contains(err.Error(), l.Exited) {
				t.Errorf("run: got %v, want the stand-in's exit (%q)", err, l.Exited)
			}
			check(t, checkLog(t, log))
		})
	}
}

// checkLog checks what the stand-in wrote: it ran in an absolute
// directory, and every path it was handed is absolute and exists from
// there. It returns the log.
func checkLog(t *testing.T, log string) string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("the stand-in firmware did not run: %v", err)
	}
	text := string(b)
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.SplitN(line, " ", 3)
		switch {
		case f[0] == "cwd" && !filepath.IsAbs(f[1]):
			t.Errorf("working directory %s is not absolute", f[1])
		case f[0] == "path" && !filepath.IsAbs(f[2]):
			t.Errorf("path %s handed to the firmware is not absolute", f[2])
		case f[0] == "path" && f[1] != "yes":
			t.Errorf("path %s handed to the firmware does not exist from its working directory", f[2])
		}
	}
	return text
}
