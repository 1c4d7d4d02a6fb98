package behavior_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/netsim/wifi"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/sim"
)

// grid20 is 20 hovering vehicles 5 m apart, all in range of each other,
// broadcasting their state at 10 Hz over native 802.11a, staggered 1 ms
// apart (flock-100's timing at a fifth of its size); beacon holds extra
// beacon parameters.
func grid20(beacon, network string) string {
	return `name: grid20
seed: 7
duration: 5s
tick: 1ms
vehicles:
  - name: uav
    kind: pointmass
    count: 20
    spawn: {layout: grid, origin: [0, 0, 10], spacing: 5, columns: 5}
    behaviors:
      - {type: beacon, period: 100ms, stagger: 1ms` + beacon + `}
network: ` + network + `
`
}

// wifiRegistry is the core's registry with the native Wi-Fi backend.
func wifiRegistry() *engine.Registry {
	reg := engine.Core()
	reg.AddBackend(wifi.Spec)
	return reg
}

// runWith executes a scenario with the components of reg, without files,
// and returns its summary.
func runWith(t *testing.T, reg *engine.Registry, text string) *runner.Summary {
	t.Helper()
	sc, err := scenario.Parse("test.yaml", []byte(text), reg.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Execute(r, "", runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Summary
}

// TestBeaconsContend: with the default timing (a random phase per vehicle
// and up to 10 ms of jitter per update) 20 beacons staggered 1 ms apart
// overlap now and then, as real ones do: some updates wait for the medium
// or collide, so the latency spreads (p95 > p50) and some receptions are
// lost. phase: zero and jitter: 0 give the old fixed timetable, where
// every update has the medium to itself and every latency is the same
// but for the propagation delay.
func TestBeaconsContend(t *testing.T) {
	s := runWith(t, wifiRegistry(), grid20("", "{backend: wifi}"))
	n := s.Network.Total
	if n.Tx < 900 {
		t.Fatalf("%d updates sent in 5 s by 20 beacons at 10 Hz", n.Tx)
	}
	t.Logf("default timing: PDR %.4f, latency p50 %d, p95 %d, max %d ns, drops %v", n.PDR, n.Latency.P50, n.Latency.P95, n.Latency.Max, n.Drops)
	// An update that finds the medium busy waits for the other one's
	// 0.24 ms on the air, at least part of it; propagation alone spreads
	// the latencies by well under a microsecond.
	if n.Latency.P95-n.Latency.P50 < 50_000 {
		t.Errorf("latency p50 %d ns, p95 %d ns: no spread", n.Latency.P50, n.Latency.P95)
	}
	if lost := n.Drops["collision"] + n.Drops["busy"]; lost == 0 {
		t.Errorf("no reception lost to contention: drops %v", n.Drops)
	}
	if n.PDR > 0.999 || n.PDR < 0.8 {
		t.Errorf("PDR %.4f, want a few losses to contention (drops %v)", n.PDR, n.Drops)
	}

	s = runWith(t, wifiRegistry(), grid20(", phase: zero, jitter: 0", "{backend: wifi}"))
	n = s.Network.Total
	if n.Latency.Max-n.Latency.P50 > 1000 || n.PDR != 1 {
		t.Errorf("fixed timetable: latency p50 %d, p95 %d, max %d ns, PDR %v, drops %v: want one latency (up to propagation) and no loss",
			n.Latency.P50, n.Latency.P95, n.Latency.Max, n.PDR, n.Drops)
	}
}

// TestBeaconTimesAcrossNetworkModes: with the default random phase and
// jitter the updates leave at the same times whether the network advances
// every tick, in 10 ms epochs (planned, coupled) or runs first (replay):
// the tx rows of trace.csv are the same bytes. (Those of the last tick
// are left out: a network that advances every tick is never advanced past
// the end, so the sends of the last tick are not traced there.)
func TestBeaconTimesAcrossNetworkModes(t *testing.T) {
	var ref []byte
	for i, network := range []string{
		"{backend: impair, latency: 2ms}",
		"{backend: impair, latency: 2ms, epoch: 10ms}",
		"{backend: impair, latency: 2ms, epoch: 10ms, mode: replay}",
	} {
		reg := engine.Core()
		sc, err := scenario.Parse("test.yaml", []byte(grid20("", network)), reg.Schema())
		if err != nil {
			t.Fatal(err)
		}
		r, err := engine.Build(sc, engine.Options{Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if _, err := runner.Execute(r, dir, runner.Options{}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "trace.csv"))
		if err != nil {
			t.Fatal(err)
		}
		var tx bytes.Buffer
		offGrid := 0
		for line := range strings.Lines(string(b)) {
			if !strings.HasPrefix(line, "tx,") {
				continue
			}
			tns, err := strconv.ParseInt(strings.Split(line, ",")[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if tns < int64(4999*sim.Millisecond) {
				tx.WriteString(line)
				if tns%int64(sim.Millisecond) != 0 {
					offGrid++
				}
			}
		}
		if i == 0 {
			ref = tx.Bytes()
			if offGrid < 900 {
				t.Fatalf("%d updates off the 1 ms grid, want nearly all of about 1000", offGrid)
			}
			continue
		}
		if !bytes.Equal(tx.Bytes(), ref) {
			t.Errorf("network %s: the tx rows differ from the stepped run's", network)
		}
	}
}
