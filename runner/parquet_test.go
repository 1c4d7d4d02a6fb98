package runner

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"skyloop/engine"
)

// TestParquetTables runs a scenario with outputs {format: parquet} and
// reads trace.parquet, deliveries.parquet and vehicles.parquet back with
// hyparquet from npm (foxglove/testdata/node/parquet.mjs), a reader we did
// not write: each has the columns of its CSV file, in order, and as many
// rows as the CSV of the same run with format csv, whose first and last
// rows it matches (integers and text exactly, numbers to the CSV's
// rounding). Two runs give the same bytes.
func TestParquetTables(t *testing.T) {
	dir := filepath.Join("..", "foxglove", "testdata", "node")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "hyparquet"))
	}
	if err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_NODE") != "" {
			t.Fatalf("hyparquet is required (SKYLOOP_REQUIRE_NODE) but missing: %v; run npm ci in %s", err, dir)
		}
		t.Skipf("skipping: Node.js or hyparquet missing (%v); install Node.js and run `npm ci` in %s (CI does)", err, dir)
	}
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
