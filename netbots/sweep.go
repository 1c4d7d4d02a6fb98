package netbots

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"skyloop/geom"
	"skyloop/record"
	"skyloop/report"
	"skyloop/sim"
	"skyloop/version"
)

// SweepOptions adjust a sweep.
type SweepOptions struct {
	Out      string       // root directory; results go to Out/<experiment>
	Seeds    int          // overrides the file's seed count when > 0
	Duration sim.Duration // overrides every variant's duration when > 0
	Workers  int          // parallel runs; 0 = GOMAXPROCS
	NoFiles  bool         // no per-run CSV files (summary.csv and figures stay)
	Progress func(p Progress)
	Stop     func() bool
}

// Progress reports a finished (or skipped) run.
type Progress struct {
	Done, Total int
	Variant     string
	Seed        int
	Skipped     bool
	Err         error
}

// SweepResult summarises a sweep.
type SweepResult struct {
	Dir          string
	Ran, Skipped int
	Rows         int
}

type job struct {
	v    *Variant
	seed int
	dir  string
	key  string
	ref  *Reference
}

// Sweep runs every variant x seed of e that has not finished before,
// writes summary.csv (one row per variant x seed, in order, every config
// field and metric), meta.json and the figures. It may be interrupted (Stop)
// and run again: finished runs are kept and not redone.
func Sweep(e *Experiment, opt SweepOptions) (*SweepResult, error) {
	if opt.Out == "" {
		opt.Out = "runs"
	}
	seeds := e.Seeds
	if opt.Seeds > 0 {
		seeds = opt.Seeds
	}
	out := e.Outputs
	if opt.NoFiles {
		out = Outputs{}
	}
	variants := make([]Variant, len(e.Variants))
	copy(variants, e.Variants)
	for i := range variants {
		if opt.Duration > 0 {
			variants[i].Params.Duration = opt.Duration
		}
		if bad := variants[i].Params.Validate(); len(bad) > 0 {
			k := sortedKeys(bad)[0]
			return nil, fmt.Errorf("variant %s: %s: %s", variants[i].Name, k, bad[k])
		}
	}
	dir := filepath.Join(opt.Out, e.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	// One sweep per experiment directory at a time: two would race on
	// summary.csv and on every run.
	lock, err := record.TryLock(dir)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	refs, err := references(dir, variants)
	if err != nil {
		return nil, err
	}
	res := &SweepResult{Dir: dir}
	var jobs []job
	total := len(variants) * seeds
	done := 0
	for i := range variants {
		v := &variants[i]
		for s := 1; s <= seeds; s++ {
			j := job{v: v, seed: s, dir: filepath.Join(dir, v.Name, fmt.Sprintf("seed%d", s)), key: runKey(v.Params, uint64(s), out), ref: refs[refKey(v.Params)]}
			if finished(j.dir, j.key) {
				res.Skipped++
				done++
				if opt.Progress != nil {
					opt.Progress(Progress{Done: done, Total: total, Variant: v.Name, Seed: s, Skipped: true})
				}
				continue
			}
			jobs = append(jobs, j)
		}
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var (
		mu       sync.Mutex
		firstErr error
		next     atomic.Int64
		wg       sync.WaitGroup
		stopped  atomic.Bool
	)
	stop := func() bool {
		if stopped.Load() {
			return true
		}
		if opt.Stop != nil && opt.Stop() {
			stopped.Store(true)
			return true
		}
		return false
	}
	for w := 0; w < min(workers, max(len(jobs), 1)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) || stop() {
					return
				}
				j := jobs[i]
				extra := map[string]any{"key": j.key, "experiment": e.Name, "variant": j.v.Name, "value": j.v.Value}
				_, err := Run(j.v.Params, uint64(j.seed), j.dir, out, j.ref, extra, stop)
				mu.Lock()
				if err == nil {
					res.Ran++
				} else if err != ErrStopped && firstErr == nil {
					firstErr = fmt.Errorf("%s seed %d: %w", j.v.Name, j.seed, err)
					stopped.Store(true)
				}
				done++
				if opt.Progress != nil && err != ErrStopped {
					opt.Progress(Progress{Done: done, Total: total, Variant: j.v.Name, Seed: j.seed, Err: err})
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// The summary always reflects every finished run, also after a stop.
	rows, err := writeSummary(dir, e, variants, seeds)
	if err != nil {
		return nil, err
	}
	res.Rows = rows
	if firstErr != nil {
		return res, firstErr
	}
	if stopped.Load() {
		return res, ErrStopped
	}
	if err := writeMeta(dir, e, variants, seeds, opt); err != nil {
		return nil, err
	}
	if err := figures(dir, e, variants, seeds); err != nil {
		return nil, err
	}
	return res, nil
}

// refKey identifies the reference a variant needs: the same robots,
// duration and controller give the same ideal-network run.
func refKey(p Params) string {
	q := Defaults()
	q.Robots, q.Duration, q.Tick, q.Sample, q.Warmup = p.Robots, p.Duration, p.Tick, p.Sample, p.Warmup
	q.Speed, q.Gap, q.GapGain, q.HeadingGain, q.MaxSpeed, q.Waypoints = p.Speed, p.Gap, p.GapGain, p.HeadingGain, p.MaxSpeed, p.Waypoints
	return runKey(q, 0, Outputs{})
}

// references computes (or loads from dir/reference/) the reference run
// of every distinct reference key, in parallel.
func references(dir string, variants []Variant) (map[string]*Reference, error) {
	refs := map[string]*Reference{}
	var keys []string
	params := map[string]Params{}
	for _, v := range variants {
		k := refKey(v.Params)
		if _, ok := params[k]; !ok {
			params[k] = v.Params
			keys = append(keys, k)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "reference"), 0o755); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	for _, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := filepath.Join(dir, "reference", fmt.Sprintf("robots%d-%s.json", params[k].Robots, k))
			var ref *Reference
			if b, err := os.ReadFile(path); err == nil {
				ref = &Reference{}
				if json.Unmarshal(b, ref) != nil {
					ref = nil
				}
			}
			if ref == nil {
				var err error
				ref, err = RunReference(params[k])
				if err == nil {
					var b []byte
					b, err = json.Marshal(ref)
					if err == nil {
						tmp := path + ".tmp"
						if err = os.WriteFile(tmp, b, 0o644); err == nil {
							err = os.Rename(tmp, path)
						}
					}
				}
				if err != nil {
					mu.Lock()
					firstErr = fmt.Errorf("reference run: %w", err)
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			refs[k] = ref
			mu.Unlock()
		}()
	}
	wg.Wait()
	return refs, firstErr
}

// flatten turns a struct into column name -> text, in field order.
func flatten(prefix string, v any) ([]string, []string) {
	rv := reflect.ValueOf(v)
	rt := rv.Type()
	var names, vals []string
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		names = append(names, prefix+tag)
		b, _ := json.Marshal(rv.Field(i).Interface())
		s := string(b)
		if us, err := strconv.Unquote(s); err == nil {
			s = us
		}
		vals = append(vals, s)
	}
	return names, vals
}

// writeSummary writes summary.csv from the finished runs' summary.json
// files, one row per variant x seed in order: rebuilt each time, so an
// interrupted and resumed sweep never duplicates a row.
func writeSummary(dir string, e *Experiment, variants []Variant, seeds int) (int, error) {
	tmp := filepath.Join(dir, ".summary.csv.tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return 0, err
	}
	w := csv.NewWriter(bufio.NewWriter(f))
	rows := 0
	headerDone := false
	for _, v := range variants {
		for s := 1; s <= seeds; s++ {
			b, err := os.ReadFile(filepath.Join(dir, v.Name, fmt.Sprintf("seed%d", s), "summary.json"))
			if err != nil {
				continue
			}
			var sum struct {
				Metrics Metrics `json:"metrics"`
			}
			if err := json.Unmarshal(b, &sum); err != nil {
				continue
			}
			pn, pv := flatten("", v.Params)
			mn, mv := flatten("", sum.Metrics)
			if !headerDone {
				w.Write(append(append([]string{"experiment", "variant", "value", "seed"}, pn...), mn...))
				headerDone = true
			}
			w.Write(append(append([]string{e.Name, v.Name, v.Value, strconv.Itoa(s)}, pv...), mv...))
			rows++
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	return rows, os.Rename(tmp, filepath.Join(dir, "summary.csv"))
}

func writeMeta(dir string, e *Experiment, variants []Variant, seeds int, opt SweepOptions) error {
	vs := make([]map[string]any, len(variants))
	for i, v := range variants {
		vs[i] = map[string]any{"name": v.Name, "value": v.Value, "params": v.Params}
	}
	m := map[string]any{"experiment": e.Name, "description": e.Description, "file": e.File, "spec": string(e.Source),
		"seeds": seeds, "base": e.Base, "variants": vs, "outputs": e.Outputs, "versions": version.Info()}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return report.WriteFile(filepath.Join(dir, "meta.json"), append(b, '\n'))
}

// figures draws the experiment's plots into dir/figures: trajectories of
// seed 1 per variant, the state-update latency CDF per variant (seed 1),
// and age of information and gap error per variant (mean and std over
// seeds).
func figures(dir string, e *Experiment, variants []Variant, seeds int) error {
	fd := filepath.Join(dir, "figures")
	if err := os.MkdirAll(fd, 0o755); err != nil {
		return err
	}
	var cdf []report.Series
	labels := make([]string, len(variants))
	aoiM, aoiS, gapM, gapS := make([]float64, len(variants)), make([]float64, len(variants)), make([]float64, len(variants)), make([]float64, len(variants))
	for i, v := range variants {
		labels[i] = v.Name
		if v.Value != "" {
			labels[i] = v.Value
		}
		run := filepath.Join(dir, v.Name, "seed1")
		if tracks, err := readTracks(filepath.Join(run, "robots.csv"), v.Params.Robots); err == nil {
			png, err := report.TrajectoryPNG(fmt.Sprintf("%s %s seed 1: robot paths in the warehouse", e.Name, v.Name), tracks, shelves)
			if err != nil {
				return err
			}
			if err := report.WriteFile(filepath.Join(fd, "trajectories-"+v.Name+".png"), png); err != nil {
				return err
			}
		}
		if lat, err := readStateLatencies(filepath.Join(run, "deliveries.csv")); err == nil && len(lat) > 0 {
			s := report.Series{Name: v.Name}
			step := max(1, len(lat)/500)
			for j := 0; j < len(lat); j += step {
				s.X = append(s.X, lat[j])
				s.Y = append(s.Y, float64(j+1)/float64(len(lat)))
			}
			s.X = append(s.X, lat[len(lat)-1])
			s.Y = append(s.Y, 1)
			cdf = append(cdf, s)
		}
		var aois, gaps []float64
		for s := 1; s <= seeds; s++ {
			b, err := os.ReadFile(filepath.Join(dir, v.Name, fmt.Sprintf("seed%d", s), "summary.json"))
			if err != nil {
				continue
			}
			var sum struct {
				Metrics Metrics `json:"metrics"`
			}
			if json.Unmarshal(b, &sum) == nil {
				aois = append(aois, sum.Metrics.AoIMeanS)
				gaps = append(gaps, sum.Metrics.GapErrMeanM)
			}
		}
		aoiM[i], aoiS[i] = MeanStd(aois)
		gapM[i], gapS[i] = MeanStd(gaps)
	}
	xl := "variant"
	if e.Param != "" {
		xl = e.Param
	}
	if len(cdf) > 0 {
		png, err := report.LinesPNG(e.Name+": latency of state updates (seed 1)", "latency (ms)", "fraction of deliveries", cdf)
		if err != nil {
			return err
		}
		if err := report.WriteFile(filepath.Join(fd, "latency_cdf.png"), png); err != nil {
			return err
		}
	}
	png, err := report.BarsPNG(e.Name+": age of information (mean, std over seeds)", xl, "AoI (s)", labels, aoiM, aoiS)
	if err != nil {
		return err
	}
	if err := report.WriteFile(filepath.Join(fd, "aoi.png"), png); err != nil {
		return err
	}
	png, err = report.BarsPNG(e.Name+": gap error after warm-up (mean, std over seeds)", xl, "|dist - gap| (m)", labels, gapM, gapS)
	if err != nil {
		return err
	}
	return report.WriteFile(filepath.Join(fd, "gap_error.png"), png)
}

// MeanStd returns the mean and sample standard deviation of xs.
func MeanStd(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	m := s / float64(len(xs))
	if len(xs) < 2 {
		return m, 0
	}
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(xs)-1))
}

func readCSVFile(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	r.ReuseRecord = false
	return r.ReadAll()
}

func readTracks(path string, n int) ([]report.Track, error) {
	rows, err := readCSVFile(path)
	if err != nil {
		return nil, err
	}
	tracks := make([]report.Track, n)
	for i := range tracks {
		tracks[i].Name = fmt.Sprintf("robot %d", i)
	}
	for _, r := range rows[1:] {
		id, _ := strconv.Atoi(r[1])
		x, _ := strconv.ParseFloat(r[2], 64)
		y, _ := strconv.ParseFloat(r[3], 64)
		if id >= 0 && id < n {
			tracks[id].Points = append(tracks[id].Points, geom.V(x, y, 0))
		}
	}
	return tracks, nil
}

func readStateLatencies(path string) ([]float64, error) {
	rows, err := readCSVFile(path)
	if err != nil {
		return nil, err
	}
	var lat []float64
	for _, r := range rows[1:] {
		if r[8] == "state" {
			v, _ := strconv.ParseFloat(r[9], 64)
			lat = append(lat, v/1e6)
		}
	}
	slices.Sort(lat)
	return lat, nil
}
