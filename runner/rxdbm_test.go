package runner

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"testing"

	"skyloop/engine"
)

// TestDeliveriesRxPower checks deliveries.csv's rx_dbm column: the
// log-distance received power on the native Wi-Fi backend (16.0206 dBm -
// 46.6777 dB - 30 log10(d)), and empty on a backend that models no power.
func TestDeliveriesRxPower(t *testing.T) {
	const scen = `name: rxdbm
duration: 2s
vehicles:
  - {name: far, kind: pointmass, count: 1, spawn: {layout: line, origin: [5000, 0, 1], spacing: 1}}
nodes:
  - {name: a, position: [0, 0, 1], behaviors: [{type: traffic, rate: 8000, size: 100}]}
  - {name: b, position: [10, 0, 1]}
  - {name: c, position: [30, 0, 1]}
network: %s
outputs: {deliveries: true}
`
	for _, tc := range []struct {
		net   string
		power bool
	}{
		{"{backend: wifi, standard: 80211b, preamble_detection: false}", true},
		{"{backend: impair, latency: 1ms}", false},
	} {
		dir := t.TempDir()
		runYAML(t, fmt.Sprintf(scen, tc.net), engine.Options{Registry: registry}, dir)
		h, rows := readCSV(t, filepath.Join(dir, "deliveries.csv"))
		dst, rx := col(h, "dst"), col(h, "rx_dbm")
		if len(rows) < 10 {
			t.Fatalf("%s: only %d deliveries", tc.net, len(rows))
		}
		for i, r := range rows {
			if !tc.power {
				if r[rx] != "" {
					t.Fatalf("%s row %d: rx_dbm %q, want empty", tc.net, i, r[rx])
				}
				continue
			}
			got, err := strconv.ParseFloat(r[rx], 64)
			if err != nil {
				t.Fatalf("%s row %d: rx_dbm %q: %v", tc.net, i, r[rx], err)
			}
			d := map[string]float64{"2": 10, "3": 30}[r[dst]]
			want := 16.0206 - 46.6777 - 30*math.Log10(d)
			if math.Abs(got-want) > 0.001 {
				t.Fatalf("%s row %d: rx_dbm %v at %v m, want %.3f", tc.net, i, got, d, want)
			}
		}
	}
}
