// Package ddstest prepares tests that speak DDS (packages dds and ros2):
// Cyclone DDS confined to loopback and a domain of the test's own.
package ddstest

import (
	"os"
	"testing"

	"skyloop/dds"
	"skyloop/internal/short"
)

// LoopbackURI is a Cyclone DDS configuration that keeps to loopback: the
// interface lo, no multicast (loopback has none here), 127.0.0.1 as the
// only peer (ROS2.md's test setup).
const LoopbackURI = `<CycloneDDS><Domain><General><Interfaces><NetworkInterface name="lo"/></Interfaces>` +
	`<AllowMulticast>false</AllowMulticast></General><Discovery><Peers><Peer address="127.0.0.1"/></Peers>` +
	`<ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>100</MaxAutoParticipantIndex></Discovery></Domain></CycloneDDS>`

// Need loads Cyclone DDS with LoopbackURI as CYCLONEDDS_URI and returns a
// domain for the test (from the process id, 100-199, so that parallel
// test binaries do not share one). It skips the test, saying why, when
// the library is missing, unless SKYLOOP_REQUIRE_DDS is set (as in CI),
// where it fails it.
func Need(t testing.TB) uint32 {
	t.Helper()
	short.Skip(t, "needs Cyclone DDS")
	t.Setenv("CYCLONEDDS_URI", LoopbackURI)
	if err := dds.Load(); err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_DDS") != "" {
			t.Fatalf("Cyclone DDS required (SKYLOOP_REQUIRE_DDS): %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	return uint32(100 + os.Getpid()%100)
}
