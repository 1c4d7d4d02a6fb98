package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"skyloop/geom"
	"skyloop/internal/untrusted"
	"skyloop/runread"
	"skyloop/scenario"
	"skyloop/twin"
)

// runSummary is the part of summary.json the report shows.
type runSummary struct {
	Scenario   string       `json:"scenario"`
	Seed       uint64       `json:"seed"`
	DurationNs int64        `json:"duration_ns"`
	Backend    string       `json:"backend"`
	Nodes      int          `json:"nodes"`
	Network    netSum       `json:"network"`
	Vehicles   []vehSum     `json:"vehicles"`
	Twin       *twin.Report `json:"twin"`
	Separation *struct {
		MinM       float64 `json:"min_m"`
		Collisions int     `json:"collisions"`
	} `json:"separation"`
}

type netSum struct {
	ByKind map[string]kindSum `json:"by_kind"`
	Total  kindSum            `json:"total"`
	AoI    *struct {
		Pairs int     `json:"pairs"`
		Never int     `json:"pairs_never"`
		MeanS float64 `json:"mean_s"`
		MinS  float64 `json:"min_s"`
		MaxS  float64 `json:"max_s"`
	} `json:"aoi_state"`
}

type kindSum struct {
	Tx       uint64            `json:"tx"`
	Expected uint64            `json:"expected_rx"`
	Rx       uint64            `json:"rx"`
	PDR      float64           `json:"pdr"`
	Drops    map[string]uint64 `json:"drops"`
	Latency  struct {
		Mean float64 `json:"mean_ns"`
		P50  int64   `json:"p50_ns"`
		P95  int64   `json:"p95_ns"`
		Max  int64   `json:"max_ns"`
	} `json:"latency"`
	Overhead struct {
		IPBytesPerS float64 `json:"ip_bytes_per_s"`
	} `json:"overhead"`
}

type vehSum struct {
	ID        int       `json:"id"`
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`
	Mode      string    `json:"final_mode"`
	Final     geom.Vec3 `json:"final"`
	DistanceM float64   `json:"distance_m"`
	EnergyJ   float64   `json:"energy_j"`
	MaxSpeed  float64   `json:"max_speed_mps"`
	ArrivalM  *float64  `json:"arrival_error_m"`
}

// Figure is a report figure: a title and a PNG.
type Figure struct {
	Title string
	PNG   []byte
}

// heatMapLimit is the most nodes whose pairs the AoI heat map shows.
const heatMapLimit = 200

// cdfPoints is the most points a latency CDF keeps (evenly spaced ranks).
const cdfPoints = 2000

// RunHTML reads a run directory (summary.json, and the vehicles,
// deliveries and trace tables where written, as CSV or Parquet: package
// runread) and returns one
// self-contained HTML page: the run's figures as tables (network per
// traffic kind with drop reasons, age of information, vehicles) and as
// plots inlined as PNG (trajectories, altitude profile for aerial runs of
// at most 12 vehicles, latency CDF per kind, packet delivery ratio per
// second per kind, and the mean age of information of every
// receiver/source pair as a heat map). Files the run did not write leave
// their figures out, with a note saying why.
func RunHTML(dir string) ([]byte, error) {
	b, err := untrusted.ReadFileIn(dir, "summary.json", untrusted.MaxJSON)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s is not a finished run directory: %w", dir, err)
	}
	if err != nil {
		return nil, err
	}
	var s runSummary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: summary.json: %w", dir, err)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%s: summary.json: %w", dir, err)
	}
	page := runPage{S: s, DurationS: float64(s.DurationNs) / 1e9}
	for k := range s.Network.ByKind {
		page.Kinds = append(page.Kinds, k)
	}
	sort.Strings(page.Kinds)
	add := func(title string, png []byte, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %s: %w", dir, title, err)
		}
		page.Figures = append(page.Figures, Figure{Title: title, PNG: png})
		return nil
	}
	names := make([]string, len(s.Vehicles))
	for i, v := range s.Vehicles {
		names[i] = v.Name
	}
	tracks, err := readTracks(dir, names)
	switch {
	case errors.Is(err, os.ErrNotExist):
		page.Notes = append(page.Notes, "no vehicles.csv (outputs.vehicles off): no trajectories")
	case err != nil:
		return nil, err
	case len(tracks) > 0:
		png, err := TrajectoryPNG(fmt.Sprintf("%s, seed %d: trajectories", s.Scenario, s.Seed), tracks, nil)
		if err := add("Trajectories (top view)", png, err); err != nil {
			return nil, err
		}
		if aerial(s) && len(tracks) <= 12 {
			png, err := ProfilePNG(fmt.Sprintf("%s, seed %d: altitude and east offset", s.Scenario, s.Seed), tracks)
			if err := add("Altitude profile", png, err); err != nil {
				return nil, err
			}
		}
	}
	lat, aoi, err := readDeliveries(dir, s.Nodes, s.DurationNs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		page.Notes = append(page.Notes, "no deliveries.csv (outputs.deliveries off): no latency CDF or AoI heat map")
	case err != nil:
		return nil, err
	default:
		if len(lat) > 0 {
			png, err := CDFPanelsPNG(fmt.Sprintf("%s, seed %d: one-way latency per traffic kind (CDF)", s.Scenario, s.Seed), "one-way latency (ms)", "fraction of deliveries", lat)
			if err := add("Latency CDF", png, err); err != nil {
				return nil, err
			}
		}
		if aoi != nil {
			png, err := HeatMapPNG(fmt.Sprintf("%s, seed %d: mean age of information of state updates per pair", s.Scenario, s.Seed),
				"source node (id)", "receiver node (id)", "mean age of information (s)", "black: never heard\n(or the node itself)", aoi)
			if err := add("Age of information per receiver/source pair", png, err); err != nil {
				return nil, err
			}
		} else if s.Nodes > heatMapLimit {
			page.Notes = append(page.Notes, fmt.Sprintf("%d nodes: the AoI heat map is drawn for at most %d", s.Nodes, heatMapLimit))
		}
	}
	pdr, width, err := readPDR(dir, s.Nodes, s.DurationNs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		page.Notes = append(page.Notes, "no trace.csv (outputs.trace off): no PDR over time")
	case err != nil:
		return nil, err
	case len(pdr) > 0:
		per := "second"
		if width > 1 {
			per = fmt.Sprintf("%d s", width)
		}
		png, err := LinesPNG(fmt.Sprintf("%s, seed %d: packet delivery ratio per %s, by transmission time", s.Scenario, s.Seed, per),
			"time (s)", "PDR (receptions / expected receptions)", pdr)
		if err := add("PDR over time", png, err); err != nil {
			return nil, err
		}
	}
	if tw := s.Twin; tw != nil {
		if err := twinFigures(dir, &page, names, tracks); err != nil {
			return nil, err
		}
	}
	var out bytes.Buffer
	if err := runTemplate.Execute(&out, &page); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return out.Bytes(), nil
}

// check refuses the values of a summary.json that the figures would take
// as sizes and that no run writes.
func (s *runSummary) check() error {
	switch {
	case s.DurationNs < 0:
		return fmt.Errorf("duration_ns %d is negative", s.DurationNs)
	case s.Nodes < 0:
		return fmt.Errorf("nodes %d is negative", s.Nodes)
	case len(s.Vehicles) > scenario.MaxVehicles:
		return fmt.Errorf("vehicles: %d, more than a scenario may have (%d)", len(s.Vehicles), scenario.MaxVehicles)
	}
	return nil
}

type runPage struct {
	S         runSummary
	DurationS float64
	Kinds     []string
	Figures   []Figure
	Notes     []string
	// TwinFigure is the run's paths over its twin's (nil: none drawn);
	// TwinNote says why there is none.
	TwinFigure *Figure
	TwinNote   string
}

// twinFigures draws the paths of a --twin run over its twin's, read
// from the vehicles tables of dir and of the twin's directory.
func twinFigures(dir string, page *runPage, names []string, tracks []Track) error {
	tw := page.S.Twin
	switch {
	case tw.Dir == "":
		page.TwinNote = "the twin wrote no files: no paths to compare"
		return nil
	case tw.Dir != filepath.Base(tw.Dir) || tw.Dir == "." || tw.Dir == "..":
		return fmt.Errorf("%s: summary.json: twin.dir %q is not a directory inside the run's", dir, tw.Dir)
	case len(tracks) == 0:
		page.TwinNote = "no vehicles table in the run: no paths to compare"
		return nil
	}
	twinTracks, err := readTracks(filepath.Join(dir, tw.Dir), names)
	if errors.Is(err, os.ErrNotExist) {
		page.TwinNote = fmt.Sprintf("no vehicles table in %s/: no paths to compare", tw.Dir)
		return nil
	}
	if err != nil {
		return err
	}
	run, twin := make([][]geom.Vec3, len(tracks)), make([][]geom.Vec3, len(twinTracks))
	for i := range tracks {
		run[i] = tracks[i].Points
	}
	for i := range twinTracks {
		twin[i] = twinTracks[i].Points
	}
	png, err := TwinPNG(fmt.Sprintf("%s, seed %d: the run and its %s-network twin", page.S.Scenario, page.S.Seed, tw.Network), names, run, twin)
	if err != nil {
		return fmt.Errorf("%s: twin figure: %w", dir, err)
	}
	page.TwinFigure = &Figure{Title: "The run (solid) and its ideal-network twin (dashed), top view", PNG: png}
	return nil
}

func aerial(s runSummary) bool {
	for _, v := range s.Vehicles {
		if v.Kind == "multirotor" {
			return true
		}
	}
	return false
}

func num(row []string, col map[string]int, name string) (float64, error) {
	i, ok := col[name]
	if !ok || i >= len(row) {
		return 0, fmt.Errorf("no column %s", name)
	}
	v, err := strconv.ParseFloat(row[i], 64)
	if err != nil {
		return 0, fmt.Errorf("column %s: %w", name, err)
	}
	return v, nil
}

// trackPoints bounds the points kept of all tracks together.
const trackPoints = 1 << 21

// TableRows reads table t of the run directory dir row by row from
// whichever file the run wrote it in (CSV or Parquet: package runread),
// in the CSV file's columns, with the caps of CSVRows; f's error stops the
// reading and comes back with the file and line (or row). When the run
// wrote no such table the error wraps fs.ErrNotExist.
func TableRows(dir string, t runread.Table, f func(col map[string]int, row []string) error) error {
	return runread.Rows(dir, t, runread.Limits{MaxRecord: MaxCSVLine, MaxRows: MaxCSVRows}, func(r *runread.Row) error {
		if err := f(r.Col, r.Values); err != nil {
			return fmt.Errorf("%s: %w", r.Where(), err)
		}
		return nil
	})
}

// readTracks reads the vehicles table into one track per vehicle (at
// most 4000 points per vehicle is plenty for a plot, fewer beyond 500
// vehicles).
func readTracks(dir string, names []string) ([]Track, error) {
	tr := NewTracker(names, min(4000, trackPoints/max(len(names), 1)))
	err := TableRows(dir, runread.Vehicles, func(col map[string]int, row []string) error {
		var v [5]float64
		for i, n := range []string{"t_ns", "id", "x", "y", "z"} {
			x, err := num(row, col, n)
			if err != nil {
				return err
			}
			v[i] = x
		}
		id := int(v[1])
		if id < 0 || id >= len(names) {
			return fmt.Errorf("vehicle id %d out of range", id)
		}
		tr.Add(id, v[0]/1e9, geom.V(v[2], v[3], v[4]), geom.Vec3{}, false)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tr.Tracks, nil
}

// readDeliveries reads the deliveries table: the latency CDF per kind, and the
// exact time-average age of information of every (receiver, source) pair
// of state updates over [first update, end], as metrics computes it (nil
// beyond heatMapLimit nodes or without state traffic).
func readDeliveries(dir string, nodes int, endNs int64) ([]Series, [][]float64, error) {
	var lat Samples
	type pair struct {
		first, lastT, lastGen float64
		integral              float64
		has                   bool
	}
	var pairs []pair
	if nodes > 0 && nodes <= heatMapLimit {
		pairs = make([]pair, nodes*nodes)
	}
	err := TableRows(dir, runread.Deliveries, func(col map[string]int, row []string) error {
		kind := row[col["kind"]]
		l, err := num(row, col, "latency_ns")
		if err != nil {
			return err
		}
		if err := lat.Add(kind, l/1e6); err != nil {
			return err
		}
		if kind != "state" || pairs == nil {
			return nil
		}
		src, err1 := num(row, col, "src")
		dst, err2 := num(row, col, "dst")
		tick, err3 := num(row, col, "t_tick_ns")
		gen, err4 := num(row, col, "t_gen_ns")
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return err
		}
		if src < 0 || dst < 0 || int(src) >= nodes || int(dst) >= nodes {
			return nil
		}
		p := &pairs[int(dst)*nodes+int(src)]
		t, g := tick/1e9, gen/1e9
		if !p.has {
			p.has, p.first, p.lastT, p.lastGen = true, t, t, g
			return nil
		}
		p.integral += sawtooth(p.lastGen, p.lastT, t)
		p.lastT = t
		p.lastGen = max(p.lastGen, g)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var series []Series
	for _, k := range lat.Keys() {
		v := lat.Values(k)
		slices.Sort(v)
		s := Series{Name: k, X: []float64{v[0]}, Y: []float64{0}} // the jump at the least value
		step := max(1, len(v)/cdfPoints)
		for i := 0; i < len(v); i += step {
			s.X = append(s.X, v[i])
			s.Y = append(s.Y, float64(i+1)/float64(len(v)))
		}
		s.X, s.Y = append(s.X, v[len(v)-1]), append(s.Y, 1)
		series = append(series, s)
	}
	if pairs == nil {
		return series, nil, nil
	}
	end := float64(endNs) / 1e9
	grid := make([][]float64, nodes)
	any := false
	for r := range grid {
		grid[r] = make([]float64, nodes)
		for c := range grid[r] {
			p := pairs[r*nodes+c]
			grid[r][c] = math.NaN()
			if p.has && end > p.first {
				grid[r][c] = (p.integral + sawtooth(p.lastGen, p.lastT, end)) / (end - p.first)
				any = true
			}
		}
	}
	if !any {
		return series, nil, nil
	}
	return series, grid, nil
}

// sawtooth is the integral of the age (tau - g) over [a, b].
func sawtooth(g, a, b float64) float64 {
	x, y := a-g, b-g
	return (y*y - x*x) / 2
}

// pdrBins bounds the bins of the PDR over time: runs longer than that
// many seconds are drawn per several seconds.
const pdrBins = 20_000

// readPDR reads the trace table: per traffic kind and bin of width seconds (1
// up to pdrBins seconds of run), receptions over expected receptions,
// both counted at the packet's transmission time (a broadcast expects
// every other node).
func readPDR(dir string, nodes int, endNs int64) (series []Series, width int64, err error) {
	secs := endNs/1e9 + 1
	width = (secs + pdrBins - 1) / pdrBins
	bins := int((secs + width - 1) / width)
	bin := func(ns float64) int {
		s := ns / 1e9
		if !(s >= 0 && s < float64(int64(bins)*width)) {
			return -1
		}
		return int(int64(s) / width)
	}
	type counts struct{ exp, rx []float64 }
	byKind := map[string]*counts{}
	err = TableRows(dir, runread.Trace, func(col map[string]int, row []string) error {
		kind := row[col["kind"]]
		c := byKind[kind]
		if c == nil {
			if len(byKind) >= MaxKinds {
				return fmt.Errorf("more than %d traffic kinds", MaxKinds)
			}
			c = &counts{exp: make([]float64, bins), rx: make([]float64, bins)}
			byKind[kind] = c
		}
		switch row[col["event"]] {
		case "tx":
			t, err := num(row, col, "t_ns")
			if err != nil {
				return err
			}
			dst, err := num(row, col, "dst")
			if err != nil {
				return err
			}
			n := 1.0
			if dst < 0 {
				n = float64(nodes - 1)
			}
			if i := bin(t); i >= 0 {
				c.exp[i] += n
			}
		case "rx":
			g, err := num(row, col, "t_gen_ns")
			if err != nil {
				return err
			}
			if i := bin(g); i >= 0 {
				c.rx[i]++
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var out []Series
	for _, k := range kinds {
		c := byKind[k]
		s := Series{Name: k}
		for i := range c.exp {
			if c.exp[i] > 0 {
				s.X = append(s.X, float64(int64(i)*width)+float64(width)/2)
				s.Y = append(s.Y, min(1, c.rx[i]/c.exp[i]))
			}
		}
		if len(s.X) > 0 {
			out = append(out, s)
		}
	}
	return out, width, nil
}

// HeatMapPNG draws grid[row][col] (NaN: no value, drawn black) as a heat
// map, rows up, with a colour bar to its right labelled barLabel (the
// quantity and its unit) and a legend saying what the black cells are
// (noData); it returns the PNG bytes.
func HeatMapPNG(title, xlabel, ylabel, barLabel, noData string, grid [][]float64) ([]byte, error) {
	f, err := heatMapFigure(title, xlabel, ylabel, barLabel, noData, grid)
	if err != nil {
		return nil, err
	}
	return f.png()
}

func heatMapFigure(title, xlabel, ylabel, barLabel, noData string, grid [][]float64) (*figure, error) {
	if len(grid) == 0 || len(grid[0]) == 0 {
		return nil, errors.New("empty grid")
	}
	g := heatGrid(grid)
	lo, hi := math.Inf(1), math.Inf(-1)
	nan := false
	for _, r := range grid {
		for _, v := range r {
			if math.IsNaN(v) {
				nan = true
			} else {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
	}
	if hi <= lo {
		hi = lo + max(1, math.Abs(lo))*1e-6
	}
	cm := moreland.SmoothBlueRed()
	cm.SetMin(lo)
	cm.SetMax(hi)
	h := plotter.NewHeatMap(g, cm.Palette(64))
	h.Min, h.Max = lo, hi
	h.NaN = color.Black
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.X.Tick.Marker, p.Y.Tick.Marker = intTicks{}, intTicks{}
	p.Add(h)
	f := &figure{W: 8.5 * vg.Inch, H: 6.5 * vg.Inch, Panels: [][]*plot.Plot{{p}}, Bar: &colorBar{Map: cm, Label: barLabel}}
	if nan && noData != "" {
		box, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 1}})
		if err != nil {
			return nil, err
		}
		box.Color = color.Black
		f.Legend = []legendEntry{{Name: noData, Thumbs: []plot.Thumbnailer{box}}}
	}
	return f, nil
}

// heatGrid is a plotter.GridXYZ over a square matrix.
type heatGrid [][]float64

func (g heatGrid) Dims() (c, r int)   { return len(g[0]), len(g) }
func (g heatGrid) Z(c, r int) float64 { return g[r][c] }
func (g heatGrid) X(c int) float64    { return float64(c) }
func (g heatGrid) Y(r int) float64    { return float64(r) }

var runTemplate = template.Must(template.New("run").Funcs(template.FuncMap{
	"png": func(b []byte) template.URL {
		return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))
	},
	"ms": func(ns any) string { return fmt.Sprintf("%.3f", toF(ns)/1e6) },
	"f":  func(prec int, v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) },
	"opt": func(prec int, v *float64) string {
		if v == nil {
			return "–"
		}
		return strconv.FormatFloat(*v, 'f', prec, 64)
	},
}).Parse(runHTML + costHTML))

const costHTML = `{{define "cost"}}<td>{{opt 2 .CompletionS}}</td><td>{{opt 2 .TwinCompletionS}}</td><td>{{opt 2 .CompletionDeltaS}}</td><td>{{f 2 .ExtraDistanceM}}</td><td>{{f 1 .ExtraEnergyJ}}</td><td>{{opt 3 .TrajDevMeanM}}</td><td>{{opt 3 .TrajDevMaxM}}</td>{{end}}`

func toF(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	}
	return math.NaN()
}

const runHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{.S.Scenario}}, seed {{.S.Seed}}: skyloop run report</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:75em;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em;display:block;overflow-x:auto;max-width:100%}
th,td{border:1px solid #ccc;padding:0.25em 0.6em;text-align:right}
th{background:#f2f2f2} td:first-child,th:first-child{text-align:left}
figure{margin:1em 0} img{max-width:100%;border:1px solid #ddd}
.note{color:#777}
</style></head><body>
<h1>{{.S.Scenario}}, seed {{.S.Seed}}</h1>
<p>{{f 1 .DurationS}} s simulated, {{.S.Nodes}} nodes, {{.S.Backend}} network{{with .S.Separation}}; closest approach {{f 2 .MinM}} m, {{.Collisions}} collisions{{end}}.</p>
<h2>Network</h2>
<table id="network"><tr><th>kind</th><th>tx</th><th>expected rx</th><th>rx</th><th>PDR</th><th>drops</th><th>latency mean (ms)</th><th>p50</th><th>p95</th><th>max</th><th>IP bytes/s</th></tr>
{{range .Kinds}}{{$k := index $.S.Network.ByKind .}}<tr><td>{{.}}</td><td>{{$k.Tx}}</td><td>{{$k.Expected}}</td><td>{{$k.Rx}}</td><td>{{f 4 $k.PDR}}</td><td>{{range $r, $n := $k.Drops}}{{$r}} {{$n}} {{end}}</td><td>{{ms $k.Latency.Mean}}</td><td>{{ms $k.Latency.P50}}</td><td>{{ms $k.Latency.P95}}</td><td>{{ms $k.Latency.Max}}</td><td>{{f 0 $k.Overhead.IPBytesPerS}}</td></tr>
{{end}}{{with .S.Network.Total}}<tr><th>all</th><th>{{.Tx}}</th><th>{{.Expected}}</th><th>{{.Rx}}</th><th>{{f 4 .PDR}}</th><th>{{range $r, $n := .Drops}}{{$r}} {{$n}} {{end}}</th><th>{{ms .Latency.Mean}}</th><th>{{ms .Latency.P50}}</th><th>{{ms .Latency.P95}}</th><th>{{ms .Latency.Max}}</th><th>{{f 0 .Overhead.IPBytesPerS}}</th></tr>{{end}}
</table>
{{with .S.Network.AoI}}<p>Age of information (state): mean {{f 3 .MeanS}} s over {{.Pairs}} pairs (min {{f 3 .MinS}} s, max {{f 3 .MaxS}} s); {{.Never}} pairs never heard.</p>{{end}}
<h2>Vehicles</h2>
<table id="vehicles"><tr><th>name</th><th>kind</th><th>final mode</th><th>final position (m)</th><th>distance (m)</th><th>energy (J)</th><th>max speed (m/s)</th><th>arrival error (m)</th></tr>
{{range .S.Vehicles}}<tr><td>{{.Name}}</td><td>{{.Kind}}</td><td>{{.Mode}}</td><td>{{f 2 .Final.X}}, {{f 2 .Final.Y}}, {{f 2 .Final.Z}}</td><td>{{f 2 .DistanceM}}</td><td>{{f 1 .EnergyJ}}</td><td>{{f 2 .MaxSpeed}}</td><td>{{with .ArrivalM}}{{f 3 .}}{{end}}</td></tr>
{{end}}</table>
{{with .S.Twin}}<h2 id="twin">Twin: the cost of the network</h2>
<p>The same run over an {{.Network}} network (in {{if .Dir}}{{.Dir}}/{{else}}memory{{end}}): every figure is the run's minus the twin's.
{{with .Overall}}{{.Completed}} of {{.Missions}} missions completed in the run, {{.TwinCompleted}} in the twin.{{end}}</p>
<table id="twin-cost"><tr><th>vehicle</th><th>completion (s)</th><th>twin completion (s)</th><th>delay (s)</th><th>extra distance (m)</th><th>extra energy (J)</th><th>path deviation mean (m)</th><th>max (m)</th></tr>
{{range .Vehicles}}<tr><td>{{.Name}}</td>{{template "cost" .}}</tr>
{{end}}<tr><th>all</th>{{template "cost" .Overall}}</tr>
</table>
{{if .Measures}}<table id="twin-measures"><tr><th>measure</th><th>error field</th><th>run minus twin (m)</th></tr>
{{range $m, $fs := .Measures}}{{range $k, $v := $fs}}<tr><td>{{$m}}</td><td>{{$k}}</td><td>{{f 3 $v}}</td></tr>
{{end}}{{end}}</table>{{end}}
{{with $.TwinFigure}}<figure><figcaption>{{.Title}}</figcaption><img alt="{{.Title}}" src="{{png .PNG}}"></figure>{{end}}
{{with $.TwinNote}}<p class="note">{{.}}</p>{{end}}
{{end}}<h2>Figures</h2>
{{range .Figures}}<figure><figcaption>{{.Title}}</figcaption><img alt="{{.Title}}" src="{{png .PNG}}"></figure>
{{end}}{{range .Notes}}<p class="note">{{.}}</p>
{{end}}<p class="note">Written by skyloop report html.</p>
</body></html>
`
