package runread

import (
	"fmt"
	"strconv"

	"skyloop/internal/untrusted"
	"skyloop/tables"
)

// parquetRows reads a Parquet table of the schema package tables writes
// for t, giving each row as the CSV file's fields. The skyloop-parquet
// program reads the file (package tables: skyloop does not link the
// Parquet library); the rows it gives back are checked and counted here.
func parquetRows(file *untrusted.File, path string, t Table, lim Limits, f func(*Row) error) error {
	switch t {
	case Vehicles:
		return readParquet(file, path, t, lim, vehicleFields, f)
	case Trace:
		return readParquet(file, path, t, lim, traceFields, f)
	case Deliveries:
		return readParquet(file, path, t, lim, deliveryFields, f)
	}
	return fmt.Errorf("%s: skyloop writes no %s table as Parquet", path, t)
}

// columns are the columns of each table, as in its CSV file.
var columns = map[Table][]string{
	Vehicles:   {"t_ns", "id", "x", "y", "z", "vx", "vy", "vz", "roll", "pitch", "yaw", "mode", "armed", "energy_j", "battery_v", "current_a", "pressure_pa"},
	Trace:      {"event", "t_ns", "src", "dst", "seq", "t_gen_ns", "bytes", "kind", "reason"},
	Deliveries: {"t_rx_ns", "t_tick_ns", "src", "dst", "seq", "t_gen_ns", "t_send_ns", "bytes", "kind", "latency_ns", "rx_dbm"},
}

// readParquet reads the rows of a Parquet file of row type T, formatting
// each with fields into CSV fields.
func readParquet[T tables.Row](file *untrusted.File, path string, t Table, lim Limits, fields func(*T, []string) []string, f func(*Row) error) error {
	row := &Row{File: path, Col: map[string]int{}, parquet: true}
	for i, c := range columns[t] {
		row.Col[c] = i
	}
	var vals []string
	n := 0
	osf, size := file.Bounded()
	return tables.Read(osf, size, path, lim.MaxRows, func(r *T) error {
		n++
		vals = fields(r, vals[:0])
		row.Values, row.N = vals, n
		return f(row)
	})
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// vehicleFields are vehicles.csv's fields of r.
func vehicleFields(r *tables.VehicleRow, out []string) []string {
	return append(out, itoa(r.TNs), itoa(r.ID), ftoa(r.X), ftoa(r.Y), ftoa(r.Z), ftoa(r.VX), ftoa(r.VY), ftoa(r.VZ),
		ftoa(r.Roll), ftoa(r.Pitch), ftoa(r.Yaw), r.Mode, itoa(r.Armed), ftoa(r.EnergyJ), ftoa(r.BatteryV), ftoa(r.CurrentA), ftoa(r.PressurePa))
}

// traceFields are trace.csv's fields of r.
func traceFields(r *tables.TraceRow, out []string) []string {
	return append(out, r.Event, itoa(r.TNs), itoa(r.Src), itoa(r.Dst), itoa(r.Seq), itoa(r.TGenNs), itoa(r.Bytes), r.Kind, r.Reason)
}

// deliveryFields are deliveries.csv's fields of r.
func deliveryFields(r *tables.DeliveryRow, out []string) []string {
	dbm := ""
	if r.RxDbm != nil {
		dbm = ftoa(*r.RxDbm)
	}
	return append(out, itoa(r.TRxNs), itoa(r.TTickNs), itoa(r.Src), itoa(r.Dst), itoa(r.Seq), itoa(r.TGenNs), itoa(r.TSendNs),
		itoa(r.Bytes), r.Kind, itoa(r.LatencyNs), dbm)
}
