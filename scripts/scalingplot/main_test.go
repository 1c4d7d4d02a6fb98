package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `# date: 2026-01-02T03:04:05Z
# commit: abc1234
# machine: 2 CPUs, Test CPU
model,scenario,vehicles,workers,sim_seconds,warmup_s,runs,wall_median_s,wall_min_s,wall_max_s,x_realtime,ns_per_vehicle_tick,ns_per_delivery,allocs_per_tick,deliveries,heap_bytes_per_vehicle,heap_end_bytes_per_vehicle
pointmass/impair,bench-swarm100,10,1,10,1,3,0.1,0.1,0.1,90,1111.1,500,0.5,9000,2048,4096
pointmass/impair,bench-swarm100,10,2,10,1,3,0.1,0.1,0.1,120,833.3,400,0.6,9000,2048,4096
pointmass/impair,bench-swarm100,1000,1,6,1,3,9,9,9,0.5556,1800,550,20,50000000,2300,220000
multirotor/wifi,bench-full100,10,1,10,1,3,0.2,0.2,0.2,45.26,2200,16000,1,900,1600,18000
`

func TestParseAndMarkdown(t *testing.T) {
	d, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Cells) != 4 || d.Cells[2].Vehicles != 1000 || d.Cells[2].XRealtime != 0.5556 || d.Cells[3].Model != "multirotor/wifi" {
		t.Fatalf("cells: %+v", d.Cells)
	}
	md := Markdown(d, "performance-scaling.csv", "performance-scaling.png")
	for _, want := range []string{
		"date: 2026-01-02T03:04:05Z; commit: abc1234; machine: 2 CPUs, Test CPU.",
		"![x real time and ns per vehicle-tick against the vehicle count](performance-scaling.png)",
		"| model | vehicles | simulated (warm-up) | runs | x real time, 1 worker | x real time, 2 workers | ns/vehicle-tick, 1 worker | ns/vehicle-tick, 2 workers |",
		"| pointmass/impair | 10 | 10 s (1 s) | 3 | 90.0 | 120 | 1111 | 833 | 500 | 0.500 | 2.0 | 4.0 |",
		// No 2-worker cell: a dash.
		"| pointmass/impair | 1000 | 6 s (1 s) | 3 | 0.556 | - | 1800 | - | 550 | 20.0 | 2.2 | 214.8 |",
		"| multirotor/wifi | 10 | 10 s (1 s) | 3 | 45.3 | - | 2200 | - |",
		"[performance-scaling.csv](performance-scaling.csv)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	// Models keep their CSV order, vehicle counts increase.
	if strings.Index(md, "| pointmass/impair | 1000") > strings.Index(md, "| multirotor/wifi | 10") ||
		strings.Index(md, "| pointmass/impair | 10 ") > strings.Index(md, "| pointmass/impair | 1000") {
		t.Errorf("rows out of order:\n%s", md)
	}
}

func TestParseRejects(t *testing.T) {
	for _, c := range []struct{ name, csv, want string }{
		{"no rows", "model,scenario,vehicles,workers,sim_seconds,warmup_s,runs,x_realtime,ns_per_vehicle_tick,ns_per_delivery,allocs_per_tick,deliveries,heap_bytes_per_vehicle,heap_end_bytes_per_vehicle\n", "no measurements"},
		{"missing column", "model,vehicles\nx,1\n", `no column "scenario"`},
		{"bad number", strings.Replace(sample, "0.5556", "fast", 1), "row 4, x_realtime"},
		{"zero speed", strings.Replace(sample, ",0.5556,", ",0,", 1), "row 4: want"},
	} {
		if _, err := Parse(strings.NewReader(c.csv)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestSplice(t *testing.T) {
	md := "# Performance\n\nintro\n\n<!-- scaling:begin -->\nold table\nmore\n<!-- scaling:end -->\n\nafter\n"
	out, err := Splice([]byte(md), "new\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Performance\n\nintro\n\n<!-- scaling:begin -->\nnew\n<!-- scaling:end -->\n\nafter\n"
	if string(out) != want {
		t.Fatalf("got %q, want %q", out, want)
	}
	// Splicing again gives the same text.
	again, _ := Splice(out, "new\n")
	if string(again) != want {
		t.Fatalf("second splice: %q", again)
	}
	empty := "a\n<!-- scaling:begin -->\n<!-- scaling:end -->\n"
	if out, err := Splice([]byte(empty), "x\n"); err != nil || string(out) != "a\n<!-- scaling:begin -->\nx\n<!-- scaling:end -->\n" {
		t.Fatalf("empty block: %q %v", out, err)
	}
	for _, bad := range []string{"no markers\n", "<!-- scaling:end -->\n<!-- scaling:begin -->\n",
		"<!-- scaling:begin -->\n<!-- scaling:end -->\n<!-- scaling:end -->\n"} {
		if _, err := Splice([]byte(bad), "x\n"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestRunWritesPlotAndTable(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "performance-scaling.csv")
	os.WriteFile(csvPath, []byte(sample), 0o644)
	os.WriteFile(filepath.Join(dir, "performance.md"), []byte("intro\n<!-- scaling:begin -->\n<!-- scaling:end -->\nend\n"), 0o644)
	if err := run(csvPath, dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "performance-scaling.png"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil || img.Bounds().Dx() < 1000 {
		t.Fatalf("plot: %v, %v", err, img)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "performance.md"))
	if !strings.HasPrefix(string(md), "intro\n<!-- scaling:begin -->\nMeasured by") || !strings.HasSuffix(string(md), "<!-- scaling:end -->\nend\n") ||
		!strings.Contains(string(md), "| multirotor/wifi | 10 |") {
		t.Fatalf("performance.md:\n%s", md)
	}
	// Without the markers, performance.md is left alone.
	os.WriteFile(filepath.Join(dir, "performance.md"), []byte("hand written\n"), 0o644)
	if err := run(csvPath, dir); err == nil || !strings.Contains(err.Error(), "scaling:begin") {
		t.Fatalf("no markers: %v", err)
	}
	if md, _ := os.ReadFile(filepath.Join(dir, "performance.md")); string(md) != "hand written\n" {
		t.Fatalf("performance.md changed: %q", md)
	}
}

func TestLogTicksLabelANarrowRange(t *testing.T) {
	var labels []string
	for _, tk := range (logTicks{}).Ticks(80, 2200) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "100 200 500 1000 2000" {
		t.Fatalf("labels %q", got)
	}
	if len((logTicks{}).Ticks(0, 10)) != 0 {
		t.Fatal("ticks for a range reaching 0")
	}
}
