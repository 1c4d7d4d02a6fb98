// Package ns3test gives tests the ns-3 backend's program, or skips them
// with the reason when ns-3 is not installed. Where SKYLOOP_REQUIRE_NS3 is
// set, as in CI, a missing ns-3 fails the test instead.
package ns3test

import (
	"os"
	"testing"

	"skyloop/internal/short"
	"skyloop/netsim/ns3"
)

// Need returns the path of the ns-3 backend's program, building it if
// needed. Without ns-3 it skips t with the reason, or fails t when
// SKYLOOP_REQUIRE_NS3 is set.
func Need(t testing.TB) string {
	t.Helper()
	short.Skip(t, "needs ns-3")
	bin, err := ns3.Binary()
	if err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_NS3") != "" {
			t.Fatalf("ns-3 required: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	return bin
}
