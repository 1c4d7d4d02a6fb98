package runner

import (
	"fmt"
	"math"

	"skyloop/netsim"
	"skyloop/netsim/tracecsv"
	"skyloop/record"
	"skyloop/runread"
	"skyloop/sim"
	"skyloop/tables"
	"skyloop/vehicle"
)

// openCSVTable opens table t as CSV (outputs.format csv): trace.csv,
// deliveries.csv or vehicles.csv.
func openCSVTable(dir *record.Dir, t runread.Table) (sink, error) {
	switch t {
	case runread.Trace:
		c, err := dir.CSV("trace.csv", tracecsv.TraceHeader)
		return traceCSV{csvStream{c}}, err
	case runread.Deliveries:
		c, err := dir.CSV("deliveries.csv", tracecsv.DeliveriesHeader)
		return deliveriesCSV{csvStream{c}}, err
	case runread.Vehicles:
		c, err := dir.CSV("vehicles.csv", vehiclesHeader)
		return vehiclesCSV{csvStream{c}}, err
	}
	return nil, fmt.Errorf("internal error: no CSV table %s", t)
}

// traceCSV is trace.csv.
type traceCSV struct{ csvStream }

func (c traceCSV) Trace(e *netsim.TraceEvent) { tracecsv.WriteTrace(c.w, e) }

func (traceCSV) recordsDrops() bool { return true }

// deliveriesCSV is deliveries.csv.
type deliveriesCSV struct{ csvStream }

func (c deliveriesCSV) Delivery(d *netsim.Delivery, tick sim.Time) {
	p := d.P
	w := c.w
	w.Int(int64(d.At)).Int(int64(tick)).Int(int64(p.Src)).Int(int64(d.Dst)).Uint(uint64(p.Seq)).
		Int(int64(p.TGen)).Int(int64(p.TSend)).Int(int64(p.Size)).Str(p.Kind.String()).Int(int64(d.At - p.TSend))
	if math.IsNaN(d.RxPower) || math.IsInf(d.RxPower, 0) {
		w.Str("")
	} else {
		w.Float(d.RxPower, 3)
	}
	w.End()
}

// vehiclesCSV is vehicles.csv.
type vehiclesCSV struct{ csvStream }

func (c vehiclesCSV) Vehicle(t sim.Time, id int, tel *vehicle.Telemetry) {
	armed := int64(0)
	if tel.Armed {
		armed = 1
	}
	c.w.Int(int64(t)).Int(int64(id)).
		Float(tel.Pos.X, 4).Float(tel.Pos.Y, 4).Float(tel.Pos.Z, 4).
		Float(tel.Vel.X, 4).Float(tel.Vel.Y, 4).Float(tel.Vel.Z, 4).
		Float(tel.Roll, 5).Float(tel.Pitch, 5).Float(tel.Yaw, 5).Str(tel.Mode.String()).Int(armed).Float(tel.Energy, 3).
		Float(tel.BatteryV, 3).Float(tel.BatteryA, 3).Float(tel.PressurePa, 1).End()
}

// openParquetTable opens table t as Parquet (outputs.format parquet):
// trace.parquet, deliveries.parquet or vehicles.parquet, written by the
// skyloop-parquet program (package tables), which writes the file
// directly.
func openParquetTable(dir *record.Dir, t runread.Table) (sink, error) {
	name := string(t) + ".parquet"
	switch t {
	case runread.Trace, runread.Deliveries, runread.Vehicles:
	default:
		return nil, fmt.Errorf("internal error: no Parquet table %s", t)
	}
	f, err := dir.Unbuffered(name)
	if err != nil {
		return nil, err
	}
	switch t {
	case runread.Trace:
		w, err := tables.NewWriter[tables.TraceRow](f, name)
		return traceParquet{w}, err
	case runread.Deliveries:
		w, err := tables.NewWriter[tables.DeliveryRow](f, name)
		return deliveriesParquet{w}, err
	default:
		w, err := tables.NewWriter[tables.VehicleRow](f, name)
		return vehiclesParquet{w}, err
	}
}

// traceParquet is trace.parquet.
type traceParquet struct {
	*tables.Writer[tables.TraceRow]
}

func (p traceParquet) Trace(e *netsim.TraceEvent) { p.Add(tables.Trace(e)) }

func (traceParquet) recordsDrops() bool { return true }

// deliveriesParquet is deliveries.parquet.
type deliveriesParquet struct {
	*tables.Writer[tables.DeliveryRow]
}

func (p deliveriesParquet) Delivery(d *netsim.Delivery, tick sim.Time) {
	p.Add(tables.Delivery(d, tick))
}

// vehiclesParquet is vehicles.parquet.
type vehiclesParquet struct {
	*tables.Writer[tables.VehicleRow]
}

func (p vehiclesParquet) Vehicle(t sim.Time, id int, tel *vehicle.Telemetry) {
	p.Add(tables.Vehicle(t, id, tel))
}
