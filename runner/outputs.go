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

// outputs holds the open CSV streams and the trajectory tracker; a nil
// stream (or a nil *outputs) is switched off, so callers never test. It is
// the run's engine.Recorder.
type outputs struct {
	dir        *record.Dir
	traceCSV   *record.CSV
	deliveries *record.CSV
	vehicles   *record.CSV
	events     *record.CSV
	clockCSV   *record.CSV
	tracks     *report.Tracker
	pcap       *pcap.Writer       // packets.pcap
	fox        *foxglove.Recorder // run.mcap and the live server
	mcap       *foxglove.MCAP     // run.mcap's sink, ended by close even if fox never started
	// Parquet tables (outputs: {format: parquet}) instead of the CSVs.
	traceTab    *tables.Table[tables.TraceRow]
	deliveryTab *tables.Table[tables.DeliveryRow]
	vehicleTab  *tables.Table[tables.VehicleRow]
	foxAll      bool // fox writes every event (run.mcap)
	// traj is every vehicle's position at every sample time after 0
	// (kept when the run is compared with its twin); done when each
	// vehicle's mission_done (or coverage_done) event came.
	traj     *metrics.Track
	done     map[int]sim.Time
	vehicleN int
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
	var err error
	open := func(on bool, name, header string) *record.CSV {
		if !on || err != nil {
			return nil
		}
		var c *record.CSV
		c, err = dir.CSV(name, header)
		return c
	}
	if o.Format == "parquet" {
		if err = out.openTables(o, noFiles); err != nil {
			return out, err
		}
	} else {
		out.traceCSV = open(o.Trace && !noFiles, "trace.csv", tracecsv.TraceHeader)
		out.deliveries = open(o.Deliveries && !noFiles, "deliveries.csv", tracecsv.DeliveriesHeader)
		out.vehicles = open(o.Vehicles && !noFiles, "vehicles.csv", vehiclesHeader)
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
	if o.traceTab != nil {
		o.traceTab.Add(tables.Trace(e))
	}
	if o.traceCSV != nil {
		tracecsv.WriteTrace(o.traceCSV, e)
	}
}

// RecordsDrops implements engine.DropRecorder: drops are written one by
// one to trace.csv and run.mcap (the live server shows those it gets).
func (o *outputs) RecordsDrops() bool {
	return o != nil && (o.traceCSV != nil || o.traceTab != nil || o.foxAll)
}

// Interleaved implements engine.InterleavedRecorder: run.mcap has every
// kind of record in one stream, in the order they come.
func (o *outputs) Interleaved() bool { return o != nil && o.mcap != nil }

// openTables starts the Parquet tables that replace the CSV files.
func (o *outputs) openTables(opt scenario.Outputs, noFiles bool) error {
	if noFiles {
		return nil
	}
	file := func(on bool, name string) (io.Writer, error) {
		if !on {
			return nil, nil
		}
		return o.dir.File(name)
	}
	f, err := file(opt.Trace, "trace.parquet")
	if err != nil {
		return err
	}
	if f != nil {
		o.traceTab = tables.NewTable[tables.TraceRow](f, "trace.parquet")
	}
	if f, err = file(opt.Deliveries, "deliveries.parquet"); err != nil {
		return err
	}
	if f != nil {
		o.deliveryTab = tables.NewTable[tables.DeliveryRow](f, "deliveries.parquet")
	}
	if f, err = file(opt.Vehicles, "vehicles.parquet"); err != nil {
		return err
	}
	if f != nil {
		o.vehicleTab = tables.NewTable[tables.VehicleRow](f, "vehicles.parquet")
	}
	return nil
}

// close completes the files the outputs encode themselves: run.mcap's
// index, summary and footer, and the Parquet tables' last row groups and
// footers (the CSV streams need nothing: Commit and Abort flush them). It
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
	errs = append(errs, o.traceTab.Close(), o.deliveryTab.Close(), o.vehicleTab.Close())
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
	if o == nil {
		return
	}
	if o.deliveryTab != nil {
		o.deliveryTab.Add(tables.Delivery(d, tick))
	}
	if o.deliveries == nil {
		return
	}
	p := d.P
	o.deliveries.Int(int64(d.At)).Int(int64(tick)).Int(int64(p.Src)).Int(int64(d.Dst)).Uint(uint64(p.Seq)).
		Int(int64(p.TGen)).Int(int64(p.TSend)).Int(int64(p.Size)).Str(p.Kind.String()).Int(int64(d.At - p.TSend))
	if math.IsNaN(d.RxPower) || math.IsInf(d.RxPower, 0) {
		o.deliveries.Str("")
	} else {
		o.deliveries.Float(d.RxPower, 3)
	}
	o.deliveries.End()
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
	if o.vehicleTab != nil {
		o.vehicleTab.Add(tables.Vehicle(t, id, tel))
	}
	if o.vehicles == nil {
		return
	}
	armed := int64(0)
	if tel.Armed {
		armed = 1
	}
	o.vehicles.Int(int64(t)).Int(int64(id)).
		Float(tel.Pos.X, 4).Float(tel.Pos.Y, 4).Float(tel.Pos.Z, 4).
		Float(tel.Vel.X, 4).Float(tel.Vel.Y, 4).Float(tel.Vel.Z, 4).
		Float(tel.Roll, 5).Float(tel.Pitch, 5).Float(tel.Yaw, 5).Str(tel.Mode.String()).Int(armed).Float(tel.Energy, 3).
		Float(tel.BatteryV, 3).Float(tel.BatteryA, 3).Float(tel.PressurePa, 1).End()
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
