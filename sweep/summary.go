package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"skyloop/engine"
	"skyloop/internal/untrusted"
	"skyloop/metrics"
	"skyloop/report"
	"skyloop/twin"
)

// Metrics are one run's figures in summary.csv. The state-update figures
// are those of kind state (beacons); the control figures come from a
// platoon measure and, for the excess and the deviation, the experiment's
// reference run.
type Metrics struct {
	// State updates (kind state).
	LatencyMeanMs float64 `json:"latency_mean_ms"`
	LatencyP50Ms  float64 `json:"latency_p50_ms"`
	LatencyP95Ms  float64 `json:"latency_p95_ms"`
	LatencyMaxMs  float64 `json:"latency_max_ms"`
	PDR           float64 `json:"pdr"` // rx / (tx * (N-1)) for state updates
	DropRxError   uint64  `json:"drop_rx_error"`
	DropQueue     uint64  `json:"drop_queue"`
	StateTx       uint64  `json:"state_tx"`
	StateRx       uint64  `json:"state_rx"`
	AoIMeanS      float64 `json:"aoi_mean_s"`
	Duplicates    uint64  `json:"duplicates"`   // receiver rules, over every beacon
	OutOfOrder    uint64  `json:"out_of_order"` // receiver rules, over every beacon
	StaleTicks    uint64  `json:"stale_ticks"`  // platoon follower steps without a fresh belief
	// All traffic.
	PacketsPerS      float64 `json:"packets_per_s"`
	PayloadBytesPerS float64 `json:"payload_bytes_per_s"`
	IPBytesPerS      float64 `json:"ip_bytes_per_s"`
	PDRAll           float64 `json:"pdr_all"`
	// Control.
	GapErrMeanM   float64 `json:"gap_err_mean_m"`   // mean |dist - gap| over followers after the warm-up
	GapErrMaxM    float64 `json:"gap_err_max_m"`    // its maximum
	GapErrExcessM float64 `json:"gap_err_excess_m"` // mean minus the ideal-network reference's
	TrajDevMeanM  float64 `json:"traj_dev_mean_m"`  // mean distance from the reference trajectory
	TrajDevMaxM   float64 `json:"traj_dev_max_m"`
	// Vehicles.
	Collisions     int     `json:"collisions"`
	MinSeparationM float64 `json:"min_separation_m"`
}

// runFigures reads one finished run: its metrics and, when it has a
// platoon measure, its track.
type runFigures struct {
	m       Metrics
	track   *metrics.Track
	gap     bool   // the run has a platoon measure
	gapName string // its name
	// fig is what the run is compared with its reference on.
	fig *twin.Figures
	// twin is the comparison with the run's ideal-network twin
	// (outputs.twin), from summary.json.
	twin *twin.Report
}

func readRun(dir string) (*runFigures, error) {
	b, err := untrusted.ReadFileIn(dir, "summary.json", untrusted.MaxJSON)
	if err != nil {
		return nil, err
	}
	var s engine.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "summary.json"), err)
	}
	var tw struct {
		Twin *twin.Report `json:"twin"`
	}
	if err := json.Unmarshal(b, &tw); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "summary.json"), err)
	}
	rf := &runFigures{twin: tw.Twin}
	m := &rf.m
	ms := func(ns float64) float64 { return ns / 1e6 }
	if st, ok := s.Network.ByKind["state"]; ok {
		m.LatencyMeanMs, m.LatencyP50Ms = ms(st.Latency.Mean), ms(float64(st.Latency.P50))
		m.LatencyP95Ms, m.LatencyMaxMs = ms(float64(st.Latency.P95)), ms(float64(st.Latency.Max))
		m.PDR, m.StateTx, m.StateRx = st.PDR, st.Tx, st.Rx
		m.DropRxError, m.DropQueue = st.Drops["rx_error"], st.Drops["queue"]
	}
	if s.Network.AoI != nil {
		m.AoIMeanS = s.Network.AoI.MeanS
	}
	tot := s.Network.Total
	m.PacketsPerS, m.PayloadBytesPerS, m.IPBytesPerS = tot.Overhead.PacketsPerS, tot.Overhead.PayloadBytesPerS, tot.Overhead.IPBytesPerS
	m.PDRAll = tot.PDR
	for _, node := range slices.Sorted(maps.Keys(s.Agents)) {
		a := s.Agents[node]
		if b, ok := a["beacon"].(map[string]any); ok {
			m.Duplicates += count(b["duplicate"])
			m.OutOfOrder += count(b["out_of_order"])
		}
		if p, ok := a["platoon"].(map[string]any); ok {
			m.StaleTicks += count(p["stale_steps"])
		}
	}
	if sp := s.Separation; sp != nil {
		m.Collisions, m.MinSeparationM = sp.Collisions, sp.MinM
	}
	for _, name := range slices.Sorted(maps.Keys(s.Measures)) {
		raw, _ := json.Marshal(s.Measures[name])
		var pr metrics.PlatoonResult
		if json.Unmarshal(raw, &pr) != nil || pr.Group == "" {
			continue
		}
		m.GapErrMeanM, m.GapErrMaxM, rf.gap, rf.gapName = pr.GapErrMeanM, pr.GapErrMaxM, true, name
		tb, err := untrusted.ReadFileIn(dir, name+".json", untrusted.MaxJSON)
		if err != nil {
			return nil, err
		}
		rf.track = &metrics.Track{}
		if err := json.Unmarshal(tb, rf.track); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, name+".json"), err)
		}
		break
	}
	rf.fig = twin.FromSummary(&s, nil, rf.track)
	return rf, nil
}

func count(v any) uint64 {
	f, _ := v.(float64)
	return uint64(f)
}

// compare fills the excess and deviation of a run over its reference,
// with the comparison of runs and their ideal-network twins (twin.Compare)
// on the platoon measure's trajectory.
func compare(run, ref *runFigures) {
	c := twin.Compare(run.fig, ref.fig)
	if run.gap && ref.gap {
		if x, ok := c.Measures[run.gapName]["gap_err_mean_m"]; ok {
			run.m.GapErrExcessM = x
		}
	}
	if c.Overall.TrajDevMeanM != nil {
		run.m.TrajDevMeanM, run.m.TrajDevMaxM = *c.Overall.TrajDevMeanM, *c.Overall.TrajDevMaxM
	}
}

// twinColumns are the summary.csv columns of a run's comparison with its
// ideal-network twin (outputs.twin), after the metrics; the excess of each
// measure's error fields follows as twin_<measure>.<field>_excess.
var twinColumns = []string{"twin_missions", "twin_completed", "twin_twin_completed", "twin_completion_delta_s",
	"twin_extra_distance_m", "twin_extra_energy_j", "twin_traj_dev_mean_m", "twin_traj_dev_max_m"}

// twinValues returns the twin columns of a run (nil without a twin): by
// column name, the value as text ("" for a null).
func twinValues(t *twin.Report) map[string]string {
	if t == nil {
		return nil
	}
	o := t.Overall
	num := func(v any) string {
		b, _ := json.Marshal(v)
		if string(b) == "null" {
			return ""
		}
		return string(b)
	}
	out := map[string]string{"twin_missions": num(o.Missions), "twin_completed": num(o.Completed), "twin_twin_completed": num(o.TwinCompleted),
		"twin_completion_delta_s": num(o.CompletionDeltaS), "twin_extra_distance_m": num(o.ExtraDistanceM), "twin_extra_energy_j": num(o.ExtraEnergyJ),
		"twin_traj_dev_mean_m": num(o.TrajDevMeanM), "twin_traj_dev_max_m": num(o.TrajDevMaxM)}
	for m, fs := range t.Measures {
		for f, v := range fs {
			out["twin_"+m+"."+f+"_excess"] = num(v)
		}
	}
	return out
}

// finishedRuns reads every finished run of the sweep, with the references'
// comparisons; runs[i][s-1] is nil when variant i's seed s has not run.
func finishedRuns(dir string, preps []prepared, seeds int) ([][]*runFigures, error) {
	refs := map[string]*runFigures{}
	runs := make([][]*runFigures, len(preps))
	for i, p := range preps {
		runs[i] = make([]*runFigures, seeds)
		var ref *runFigures
		if p.refKey != "" {
			ref = refs[p.refKey]
			if ref == nil {
				var err error
				if ref, err = readRun(filepath.Join(dir, "reference", p.refKey)); err != nil {
					continue // not run yet: neither are the variant's runs
				}
				refs[p.refKey] = ref
			}
		}
		for s := 1; s <= seeds; s++ {
			rf, err := readRun(filepath.Join(dir, p.v.Name, fmt.Sprintf("seed%d", s)))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if ref != nil {
				compare(rf, ref)
			}
			runs[i][s-1] = rf
		}
	}
	return runs, nil
}

// summaryHead are summary.csv's first columns; the configuration's
// columns follow, then the metrics.
var summaryHead = []string{"experiment", "variant", "value", "seed"}

// writeSummary writes summary.csv from the finished runs, one row per
// variant x seed in order, with every field of the run's configuration
// (config.json, flattened to paths) and every metric: rebuilt each time, so
// an interrupted and resumed sweep never duplicates a row.
func writeSummary(dir string, e *Experiment, preps []prepared, seeds int) (int, error) {
	runs, err := finishedRuns(dir, preps, seeds)
	if err != nil {
		return 0, err
	}
	type row struct {
		head []string
		cfg  map[string]string
		met  []string
		twin map[string]string
	}
	var rows []row
	var twinCols []string
	twinKnown := map[string]bool{}
	var cols []string
	known := map[string]bool{}
	var metricNames []string
	for i, p := range preps {
		for s := 1; s <= seeds; s++ {
			rf := runs[i][s-1]
			if rf == nil {
				continue
			}
			cfg, err := untrusted.ReadFileIn(filepath.Join(dir, p.v.Name, fmt.Sprintf("seed%d", s)), "config.json", untrusted.MaxJSON)
			if err != nil {
				return 0, err
			}
			names, vals, err := flattenJSON(cfg)
			if err != nil {
				return 0, fmt.Errorf("%s seed %d: config.json: %w", p.v.Name, s, err)
			}
			r := row{head: []string{e.Name, p.v.Name, p.v.Value, strconv.Itoa(s)}, cfg: map[string]string{}}
			for k, n := range names {
				if slices.Contains(summaryHead, n) {
					// The configuration's seed is the run's, in the seed
					// column already: one column of a name.
					continue
				}
				if !known[n] {
					known[n] = true
					cols = append(cols, n)
				}
				r.cfg[n] = vals[k]
			}
			metricNames, r.met = flattenStruct(rf.m)
			if r.twin = twinValues(rf.twin); r.twin != nil {
				for _, c := range twinColumns {
					if !twinKnown[c] {
						twinKnown[c] = true
						twinCols = append(twinCols, c)
					}
				}
				var extra []string
				for c := range r.twin {
					if !twinKnown[c] {
						extra = append(extra, c)
					}
				}
				slices.Sort(extra)
				for _, c := range extra {
					twinKnown[c] = true
					twinCols = append(twinCols, c)
				}
			}
			rows = append(rows, r)
		}
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if len(rows) > 0 {
		w.Write(append(append(append(append([]string(nil), summaryHead...), cols...), metricNames...), twinCols...))
	}
	for _, r := range rows {
		line := append([]string(nil), r.head...)
		for _, c := range cols {
			line = append(line, r.cfg[c])
		}
		line = append(line, r.met...)
		for _, c := range twinCols {
			line = append(line, r.twin[c])
		}
		w.Write(line)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return 0, err
	}
	return len(rows), report.WriteFile(filepath.Join(dir, "summary.csv"), buf.Bytes())
}

// flattenStruct turns a struct into column names and texts, in field order.
func flattenStruct(v any) ([]string, []string) {
	rv := reflect.ValueOf(v)
	rt := rv.Type()
	var names, vals []string
	for i := 0; i < rt.NumField(); i++ {
		tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		names = append(names, tag)
		b, _ := json.Marshal(rv.Field(i).Interface())
		vals = append(vals, string(b))
	}
	return names, vals
}

// flattenJSON turns a JSON document into path -> text in document order:
// objects give dotted paths, lists of objects [i]; other lists stay JSON.
func flattenJSON(b []byte) ([]string, []string, error) {
	// Read token by token: the columns keep config.json's order.
	var names, vals []string
	var walk func(path string, dec *json.Decoder) error
	walk = func(path string, dec *json.Decoder) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				empty := true
				for dec.More() {
					empty = false
					kt, err := dec.Token()
					if err != nil {
						return err
					}
					k := kt.(string)
					if err := walk(joinKey(path, k), dec); err != nil {
						return err
					}
				}
				if _, err := dec.Token(); err != nil {
					return err
				}
				if empty {
					names, vals = append(names, path), append(vals, "{}")
				}
			case '[':
				// Read the list as raw JSON first, to decide.
				var items []json.RawMessage
				for dec.More() {
					var raw json.RawMessage
					if err := dec.Decode(&raw); err != nil {
						return err
					}
					items = append(items, raw)
				}
				if _, err := dec.Token(); err != nil {
					return err
				}
				objects := len(items) > 0
				for _, it := range items {
					objects = objects && len(it) > 0 && it[0] == '{'
				}
				if !objects {
					var buf bytes.Buffer
					buf.WriteByte('[')
					for i, it := range items {
						if i > 0 {
							buf.WriteByte(',')
						}
						json.Compact(&buf, it)
					}
					buf.WriteByte(']')
					names, vals = append(names, path), append(vals, buf.String())
					return nil
				}
				for i, it := range items {
					sub := json.NewDecoder(bytes.NewReader(it))
					sub.UseNumber()
					if err := walk(fmt.Sprintf("%s[%d]", path, i), sub); err != nil {
						return err
					}
				}
			}
		case nil:
			names, vals = append(names, path), append(vals, "")
		case string:
			names, vals = append(names, path), append(vals, t)
		case json.Number:
			names, vals = append(names, path), append(vals, t.String())
		case bool:
			names, vals = append(names, path), append(vals, strconv.FormatBool(t))
		}
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := walk("", dec); err != nil {
		return nil, nil, err
	}
	return names, vals, nil
}

func joinKey(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
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

// summaryColumns are the metrics Summarize shows, with their headings and
// formats.
var summaryColumns = []struct {
	col, head, format string
}{
	{"pdr", "PDR", "%.3f"},
	{"latency_p50_ms", "lat p50 ms", "%.1f"},
	{"latency_p95_ms", "lat p95 ms", "%.1f"},
	{"aoi_mean_s", "AoI s", "%.3f"},
	{"drop_queue", "queue drops", "%.0f"},
	{"out_of_order", "reordered", "%.0f"},
	{"gap_err_mean_m", "gap err m", "%.3f"},
	{"gap_err_excess_m", "excess m", "%.3f"},
	{"traj_dev_mean_m", "traj dev m", "%.3f"},
	{"ip_bytes_per_s", "IP B/s", "%.0f"},
}

// ErrNoResults is returned by Summarize for a directory without
// experiment results.
var ErrNoResults = errors.New("no experiment results")

// Summarize prints one table per experiment found at dir (an experiment
// directory, or a directory of them): a row per variant with the mean and
// standard deviation over seeds of the main metrics.
func Summarize(w io.Writer, dir string) error {
	files, err := summaryFiles(dir)
	if err != nil {
		return err
	}
	for i, f := range files {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := summarizeFile(w, f); err != nil {
			return err
		}
	}
	return nil
}

// summaryFiles lists the summary.csv of the experiment directory dir, or
// else those of the experiment directories in dir, in order.
func summaryFiles(dir string) ([]string, error) {
	var files []string
	if _, err := os.Stat(filepath.Join(dir, "summary.csv")); err == nil {
		files = []string{filepath.Join(dir, "summary.csv")}
	} else {
		m, _ := filepath.Glob(filepath.Join(dir, "*", "summary.csv"))
		sort.Strings(m)
		files = m
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: %w (no summary.csv here or one level down; run skyloop sweep first)", dir, ErrNoResults)
	}
	return files, nil
}

// maxSummaryRows bounds the rows of a summary.csv: one per variant and
// seed.
const maxSummaryRows = MaxVariants * MaxSeeds

// Table reads a summary.csv: per variant, in order, the values over the
// seeds of the columns Summarize shows, and of the seed column. The file
// is read as untrusted input (report.WideCSVRows), with at most one row per
// variant and seed of an experiment at its limits.
func Table(path string) (experiment string, variants []string, values map[string]map[string][]float64, err error) {
	keep := []string{"seed"}
	for _, c := range summaryColumns {
		keep = append(keep, c.col)
	}
	values = map[string]map[string][]float64{}
	rows := 0
	err = report.WideCSVRows(path, func(idx map[string]int, r []string) error {
		vi, ok := idx["variant"]
		if !ok {
			return errors.New("no variant column")
		}
		if rows++; rows > maxSummaryRows {
			return fmt.Errorf("more than %d rows, one per variant and seed of an experiment at its limits (%d variants, %d seeds)",
				maxSummaryRows, MaxVariants, MaxSeeds)
		}
		if rows == 1 {
			experiment = strings.Clone(r[idx["experiment"]])
		}
		v := r[vi]
		vals, ok := values[v]
		if !ok {
			if len(variants) >= MaxVariants {
				return fmt.Errorf("more than %d variants", MaxVariants)
			}
			v = strings.Clone(v)
			variants = append(variants, v)
			vals = map[string][]float64{}
			values[v] = vals
		}
		for _, name := range keep {
			j, ok := idx[name]
			if !ok {
				continue
			}
			if x, err := strconv.ParseFloat(r[j], 64); err == nil {
				vals[name] = append(vals[name], x)
			}
		}
		return nil
	})
	if err != nil {
		return "", nil, nil, err
	}
	if rows == 0 {
		return "", nil, nil, fmt.Errorf("%s: no runs", path)
	}
	return experiment, variants, values, nil
}

func summarizeFile(w io.Writer, path string) error {
	exp, variants, vals, err := Table(path)
	if err != nil {
		return err
	}
	runs := 0
	for _, v := range variants {
		runs += len(vals[v]["seed"])
	}
	fmt.Fprintf(w, "experiment %s (%d runs; mean ± std over seeds)\n", exp, runs)
	head := []string{"variant", "seeds"}
	for _, c := range summaryColumns {
		head = append(head, c.head)
	}
	table := [][]string{head}
	for _, v := range variants {
		line := []string{v, strconv.Itoa(len(vals[v]["seed"]))}
		for _, c := range summaryColumns {
			m, s := MeanStd(vals[v][c.col])
			if math.IsNaN(m) {
				line = append(line, "-")
				continue
			}
			line = append(line, fmt.Sprintf(c.format, m)+"±"+fmt.Sprintf(c.format, s))
		}
		table = append(table, line)
	}
	width := make([]int, len(head))
	for _, l := range table {
		for i, c := range l {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, l := range table {
		var b strings.Builder
		for i, c := range l {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := width[i] - len([]rune(c))
			if i == 0 {
				b.WriteString(c + strings.Repeat(" ", pad))
			} else {
				b.WriteString(strings.Repeat(" ", pad) + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	return nil
}
