package runner

import (
	"path/filepath"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/netsim"
	"skyloop/record"
	"skyloop/runread"
	"skyloop/scenario"
	"skyloop/vehicle"
)

// TestEveryFormatWritesAndReadsBack: every value of outputs.format
// (scenario.Formats) has a sink here (tableFormats) and a reader in
// package runread, which skyloop view, report html and sweeps read runs
// through: a run in that format writes trace, deliveries and vehicles in
// it, and runread finds them and reads their rows back. A format added to
// the scenario without its sink or its reader fails here.
func TestEveryFormatWritesAndReadsBack(t *testing.T) {
	text := strings.Replace(mcapYAML, "duration: 4s", "duration: 1s", 1)
	for _, f := range scenario.Formats {
		t.Run(string(f), func(t *testing.T) {
			if _, ok := tableFormats[f]; !ok {
				t.Fatalf("outputs.format %s has no sink (runner.tableFormats)", f)
			}
			dir := filepath.Join(t.TempDir(), "run")
			runYAML(t, strings.Replace(text, "outputs: {mcap: true}", "outputs: {format: "+string(f)+"}", 1), engine.Options{Registry: registry, Workers: 1}, dir)
			for _, tb := range []runread.Table{runread.Trace, runread.Deliveries, runread.Vehicles} {
				if got, want := runread.Find(dir, tb), string(tb)+"."+string(f); got != want {
					t.Errorf("runread finds %q for the %s table, want %q", got, tb, want)
				}
				rows := 0
				if err := runread.Rows(dir, tb, runread.Limits{}, func(*runread.Row) error { rows++; return nil }); err != nil || rows == 0 {
					t.Errorf("%s: %d rows read back, %v", tb, rows, err)
				}
			}
		})
	}
}

// TestFanOutAllocatesNothing: handing a record to the run's sinks (the CSV
// tables and events.csv, in one loop per kind of record) allocates
// nothing per record.
func TestFanOutAllocatesNothing(t *testing.T) {
	dir, err := record.CreateIn(record.OS, filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Discard()
	out := &outputs{}
	for _, tb := range []runread.Table{runread.Trace, runread.Deliveries, runread.Vehicles} {
		s, err := openCSVTable(dir, tb)
		if err != nil {
			t.Fatal(err)
		}
		out.add(s)
	}
	ev, err := newEventsCSV(dir)
	if err != nil {
		t.Fatal(err)
	}
	out.add(ev)
	if !out.RecordsDrops() || !out.wantsVehicles() || out.Interleaved() {
		t.Errorf("drops %v, vehicles %v, interleaved %v: want true, true, false", out.RecordsDrops(), out.wantsVehicles(), out.Interleaved())
	}
	p := &netsim.Packet{ID: 7, Src: 1, Dst: 2, Seq: 3, Size: 40, TSend: 5}
	tr := &netsim.TraceEvent{Type: netsim.EvTx, T: 5, P: p, Node: 1, RxPower: netsim.NoPower}
	d := &netsim.Delivery{P: p, Dst: 2, At: 9, RxPower: -60}
	tel := &vehicle.Telemetry{Armed: true}
	n := testing.AllocsPerRun(1000, func() {
		out.Trace(tr)
		out.Delivery(d, 10)
		out.Vehicle(10, 0, tel)
		out.Event(10, 1, "agent", "mission_done", "")
	})
	if n != 0 {
		t.Errorf("%v allocations per record of each kind, want 0", n)
	}
}
