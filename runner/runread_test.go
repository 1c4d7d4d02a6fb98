package runner

import (
	"math"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/report"
	"skyloop/view"
)

// csvAndParquetRuns runs the same scenario and seed twice, with outputs
// {format: csv} and {format: parquet}, and returns the two directories.
func csvAndParquetRuns(t *testing.T) (csvRun, pqRun string) {
	t.Helper()
	base := t.TempDir()
	csvRun, pqRun = filepath.Join(base, "csv"), filepath.Join(base, "pq")
	opt := engine.Options{Registry: registry, Workers: 1}
	runYAML(t, strings.Replace(mcapYAML, "outputs: {mcap: true}", "outputs: {format: csv}", 1), opt, csvRun)
	runYAML(t, strings.Replace(mcapYAML, "outputs: {mcap: true}", "outputs: {format: parquet}", 1), opt, pqRun)
	return csvRun, pqRun
}

// TestViewReplaysAParquetRun: skyloop view replays a run written as
// Parquet, and what it loads is what it loads from the CSV run of the
// same scenario and seed: times, ids, modes, network events and events
// exactly, positions, attitudes and speeds to the CSV's rounding (the
// Parquet tables keep full precision). Before package runread a Parquet
// run was refused ("has no vehicles.csv").
func TestViewReplaysAParquetRun(t *testing.T) {
	csvRun, pqRun := csvAndParquetRuns(t)
	a, err := view.LoadReplay(csvRun)
	if err != nil {
		t.Fatal(err)
	}
	b, err := view.LoadReplay(pqRun)
	if err != nil {
		t.Fatalf("the Parquet run: %v", err)
	}
	if len(a.Samples.T) < 100 || len(a.Net.T) < 100 {
		t.Fatalf("the CSV run has %d samples and %d network events", len(a.Samples.T), len(a.Net.T))
	}
	same := func(what string, x, y any) {
		if !reflect.DeepEqual(x, y) {
			t.Errorf("%s differs between the CSV and the Parquet run", what)
		}
	}
	same("sample times", a.Samples.T, b.Samples.T)
	same("sample ids", a.Samples.ID, b.Samples.ID)
	same("modes", a.Samples.Mode, b.Samples.Mode)
	same("armed", a.Samples.Armed, b.Samples.Armed)
	same("network events", a.Net, b.Net)
	same("events", a.Events, b.Events)
	same("missing files", a.Missing, b.Missing)
	same("names", a.Names, b.Names)
	for _, c := range []struct {
		name string
		x, y []float64
		tol  float64
	}{
		{"x", a.Samples.X, b.Samples.X, 0.5e-4}, {"y", a.Samples.Y, b.Samples.Y, 0.5e-4}, {"z", a.Samples.Z, b.Samples.Z, 0.5e-4},
		{"roll", a.Samples.Roll, b.Samples.Roll, 0.5e-5}, {"yaw", a.Samples.Yaw, b.Samples.Yaw, 0.5e-5},
		{"speed", a.Samples.Speed, b.Samples.Speed, 1e-4}, {"energy", a.Samples.Energy, b.Samples.Energy, 0.5e-3},
		{"battery", a.Samples.BatteryV, b.Samples.BatteryV, 0.5e-3},
	} {
		if len(c.x) != len(c.y) {
			t.Fatalf("%s: %d and %d values", c.name, len(c.x), len(c.y))
		}
		for i := range c.x {
			if math.Abs(c.x[i]-c.y[i]) > c.tol+1e-9 {
				t.Fatalf("%s[%d]: %v from the CSV, %v from Parquet", c.name, i, c.x[i], c.y[i])
			}
		}
	}
}

// TestReportHTMLOfAParquetRun: skyloop report html draws every figure of
// a Parquet run, as of the CSV run of the same scenario and seed: the
// same figures and notes, and the figures drawn from integers and text
// only (latency CDF, PDR over time, age of information) byte for byte.
// Before package runread the Parquet run's page had no figures, only
// notes ("no vehicles.csv").
func TestReportHTMLOfAParquetRun(t *testing.T) {
	csvRun, pqRun := csvAndParquetRuns(t)
	a, err := report.RunHTML(csvRun)
	if err != nil {
		t.Fatal(err)
	}
	b, err := report.RunHTML(pqRun)
	if err != nil {
		t.Fatalf("the Parquet run: %v", err)
	}
	fig := regexp.MustCompile(`<figure><figcaption>([^<]*)</figcaption><img alt="[^"]*" src="([^"]*)">`)
	fa, fb := fig.FindAllStringSubmatch(string(a), -1), fig.FindAllStringSubmatch(string(b), -1)
	if len(fa) != 5 || len(fb) != len(fa) {
		t.Fatalf("%d figures from the CSV run, %d from the Parquet run, want 5", len(fa), len(fb))
	}
	for i := range fa {
		if fa[i][1] != fb[i][1] {
			t.Errorf("figure %d: %q and %q", i, fa[i][1], fb[i][1])
		}
		exact := !strings.HasPrefix(fa[i][1], "Trajectories") && !strings.HasPrefix(fa[i][1], "Altitude")
		if exact && fa[i][2] != fb[i][2] {
			t.Errorf("%s differs between the CSV and the Parquet run", fa[i][1])
		}
	}
	strip := func(p []byte) string { return fig.ReplaceAllString(string(p), "") }
	if strip(a) != strip(b) {
		t.Error("the pages differ outside the figures")
	}
}
