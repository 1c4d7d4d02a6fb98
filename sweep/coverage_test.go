package sweep

import (
	"encoding/csv"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"skyloop/components"
	"skyloop/internal/hostile"
	"skyloop/internal/short"
	"skyloop/scenarios"
)

// TestCoverageExperiment runs the built-in coverage experiment (both
// planners, 2 seeds) twice: coverage.csv has a row per run with the plan
// and the flight, the turn-aware plan costs less than DLS's, the table and
// the figure are written, and both sweeps' files are byte-identical
// (meta.json aside).
func TestCoverageExperiment(t *testing.T) {
	short.Skip(t, "takes several seconds")
	b, ok := scenarios.Lookup("coverage/planners")
	if !ok {
		t.Fatal("coverage/planners is not embedded")
	}
	read := func(name string) (string, []byte, string, error) {
		base := strings.TrimSuffix(name, ".yaml")
		if b, ok := scenarios.Lookup(path.Join("coverage", base)); ok {
			return base + ".yaml", b, "", nil
		}
		return "", nil, "", fmt.Errorf("no built-in scenario %q", name)
	}
	var trees []map[string][]byte
	for k := 0; k < 2; k++ {
		e, err := ParseExperiment("planners.yaml", b, read, components.Registry())
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if _, err := Sweep(e, Options{Out: dir, Workers: 2, Seeds: 2}); err != nil {
			t.Fatal(err)
		}
		exp := filepath.Join(dir, "coverage")
		f, err := os.Open(filepath.Join(exp, "coverage.csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 5 {
			t.Fatalf("coverage.csv has %d rows, want a header and 4 runs", len(rows))
		}
		h := rows[0]
		get := func(r []string, name string) string {
			for i, c := range h {
				if c == name {
					return r[i]
				}
			}
			t.Fatalf("coverage.csv has no column %s", name)
			return ""
		}
		energy := map[string]float64{}
		for _, r := range rows[1:] {
			if get(r, "complete") != "true" || get(r, "cells") != "112" || get(r, "cells_flown_over") != "112" {
				t.Errorf("run %v: not a complete coverage of the 112 cells", r)
			}
			v, err := strconv.ParseFloat(get(r, "planned_energy_j"), 64)
			if err != nil {
				t.Fatal(err)
			}
			energy[get(r, "planner")] = v
		}
		t.Logf("planned energies %v", energy)
		if !(energy["turn-aware"] < energy["dls"]) {
			t.Errorf("planned energies %v: the turn-aware plan should cost less", energy)
		}
		for _, f := range []string{"coverage.md", "figures/coverage_paths.png"} {
			if st, err := os.Stat(filepath.Join(exp, f)); err != nil || st.Size() < 500 {
				t.Errorf("%s: %v", f, err)
			}
		}
		tr := tree(t, exp)
		delete(tr, "meta.json")
		for n := range tr {
			if strings.HasSuffix(n, "meta.json") {
				delete(tr, n)
			}
		}
		trees = append(trees, tr)
	}
	sameTree(t, "two sweeps", trees[0], trees[1])
}

// writeCoverageRun writes a run directory whose summary.json has n
// vehicles on the coverage behaviour, each with grid.
func writeCoverageRun(t *testing.T, n int, grid string) string {
	t.Helper()
	dir := t.TempDir()
	var agents []string
	for i := 0; i < n; i++ {
		agents = append(agents, fmt.Sprintf(`"uav-%d":{"coverage":{"planner":"dls","grid":%s,"planned":{"cells":2,"path":[[0,0],[1,0]]},"complete":true}}`, i, grid))
	}
	s := `{"agents":{` + strings.Join(agents, ",") + `},"vehicles":[]}`
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCoverageResultsAreBounded: a coverage result of summary.json that
// would size the figure beyond any run (a grid of 10^9 cells a side) is
// refused naming the file and the field, and a run with more covering
// vehicles than the figure has panels draws at most maxCoveragePanels of
// them, at a bounded cost.
func TestCoverageResultsAreBounded(t *testing.T) {
	dir := writeCoverageRun(t, 1, `{"cols":1000000000,"rows":1,"cell_m":1}`)
	if _, _, _, err := coverageRuns(dir); err == nil || !strings.Contains(err.Error(), "summary.json") || !strings.Contains(err.Error(), "coverage.grid") {
		t.Errorf("a grid of 10^9 columns: %v", err)
	}
	dir = writeCoverageRun(t, 1000, `{"cols":2,"rows":1,"cell_m":10}`)
	out := t.TempDir()
	e := &Experiment{Name: "c", Analysis: &Analysis{Type: Coverage}}
	var err error
	alloc := hostile.Allocated(func() { err = coverage(out, e, []aRun{{variant: "v", seed: 1, dir: dir}}) })
	if err != nil {
		t.Fatal(err)
	}
	if alloc > hostile.MaxAlloc {
		t.Errorf("1000 panels: allocated %d MB", alloc>>20)
	}
	checkPNG(t, filepath.Join(out, "figures", "coverage_paths.png"))
}
