package runner

import (
	"errors"
	"fmt"
	"io"
	"math"

	"skyloop/engine"
	"skyloop/foxglove"
	"skyloop/geom"
	"skyloop/metrics"
	"skyloop/netsim"
	"skyloop/netsim/pcap"
	"skyloop/netsim/tracecsv"
	"skyloop/record"
	"skyloop/report"
	"skyloop/scenario"
	"skyloop/sim"
	"skyloop/tables"
	"skyloop/vehicle"
)

// File headers (trace.csv's and deliveries.csv's are in tracecsv).
const (
	vehiclesHeader = "t_ns,id,x,y,z,vx,vy,vz,roll,pitch,yaw,mode,armed,energy_j,battery_v,current_a,pressure_pa"
	eventsHeader   = "t_ns,node,source,event,detail"
	clockHeader    = "t_ns,module,offset_ns"
)

// tableSink is an output format of the run's tables — trace, deliveries
// and vehicles — chosen by outputs.format. It is opened in the run
// directory with the tables the scenario asks for, gets every record of
// those tables (and only those), and is closed at every end of the run,
// finished or not, completing its files (a Parquet footer) so that even
// a failed run's are readable; Close may be called again and returns the
// first error.
type tableSink interface {
	Trace(e *netsim.TraceEvent)
	Delivery(d *netsim.Delivery, tick sim.Time)
	Vehicle(t sim.Time, id int, tel *vehicle.Telemetry)
	Close() error
}

// tableKinds are the tables a run writes.
type tableKinds struct{ trace, deliveries, vehicles bool }

// tableFormats are the values of outputs.format ("" is csv), each with
// how to open its sink. A new format is its writer's package and a row
// here (and a row in package runread's formats, for view, report html
// and sweeps to read it back).
var tableFormats = map[string]func(dir *record.Dir, on tableKinds) (tableSink, error){
	"":        openCSVTables,
	"csv":     openCSVTables,
	"parquet": openParquetTables,
}

// outputs holds the run's open outputs and the trajectory tracker; a nil
// output (or a nil *outputs) is switched off, so callers never test. It
// is the run's engine.Recorder.
type outputs struct {
	dir      *record.Dir
	tables   tableSink  // trace, deliveries, vehicles (outputs.format)
	on       tableKinds // what tables gets
	events   *record.CSV
	clockCSV *record.CSV
	tracks   *report.Tracker
	pcap     *pcap.Writer       // packets.pcap
	fox      *foxglove.Recorder // run.mcap and the live server
	mcap     *foxglove.MCAP     // run.mcap's sink, ended by close even if fox never started
	foxAll   bool               // fox writes every event (run.mcap)
	// traj is every vehicle's position at every sample time after 0
	// (kept when the run is compared with its twin); done when each
	// vehicle's mission_done (or coverage_done) event came.
	traj     *metrics.Track
	done     map[int]sim.Time
	vehicleN int
}

// wantsVehicles reports whether an output takes vehicle samples (the
// engine records none otherwise).
func (o *outputs) wantsVehicles() bool {
	return o.on.vehicles || o.tracks != nil || o.fox != nil || o.traj != nil
}

// keepTrack keeps r's sampled trajectory and mission completions.
func (o *outputs) keepTrack(r *engine.Run) {
	o.vehicleN = r.Vehicles()
	o.traj = &metrics.Track{Sample: r.Scenario().Outputs.SamplePeriod, Positions: make([][]geom.Vec3, o.vehicleN)}
	o.done = map[int]sim.Time{}
}

func openOutputs(dir *record.Dir, o scenario.Outputs, noFiles, realtime bool) (*outputs, error) {
	out := &outputs{dir: dir}
	if dir == nil {
		return out, nil
	}
	openTables, ok := tableFormats[o.Format]
	if !ok {
		return out, fmt.Errorf("outputs.format: no format %q", o.Format)
	}
	if on := (tableKinds{trace: o.Trace, deliveries: o.Deliveries, vehicles: o.Vehicles}); !noFiles && on != (tableKinds{}) {
		var err error
		if out.tables, err = openTables(dir, on); err != nil {
			return out, err
		}
		out.on = on
	}
	var err error
	open := func(on bool, name, header string) *record.CSV {
		if !on || err != nil {
			return nil
		}
		var c *record.CSV
		c, err = dir.CSV(name, header)
		return c
	}
	out.events = open(o.Events, "events.csv", eventsHeader)
	out.clockCSV = open(realtime, "clock.csv", clockHeader)
	if err == nil && o.Pcap && !noFiles {
		var f io.Writer
		if f, err = dir.File("packets.pcap"); err == nil {
			out.pcap, err = pcap.NewWriter(f)
		}
	}
	return out, err
}

// Trace implements engine.Recorder.
func (o *outputs) Trace(e *netsim.TraceEvent) {
	if o != nil && o.pcap != nil && e.Type == netsim.EvTx {
		o.pcap.Write(e.T, e.P)
	}
	if o == nil {
		return
	}
	if o.fox != nil {
		o.fox.Trace(e)
	}
	if o.on.trace {
		o.tables.Trace(e)
	}
}

// RecordsDrops implements engine.DropRecorder: drops are written one by
// one to trace.csv and run.mcap (the live server shows those it gets).
func (o *outputs) RecordsDrops() bool {
	return o != nil && (o.on.trace || o.foxAll)
}

// Interleaved implements engine.InterleavedRecorder: run.mcap has every
// kind of record in one stream, in the order they come.
func (o *outputs) Interleaved() bool { return o != nil && o.mcap != nil }

// close completes the files the outputs encode themselves: run.mcap's
// index, summary and footer, and the table sink's (the Parquet tables'
// last row groups and footers; the CSV streams need nothing: Commit and
// Abort flush them). It
// is called at every end of a run, finished or not, so that the partial
// files of a failed or interrupted run are readable, as its CSV files are.
// It can be called again; it returns the first error of each file.
func (o *outputs) close() error {
	if o == nil {
		return nil
	}
	var errs []error
	if o.fox != nil {
		errs = append(errs, o.fox.Close())
	} else if o.mcap != nil {
		errs = append(errs, o.mcap.End())
	}
	if o.tables != nil {
		errs = append(errs, o.tables.Close())
	}
	return errors.Join(errs...)
}

// abandon closes the outputs of a run that failed (see close). The run's
// state may be broken by the failure (a panic), so a panic while closing
// is returned as an error rather than raised: the rest of the clean-up
// (keeping the partial directory) must still run.
func (o *outputs) abandon() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error (please report with the scenario): %v", p)
		}
	}()
	return o.close()
}

// Delivery implements engine.Recorder.
func (o *outputs) Delivery(d *netsim.Delivery, tick sim.Time) {
	if o != nil && o.on.deliveries {
		o.tables.Delivery(d, tick)
	}
}

// Vehicle implements engine.Recorder.
func (o *outputs) Vehicle(t sim.Time, id int, tel *vehicle.Telemetry) {
	if o == nil {
		return
	}
	if o.tracks != nil {
		o.tracks.Add(id, t.Seconds(), tel.Pos, tel.Target, tel.HasTarget)
	}
	if o.traj != nil && t > 0 {
		o.traj.Positions[id] = append(o.traj.Positions[id], tel.Pos)
	}
	if o.fox != nil {
		o.fox.Vehicle(t, id, tel)
	}
	if o.on.vehicles {
		o.tables.Vehicle(t, id, tel)
	}
}

// Event implements engine.Recorder.
func (o *outputs) Event(t sim.Time, node netsim.NodeID, source, name, detail string) {
	if o == nil {
		return
	}
	if o.fox != nil {
		o.fox.Event(t, node, source, name, detail)
	}
	if o.done != nil && source == "agent" && (name == "mission_done" || name == "coverage_done") && int(node) >= 0 && int(node) < o.vehicleN {
		if _, ok := o.done[int(node)]; !ok {
			o.done[int(node)] = t
		}
	}
	if o.events != nil {
		o.events.Int(int64(t)).Int(int64(node)).Str(source).Str(name).Quoted(detail).End()
	}
}

func (o *outputs) clock(t sim.Time, module string, off int64) {
	if o == nil || o.clockCSV == nil {
		return
	}
	o.clockCSV.Int(int64(t)).Str(module).Int(off).End()
}

// csvTables is outputs.format csv: trace.csv, deliveries.csv and
// vehicles.csv (a nil stream is a table the scenario turned off).
type csvTables struct {
	trace, deliveries, vehicles *record.CSV
}

func openCSVTables(dir *record.Dir, on tableKinds) (tableSink, error) {
	var c csvTables
	var err error
	open := func(on bool, name, header string) *record.CSV {
		if !on || err != nil {
			return nil
		}
		var f *record.CSV
		f, err = dir.CSV(name, header)
		return f
	}
	c.trace = open(on.trace, "trace.csv", tracecsv.TraceHeader)
	c.deliveries = open(on.deliveries, "deliveries.csv", tracecsv.DeliveriesHeader)
	c.vehicles = open(on.vehicles, "vehicles.csv", vehiclesHeader)
	return &c, err
}

func (c *csvTables) Trace(e *netsim.TraceEvent) { tracecsv.WriteTrace(c.trace, e) }

func (c *csvTables) Delivery(d *netsim.Delivery, tick sim.Time) {
	p := d.P
	w := c.deliveries
	w.Int(int64(d.At)).Int(int64(tick)).Int(int64(p.Src)).Int(int64(d.Dst)).Uint(uint64(p.Seq)).
		Int(int64(p.TGen)).Int(int64(p.TSend)).Int(int64(p.Size)).Str(p.Kind.String()).Int(int64(d.At - p.TSend))
	if math.IsNaN(d.RxPower) || math.IsInf(d.RxPower, 0) {
		w.Str("")
	} else {
		w.Float(d.RxPower, 3)
	}
	w.End()
}

func (c *csvTables) Vehicle(t sim.Time, id int, tel *vehicle.Telemetry) {
	armed := int64(0)
	if tel.Armed {
		armed = 1
	}
	c.vehicles.Int(int64(t)).Int(int64(id)).
		Float(tel.Pos.X, 4).Float(tel.Pos.Y, 4).Float(tel.Pos.Z, 4).
		Float(tel.Vel.X, 4).Float(tel.Vel.Y, 4).Float(tel.Vel.Z, 4).
		Float(tel.Roll, 5).Float(tel.Pitch, 5).Float(tel.Yaw, 5).Str(tel.Mode.String()).Int(armed).Float(tel.Energy, 3).
		Float(tel.BatteryV, 3).Float(tel.BatteryA, 3).Float(tel.PressurePa, 1).End()
}

// Close implements tableSink: the run directory flushes the streams.
func (c *csvTables) Close() error { return nil }

// parquetTables is outputs.format parquet: trace.parquet,
// deliveries.parquet and vehicles.parquet (package tables; a nil table is
// one the scenario turned off).
type parquetTables struct {
	trace      *tables.Table[tables.TraceRow]
	deliveries *tables.Table[tables.DeliveryRow]
	vehicles   *tables.Table[tables.VehicleRow]
}

func openParquetTables(dir *record.Dir, on tableKinds) (tableSink, error) {
	var p parquetTables
	file := func(on bool, name string) (io.Writer, error) {
		if !on {
			return nil, nil
		}
		return dir.File(name)
	}
	f, err := file(on.trace, "trace.parquet")
	if err != nil {
		return &p, err
	}
	if f != nil {
		p.trace = tables.NewTable[tables.TraceRow](f, "trace.parquet")
	}
	if f, err = file(on.deliveries, "deliveries.parquet"); err != nil {
		return &p, err
	}
	if f != nil {
		p.deliveries = tables.NewTable[tables.DeliveryRow](f, "deliveries.parquet")
	}
	if f, err = file(on.vehicles, "vehicles.parquet"); err != nil {
		return &p, err
	}
	if f != nil {
		p.vehicles = tables.NewTable[tables.VehicleRow](f, "vehicles.parquet")
	}
	return &p, nil
}

func (p *parquetTables) Trace(e *netsim.TraceEvent) { p.trace.Add(tables.Trace(e)) }

func (p *parquetTables) Delivery(d *netsim.Delivery, tick sim.Time) {
	p.deliveries.Add(tables.Delivery(d, tick))
}

func (p *parquetTables) Vehicle(t sim.Time, id int, tel *vehicle.Telemetry) {
	p.vehicles.Add(tables.Vehicle(t, id, tel))
}

// Close implements tableSink: each table's last row group and footer.
func (p *parquetTables) Close() error {
	return errors.Join(p.trace.Close(), p.deliveries.Close(), p.vehicles.Close())
}
