// Package mjtest holds what tests that need MuJoCo share.
package mjtest

import (
	"os"
	"testing"

	"skyloop/vehicle/mujoco"
)

// Require skips t when MuJoCo cannot be loaded, saying why, or fails it
// when SKYLOOP_REQUIRE_MUJOCO is set (as in CI, which installs it).
func Require(t testing.TB) {
	t.Helper()
	if err := mujoco.Load(); err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_MUJOCO") != "" {
			t.Fatalf("MuJoCo is required (SKYLOOP_REQUIRE_MUJOCO is set): %v", err)
		}
		t.Skipf("skipped: %v", err)
	}
}
