package firmware

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/fields"
)

// TestChecks: the shared checks report under the bridge's keys, with
// the flight stack named.
func TestChecks(t *testing.T) {
	bad := fields.Errors{}
	CheckPort(bad, "UDP", 0)
	CheckTimeouts(bad, 0, -1)
	CheckParams(bad, "a PX4 parameter name", map[string]float64{"lower": 1, "GOOD": 2, "NAN_P": math.NaN()})
	if _, ok := CheckAccess(bad, "0.0.0.0", ""); ok {
		t.Error("listening on every address without peers passed")
	}
	want := map[string]string{
		"port":            "must be a UDP port in [1, 65000], got 0",
		"connect_timeout": "must be positive",
		"step_timeout":    "must be positive",
		"params.lower":    "not a PX4 parameter name (upper case, at most 16 characters)",
		"params.NAN_P":    "must be finite, got NaN",
		"listen":          "not a loopback address",
	}
	for k, w := range want {
		if !strings.Contains(bad[k], w) {
			t.Errorf("%s: %q, want %q", k, bad[k], w)
		}
	}
	if len(bad) != len(want) {
		t.Errorf("%d errors, want %d: %v", len(bad), len(want), bad)
	}
}

// TestFindDir: the directory comes from the environment when the scenario
// leaves it empty, and a file is not a directory.
func TestFindDir(t *testing.T) {
	b := Build{Env: "SKYLOOP_FIRMWARE_TEST_DIR", Key: "x.dir", What: "X SITL", HowToBuild: "build it"}
	t.Setenv(b.Env, "")
	bad := fields.Errors{}
	dir := ""
	if b.FindDir(bad, &dir, true) || bad["dir"] != "X SITL not found: build it" {
		t.Errorf("no directory anywhere: %v", bad)
	}
	d := t.TempDir()
	t.Setenv(b.Env, d)
	bad, dir = fields.Errors{}, ""
	if !b.FindDir(bad, &dir, true) || dir != d || len(bad) > 0 {
		t.Errorf("from the environment: dir %q, %v", dir, bad)
	}
	f := filepath.Join(d, "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad, dir = fields.Errors{}, f
	if b.FindDir(bad, &dir, false) || !strings.Contains(bad["dir"], "is not a directory (from x.dir): build it") {
		t.Errorf("a file: %v", bad)
	}
	if Executable(f) {
		t.Error("a file without x bits is executable")
	}
}
