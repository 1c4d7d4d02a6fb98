package runner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/internal/mjtest"
	"skyloop/scenario/scenariofile"
	"skyloop/scenarios"
)

// TestMuJoCoLeaderIgnoresFollowers: the netbots platoon of rocker robots
// in MuJoCo, leader heading gain 8: the leader's rows of robots.csv are
// the same alone, with 3 followers, and with 3 followers beaconing every
// 50 ms instead of 100 ms (the leader listens to no one, and no robot
// touches another). With every robot in one MuJoCo model they differed
// from 24.7 s on, by up to 0.08 m (3 followers) and 0.19 m (3 followers
// at 50 ms) within the 40 s here.
func TestMuJoCoLeaderIgnoresFollowers(t *testing.T) {
	mjtest.Require(t)
	text, ok := scenarios.Lookup("netbots/platoon")
	if !ok {
		t.Fatal("netbots/platoon is not embedded")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rocker.xml"), []byte(mjtest.Rocker), 0o644); err != nil {
		t.Fatal(err)
	}
	leader := func(count int, beacon string) []byte {
		s := string(text)
		for _, r := range [][2]string{
			{"duration: 60s", "duration: 40s"},
			{"    kind: groundbot\n", "    kind: mujoco\n    params: {model: rocker.xml, body: base, left: lm, right: rm, wheel_radius: 0.06, track: 0.25, radius: 0.2, max_speed: 1.0, heading_gain: 8}\n"},
			{"    count: 3\n", fmt.Sprintf("    count: %d\n", count)},
			{"        period: 100ms\n", "        period: " + beacon + "\n"},
		} {
			if !strings.Contains(s, r[0]) {
				t.Fatalf("the platoon scenario changed: no %q", r[0])
			}
			s = strings.Replace(s, r[0], r[1], 1)
		}
		name := fmt.Sprintf("platoon-%d-%s", count, beacon)
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		sc, err := scenariofile.Load(path, registry.Schema())
		if err != nil {
			t.Fatal(err)
		}
		r, err := engine.Build(sc, engine.Options{Registry: registry})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, name)
		res, err := Execute(r, out, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if sep := res.Summary.Separation; sep != nil && sep.Collisions != 0 {
			t.Fatalf("%s: %d collisions", name, sep.Collisions)
		}
		b, err := os.ReadFile(filepath.Join(out, "robots.csv"))
		if err != nil {
			t.Fatal(err)
		}
		var rows bytes.Buffer
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Split(line, ","); len(f) > 1 && f[1] == "0" {
				rows.WriteString(line + "\n")
			}
		}
		if rows.Len() == 0 {
			t.Fatalf("%s: no rows of robot 0 in robots.csv", name)
		}
		return rows.Bytes()
	}
	alone := leader(1, "100ms")
	for _, c := range []struct {
		count  int
		beacon string
	}{{4, "100ms"}, {4, "50ms"}} {
		if got := leader(c.count, c.beacon); !bytes.Equal(got, alone) {
			t.Errorf("%d robots, beacons every %s: the leader's path differs from its path alone", c.count, c.beacon)
		}
	}
}
