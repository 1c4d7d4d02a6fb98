package twin

import (
	"encoding/json"
	"maps"
	"math"
	"regexp"
	"slices"

	"skyloop/engine"
	"skyloop/geom"
	"skyloop/metrics"
	"skyloop/sim"
)

// Vehicle is one vehicle's figures in a comparison.
type Vehicle struct {
	ID        int
	Name      string
	DistanceM float64
	EnergyJ   float64
	// Done is when the vehicle completed its mission; nil when it did
	// not (or has none).
	Done *sim.Time
}

// Figures are what a run is compared on.
type Figures struct {
	// Vehicles are the run's vehicles, in index order.
	Vehicles []Vehicle
	// Errors are the measures' error figures: by measure name, every
	// numeric field that is an error in metres (ErrorFields).
	Errors map[string]map[string]float64
	// Track is the sampled trajectory the deviation is computed on (nil:
	// none). When it has a row per vehicle, row i is vehicle i and the
	// deviation is also given per vehicle.
	Track *metrics.Track
}

// Comparison is what a run cost over its reference (its ideal-network
// twin, or an experiment's reference run): every difference is the run's
// figure minus the reference's.
type Comparison struct {
	Overall Overall `json:"overall"`
	// Measures holds, by measure name, the excess of every error field
	// (gap_err_mean_m, formation_err_max_m, ...) the measure has in both
	// runs: run minus reference, m.
	Measures map[string]map[string]float64 `json:"measures,omitempty"`
	Vehicles []VehicleCost                 `json:"vehicles"`
}

// Overall are the comparison's figures over all vehicles.
type Overall struct {
	// Missions counts the vehicles that completed a mission in either
	// run; Completed and TwinCompleted how many did in each.
	Missions      int `json:"missions"`
	Completed     int `json:"completed"`
	TwinCompleted int `json:"twin_completed"`
	Cost
}

// VehicleCost is one vehicle's comparison.
type VehicleCost struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	Cost
}

// Cost is what the network cost, overall or for one vehicle (its fields
// appear in place in the JSON).
type Cost struct {
	// CompletionS is when the (last) mission was completed, s; nil when
	// some vehicle with a mission did not complete it (or none has one).
	CompletionS      *float64 `json:"completion_s"`
	TwinCompletionS  *float64 `json:"twin_completion_s"`
	CompletionDeltaS *float64 `json:"completion_delta_s"`
	ExtraDistanceM   float64  `json:"extra_distance_m"`
	ExtraEnergyJ     float64  `json:"extra_energy_j"`
	// TrajDevMeanM and TrajDevMaxM are the mean and maximum distance
	// between the positions in the two runs at the same sample times
	// (metrics.Deviation); nil when the runs have no comparable
	// trajectories.
	TrajDevMeanM *float64 `json:"traj_dev_mean_m"`
	TrajDevMaxM  *float64 `json:"traj_dev_max_m"`
}

// Report is summary.json's twin section: where the twin is and the
// comparison.
type Report struct {
	// Dir is the twin's run directory, relative to the run's ("" when no
	// files were written).
	Dir string `json:"dir,omitempty"`
	// Network is the twin's network backend (ideal).
	Network string `json:"network"`
	Comparison
}

// Compare compares a run with its reference. Distances and energies are
// rounded to 4 decimals like summary.json's; the deviation and the errors
// are exact.
func Compare(run, ref *Figures) *Comparison {
	c := &Comparison{Vehicles: []VehicleCost{}}
	o := &c.Overall
	var runLast, refLast sim.Time
	runAll, refAll := true, true
	var dist, energy float64
	perVehicle := run.Track != nil && ref.Track != nil && len(run.Track.Positions) == len(run.Vehicles) &&
		len(ref.Track.Positions) == len(ref.Vehicles)
	for i := range min(len(run.Vehicles), len(ref.Vehicles)) {
		a, b := &run.Vehicles[i], &ref.Vehicles[i]
		v := VehicleCost{ID: a.ID, Name: a.Name, Cost: Cost{ExtraDistanceM: round(a.DistanceM-b.DistanceM, 4),
			ExtraEnergyJ: round(a.EnergyJ-b.EnergyJ, 4)}}
		dist += a.DistanceM - b.DistanceM
		energy += a.EnergyJ - b.EnergyJ
		v.CompletionS, v.TwinCompletionS = seconds(a.Done), seconds(b.Done)
		if a.Done != nil && b.Done != nil {
			d := a.Done.Sub(*b.Done).Seconds()
			v.CompletionDeltaS = &d
		}
		if a.Done != nil || b.Done != nil {
			o.Missions++
			if a.Done != nil {
				o.Completed++
				runLast = max(runLast, *a.Done)
			} else {
				runAll = false
			}
			if b.Done != nil {
				o.TwinCompleted++
				refLast = max(refLast, *b.Done)
			} else {
				refAll = false
			}
		}
		if perVehicle && i < len(ref.Track.Positions) {
			if mean, mx, n := deviation(run.Track.Positions[i], ref.Track.Positions[i]); n > 0 && run.Track.Sample == ref.Track.Sample {
				v.TrajDevMeanM, v.TrajDevMaxM = &mean, &mx
			}
		}
		c.Vehicles = append(c.Vehicles, v)
	}
	o.ExtraDistanceM, o.ExtraEnergyJ = round(dist, 4), round(energy, 4)
	if o.Missions > 0 {
		if runAll {
			o.CompletionS = seconds(&runLast)
		}
		if refAll {
			o.TwinCompletionS = seconds(&refLast)
		}
		if runAll && refAll {
			d := runLast.Sub(refLast).Seconds()
			o.CompletionDeltaS = &d
		}
	}
	if run.Track != nil && ref.Track != nil {
		if mean, mx, ok := metrics.Deviation(run.Track, ref.Track); ok {
			o.TrajDevMeanM, o.TrajDevMaxM = &mean, &mx
		}
	}
	for _, name := range slices.Sorted(maps.Keys(run.Errors)) {
		re, ok := ref.Errors[name]
		if !ok {
			continue
		}
		for _, f := range slices.Sorted(maps.Keys(run.Errors[name])) {
			if rv, ok := re[f]; ok {
				if c.Measures == nil {
					c.Measures = map[string]map[string]float64{}
				}
				if c.Measures[name] == nil {
					c.Measures[name] = map[string]float64{}
				}
				c.Measures[name][f] = run.Errors[name][f] - rv
			}
		}
	}
	return c
}

// deviation returns the mean and maximum distance between a and b at the
// samples both have, and their number.
func deviation(a, b []geom.Vec3) (mean, mx float64, n int) {
	var sum float64
	for k := range min(len(a), len(b)) {
		d := a[k].Dist(b[k])
		sum += d
		mx = math.Max(mx, d)
		n++
	}
	if n == 0 {
		return 0, 0, 0
	}
	return sum / float64(n), mx, n
}

func seconds(t *sim.Time) *float64 {
	if t == nil {
		return nil
	}
	s := t.Seconds()
	return &s
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// errorField matches the names of measure fields that are errors in
// metres: gap_err_mean_m, formation_err_max_m, err_m.
var errorField = regexp.MustCompile(`(^|_)err(_[a-z0-9]+)*_m$`)

// ErrorFields returns the numeric fields of a measure's result (as
// summary.json has it) whose names say they are errors in metres: the
// names contain the word err and end in _m (gap_err_mean_m,
// formation_err_max_m). Any new measure whose fields follow that naming is
// compared without further code.
func ErrorFields(result any) map[string]float64 {
	b, err := json.Marshal(result)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	out := map[string]float64{}
	for k, v := range m {
		if f, ok := v.(float64); ok && errorField.MatchString(k) {
			out[k] = f
		}
	}
	return out
}

// Errors returns ErrorFields of every measure of a summary.
func Errors(measures map[string]any) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for name, res := range measures {
		if f := ErrorFields(res); len(f) > 0 {
			out[name] = f
		}
	}
	return out
}

// FromSummary returns a run's figures from its summary, the times its
// vehicles reported their missions done (by vehicle index, from the
// mission_done and coverage_done events of the waypoints, stations and
// coverage behaviours) and its
// sampled trajectory (nil: none). A vehicle commanded by a ground station
// (the gcs behaviour) completed its mission when its last leg was done; one
// flown by a scripted MAVLink ground station (mavlink_gcs), when it landed.
func FromSummary(s *engine.Summary, done map[int]sim.Time, track *metrics.Track) *Figures {
	f := &Figures{Errors: Errors(s.Measures), Track: track}
	legs := gcsDone(s.Agents)
	for id, t := range mavlinkDone(s) {
		if old, ok := legs[id]; !ok || t > old {
			legs[id] = t
		}
	}
	for _, v := range s.Vehicles {
		fv := Vehicle{ID: v.ID, Name: v.Name, DistanceM: v.DistanceM, EnergyJ: v.EnergyJ}
		t, ok := done[v.ID]
		if lt, lok := legs[v.ID]; lok && (!ok || lt > t) {
			t, ok = lt, true
		}
		if ok {
			fv.Done = &t
		}
		f.Vehicles = append(f.Vehicles, fv)
	}
	return f
}

// mavlinkDone returns, by vehicle, when a scripted MAVLink ground station
// (mavlink_gcs) saw the vehicle's mission end with its landing.
func mavlinkDone(s *engine.Summary) map[int]sim.Time {
	ids := map[string]int{}
	for _, v := range s.Vehicles {
		ids[v.Name] = v.ID
	}
	out := map[int]sim.Time{}
	for _, node := range slices.Sorted(maps.Keys(s.Agents)) {
		g, ok := s.Agents[node]["mavlink_gcs"].(map[string]any)
		if !ok {
			continue
		}
		for name, rep := range g {
			r, ok := rep.(map[string]any)
			id, known := ids[name]
			if !ok || !known {
				continue
			}
			var ns sim.Time
			switch v := r["mission_done_ns"].(type) {
			case int64:
				ns = sim.Time(v)
			case float64:
				ns = sim.Time(v)
			default:
				continue
			}
			if old, ok := out[id]; !ok || ns > old {
				out[id] = ns
			}
		}
	}
	return out
}

// gcsDone returns, by vehicle, when ground stations (the gcs behaviour)
// saw the vehicle's last leg done, for vehicles that did all their legs.
func gcsDone(agents map[string]map[string]any) map[int]sim.Time {
	out := map[int]sim.Time{}
	for _, node := range slices.Sorted(maps.Keys(agents)) {
		g, ok := agents[node]["gcs"]
		if !ok {
			continue
		}
		b, err := json.Marshal(g)
		if err != nil {
			continue
		}
		var rep struct {
			Vehicles []struct {
				Vehicle   int        `json:"vehicle"`
				LegsDone  int        `json:"legs_done"`
				LegDoneNs []sim.Time `json:"leg_done_ns"`
			} `json:"vehicles"`
			Legs int `json:"legs"`
		}
		if json.Unmarshal(b, &rep) != nil {
			continue
		}
		for _, v := range rep.Vehicles {
			if rep.Legs > 0 && v.LegsDone == rep.Legs && len(v.LegDoneNs) == v.LegsDone {
				t := v.LegDoneNs[len(v.LegDoneNs)-1]
				if old, ok := out[v.Vehicle]; !ok || t > old {
					out[v.Vehicle] = t
				}
			}
		}
	}
	return out
}
