package sweep

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"skyloop/geom"
	"skyloop/internal/untrusted"
	"skyloop/report"
	"skyloop/runread"
)

// coverageResult is a coverage behaviour's line in summary.json.
type coverageResult struct {
	Planner string `json:"planner"`
	Grid    struct {
		Cols      int        `json:"cols"`
		Rows      int        `json:"rows"`
		Cell      float64    `json:"cell_m"`
		Origin    [2]float64 `json:"origin"`
		Obstacles [][2]int   `json:"obstacles"`
	} `json:"grid"`
	Planned struct {
		Tour      string   `json:"tour"`
		Cells     int      `json:"cells"`
		Free      int      `json:"free_cells"`
		Crossings int      `json:"crossings"`
		DistanceM float64  `json:"distance_m"`
		Turns     int      `json:"turns"`
		TurnDeg   float64  `json:"turn_deg"`
		EnergyJ   float64  `json:"energy_j"`
		Path      [][2]int `json:"path"`
	} `json:"planned"`
	Complete bool `json:"complete"`
	// Covered is the check of the flight against the plan: the planned
	// cells whose centre the flown track passed within the radius.
	Covered *struct {
		RadiusM float64  `json:"radius_m"`
		Track   string   `json:"track"`
		Planned int      `json:"planned"`
		Cells   int      `json:"cells"`
		Missed  [][2]int `json:"missed"`
		WorstM  *float64 `json:"worst_m"`
	} `json:"covered"`
	Flown *struct {
		DistanceM       float64 `json:"distance_m"`
		TimeS           float64 `json:"time_s"`
		AvgSpeed        float64 `json:"avg_speed_mps"`
		EnergyJ         float64 `json:"energy_j"`
		TurnDeg         float64 `json:"turn_deg"`
		PlanningEnergyJ float64 `json:"planning_energy_j"`
		CellsFlownOver  int     `json:"cells_flown_over"`
	} `json:"flown"`
}

// Bounds on what the coverage figure draws, from summary.json: the
// coverage behaviour's own limit on the grid (at most 10000 cells a side),
// and far more obstacles, plan steps and panels than a run has.
const (
	maxCoverageSide      = 10_000
	maxCoverageObstacles = 1_000_000
	maxCoveragePath      = 4_000_000
	maxCoveragePanels    = 32
)

// check refuses a coverage result that no run writes and that would size
// the figure: a grid beyond the behaviour's limits, too many obstacles or
// plan steps.
func (c *coverageResult) check() error {
	g := &c.Grid
	switch {
	case g.Cols < 1 || g.Cols > maxCoverageSide || g.Rows < 1 || g.Rows > maxCoverageSide:
		return fmt.Errorf("grid: %d x %d cells, want 1..%d a side", g.Cols, g.Rows, maxCoverageSide)
	case !(g.Cell > 0) || math.IsInf(g.Cell, 0) || math.IsNaN(g.Origin[0]) || math.IsInf(g.Origin[0], 0) || math.IsNaN(g.Origin[1]) || math.IsInf(g.Origin[1], 0):
		return fmt.Errorf("grid: cell %v m at %v is not a grid", g.Cell, g.Origin)
	case len(g.Obstacles) > maxCoverageObstacles:
		return fmt.Errorf("grid.obstacles: more than %d", maxCoverageObstacles)
	case len(c.Planned.Path) > maxCoveragePath:
		return fmt.Errorf("planned.path: more than %d cells", maxCoveragePath)
	case c.Covered != nil && len(c.Covered.Missed) > maxCoveragePath:
		return fmt.Errorf("covered.missed: more than %d cells", maxCoveragePath)
	}
	return nil
}

// coverageRuns reads the coverage results of a run's vehicles, by node
// name in order, and the node IDs by name.
func coverageRuns(dir string) ([]string, []coverageResult, map[string]int, error) {
	b, err := untrusted.ReadFileIn(dir, "summary.json", untrusted.MaxJSON)
	if err != nil {
		return nil, nil, nil, err
	}
	var s struct {
		Agents   map[string]map[string]json.RawMessage `json:"agents"`
		Vehicles []struct {
			ID   int    `json:"id"`
			Name string `json:"name"`
		} `json:"vehicles"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, "summary.json"), err)
	}
	var names []string
	var out []coverageResult
	for _, node := range slices.Sorted(maps.Keys(s.Agents)) {
		raw, ok := s.Agents[node]["coverage"]
		if !ok {
			continue
		}
		var c coverageResult
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: agents.%s.coverage: %w", filepath.Join(dir, "summary.json"), node, err)
		}
		if err := c.check(); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: agents.%s.coverage.%w", filepath.Join(dir, "summary.json"), node, err)
		}
		names, out = append(names, node), append(out, c)
	}
	ids := map[string]int{}
	for _, v := range s.Vehicles {
		ids[v.Name] = v.ID
	}
	return names, out, ids, nil
}

// coverage writes coverage.csv (one row per run and covering vehicle: the
// plan's and the flight's figures), coverage.md (the same as a table of
// means over seeds per variant) and figures/coverage_paths.png (every
// variant's plan over the grid, seed 1, with the track flown).
func coverage(dir string, e *Experiment, runs []aRun) error {
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	out := [][]string{{"experiment", "variant", "value", "seed", "node", "planner", "tour", "cells", "free_cells", "crossings",
		"planned_distance_m", "planned_turns", "planned_turn_deg", "planned_energy_j", "complete",
		"flown_distance_m", "flight_time_s", "avg_speed_mps", "flown_turn_deg", "flown_planning_energy_j", "flown_physics_energy_j", "cells_flown_over",
		"cover_radius_m", "covered_cells", "missed_cells", "worst_miss_m", "missed"}}
	type agg struct {
		planner                            string
		cells, turns                       int
		dist, turnDeg, energy              float64
		fDist, fTime, fSpeed, fPlan, fPhys float64
		n, flown                           int
		// The flight checked against the plan: sums over the runs that
		// report it, and the radius (when all runs share it).
		checked, covered, planned int
		radius                    float64
		radii                     bool // runs with different radii
		worst                     float64
	}
	var order []string
	aggs := map[string]*agg{}
	var panels []report.CoveragePanel
	var grid *report.CoverageGrid
	cut := false // panels left out
	for _, r := range runs {
		names, res, ids, err := coverageRuns(r.dir)
		if err != nil {
			return fmt.Errorf("%s seed %d: %w", r.variant, r.seed, err)
		}
		for k, c := range res {
			row := []string{e.Name, r.variant, r.value, strconv.Itoa(r.seed), names[k], c.Planner, c.Planned.Tour, strconv.Itoa(c.Planned.Cells),
				strconv.Itoa(c.Planned.Free), strconv.Itoa(c.Planned.Crossings), f(c.Planned.DistanceM, 3), strconv.Itoa(c.Planned.Turns),
				f(c.Planned.TurnDeg, 3), f(c.Planned.EnergyJ, 3), strconv.FormatBool(c.Complete)}
			key := r.variant + "\x00" + names[k]
			a := aggs[key]
			if a == nil {
				a = &agg{planner: c.Planner}
				aggs[key] = a
				order = append(order, key)
			}
			a.n++
			a.cells, a.turns, a.dist, a.turnDeg, a.energy = c.Planned.Cells, c.Planned.Turns, c.Planned.DistanceM, c.Planned.TurnDeg, c.Planned.EnergyJ
			if fl := c.Flown; fl != nil {
				row = append(row, f(fl.DistanceM, 3), f(fl.TimeS, 3), f(fl.AvgSpeed, 3), f(fl.TurnDeg, 3), f(fl.PlanningEnergyJ, 3),
					f(fl.EnergyJ, 3), strconv.Itoa(fl.CellsFlownOver))
				a.flown++
				a.fDist += fl.DistanceM
				a.fTime += fl.TimeS
				a.fSpeed += fl.AvgSpeed
				a.fPlan += fl.PlanningEnergyJ
				a.fPhys += fl.EnergyJ
			} else {
				row = append(row, "", "", "", "", "", "", "")
			}
			if cv := c.Covered; cv != nil {
				missed := make([]string, len(cv.Missed))
				for i, m := range cv.Missed {
					missed[i] = strconv.Itoa(m[0]) + ":" + strconv.Itoa(m[1])
				}
				worst := ""
				if cv.WorstM != nil {
					worst = f(*cv.WorstM, 3)
					a.worst = max(a.worst, *cv.WorstM)
				}
				row = append(row, f(cv.RadiusM, 3), strconv.Itoa(cv.Cells), strconv.Itoa(len(cv.Missed)), worst, strings.Join(missed, " "))
				if a.checked > 0 && cv.RadiusM != a.radius {
					a.radii = true
				}
				a.checked++
				a.covered += cv.Cells
				a.planned += cv.Planned
				a.radius = cv.RadiusM
			} else {
				row = append(row, "", "", "", "", "")
			}
			out = append(out, row)
			if r.seed != 1 {
				continue
			}
			if len(panels) >= maxCoveragePanels {
				if !cut {
					slog.Warn("coverage figure: more plans than panels; the rest are left out", "panels", maxCoveragePanels, "run", r.dir)
					cut = true
				}
				continue
			}
			g := report.CoverageGrid{Origin: c.Grid.Origin, Cols: c.Grid.Cols, Rows: c.Grid.Rows, Cell: c.Grid.Cell, Obstacles: c.Grid.Obstacles}
			if grid == nil {
				grid = &g
			}
			pn := report.CoveragePanel{Title: fmt.Sprintf("%s (%s), %.1f J planned", r.variant, c.Planner, c.Planned.EnergyJ)}
			centre := func(cell [2]int) geom.Vec3 {
				return geom.V(g.Origin[0]+(float64(cell[0])+0.5)*g.Cell, g.Origin[1]+(float64(cell[1])+0.5)*g.Cell, 0)
			}
			for _, cell := range c.Planned.Path {
				pn.Plan = append(pn.Plan, centre(cell))
			}
			if c.Covered != nil {
				for _, cell := range c.Covered.Missed {
					pn.Missed = append(pn.Missed, centre(cell))
				}
			}
			if tracks, err := readTracks(func(f func(map[string]int, []string) error) error {
				return report.TableRows(r.dir, runread.Vehicles, f)
			}); err == nil {
				if id, ok := ids[names[k]]; ok && id < len(tracks) {
					pn.Flown = tracks[id].Points
				}
			}
			panels = append(panels, pn)
		}
	}
	if err := writeCSV(filepath.Join(dir, "coverage.csv"), out); err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# %s: coverage plans and flights (means over seeds)\n\n", e.Name)
	md.WriteString("A cell is covered in flight when the track flown passed within the radius of its centre; the count sums the seeds' runs, and the worst miss is the largest closest approach to a planned cell's centre in any run.\n\n")
	md.WriteString("| variant | vehicle | planner | cells | planned distance (m) | turns | turned (deg) | planned energy (J) | covered in flight | worst miss (m) | flown distance (m) | flight time (s) | average speed (m/s) | flown energy, planning model (J) | flown energy, physics (J) |\n")
	md.WriteString("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, key := range order {
		a := aggs[key]
		v, node, _ := strings.Cut(key, "\x00")
		fmt.Fprintf(&md, "| %s | %s | %s | %d | %.1f | %d | %.0f | %.1f |", v, node, a.planner, a.cells, a.dist, a.turns, a.turnDeg, a.energy)
		switch {
		case a.checked == 0:
			md.WriteString(" not checked | |")
		case a.radii:
			fmt.Fprintf(&md, " %d of %d (radii differ) | %.2f |", a.covered, a.planned, a.worst)
		default:
			// Summed over the seeds: 336 of 336 is every cell in 3 runs.
			fmt.Fprintf(&md, " %d of %d within %.4g m | %.2f |", a.covered, a.planned, a.radius, a.worst)
		}
		if a.flown == a.n && a.n > 0 {
			k := float64(a.n)
			fmt.Fprintf(&md, " %.1f | %.1f | %.2f | %.1f | %.0f |\n", a.fDist/k, a.fTime/k, a.fSpeed/k, a.fPlan/k, a.fPhys/k)
		} else {
			fmt.Fprintf(&md, " not finished in %d of %d runs | | | | |\n", a.n-a.flown, a.n)
		}
	}
	if err := report.WriteFile(filepath.Join(dir, "coverage.md"), []byte(md.String())); err != nil {
		return err
	}
	if grid == nil {
		return nil
	}
	png, err := report.CoveragePNG(e.Name, *grid, panels)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "figures"), 0o755); err != nil {
		return err
	}
	return report.WriteFile(filepath.Join(dir, "figures", "coverage_paths.png"), png)
}
