package sweep

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"skyloop/geom"
	"skyloop/internal/untrusted"
	"skyloop/report"
	"skyloop/runread"
)

// figures draws the experiment's plots into dir/figures: the vehicles'
// paths in seed 1 per variant (from the platoon measure's robots.csv, or
// vehicles.csv) over the scenario's obstacles, the state-update latency
// CDF per variant (seed 1), and the age of information and the gap error
// per variant (mean and std over seeds) when the runs have them.
func figures(dir string, e *Experiment, preps []prepared, seeds int) error {
	fd := filepath.Join(dir, "figures")
	if err := os.MkdirAll(fd, 0o755); err != nil {
		return err
	}
	runs, err := finishedRuns(dir, preps, seeds)
	if err != nil {
		return err
	}
	var cdf []report.Series
	var cdfX []float64 // the swept value of each CDF, to order them
	labels := make([]string, len(preps))
	values := make([]string, len(preps))
	aoiM, aoiS := make([]float64, len(preps)), make([]float64, len(preps))
	gapM, gapS := make([]float64, len(preps)), make([]float64, len(preps))
	anyAoI, anyGap := false, false
	for i, p := range preps {
		v := p.v
		labels[i] = variantLabel(e, v)
		values[i] = v.Value
		run := filepath.Join(dir, v.Name, "seed1")
		for _, rows := range []func(f func(map[string]int, []string) error) error{
			func(f func(map[string]int, []string) error) error {
				return report.CSVRows(filepath.Join(run, "robots.csv"), f)
			},
			func(f func(map[string]int, []string) error) error { return report.TableRows(run, runread.Vehicles, f) },
		} {
			tracks, err := readTracks(rows)
			if err != nil {
				continue
			}
			png, err := report.TrajectoryPNG(fmt.Sprintf("%s: paths, %s (seed 1)", e.Name, labels[i]), tracks, obstacles(run))
			if err != nil {
				return err
			}
			if err := report.WriteFile(filepath.Join(fd, "trajectories-"+v.Name+".png"), png); err != nil {
				return err
			}
			break
		}
		if lat, err := readStateLatencies(run); err == nil && len(lat) > 0 {
			s := report.Series{Name: labels[i]}
			step := max(1, len(lat)/500)
			for j := 0; j < len(lat); j += step {
				s.X = append(s.X, lat[j])
				s.Y = append(s.Y, float64(j+1)/float64(len(lat)))
			}
			s.X = append(s.X, lat[len(lat)-1])
			s.Y = append(s.Y, 1)
			cdf = append(cdf, s)
			x, _, _ := report.Quantity(v.Value)
			cdfX = append(cdfX, x)
		}
		var aois, gaps []float64
		for _, rf := range runs[i] {
			if rf == nil {
				continue
			}
			if rf.m.StateTx > 0 {
				aois = append(aois, rf.m.AoIMeanS)
				anyAoI = true
			}
			if rf.gap {
				gaps = append(gaps, rf.m.GapErrMeanM)
				anyGap = true
			}
		}
		aoiM[i], aoiS[i] = MeanStd(aois)
		gapM[i], gapS[i] = MeanStd(gaps)
	}
	xs, unit, numeric := report.Quantities(values)
	xl := "variant"
	if e.Param != "" {
		xl = lastKey(e.Param)
		if unit != "" {
			xl += " (" + unit + ")"
		}
	}
	if len(cdf) > 0 {
		if numeric && len(cdfX) == len(cdf) {
			idx := make([]int, len(cdf))
			for i := range idx {
				idx[i] = i
			}
			slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(cdfX[a], cdfX[b]) })
			sorted := make([]report.Series, len(cdf))
			for k, i := range idx {
				sorted[k] = cdf[i]
			}
			cdf = sorted
		}
		png, err := report.LinesPNG(e.Name+": latency of state updates (CDF, seed 1)", "one-way latency (ms)", "fraction of deliveries", cdf)
		if err != nil {
			return err
		}
		if err := report.WriteFile(filepath.Join(fd, "latency_cdf.png"), png); err != nil {
			return err
		}
	}
	bars := func(on bool, name, title, ylabel string, m, s []float64) error {
		if !on {
			return nil
		}
		for i := range m {
			if math.IsNaN(m[i]) {
				m[i], s[i] = 0, 0
			}
		}
		title = fmt.Sprintf("%s: %s (mean ± std over %d seeds)", e.Name, title, seeds)
		var png []byte
		var err error
		if numeric {
			png, err = report.ValuesPNG(title, xl, ylabel, xs, m, s)
		} else {
			png, err = report.BarsPNG(title, xl, ylabel, labels, m, s)
		}
		if err != nil {
			return err
		}
		return report.WriteFile(filepath.Join(fd, name), png)
	}
	if err := bars(anyAoI, "aoi.png", "age of information of state updates", "mean age of information (s)", aoiM, aoiS); err != nil {
		return err
	}
	return bars(anyGap, "gap_error.png", "gap error after warm-up", "mean |distance - gap| (m)", gapM, gapS)
}

// variantLabel is how the figures name a variant: the swept parameter
// and its value as a reader writes it ("jitter 200 ms"), or the
// variant's name.
func variantLabel(e *Experiment, v *Variant) string {
	if v.Value == "" || e.Param == "" {
		return v.Name
	}
	return lastKey(e.Param) + " " + report.Human(v.Value)
}

// obstacles reads the world's obstacles from a run's config.json.
func obstacles(run string) []geom.Box {
	b, err := untrusted.ReadFileIn(run, "config.json", untrusted.MaxJSON)
	if err != nil {
		return nil
	}
	var c struct {
		World struct {
			Obstacles []struct {
				Min, Max geom.Vec3
			} `json:"obstacles"`
		} `json:"world"`
	}
	if json.Unmarshal(b, &c) != nil {
		return nil
	}
	var out []geom.Box
	for _, o := range c.World.Obstacles {
		out = append(out, geom.Box{Min: o.Min, Max: o.Max})
	}
	return out
}

// trackPoints bounds the points kept of all tracks together: past it,
// every other point of every track is dropped and from then on only every
// second (fourth, ...) row of a vehicle is kept, the same for the same
// file. maxTrackID bounds the vehicle ids.
const (
	trackPoints = 1 << 21
	maxTrackID  = 100_000
)

// readTracks reads t_ns,id,x,y,... rows (robots.csv, the vehicles table),
// which read hands to its callback, into one track per id.
func readTracks(read func(f func(map[string]int, []string) error) error) ([]report.Track, error) {
	var tracks []report.Track
	var rows []int // rows read per id
	stride, kept := 1, 0
	err := read(func(_ map[string]int, r []string) error {
		if len(r) < 4 {
			return nil
		}
		id, err := strconv.Atoi(r[1])
		if err != nil || id < 0 || id > maxTrackID {
			return nil
		}
		for len(tracks) <= id {
			tracks = append(tracks, report.Track{Name: fmt.Sprintf("vehicle %d", len(tracks))})
			rows = append(rows, 0)
		}
		n := rows[id]
		rows[id]++
		if n%stride != 0 {
			return nil
		}
		x, _ := strconv.ParseFloat(r[2], 64)
		y, _ := strconv.ParseFloat(r[3], 64)
		tracks[id].Points = append(tracks[id].Points, geom.V(x, y, 0))
		if kept++; kept > trackPoints {
			stride *= 2
			kept = 0
			for i := range tracks {
				pts := tracks[i].Points
				k := 0
				for j := 0; j < len(pts); j += 2 {
					pts[k] = pts[j]
					k++
				}
				tracks[i].Points = pts[:k]
				kept += k
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tracks, nil
}

// readStateLatencies returns the latencies of the state updates in the
// deliveries table of the run directory run (CSV or Parquet), in ms,
// sorted (a bounded sample: report.Samples).
func readStateLatencies(run string) ([]float64, error) {
	var lat report.Samples
	err := report.TableRows(run, runread.Deliveries, func(_ map[string]int, r []string) error {
		if len(r) > 9 && r[8] == "state" {
			v, _ := strconv.ParseFloat(r[9], 64)
			return lat.Add("", v/1e6)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	v := lat.Values("")
	slices.Sort(v)
	return v, nil
}
