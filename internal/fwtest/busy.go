package fwtest

import (
	"os/exec"
	"testing"
)

// Busy keeps n CPU cores busy until the test ends, with n shell loops that
// do nothing useful (processes of their own, scheduled by the kernel as
// another user's jobs would be): a loaded machine, for checking that
// real-firmware runs wait for the firmware's own readiness rather than for
// times that only a fast machine keeps.
func Busy(t testing.TB, n int) {
	t.Helper()
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting a busy loop: %v", err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
}
