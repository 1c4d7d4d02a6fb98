package runner

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"

	"skyloop/agent"
	"skyloop/components"
	"skyloop/engine"
	"skyloop/fields"
	"skyloop/foxglove"
	"skyloop/internal/nodetest"
	"skyloop/scenarios"
	"skyloop/sim"
	"skyloop/tables"
)

// TestParquetTables runs a scenario with outputs {format: parquet} and
// reads trace.parquet, deliveries.parquet and vehicles.parquet back with
// hyparquet from npm (foxglove/testdata/node/parquet.mjs), a reader we did
// not write: each has the columns of its CSV file, in order, and as many
// rows as the CSV of the same run with format csv, whose first and last
// rows it matches (integers and text exactly, numbers to the CSV's
// rounding). Two runs give the same bytes.
func TestParquetTables(t *testing.T) {
	node, dir := nodetest.Readers(t, "hyparquet")
	base := t.TempDir()
	csvRun, pqRun, again := filepath.Join(base, "csv"), filepath.Join(base, "pq"), filepath.Join(base, "pq2")
	text := strings.Replace(mcapYAML, "outputs: {mcap: true}", "outputs: {format: parquet}", 1)
	runYAML(t, strings.Replace(mcapYAML, "outputs: {mcap: true}", "outputs: {format: csv}", 1), engine.Options{Registry: registry, Workers: 1}, csvRun)
	runYAML(t, text, engine.Options{Registry: registry, Workers: 1}, pqRun)
	runYAML(t, text, engine.Options{Registry: registry, Workers: 2, AlwaysParallel: true}, again)
	names := []string{"trace", "deliveries", "vehicles"}
	var files []string
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(pqRun, n+".csv")); err == nil {
			t.Errorf("%s.csv written with format parquet", n)
		}
		f, _ := filepath.Abs(filepath.Join(pqRun, n+".parquet"))
		files = append(files, f)
		a, _ := os.ReadFile(f)
		b, _ := os.ReadFile(filepath.Join(again, n+".parquet"))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s.parquet differs between two runs (%d and %d bytes)", n, len(a), len(b))
		}
	}
	cmd := exec.Command(node, append([]string{"parquet.mjs"}, files...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("parquet.mjs: %v\n%s", err, stderr.String())
	}
	var got map[string]struct {
		Columns  []string       `json:"columns"`
		Rows     int            `json:"rows"`
		MetaRows int            `json:"metaRows"`
		First    map[string]any `json:"first"`
		Last     map[string]any `json:"last"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("parquet.mjs printed %q: %v", out, err)
	}
	for i, n := range names {
		g := got[files[i]]
		f, err := os.Open(filepath.Join(csvRun, n+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(g.Columns, ",") != strings.Join(rows[0], ",") {
			t.Errorf("%s.parquet columns %v, %s.csv %v", n, g.Columns, n, rows[0])
		}
		if g.Rows != len(rows)-1 || g.MetaRows != g.Rows || g.Rows < 100 {
			t.Errorf("%s.parquet has %d rows (footer %d), %s.csv %d", n, g.Rows, g.MetaRows, n, len(rows)-1)
		}
		for _, c := range []struct {
			row map[string]any
			csv []string
		}{{g.First, rows[1]}, {g.Last, rows[len(rows)-1]}} {
			for k, col := range rows[0] {
				want, have := c.csv[k], c.row[col]
				switch v := have.(type) {
				case string:
					if v != want {
						t.Errorf("%s.parquet %s = %q, the CSV %q", n, col, v, want)
					}
				case float64:
					w, err := strconv.ParseFloat(want, 64)
					tol := 1e-9 // integers exactly; decimals to the CSV's rounding
					if dot := strings.IndexByte(want, '.'); dot >= 0 {
						tol = 0.5*math.Pow(10, -float64(len(want)-dot-1)) + 1e-9
					}
					if err != nil || math.Abs(v-w) > tol {
						t.Errorf("%s.parquet %s = %v, the CSV %q", n, col, v, want)
					}
				case nil:
					if want != "" {
						t.Errorf("%s.parquet %s is null, the CSV %q", n, col, want)
					}
				default:
					t.Errorf("%s.parquet %s has an unexpected value %v", n, col, v)
				}
			}
		}
	}
}

// faultParams are the parameters of the test behaviour fault: at time At
// it fails the run (How: fail) or panics (How: panic).
type faultParams struct {
	At  sim.Duration `yaml:"at" json:"at"`
	How string       `yaml:"how" json:"how"`
}

func (p *faultParams) Validate() fields.Errors {
	bad := fields.Errors{}
	if p.How != "fail" && p.How != "panic" {
		bad["how"] = "must be fail or panic"
	}
	return bad
}

type fault struct{ p *faultParams }

func (f *fault) Start(*agent.Context) error { return nil }

func (f *fault) Schedule() (period, offset sim.Duration) { return f.p.At, f.p.At }

func (f *fault) Step(ctx *agent.Context) {
	if f.p.How == "panic" {
		panic("fault: a behaviour broke")
	}
	ctx.Fail(errors.New("fault: a behaviour failed the run"))
}

// faultRegistry is every component and the fault behaviour.
var faultRegistry = sync.OnceValue(func() *engine.Registry {
	g := components.Registry()
	g.AddBehavior(agent.Spec{Name: "fault", Doc: "Fails the run or panics at a given time (tests).", Fixed: true, Vehicle: true,
		Params: func() agent.Params { return &faultParams{At: sim.Second, How: "fail"} },
		New:    func(p agent.Params) agent.Behavior { return &fault{p: p.(*faultParams)} }})
	return g
})

// partialYAML is quickstart with beacons every 10 ms (about 12,000 trace
// rows a simulated second, so that the first 8 s fill more than one
// Parquet row group), a ground station that also runs FAULT, and the given
// outputs.
func partialYAML(t *testing.T, outputs, fault string) string {
	t.Helper()
	base, ok := scenarios.Lookup("quickstart")
	if !ok {
		t.Fatal("no quickstart scenario")
	}
	text := string(base)
	for _, r := range [][2]string{
		{"duration: 60s\n", "duration: 60s\noutputs: " + outputs + "\n"},
		{"      - type: beacon          # shares state with the other drones at 10 Hz\n        period: 100ms", "      - type: beacon\n        period: 10ms"},
		{"      - type: gcs\n", "      - " + fault + "\n      - type: gcs\n"},
	} {
		if !strings.Contains(text, r[0]) {
			t.Fatalf("quickstart changed (no %q); update this test", r[0])
		}
		text = strings.Replace(text, r[0], r[1], 1)
	}
	return text
}

// TestPartialOutputsAreReadable: a run that ends early keeps readable
// run.mcap and *.parquet files, on every way a run can end early: stopped
// (the path of SIGINT, SIGTERM and SIGHUP, through Options.Stop), failed
// by a behaviour (an error from the agent phase), a panic in a phase, and
// a panic after the last tick. @mcap/core reads run.mcap with its stream
// reader and through its index (footer, summary), and hyparquet reads the
// Parquet files; they hold exactly the rows the CSV files of the same run
// with format csv keep, which are the messages run.mcap has.
func TestPartialOutputsAreReadable(t *testing.T) {
	node, dir := nodetest.Readers(t, "hyparquet", "@mcap/core")
	const noFault = "{type: fault, at: 1h}"
	cases := []struct {
		name  string
		fault string
		stop  bool
		ended bool
		want  string
	}{
		{"stopped", noFault, true, false, "interrupted"},
		{"failed", "{type: fault, at: 8s, how: fail}", false, false, "a behaviour failed the run"},
		{"panic in a phase", "{type: fault, at: 8s, how: panic}", false, false, "a behaviour broke"},
		{"panic after the last tick", noFault, false, true, "the end broke"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			run := func(format string) string {
				text := partialYAML(t, "{format: "+format+", mcap: true, plots: false, report: false}", c.fault)
				if c.ended {
					text = strings.Replace(text, "duration: 60s\n", "duration: 8s\n", 1)
				}
				r := buildYAML(t, text, engine.Options{Registry: faultRegistry(), Workers: 1})
				ticks := 0
				if c.stop {
					r.SetOptions(engine.Options{Stop: func() bool { ticks++; return ticks > 8000 }}) // polled every tick: 8 s
				}
				opt := Options{}
				if c.ended {
					opt.Ended = func() { panic("the end broke") }
				}
				dest := filepath.Join(base, format)
				_, err := Execute(r, dest, opt)
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dest+".incomplete") {
					t.Fatalf("format %s: the run ended with %v, want an error saying %q and naming %s.incomplete", format, err, c.want, dest)
				}
				if c.stop && !errors.Is(err, sim.ErrStopped) {
					t.Errorf("a stopped run: %v is not sim.ErrStopped", err)
				}
				return dest + ".incomplete"
			}
			csvDir, pqDir := run("csv"), run("parquet")
			lines := func(name string) int {
				b, err := os.ReadFile(filepath.Join(csvDir, name))
				if err != nil {
					t.Fatal(err)
				}
				return bytes.Count(b, []byte("\n")) - 1 // header
			}
			names := []string{"trace", "deliveries", "vehicles"}
			var files []string
			for _, n := range names {
				files = append(files, filepath.Join(pqDir, n+".parquet"))
			}
			var tabs map[string]struct {
				Rows     int            `json:"rows"`
				MetaRows int            `json:"metaRows"`
				Last     map[string]any `json:"last"`
			}
			if err := nodetest.JSON(node, dir, "parquet.mjs", &tabs, files...); err != nil {
				t.Errorf("hyparquet cannot read the partial files: %v", err)
			}
			for i, n := range names {
				abs, _ := filepath.Abs(files[i])
				g := tabs[abs]
				if want := lines(n + ".csv"); g.Rows != want || g.MetaRows != want {
					t.Errorf("%s.parquet has %d rows (footer %d); %s.csv of the same run kept %d", n, g.Rows, g.MetaRows, n, want)
				}
			}
			abs, _ := filepath.Abs(files[0])
			t.Logf("kept %d trace, %d delivery and %d vehicle rows", lines("trace.csv"), lines("deliveries.csv"), lines("vehicles.csv"))
			if g := tabs[abs]; g.Rows <= tables.GroupRows {
				t.Errorf("trace.parquet has %d rows: the run should have filled more than one row group (%d rows)", g.Rows, tables.GroupRows)
			}
			for _, d := range []string{csvDir, pqDir} {
				var m mcapSummary
				if err := nodetest.JSON(node, dir, "read.mjs", &m, filepath.Join(d, "run.mcap")); err != nil {
					t.Errorf("@mcap/core cannot read the partial run.mcap: %v", err)
					continue
				}
				for topic, want := range map[string]int{foxglove.TopicNetwork: lines("trace.csv"), foxglove.TopicTF: lines("vehicles.csv"), foxglove.TopicEvents: lines("events.csv")} {
					if m.Counts[topic] != want {
						t.Errorf("%s/run.mcap: %d messages on %s; the CSV file of the same run kept %d rows", d, m.Counts[topic], topic, want)
					}
				}
				if !m.Footer || m.IndexedError != "" {
					t.Errorf("%s/run.mcap: footer %v; @mcap/core's indexed reader: %s", d, m.Footer, m.IndexedError)
					continue
				}
				total := 0
				for topic, n := range m.Counts {
					total += n
					if m.Indexed.Counts[topic] != n {
						t.Errorf("%s/run.mcap: %s has %d messages, %d through the index", d, topic, n, m.Indexed.Counts[topic])
					}
				}
				if m.Indexed.Statistics != total {
					t.Errorf("%s/run.mcap: the statistics record counts %d messages, the file has %d", d, m.Indexed.Statistics, total)
				}
			}
		})
	}
}

// TestLongRunsAreDeterministic: a run long enough for several Parquet row
// groups gives the same trace.parquet, deliveries.parquet,
// vehicles.parquet and run.mcap with one worker and with two (the network
// stepping ahead beside the vehicles): row groups end on the rows alone,
// and run.mcap, which interleaves samples, network events and events,
// gets them in the same order.
func TestLongRunsAreDeterministic(t *testing.T) {
	text := strings.Replace(partialYAML(t, "{format: parquet, mcap: true, plots: false, report: false}", "{type: fault, at: 1h}"), "duration: 60s\n", "duration: 12s\n", 1)
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	run := func(dest string, opt engine.Options) {
		opt.Registry = faultRegistry()
		if _, err := Execute(buildYAML(t, text, opt), dest, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	run(a, engine.Options{Workers: 1})
	run(b, engine.Options{Workers: 2, AlwaysParallel: true})
	for _, name := range []string{"trace.parquet", "deliveries.parquet", "vehicles.parquet", "run.mcap"} {
		x, err := os.ReadFile(filepath.Join(a, name))
		if err != nil {
			t.Fatal(err)
		}
		y, _ := os.ReadFile(filepath.Join(b, name))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs of the same seed (%d and %d bytes)", name, len(x), len(y))
		}
	}
	f, err := os.Open(filepath.Join(a, "trace.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if len(pf.RowGroups()) < 2 {
		t.Errorf("trace.parquet has %d row groups (%d rows): the run should fill several", len(pf.RowGroups()), pf.NumRows())
	}
}
