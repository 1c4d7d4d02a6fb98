// Package mjtest holds what tests that need MuJoCo share.
package mjtest

import (
	"os"
	"testing"

	"skyloop/internal/short"
	"skyloop/vehicle/mujoco"
	"skyloop/vehicle/mujoco/mjlib"
)

// Require skips t when MuJoCo cannot be loaded, saying why, or fails it
// when SKYLOOP_REQUIRE_MUJOCO is set (as in CI, which installs it).
func Require(t testing.TB) {
	t.Helper()
	short.Skip(t, "needs MuJoCo")
	if err := mjlib.Load(); err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_MUJOCO") != "" {
			t.Fatalf("MuJoCo is required (SKYLOOP_REQUIRE_MUJOCO is set): %v", err)
		}
		t.Skipf("skipped: %v", err)
	}
}

// Lib returns the real MuJoCo library (mjlib's), for worlds a test makes
// itself, after Require.
func Lib(t testing.TB) mujoco.Library {
	t.Helper()
	Require(t)
	return mjlib.Lib{}
}
