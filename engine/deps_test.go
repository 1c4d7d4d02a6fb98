package engine

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreTouchesNothingOutside: the core imports no process, socket or
// system-call package; those belong to the runner and the edge components.
func TestCoreTouchesNothingOutside(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "skyloop/engine").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "os/exec", dep == "net", strings.HasPrefix(dep, "golang.org/x/sys"),
			strings.HasPrefix(dep, "skyloop/") && isEdge(dep):
			t.Errorf("the core depends on %s", dep)
		}
	}
}

// isEdge reports whether a skyloop package reaches outside the process.
func isEdge(pkg string) bool {
	switch pkg {
	case "skyloop/runner", "skyloop/record", "skyloop/orchestrate", "skyloop/extern", "skyloop/mavlink",
		"skyloop/netsim/ns3", "skyloop/netsim/tap", "skyloop/components", "skyloop/px4sitl", "skyloop/ardupilot":
		return true
	}
	return false
}
