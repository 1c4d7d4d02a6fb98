package sweep

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSweepWithTwins: with outputs.twin in base, every run makes its
// ideal-network twin and summary.csv has the twin_* columns, beside the
// experiment's own reference.
func TestSweepWithTwins(t *testing.T) {
	e := mustParse(t, "twins.yaml", `
experiment: twins
scenario: platoon.yaml
seeds: 1
base: {duration: 6s, outputs.twin: true}
sweep: {param: network.loss, values: [0, 0.4]}
reference:
  network: {backend: ideal, epoch: 10ms}
  vehicles[robot].behaviors[beacon].period: 2ms
`)
	dir := t.TempDir()
	if _, err := Sweep(e, Options{Out: dir, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	exp := filepath.Join(dir, "twins")
	h, rows := readSummary(t, exp)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, c := range append(append([]string(nil), twinColumns...), "twin_platoon.gap_err_mean_m_excess", "twin_platoon.gap_err_max_m_excess", "traj_dev_mean_m") {
		column(t, h, c)
	}
	if !strings.HasPrefix(h[len(h)-len(twinColumns)-2], "twin_missions") {
		t.Errorf("the twin columns do not come last: %v", h)
	}
	val := func(row int, col string) float64 {
		v, err := strconv.ParseFloat(rows[row][column(t, h, col)], 64)
		if err != nil {
			t.Fatalf("row %d %s: %v", row, col, err)
		}
		return v
	}
	if d := val(1, "twin_traj_dev_mean_m"); !(d > val(0, "twin_traj_dev_mean_m")) || !(d > 0) {
		t.Errorf("deviation from the twin with 40%% loss %v, without %v", d, val(0, "twin_traj_dev_mean_m"))
	}
	if x := val(1, "twin_platoon.gap_err_mean_m_excess"); !(x > 0) {
		t.Errorf("gap error excess over the twin with 40%% loss: %v", x)
	}
	for _, v := range []string{"loss=0", "loss=0.4"} {
		if _, err := os.Stat(filepath.Join(exp, v, "seed1", "twin", "summary.json")); err != nil {
			t.Errorf("%s: no twin: %v", v, err)
		}
	}
}
