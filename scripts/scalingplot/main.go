// Command scalingplot renders the scaling measurements of
// scripts/scaling.sh: it reads the CSV the script writes and puts a log-log
// plot (speed and time per vehicle-tick against the vehicle count, one line
// per model and worker count) and a markdown table into a directory.
//
//	go run ./scripts/scalingplot docs/performance-scaling.csv docs
//
// writes OUTDIR/performance-scaling.png and replaces the part of
// OUTDIR/performance.md between the lines <!-- scaling:begin --> and
// <!-- scaling:end --> with the table. The CSV starts with comment lines
// "# key: value" (date, commit, machine, go) that the table's heading
// names; the output depends on the CSV only.
package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The markers around the generated part of performance.md.
const (
	beginMarker = "<!-- scaling:begin -->"
	endMarker   = "<!-- scaling:end -->"
)

// Cell is one measurement: one model at one vehicle count and worker
// count.
type Cell struct {
	Model         string
	Scenario      string
	Vehicles      int
	Workers       int
	SimSeconds    float64
	WarmupSeconds float64
	Runs          int
	XRealtime     float64
	NsVehicleTick float64
	NsDelivery    float64
	AllocsPerTick float64
	Deliveries    float64
	HeapBuilt     float64 // bytes per vehicle after the build
	HeapEnd       float64 // bytes per vehicle at the end of the run
}

// Data is a parsed scaling CSV.
type Data struct {
	// Meta are the "# key: value" comment lines, in order.
	Meta  [][2]string
	Cells []Cell
}

// columns are the CSV columns Cell is read from.
var columns = []string{"model", "scenario", "vehicles", "workers", "sim_seconds", "warmup_s", "runs",
	"x_realtime", "ns_per_vehicle_tick", "ns_per_delivery", "allocs_per_tick", "deliveries",
	"heap_bytes_per_vehicle", "heap_end_bytes_per_vehicle"}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: scalingplot CSV OUTDIR")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "scalingplot:", err)
		os.Exit(1)
	}
}

// run renders the CSV at csvPath into outDir.
func run(csvPath, outDir string) error {
	f, err := os.Open(csvPath)
	if err != nil {
		return err
	}
	defer f.Close()
	d, err := Parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", csvPath, err)
	}
	mdPath := filepath.Join(outDir, "performance.md")
	md, err := os.ReadFile(mdPath)
	if err != nil {
		return err
	}
	out, err := Splice(md, Markdown(d, filepath.Base(csvPath), "performance-scaling.png"))
	if err != nil {
		return fmt.Errorf("%s: %w", mdPath, err)
	}
	png, err := PlotPNG(d)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(outDir, "performance-scaling.png"), png); err != nil {
		return err
	}
	return writeFile(mdPath, out)
}

// Parse reads a scaling CSV: comment lines "# key: value", a header line
// naming at least the columns Cell is read from (in any order), and one
// line per cell.
func Parse(r io.Reader) (*Data, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	d := &Data{}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "#"); ok {
			k, v, _ := strings.Cut(rest, ":")
			d.Meta = append(d.Meta, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
		}
	}
	cr := csv.NewReader(bytes.NewReader(b))
	cr.Comment = '#'
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errors.New("no header line")
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	for _, c := range columns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("no column %q in the header", c)
		}
	}
	for n, rec := range recs[1:] {
		line := n + 2 // the header is line 1 (comments not counted)
		var bad error
		num := func(name string) float64 {
			v, err := strconv.ParseFloat(rec[col[name]], 64)
			if err != nil && bad == nil {
				bad = fmt.Errorf("row %d, %s: %w", line, name, err)
			}
			return v
		}
		c := Cell{
			Model:         rec[col["model"]],
			Scenario:      rec[col["scenario"]],
			Vehicles:      int(num("vehicles")),
			Workers:       int(num("workers")),
			SimSeconds:    num("sim_seconds"),
			WarmupSeconds: num("warmup_s"),
			Runs:          int(num("runs")),
			XRealtime:     num("x_realtime"),
			NsVehicleTick: num("ns_per_vehicle_tick"),
			NsDelivery:    num("ns_per_delivery"),
			AllocsPerTick: num("allocs_per_tick"),
			Deliveries:    num("deliveries"),
			HeapBuilt:     num("heap_bytes_per_vehicle"),
			HeapEnd:       num("heap_end_bytes_per_vehicle"),
		}
		if bad != nil {
			return nil, bad
		}
		if c.Model == "" || c.Vehicles < 1 || c.Workers < 1 || !(c.XRealtime > 0) || !(c.NsVehicleTick > 0) {
			return nil, fmt.Errorf("row %d: want a model, vehicles and workers >= 1, and a positive speed and time per vehicle-tick", line)
		}
		d.Cells = append(d.Cells, c)
	}
	if len(d.Cells) == 0 {
		return nil, errors.New("no measurements")
	}
	return d, nil
}

// models returns the models in the order they first appear.
func (d *Data) models() []string {
	var ms []string
	for _, c := range d.Cells {
		if !slices.Contains(ms, c.Model) {
			ms = append(ms, c.Model)
		}
	}
	return ms
}

// workers returns the worker counts measured, in increasing order.
func (d *Data) workers() []int {
	var ws []int
	for _, c := range d.Cells {
		if !slices.Contains(ws, c.Workers) {
			ws = append(ws, c.Workers)
		}
	}
	slices.Sort(ws)
	return ws
}

// find returns the cell of model at n vehicles and w workers.
func (d *Data) find(model string, n, w int) (Cell, bool) {
	for _, c := range d.Cells {
		if c.Model == model && c.Vehicles == n && c.Workers == w {
			return c, true
		}
	}
	return Cell{}, false
}

// vehicleCounts returns the vehicle counts measured for model, in
// increasing order.
func (d *Data) vehicleCounts(model string) []int {
	var ns []int
	for _, c := range d.Cells {
		if c.Model == model && !slices.Contains(ns, c.Vehicles) {
			ns = append(ns, c.Vehicles)
		}
	}
	slices.Sort(ns)
	return ns
}

// PlotPNG draws two log-log panels side by side, speed (x real time) and
// nanoseconds per vehicle-tick against the vehicle count, one line per
// model and worker count, and returns the PNG bytes.
func PlotPNG(d *Data) ([]byte, error) {
	speed, cost := plot.New(), plot.New()
	speed.Title.Text = "speed"
	speed.Y.Label.Text = "x real time"
	cost.Title.Text = "cost per vehicle and tick"
	cost.Y.Label.Text = "ns per vehicle-tick"
	for _, p := range []*plot.Plot{speed, cost} {
		p.X.Label.Text = "vehicles"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = logTicks{}, logTicks{}
		p.Add(plotter.NewGrid())
	}
	speed.Legend.Top = true
	cost.Legend.Top, cost.Legend.Left = true, true
	// Real time, the line a speed must stay above for a live run.
	ns := []int{}
	for _, m := range d.models() {
		ns = append(ns, d.vehicleCounts(m)...)
	}
	lo, hi := float64(slices.Min(ns)), float64(slices.Max(ns))
	rt, err := plotter.NewLine(plotter.XYs{{X: lo, Y: 1}, {X: hi, Y: 1}})
	if err != nil {
		return nil, err
	}
	rt.Color, rt.Dashes = color.Gray{Y: 100}, []vg.Length{vg.Points(4), vg.Points(3)}
	speed.Add(rt)
	speed.Legend.Add("real time", rt)
	i := 0
	for _, m := range d.models() {
		for _, w := range d.workers() {
			var sp, ct plotter.XYs
			for _, n := range d.vehicleCounts(m) {
				if c, ok := d.find(m, n, w); ok {
					sp = append(sp, plotter.XY{X: float64(n), Y: c.XRealtime})
					ct = append(ct, plotter.XY{X: float64(n), Y: c.NsVehicleTick})
				}
			}
			if len(sp) == 0 {
				continue
			}
			name := fmt.Sprintf("%s, %s", m, plural(w, "worker"))
			for k, xy := range []plotter.XYs{sp, ct} {
				l, pts, err := plotter.NewLinePoints(xy)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				l.Color, pts.Color = palette(i/2), palette(i/2)
				l.Width = vg.Points(1.5)
				if i%2 == 1 {
					l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
					pts.Shape = draw.TriangleGlyph{}
				} else {
					pts.Shape = draw.CircleGlyph{}
				}
				p := []*plot.Plot{speed, cost}[k]
				p.Add(l, pts)
				p.Legend.Add(name, l, pts)
			}
			i++
		}
	}
	// Room around the points, and above them for the legend.
	for _, p := range []*plot.Plot{speed, cost} {
		p.X.Min, p.X.Max = p.X.Min/1.3, p.X.Max*1.3
		p.Y.Min, p.Y.Max = p.Y.Min/1.5, p.Y.Max*math.Pow(p.Y.Max/p.Y.Min, 0.3)*1.5
	}
	const w, h = 12 * vg.Inch, 5 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(12), PadY: vg.Points(6), PadTop: vg.Points(6),
		PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	canvases := plot.Align([][]*plot.Plot{{speed, cost}}, tiles, dc)
	speed.Draw(canvases[0][0])
	cost.Draw(canvases[0][1])
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("rendering the plot: %w", err)
	}
	return buf.Bytes(), nil
}

// logTicks marks a log axis at 1, 2 and 5 times the powers of ten (and
// the other digits unlabelled), so that a range narrower than a decade
// still gets labels.
type logTicks struct{}

// Ticks returns the tick marks between lo and hi.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return nil
	}
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		p := math.Pow(10, e)
		for d := 1; d <= 9; d++ {
			v := float64(d) * p
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if d == 1 || d == 2 || d == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// palette gives the i-th line colour.
func palette(i int) color.Color {
	cs := []color.RGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255}}
	return cs[i%len(cs)]
}

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Markdown returns the generated part of performance.md: where and when
// the figures were measured, the plot, and one table row per model and
// vehicle count with the worker counts side by side.
func Markdown(d *Data, csvName, pngName string) string {
	var b strings.Builder
	meta := map[string]string{}
	for _, kv := range d.Meta {
		meta[kv[0]] = kv[1]
	}
	fmt.Fprintf(&b, "Measured by `scripts/scaling.sh`")
	for _, k := range []string{"date", "commit", "machine", "go", "quick"} {
		if v := meta[k]; v != "" {
			fmt.Fprintf(&b, "; %s: %s", k, v)
		}
	}
	b.WriteString(".\n\n")
	fmt.Fprintf(&b, "![x real time and ns per vehicle-tick against the vehicle count](%s)\n\n", pngName)
	ws := d.workers()
	head := []string{"model", "vehicles", "simulated (warm-up)", "runs"}
	for _, w := range ws {
		head = append(head, fmt.Sprintf("x real time, %s", plural(w, "worker")))
	}
	for _, w := range ws {
		head = append(head, fmt.Sprintf("ns/vehicle-tick, %s", plural(w, "worker")))
	}
	first := plural(ws[0], "worker")
	head = append(head, "ns/delivery, "+first, "allocs/tick, "+first, "KiB/vehicle after build, "+first,
		"KiB/vehicle at end, "+first)
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for i := range head {
		if i < 1 {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for _, m := range d.models() {
		for _, n := range d.vehicleCounts(m) {
			var ref Cell
			found := false
			for _, w := range ws {
				if c, ok := d.find(m, n, w); ok {
					ref, found = c, true
					break
				}
			}
			if !found {
				continue
			}
			row := []string{m, strconv.Itoa(n), fmt.Sprintf("%s (%s)", seconds(ref.SimSeconds), seconds(ref.WarmupSeconds)),
				strconv.Itoa(ref.Runs)}
			for _, w := range ws {
				c, ok := d.find(m, n, w)
				row = append(row, cell(ok, c.XRealtime, sig3))
			}
			for _, w := range ws {
				c, ok := d.find(m, n, w)
				row = append(row, cell(ok, c.NsVehicleTick, func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }))
			}
			c, ok := d.find(m, n, ws[0])
			row = append(row,
				cell(ok && c.NsDelivery > 0, c.NsDelivery, func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }),
				cell(ok, c.AllocsPerTick, sig3),
				cell(ok, c.HeapBuilt/1024, func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }),
				cell(ok, c.HeapEnd/1024, func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }))
			b.WriteString("| " + strings.Join(row, " | ") + " |\n")
		}
	}
	fmt.Fprintf(&b, "\nEvery figure is the median of the runs; the raw figures are in [%s](%s).\n", csvName, csvName)
	return b.String()
}

// cell formats v, or a dash when there is no measurement.
func cell(ok bool, v float64, format func(float64) string) string {
	if !ok {
		return "-"
	}
	return format(v)
}

// sig3 formats v with three significant digits (all the digits before
// the point of a larger number).
func sig3(v float64) string {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	digits := max(0, 2-int(math.Floor(math.Log10(v))))
	return strconv.FormatFloat(v, 'f', digits, 64)
}

// seconds formats a whole or fractional number of seconds.
func seconds(s float64) string {
	return strconv.FormatFloat(s, 'f', -1, 64) + " s"
}

// Splice replaces what lies between the marker lines of md with part.
func Splice(md []byte, part string) ([]byte, error) {
	s := string(md)
	i := strings.Index(s, beginMarker+"\n")
	j := strings.Index(s, "\n"+endMarker)
	if i < 0 || j < 0 || j < i {
		return nil, fmt.Errorf("want the lines %s and %s, in that order, around the generated part", beginMarker, endMarker)
	}
	if strings.Count(s, beginMarker) != 1 || strings.Count(s, endMarker) != 1 {
		return nil, fmt.Errorf("the markers %s and %s must appear once each", beginMarker, endMarker)
	}
	head := s[:i+len(beginMarker)+1]
	tail := s[j+1:]
	return []byte(head + part + tail), nil
}

// writeFile writes b to path through a temporary file, so that a reader
// sees the old file or the new one.
func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
