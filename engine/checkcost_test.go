package engine

import (
	"fmt"
	"runtime"
	"testing"

	"skyloop/scenario"
)

// TestCheckCostBounded: checking a scenario with the largest vehicle count
// allowed, every vehicle running a beacon, stays within 100 MB allocated:
// a check builds no vehicle, and belief tables take memory only
// for the nodes heard (they used to be n tables of n entries: 24 GB and a
// kill for 100,000 vehicles).
func TestCheckCostBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: allocates up to 100 MB")
	}
	for _, kind := range []string{"pointmass", "multirotor"} {
		text := fmt.Sprintf(`name: big
duration: 10s
vehicles:
  - name: v
    kind: %s
    count: %d
    spawn: {layout: grid, spacing: 3, columns: 300}
    behaviors:
      - {type: beacon, period: 100ms}
network: {backend: impair}
`, kind, scenario.MaxVehicles)
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		if _, err := scenario.Parse("big.yaml", []byte(text), Core().Schema()); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&m1)
		if mb := (m1.TotalAlloc - m0.TotalAlloc) >> 20; mb > 100 {
			t.Errorf("%s: checking %d vehicles allocated %d MB", kind, scenario.MaxVehicles, mb)
		} else {
			t.Logf("%s: %d MB", kind, mb)
		}
	}
}
