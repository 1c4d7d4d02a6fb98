package runner

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/internal/mjtest"
	"skyloop/internal/ns3test"
	"skyloop/internal/short"
	"skyloop/scenario"
	"skyloop/scenarios"
	"skyloop/sim"
)

// rerunExcluded are the output files a re-run may write differently: none
// of the runs here is real-time (clock.csv holds wall-clock times) and
// Execute writes no meta.json (the caller's wall time and host); they are
// listed so that a future run that writes them does not fail for it.
var rerunExcluded = map[string]bool{"clock.csv": true, "meta.json": true}

// rerunDuration is how long each built-in scenario runs (or less when the
// scenario is shorter): long enough for take-offs, first commands and
// network traffic, short enough to run every scenario twice in CI.
const rerunDuration = 2 * sim.Second

// TestRerunFromConfig: every built-in scenario, run for a while, writes
// config.yaml, a scenario file that validates, and running that file
// writes the same files byte for byte (config.json and config.yaml
// included). Scenarios that need what a test host may lack are skipped
// with the reason: real firmware (PX4, ArduPilot SITL), namespaces at
// real time, ns-3 and MuJoCo when not installed.
func TestRerunFromConfig(t *testing.T) {
	short.Skip(t, "takes several seconds")
	names := scenarios.Names()
	for _, c := range scenarios.Collections() {
		names = append(names, scenarios.CollectionScenarios(c)...)
	}
	if len(names) < 20 {
		t.Fatalf("only %d built-in scenarios: %v", len(names), names)
	}
	for _, name := range names {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			text, ok := scenarios.Lookup(name)
			if !ok {
				t.Fatalf("Lookup(%q) failed", name)
			}
			s := string(text)
			switch {
			case strings.Contains(s, "controller: ardupilot-sitl") || strings.Contains(s, "controller: px4-sitl"):
				t.Skip("skipping: flown by real firmware (SITL), tested by the ardupilot and px4sitl packages")
			case strings.Contains(s, "isolation: netns"):
				t.Skip("skipping: real processes in network namespaces at real time (root), whose outputs follow the host's timing")
			}
			sc, err := scenario.Parse(name+".yaml", text, registry.Schema())
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if strings.Contains(s, "backend: ns3") {
				ns3test.Need(t)
			}
			if strings.Contains(s, "physics: mujoco") {
				mjtest.Require(t)
			}
			d := min(sc.Duration, rerunDuration)
			base := t.TempDir()
			first := filepath.Join(base, "first")
			r, err := engine.Build(sc, engine.Options{Registry: registry, Duration: &d})
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			if _, err := Execute(r, first, Options{}); err != nil {
				t.Fatalf("run: %v", err)
			}
			cfg, err := os.ReadFile(filepath.Join(first, "config.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			// As skyloop run and skyloop validate read a file.
			again, err := scenario.Parse("config.yaml", cfg, registry.Schema())
			if err != nil {
				t.Fatalf("config.yaml does not validate:\n%v\n%s", err, cfg)
			}
			if _, err := engine.Validate(again, engine.Options{Registry: registry}); err != nil {
				t.Fatalf("config.yaml does not validate:\n%v\n%s", err, cfg)
			}
			r, err = engine.Build(again, engine.Options{Registry: registry})
			if err != nil {
				t.Fatalf("build from config.yaml: %v", err)
			}
			second := filepath.Join(base, "second")
			if _, err := Execute(r, second, Options{}); err != nil {
				t.Fatalf("run from config.yaml: %v", err)
			}
			a, b := readTree(t, first), readTree(t, second)
			for f, want := range a {
				got, ok := b[f]
				switch {
				case !ok:
					t.Errorf("%s: not written by the re-run", f)
				case !bytes.Equal(got, want):
					t.Errorf("%s differs after the re-run (%d bytes, was %d)%s", f, len(got), len(want), firstDiff(want, got))
				}
			}
			for f := range b {
				if _, ok := a[f]; !ok {
					t.Errorf("%s: written by the re-run only", f)
				}
			}
			if _, ok := a["config.json"]; !ok {
				t.Error("no config.json")
			}
		})
	}
}

// readTree reads every file under dir, by path relative to it, but the
// excluded ones.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || rerunExcluded[e.Name()] {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// firstDiff describes the first line where two texts differ.
func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < len(la) && i < len(lb); i++ {
		if !bytes.Equal(la[i], lb[i]) {
			return "; line " + strconv.Itoa(i+1) + ":\n was " + clip(la[i]) + "\n now " + clip(lb[i])
		}
	}
	return ""
}

// clip shortens a line for a message.
func clip(l []byte) string {
	if len(l) > 200 {
		return string(l[:200]) + "..."
	}
	return string(l)
}
