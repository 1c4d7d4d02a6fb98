// Package nstest serialises the tests that make network namespaces, across
// the test binaries `go test ./...` runs in parallel: namespace creation
// and teardown are heavy kernel work (RCU grace periods, device
// unregistration) that stalls the other packages' real-time runs by tens of
// milliseconds, and the real-time tests measure clock offsets in
// milliseconds.
package nstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Lock holds a system-wide lock until the test ends. It fails the test if
// the lock cannot be taken.
func Lock(t testing.TB) {
	t.Helper()
	path := filepath.Join(os.TempDir(), "skyloop-netns-tests.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatalf("opening the namespace test lock: %v", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		t.Fatalf("taking the namespace test lock %s: %v", path, err)
	}
	t.Cleanup(func() {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	})
}

// Need prepares a test that makes namespaces: it takes the lock, then
// skips the test (saying why) when privileges fails, unless
// SKYLOOP_REQUIRE_NETNS is set (as in CI), where it fails it; and it fails
// the test when one of the programs is missing. privileges is
// orchestrate.CheckPrivileges (passed in, so that orchestrate's own tests
// can use this package).
func Need(t testing.TB, privileges func() error, programs ...string) {
	t.Helper()
	Lock(t)
	if err := privileges(); err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_NETNS") != "" {
			t.Fatalf("network namespaces required (SKYLOOP_REQUIRE_NETNS): %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is needed (.ci/run installs it): %v", p, err)
		}
	}
}
