package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunTwin(t *testing.T) {
	out := filepath.Join(t.TempDir(), "q")
	code, stdout, stderr := capture(t, "run", "quickstart", "--out", out, "--duration", "30s", "--twin")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"network cost (vs the ideal-network twin in twin/):", "mission completion: ", "deviation from the twin's trajectory", "drone-9"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{"twin.png", "twin/summary.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestTwinRefused: scenarios whose agents reach outside skyloop have no
// twin that runs the same agents; they are bad input, and nothing is
// written.
func TestTwinRefused(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", filepath.Join("..", "..", "examples", "flocking", "flocking.yaml"), "--twin"},
			"the ideal-network twin cannot run the same agents: parts of it reach outside the simulation: node uav-0: behaviour extern.Behavior"},
		{[]string{"run", "quickstart", "--twin", "--realtime", "1"}, "paced to the wall clock"},
		{[]string{"run", "mavlink-sitl", "--twin", "--mavlink-udp"}, "--mavlink-udp connects the vehicles to programs outside"},
		{[]string{"run", "netns-ping", "--twin"}, "isolation: netns"},
	}
	for _, c := range cases {
		code, _, stderr := capture(t, append(c.args, "--out", out)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, code, stderr)
		}
		if !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "twins run scenarios whose vehicles and agents all live inside skyloop") {
			t.Errorf("%v: stderr %q lacks %q", c.args, stderr, c.want)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("%v: something was written: %v", c.args, ents)
		}
	}
}
