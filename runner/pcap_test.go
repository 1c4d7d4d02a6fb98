package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/internal/short"
	"skyloop/scenarios"
)

// TestPacketsPcapAnyBackend: outputs.pcap captures every packet as its
// sender hands it to the network, whatever the backend, and tshark reads
// the capture: one frame per transmission in trace.csv.
func TestPacketsPcapAnyBackend(t *testing.T) {
	short.Skip(t, "needs tshark")
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_TSHARK") != "" {
			t.Fatalf("tshark required: %v", err)
		}
		t.Skip("skipping: tshark not installed (apt-get install tshark)")
	}
	base, _ := scenarios.Lookup("quickstart")
	text := string(base) + "outputs: {pcap: true}\n"
	for _, backend := range []string{"impair", "ideal"} {
		t.Run(backend, func(t *testing.T) {
			sc := text
			if backend == "ideal" {
				sc = strings.Replace(sc, "  backend: impair\n  latency: 10ms\n  loss: 0.05\n", "  backend: ideal\n", 1)
			}
			dir := filepath.Join(t.TempDir(), "run")
			res, err := Execute(buildYAML(t, sc, engine.Options{Registry: registry}), dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(tshark, "-r", filepath.Join(dir, "packets.pcap"), "-T", "fields", "-e", "ip.src").Output()
			if err != nil {
				t.Fatalf("tshark: %v", err)
			}
			frames := 0
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if strings.HasPrefix(l, "10.1.") {
					frames++
				}
			}
			if tx := res.Summary.Network.Total.Tx; uint64(frames) != tx {
				t.Fatalf("%s: tshark read %d frames, the run sent %d packets", backend, frames, tx)
			}
		})
	}
}
