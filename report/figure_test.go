package report

import (
	"bytes"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"skyloop/geom"
)

// checkFigure lays f out on its canvas and checks what a reader needs:
// every panel has axis labels with units (a "(...)" on the y axis, and
// on the x axis of the bottom panel), the legend (and colour bar) lie
// outside every panel's data area, it has the legend entries want in
// order, and it renders to a PNG of its size, the same bytes twice.
func checkFigure(t *testing.T, name string, f *figure, want ...string) figLayout {
	t.Helper()
	c := draw.New(vgimg.New(f.W, f.H))
	lay, _, _, _ := f.layout(c)
	for i, r := range f.Panels {
		for j, p := range r {
			if !strings.Contains(p.Y.Label.Text, "(") && !strings.Contains(p.Y.Label.Text, "fraction") {
				t.Errorf("%s: panel %d,%d: y label %q has no unit", name, i, j, p.Y.Label.Text)
			}
			if i == len(f.Panels)-1 && !strings.Contains(p.X.Label.Text, "(") {
				t.Errorf("%s: panel %d,%d: x label %q has no unit", name, i, j, p.X.Label.Text)
			}
			d := lay.Data[i][j]
			if d.Size().X < vg.Inch || d.Size().Y < vg.Inch {
				t.Errorf("%s: panel %d,%d: data area %v too small", name, i, j, d.Size())
			}
			for what, r := range map[string]vg.Rectangle{"legend": lay.Legend, "colour bar": lay.Bar} {
				if r.Size().X > 0 && overlap(r, d) {
					t.Errorf("%s: the %s %v covers panel %d,%d's data %v", name, what, r, i, j, d)
				}
			}
		}
	}
	var got []string
	for _, e := range f.Legend {
		got = append(got, e.Name)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("%s: legend %q, want %q", name, got, want)
	}
	if len(want) > 0 && lay.Legend.Size().Y <= 0 {
		t.Errorf("%s: the legend has no room", name)
	}
	if lay.Legend.Size().X > 0 && (lay.Legend.Min.X < 0 || lay.Legend.Max.X > f.W || lay.Legend.Min.Y < 0) {
		t.Errorf("%s: the legend %v runs off the %vx%v figure", name, lay.Legend, f.W, f.H)
	}
	a, err := f.png()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	b, _ := f.png()
	if !bytes.Equal(a, b) {
		t.Errorf("%s: two renderings differ", name)
	}
	img, err := png.Decode(bytes.NewReader(a))
	if err != nil || img.Bounds().Dx() < 500 {
		t.Errorf("%s: not a PNG of a figure: %v", name, err)
	}
	return lay
}

func overlap(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

func tracks() []Track {
	var out []Track
	for i, n := range []string{"uav-0", "uav-1", "uav-2"} {
		tr := Track{Name: n, Targets: []geom.Vec3{geom.V(50, float64(10*i), 10)}}
		for k := range 50 {
			s := float64(k)
			tr.Points = append(tr.Points, geom.V(s, float64(10*i)+s/10, 10+s/5))
			tr.Times = append(tr.Times, s/10)
		}
		out = append(out, tr)
	}
	return out
}

// TestFigures renders every figure of the run and sweep reports from
// small data and checks, from the plotting data: titles and axis labels
// with units, legends and colour bars outside the data, axis ranges (0
// for counts and ratios, numeric sweep values sorted), and that lines
// that coincide stay apart by style.
func TestFigures(t *testing.T) {
	t.Run("trajectory", func(t *testing.T) {
		f, err := trajectoryFigure("s, seed 1: trajectories, top view", tracks(), []geom.Box{{Min: geom.V(20, 20, 0), Max: geom.V(30, 30, 20)}})
		if err != nil {
			t.Fatal(err)
		}
		checkFigure(t, "trajectory", f, "uav-0", "uav-1", "uav-2", "start", "target", "obstacle")
		p := f.Panels[0][0]
		if dx, dy := p.X.Max-p.X.Min, p.Y.Max-p.Y.Min; math.Abs(dx-dy) > 1e-9 {
			t.Errorf("x spans %g m, y %g m: not the same scale", dx, dy)
		}
	})
	t.Run("trajectory of a swarm", func(t *testing.T) {
		// 10,000 vehicles on a 20 m grid, each with four targets: the
		// marks must not bury the tracks.
		var swarm []Track
		for i := 0; i < 10_000; i++ {
			x, y := float64(i%100)*20, float64(i/100)*20
			swarm = append(swarm, Track{Name: fmt.Sprintf("uav-%d", i), Points: []geom.Vec3{geom.V(x, y, 10), geom.V(x+3, y+1, 10)},
				Targets: []geom.Vec3{geom.V(x+20, y, 10), geom.V(x+20, y+20, 15), geom.V(x, y+20, 10), geom.V(x, y, 10)}})
		}
		f, err := trajectoryFigure("s, seed 1: trajectories, top view", swarm, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range f.Legend {
			switch e.Name {
			case "target":
				t.Errorf("40,000 targets drawn over 10,000 tracks")
			case "start":
				if r := e.Thumbs[0].(*plotter.Scatter).GlyphStyle.Radius; r > vg.Points(1) {
					t.Errorf("start dots of %v for 10,000 vehicles 20 m apart", r)
				}
			}
		}
		if !strings.Contains(f.LegendTitle, "10000 vehicles") || !strings.Contains(f.LegendTitle, "targets not drawn") {
			t.Errorf("legend title %q: want the count and that targets are not drawn", f.LegendTitle)
		}
	})
	t.Run("profile", func(t *testing.T) {
		f, err := profileFigure("s, seed 1: altitude and east offset", tracks())
		if err != nil {
			t.Fatal(err)
		}
		checkFigure(t, "profile", f, "uav-0", "uav-1", "uav-2")
		if alt := f.Panels[0][0]; alt.Y.Min != 0 || alt.X.Min != 0 {
			t.Errorf("altitude axis from %g m, time from %g s; want 0", alt.Y.Min, alt.X.Min)
		}
	})
	t.Run("lines", func(t *testing.T) {
		// Received vs distance: two rates delivering the same at every
		// station (the lines coincide).
		s := []Series{{Name: Human("DsssRate1Mbps"), X: []float64{5, 50, 100}, Y: []float64{1000, 990, 400}},
			{Name: Human("DsssRate5_5Mbps"), X: []float64{5, 50, 100}, Y: []float64{1000, 990, 400}}}
		f, err := linesFigure("ubanc-range (preamble_detection on): packets received per station", "distance (m)", "packets received (mean over seeds)", s)
		if err != nil {
			t.Fatal(err)
		}
		checkFigure(t, "lines", f, "1 Mbit/s", "5.5 Mbit/s")
		p := f.Panels[0][0]
		if p.Y.Min != 0 {
			t.Errorf("packets received from %g, want 0", p.Y.Min)
		}
		a, b := seriesStyle(0, 2), seriesStyle(1, 2)
		if a.Width <= b.Width || len(b.Dashes) == 0 {
			t.Errorf("coinciding lines would hide each other: widths %v, %v, dashes %v", a.Width, b.Width, b.Dashes)
		}
	})
	t.Run("latency CDF", func(t *testing.T) {
		kinds := []Series{{Name: "command", X: []float64{1, 2}, Y: []float64{0.5, 1}}, {Name: "state", X: []float64{1, 2}, Y: []float64{0.5, 1}},
			{Name: "telemetry", X: []float64{1, 3}, Y: []float64{0.5, 1}}}
		f, err := cdfPanelsFigure("s, seed 1: one-way latency per traffic kind (CDF)", "one-way latency (ms)", "fraction of deliveries", kinds)
		if err != nil {
			t.Fatal(err)
		}
		checkFigure(t, "latency CDF", f)
		if l, err := cdfLine(kinds[0], 0); err != nil || l.StepStyle != plotter.PostStep {
			t.Errorf("a distribution is drawn as slopes, not steps (%v)", err)
		}
		if len(f.Panels) != 3 {
			t.Fatalf("%d panels for 3 kinds", len(f.Panels))
		}
		for i, r := range f.Panels {
			p := r[0]
			if !strings.HasPrefix(p.Y.Label.Text, kinds[i].Name) {
				t.Errorf("panel %d is %q, want %s", i, p.Y.Label.Text, kinds[i].Name)
			}
			if p.X.Min != 0 || p.X.Max < 3 || p.Y.Min != 0 || p.Y.Max != 1 {
				t.Errorf("panel %d: x %g..%g ms, y %g..%g; want a shared x from 0 past 3 and y 0..1", i, p.X.Min, p.X.Max, p.Y.Min, p.Y.Max)
			}
		}
	})
	t.Run("AoI heat map", func(t *testing.T) {
		nan := math.NaN()
		grid := [][]float64{{nan, 0.2, 0.4}, {0.3, nan, nan}, {0.1, 0.5, nan}}
		f, err := heatMapFigure("s, seed 1: mean age of information", "source node (id)", "receiver node (id)", "mean age of information (s)",
			"black: never heard", grid)
		if err != nil {
			t.Fatal(err)
		}
		lay := checkFigure(t, "AoI heat map", f, "black: never heard")
		if f.Bar == nil || f.Bar.Label != "mean age of information (s)" || f.Bar.Map.Min() != 0.1 || f.Bar.Map.Max() != 0.5 {
			t.Fatalf("colour bar %+v, want 0.1..0.5 s labelled", f.Bar)
		}
		if lay.Bar.Size().Y < vg.Inch {
			t.Errorf("colour bar %v", lay.Bar)
		}
		for _, tk := range f.Panels[0][0].X.Tick.Marker.Ticks(-0.5, 2.5) {
			if tk.Label != "" && tk.Value != math.Round(tk.Value) || strings.HasPrefix(tk.Label, "-") {
				t.Errorf("node tick %q at %g", tk.Label, tk.Value)
			}
		}
	})
	t.Run("sweep values", func(t *testing.T) {
		// A sweep in the order a directory listing gives: 200, 400, 50 ms.
		xs, unit, ok := Quantities([]string{"200ms", "400ms", "50ms"})
		if !ok || unit != "ms" {
			t.Fatalf("Quantities: %v %q %v", xs, unit, ok)
		}
		f, err := barsFigure("jitter: age of information (mean ± std over 5 seeds)", "jitter ("+unit+")", "mean age of information (s)", xs, nil,
			[]float64{2, 3, 1}, []float64{0.1, 0.1, 0.1})
		if err != nil {
			t.Fatal(err)
		}
		checkFigure(t, "sweep values", f)
		p := f.Panels[0][0]
		if p.X.Tick.Marker != (plot.DefaultTicks{}) {
			t.Errorf("a categorical axis for numeric values")
		}
		if p.X.Min != 0 || p.X.Max < 400 || p.Y.Min != 0 {
			t.Errorf("x %g..%g ms, y from %g; want x 0..>=400, y from 0", p.X.Min, p.X.Max, p.Y.Min)
		}
		var ticks []string
		for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
			if tk.Label != "" {
				ticks = append(ticks, tk.Label)
			}
		}
		if strings.Join(ticks, " ") != "0 200 400" {
			t.Errorf("x ticks %q", ticks)
		}
	})
	t.Run("twin", func(t *testing.T) {
		run := [][]geom.Vec3{{geom.V(0, 0, 0), geom.V(10, 5, 0)}, {geom.V(0, 10, 0), geom.V(10, 12, 0)}}
		twin := [][]geom.Vec3{{geom.V(0, 0, 0), geom.V(10, 4, 0)}, {geom.V(0, 10, 0), geom.V(10, 11, 0)}}
		f, err := twinFigure("s, seed 1: the run and its ideal-network twin", []string{"a", "b"}, run, twin)
		if err != nil {
			t.Fatal(err)
		}
		checkFigure(t, "twin", f, "run (solid)", "ideal twin (dashed)", "a", "b")
	})
	t.Run("bands", func(t *testing.T) {
		b := Band{Name: "uav-1", Title: "uav-1: 3 samples", X: []float64{0, 1, 2}, Mean: []float64{0, 1, 0}, Lo: []float64{-1, 0, -1}, Hi: []float64{1, 2, 1}}
		f, err := bandsFigure("clock offset", "time (s)", "offset (ms)", []Band{b, b})
		if err != nil {
			t.Fatal(err)
		}
		checkFigure(t, "bands", f, "mean", "min-max", "zero")
	})
	t.Run("coverage", func(t *testing.T) {
		g := CoverageGrid{Cols: 4, Rows: 3, Cell: 5, Obstacles: [][2]int{{1, 1}}}
		pn := CoveragePanel{Title: "boustrophedon", Plan: []geom.Vec3{geom.V(2.5, 2.5, 0), geom.V(17.5, 2.5, 0)},
			Flown: []geom.Vec3{geom.V(2.5, 2.5, 0), geom.V(17, 3, 0)}, Missed: []geom.Vec3{geom.V(17.5, 12.5, 0)}}
		f, err := coverageFigure("cov", g, []CoveragePanel{pn, pn})
		if err != nil {
			t.Fatal(err)
		}
		checkFigure(t, "coverage", f, "flown", "plan", "start", "missed")
	})
}

// TestHuman: configuration values as a reader writes them.
func TestHuman(t *testing.T) {
	for in, want := range map[string]string{"DsssRate5_5Mbps": "5.5 Mbit/s", "DsssRate11Mbps": "11 Mbit/s", "OfdmRate6Mbps": "6 Mbit/s",
		"1000.00": "1000", "0.20": "0.2", "200ms": "200 ms", "1.5s": "1.5 s", "true": "on", "false": "off", "aodv": "aodv", "1m30s": "90 s"} {
		if got := Human(in); got != want {
			t.Errorf("Human(%q) = %q, want %q", in, got, want)
		}
	}
	if xs, unit, ok := Quantities([]string{"500us", "2ms"}); !ok || unit != "µs" || xs[0] != 500 || xs[1] != 2000 {
		t.Errorf("Quantities(500us, 2ms) = %v %q %v", xs, unit, ok)
	}
	if _, _, ok := Quantities([]string{"0.1", "50ms"}); ok {
		t.Error("numbers and durations mixed should not share an axis")
	}
}

// TestRunHTMLTwinSection: the report of a --twin run has a section with
// the cost of the network per vehicle and overall and the paths of the
// run over its twin's; a twin directory that is not inside the run is
// refused.
func TestRunHTMLTwinSection(t *testing.T) {
	dir := writeRunDir(t, "2000000000")
	sum := strings.Replace(testSummary, "DURATION", "2000000000", 1)
	sum = strings.Replace(sum, `"backend"`, `"twin":{"dir":"twin","network":"ideal","overall":{"missions":2,"completed":2,"twin_completed":2,
"completion_s":9.5,"twin_completion_s":8.25,"completion_delta_s":1.25,"extra_distance_m":3.5,"extra_energy_j":12,"traj_dev_mean_m":0.75,"traj_dev_max_m":2},
"vehicles":[{"id":0,"name":"a","extra_distance_m":1.5,"extra_energy_j":5,"traj_dev_mean_m":0.5,"traj_dev_max_m":1},{"id":1,"name":"b","extra_distance_m":2,"extra_energy_j":7}]},"backend"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), []byte(sum), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "twin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "twin", "vehicles.csv"), []byte(vehiclesHead+
		"0,0,0,0,1,0,0,0,0,0,0,guided,true,0,0,0,0\n1000000000,1,5,4,1,0,0,0,0,0,0,guided,true,0,0,0,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	page, err := RunHTML(dir)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, want := range []string{`<h2 id="twin">`, `<table id="twin-cost">`, "<td>9.50</td><td>8.25</td><td>1.25</td><td>3.50</td>",
		"2 of 2 missions completed in the run, 2 in the twin", "The run (solid) and its ideal-network twin (dashed)"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report has no %q", want)
		}
	}
	sum = strings.Replace(sum, `"dir":"twin"`, `"dir":"../elsewhere"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), []byte(sum), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RunHTML(dir); err == nil || !strings.Contains(err.Error(), "twin.dir") {
		t.Errorf("a twin directory outside the run: %v", err)
	}
}
