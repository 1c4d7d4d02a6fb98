package runread

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/geom"
	"skyloop/internal/hostile"
	"skyloop/internal/untrusted"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/tables"
	"skyloop/vehicle"
)

// writeParquet writes rows as a Parquet table named name in dir, as a run
// does.
func writeParquet[T tables.Row](t *testing.T, dir, name string, rows ...T) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := tables.NewWriter[T](f, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		tab.Add(r)
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
}

// all reads every row of t in dir as text.
func all(t *testing.T, dir string, tab Table) ([][]string, []string, error) {
	t.Helper()
	var rows [][]string
	var where []string
	err := Rows(dir, tab, Limits{}, func(r *Row) error {
		rows = append(rows, append([]string(nil), r.Values...))
		where = append(where, r.Where())
		return nil
	})
	return rows, where, err
}

// TestParquetRowsAreTheCSVRows: a Parquet table reads back as the fields
// of the CSV file a run in format csv writes, column for column (a power
// the backend does not model is "" in both), and rows are named by
// number.
func TestParquetRowsAreTheCSVRows(t *testing.T) {
	dir := t.TempDir()
	p := &netsim.Packet{Src: 1, Seq: 7, TGen: 1000, TSend: 1500, Size: 60, Kind: netsim.KindState}
	tel := &vehicle.Telemetry{Pos: geom.V(1.5, -2, 10), Vel: geom.V(0.25, 0, 0), Yaw: 0.5, Armed: true, Energy: 12.5, BatteryV: 12.6, PressurePa: 101325}
	writeParquet(t, dir, "vehicles.parquet", tables.Vehicle(sim.Time(2*sim.Second), 0, tel))
	writeParquet(t, dir, "trace.parquet",
		tables.Trace(&netsim.TraceEvent{Type: netsim.EvTx, T: 1500, Node: -1, P: p}),
		tables.Trace(&netsim.TraceEvent{Type: netsim.EvDrop, T: 2500, Node: 2, P: p, Reason: netsim.DropCollision}))
	writeParquet(t, dir, "deliveries.parquet",
		tables.Delivery(&netsim.Delivery{At: 3000, Dst: 2, P: p, RxPower: -61.25}, 4000),
		tables.Delivery(&netsim.Delivery{At: 3000, Dst: 3, P: p, RxPower: nan()}, 4000))
	rows, where, err := all(t, dir, Vehicles)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows[0], ","); got != "2000000000,0,1.5,-2,10,0.25,0,0,0,0,0.5,"+tel.Mode.String()+",1,12.5,12.6,0,101325" {
		t.Errorf("vehicles row %s", got)
	}
	if where[0] != filepath.Join(dir, "vehicles.parquet")+" row 1" {
		t.Errorf("the row is named %q", where[0])
	}
	rows, _, err = all(t, dir, Trace)
	if err != nil || len(rows) != 2 || strings.Join(rows[0], ",") != "tx,1500,1,-1,7,1000,60,state," ||
		strings.Join(rows[1], ",") != "drop,2500,1,2,7,1000,60,state,"+netsim.DropCollision.String() {
		t.Errorf("trace rows %q, %v", rows, err)
	}
	rows, _, err = all(t, dir, Deliveries)
	if err != nil || len(rows) != 2 || strings.Join(rows[0], ",") != "3000,4000,1,2,7,1000,1500,60,state,1500,-61.25" || rows[1][10] != "" {
		t.Errorf("deliveries rows %q, %v", rows, err)
	}
	if _, _, err := all(t, dir, Events); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "events.csv or events.parquet") {
		t.Errorf("no events table: %v", err)
	}
	if Find(dir, Trace) != "trace.parquet" || Find(dir, Events) != "" {
		t.Errorf("Find: %q, %q", Find(dir, Trace), Find(dir, Events))
	}
}

// TestCSVRowsNameTheirLine: CSV rows are named by the line they start on
// (a quoted field may hold a line break), and Stop ends the reading.
func TestCSVRowsNameTheirLine(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "events.csv"), []byte("t_ns,node,source,event,detail\n1,0,a,b,\"x\ny\"\n2,0,a,c,\n3,0,a,d,\n"), 0o644)
	var where []string
	err := Rows(dir, Events, Limits{}, func(r *Row) error {
		where = append(where, r.Where())
		if v, _ := r.Get("event"); v == "c" {
			return Stop
		}
		return nil
	})
	if err != nil || len(where) != 2 || !strings.HasSuffix(where[1], "events.csv line 4") {
		t.Errorf("rows %q, %v", where, err)
	}
}

// TestHostileParquet: a Parquet table that skyloop did not write — not
// Parquet at all, cut short, another schema, more rows than the cap, a
// link out of the directory — is an error naming the file, at a bounded
// cost, and never a panic.
func TestHostileParquet(t *testing.T) {
	good := t.TempDir()
	var many []tables.TraceRow
	for i := range 1000 {
		many = append(many, tables.TraceRow{Event: "tx", TNs: int64(i), Kind: "state"})
	}
	writeParquet(t, good, "trace.parquet", many...)
	valid, _ := os.ReadFile(filepath.Join(good, "trace.parquet"))
	other := t.TempDir()
	writeParquet(t, other, "trace.parquet", tables.VehicleRow{})
	wrongSchema, _ := os.ReadFile(filepath.Join(other, "trace.parquet"))
	footerTooBig := append([]byte(nil), valid...)
	copy(footerTooBig[len(footerTooBig)-8:], []byte{0xff, 0xff, 0xff, 0x7f})
	for _, c := range []struct {
		name  string
		data  []byte
		lim   Limits
		words string
		is    error
	}{
		{"not parquet", []byte("event,t_ns\ntx,1\n"), Limits{}, "trace.parquet", nil},
		{"empty", nil, Limits{}, "trace.parquet", nil},
		{"cut short", valid[:len(valid)/2], Limits{}, "trace.parquet", nil},
		{"no footer", valid[:len(valid)-8], Limits{}, "trace.parquet", nil},
		{"footer larger than the file", footerTooBig, Limits{}, "trace.parquet", nil},
		{"another schema", wrongSchema, Limits{}, "the columns are not those", nil},
		{"more rows than the cap", valid, Limits{MaxRows: 999}, "more than 999 rows", untrusted.ErrTooLarge},
		{"garbled pages", garble(valid), Limits{}, "trace.parquet", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "trace.parquet"), c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			var err error
			alloc := hostile.Allocated(func() { err = Rows(dir, Trace, c.lim, func(*Row) error { return nil }) })
			if err == nil || !strings.Contains(err.Error(), c.words) || c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v, want one naming %q", err, c.words)
			}
			t.Logf("%v (%d KiB)", err, alloc>>10)
			if alloc > hostile.MaxAlloc {
				t.Errorf("reading it allocated %d MB", alloc>>20)
			}
		})
	}
	t.Run("link out", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Symlink(filepath.Join(good, "trace.parquet"), filepath.Join(dir, "trace.parquet")); err != nil {
			t.Fatal(err)
		}
		err := Rows(dir, Trace, Limits{}, func(*Row) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "trace.parquet is a symbolic link") {
			t.Errorf("a link out of the run directory: %v", err)
		}
	})
	t.Run("a named pipe", func(t *testing.T) {
		dir := t.TempDir()
		if err := mkfifo(filepath.Join(dir, "trace.parquet")); err != nil {
			t.Skip(err)
		}
		err := Rows(dir, Trace, Limits{}, func(*Row) error { return nil })
		if !errors.Is(err, untrusted.ErrNotRegular) {
			t.Errorf("a named pipe: %v", err)
		}
	})
}

// garble flips bytes in the middle of the file (the pages), keeping the
// footer.
func garble(b []byte) []byte {
	g := append([]byte(nil), b...)
	for i := 8; i < len(g)/2; i += 7 {
		g[i] ^= 0x5a
	}
	return g
}
