// Package nstest serialises the tests that make network namespaces, across
// the test binaries `go test ./...` runs in parallel: namespace creation
// and teardown are heavy kernel work (RCU grace periods, device
// unregistration) that stalls the other packages' real-time runs by tens of
// milliseconds. It also gates the real-time test set: tests that assert
// wall-clock bounds (a round trip within 100 +/- 5 ms, clock offsets of a
// few milliseconds) run only when SKYLOOP_REALTIME_TESTS=1, on a machine
// quiet enough for such bounds to mean something; the ordinary tests
// assert behaviour only, and pass on a loaded machine.
package nstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"skyloop/internal/short"
	"strconv"
	"strings"
	"sync/atomic"
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
	short.Skip(t, "needs root and network namespaces")
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

// Neighbour makes a network namespace joined to this one by a veth pair,
// this end with address here and the namespace's end with there (CIDR,
// e.g. 10.79.0.1/24 and 10.79.0.2/24), and returns its name; both go when
// the test ends. Call Need first.
func Neighbour(t testing.TB, here, there string) string {
	t.Helper()
	tag := strconv.Itoa(os.Getpid()%10000) + strconv.Itoa(int(neighbours.Add(1)))
	ns, a, b := "skynb"+tag, "skyna"+tag, "skync"+tag
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	ip("link", "add", a, "type", "veth", "peer", "name", b, "netns", ns)
	t.Cleanup(func() { exec.Command("ip", "link", "del", a).Run() })
	ip("addr", "add", here, "dev", a)
	ip("link", "set", a, "up")
	ip("-n", ns, "addr", "add", there, "dev", b)
	ip("-n", ns, "link", "set", b, "up")
	return ns
}

var neighbours atomic.Int32

// RealtimeEnv is the environment variable that turns the real-time test
// set on (SKYLOOP_REALTIME_TESTS=1).
const RealtimeEnv = "SKYLOOP_REALTIME_TESTS"

// Realtime skips t, saying why, unless the real-time test set is on: tests
// whose assertions are wall-clock bounds, which a busy machine breaks
// however correct the code is.
func Realtime(t testing.TB) {
	t.Helper()
	if os.Getenv(RealtimeEnv) != "1" {
		t.Skipf("skipping: a wall-clock bound, checked only in the real-time test set (%s=1, on a quiet machine)", RealtimeEnv)
	}
}
