// Package tables writes a run's per-packet and per-sample tables as Apache
// Parquet files (github.com/parquet-go/parquet-go) instead of CSV, for runs
// too large for text: trace.parquet, deliveries.parquet and
// vehicles.parquet, with the columns of trace.csv, deliveries.csv and
// vehicles.csv in the same order (scenario: outputs: {format: parquet}).
// Numbers keep their full precision (the CSV files round some to a few
// decimals); a power the backend does not model is null.
package tables

import (
	"fmt"
	"io"
	"math"

	"github.com/parquet-go/parquet-go"

	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

// TraceRow is a row of trace.parquet (trace.csv's columns).
type TraceRow struct {
	Event  string `parquet:"event,dict"`
	TNs    int64  `parquet:"t_ns"`
	Src    int64  `parquet:"src"`
	Dst    int64  `parquet:"dst"`
	Seq    int64  `parquet:"seq"`
	TGenNs int64  `parquet:"t_gen_ns"`
	Bytes  int64  `parquet:"bytes"`
	Kind   string `parquet:"kind,dict"`
	Reason string `parquet:"reason,dict"`
}

// DeliveryRow is a row of deliveries.parquet (deliveries.csv's columns).
type DeliveryRow struct {
	TRxNs     int64    `parquet:"t_rx_ns"`
	TTickNs   int64    `parquet:"t_tick_ns"`
	Src       int64    `parquet:"src"`
	Dst       int64    `parquet:"dst"`
	Seq       int64    `parquet:"seq"`
	TGenNs    int64    `parquet:"t_gen_ns"`
	TSendNs   int64    `parquet:"t_send_ns"`
	Bytes     int64    `parquet:"bytes"`
	Kind      string   `parquet:"kind,dict"`
	LatencyNs int64    `parquet:"latency_ns"`
	RxDbm     *float64 `parquet:"rx_dbm,optional"`
}

// VehicleRow is a row of vehicles.parquet (vehicles.csv's columns).
type VehicleRow struct {
	TNs        int64   `parquet:"t_ns"`
	ID         int64   `parquet:"id"`
	X          float64 `parquet:"x"`
	Y          float64 `parquet:"y"`
	Z          float64 `parquet:"z"`
	VX         float64 `parquet:"vx"`
	VY         float64 `parquet:"vy"`
	VZ         float64 `parquet:"vz"`
	Roll       float64 `parquet:"roll"`
	Pitch      float64 `parquet:"pitch"`
	Yaw        float64 `parquet:"yaw"`
	Mode       string  `parquet:"mode,dict"`
	Armed      int64   `parquet:"armed"`
	EnergyJ    float64 `parquet:"energy_j"`
	BatteryV   float64 `parquet:"battery_v"`
	CurrentA   float64 `parquet:"current_a"`
	PressurePa float64 `parquet:"pressure_pa"`
}

// batch is how many rows a table buffers before handing them to the
// Parquet writer.
const batch = 4096

// Row-group bounds: a table ends its row group (and the group goes to the
// file) once it holds GroupRows rows or about GroupBytes bytes of values
// (Row.size), whichever comes first. So a run's memory for its tables
// stays bounded however long it runs, the rows written so far are in the
// file as the run goes, and a stopped run loses nothing: Close ends the
// last group and writes the footer. The boundaries depend only on the
// rows, never on timing, so the same run gives the same bytes.
const (
	GroupRows  = 1 << 16
	GroupBytes = 8 << 20
)

// Row is a row type of the tables; size is roughly how many bytes its
// values take (fixed-width columns plus the text), for GroupBytes.
type Row interface {
	TraceRow | DeliveryRow | VehicleRow
	size() int
}

func (r TraceRow) size() int    { return 6*8 + len(r.Event) + len(r.Kind) + len(r.Reason) }
func (r DeliveryRow) size() int { return 10*8 + len(r.Kind) }
func (r VehicleRow) size() int  { return 16*8 + len(r.Mode) }

// Table writes rows of type T to one Parquet file, one row group after
// another (GroupRows, GroupBytes). The first error stops writing and is
// returned by Close; rows added after Close are ignored.
type Table[T Row] struct {
	w      *parquet.GenericWriter[T]
	rows   []T
	err    error
	name   string
	closed bool
	// the row group being filled: rows and bytes (Row.size)
	groupRows, groupBytes int
}

// NewTable starts a Parquet file named name (for errors) on out.
func NewTable[T Row](out io.Writer, name string) *Table[T] {
	return &Table[T]{w: parquet.NewGenericWriter[T](out, parquet.Compression(&parquet.Snappy)), rows: make([]T, 0, batch), name: name}
}

// Add appends a row.
func (t *Table[T]) Add(r T) {
	if t == nil || t.err != nil || t.closed {
		return
	}
	t.rows = append(t.rows, r)
	t.groupRows++
	t.groupBytes += r.size()
	switch {
	case t.groupRows >= GroupRows || t.groupBytes >= GroupBytes:
		t.endGroup()
	case len(t.rows) == batch:
		t.flush()
	}
}

// flush hands the buffered rows to the Parquet writer.
func (t *Table[T]) flush() {
	if len(t.rows) == 0 {
		return
	}
	if _, err := t.w.Write(t.rows); err != nil && t.err == nil {
		t.err = fmt.Errorf("writing %s: %w", t.name, err)
	}
	clear(t.rows)
	t.rows = t.rows[:0]
}

// endGroup writes the row group being filled to the file.
func (t *Table[T]) endGroup() {
	t.flush()
	if t.groupRows > 0 && t.err == nil {
		if err := t.w.Flush(); err != nil {
			t.err = fmt.Errorf("writing %s: %w", t.name, err)
		}
	}
	t.groupRows, t.groupBytes = 0, 0
}

// Close writes the remaining rows and the file's footer, making the file
// complete and readable whatever the run's end; it can be called again
// (it returns the same error).
func (t *Table[T]) Close() error {
	if t == nil || t.closed {
		if t == nil {
			return nil
		}
		return t.err
	}
	t.closed = true
	t.flush()
	if err := t.w.Close(); err != nil && t.err == nil {
		t.err = fmt.Errorf("closing %s: %w", t.name, err)
	}
	return t.err
}

// Trace returns e as a trace row.
func Trace(e *netsim.TraceEvent) TraceRow {
	p := e.P
	r := TraceRow{Event: e.Type.String(), TNs: int64(e.T), Src: int64(p.Src), Dst: int64(e.Node), Seq: int64(p.Seq),
		TGenNs: int64(p.TGen), Bytes: int64(p.Size), Kind: p.Kind.String()}
	if e.Type == netsim.EvDrop {
		r.Reason = e.Reason.String()
	}
	return r
}

// Delivery returns d, consumed at tick, as a deliveries row.
func Delivery(d *netsim.Delivery, tick sim.Time) DeliveryRow {
	p := d.P
	r := DeliveryRow{TRxNs: int64(d.At), TTickNs: int64(tick), Src: int64(p.Src), Dst: int64(d.Dst), Seq: int64(p.Seq),
		TGenNs: int64(p.TGen), TSendNs: int64(p.TSend), Bytes: int64(p.Size), Kind: p.Kind.String(), LatencyNs: int64(d.At - p.TSend)}
	if !math.IsNaN(d.RxPower) && !math.IsInf(d.RxPower, 0) {
		v := d.RxPower
		r.RxDbm = &v
	}
	return r
}

// Vehicle returns vehicle id's sample at t as a vehicles row.
func Vehicle(t sim.Time, id int, tel *vehicle.Telemetry) VehicleRow {
	armed := int64(0)
	if tel.Armed {
		armed = 1
	}
	return VehicleRow{TNs: int64(t), ID: int64(id), X: tel.Pos.X, Y: tel.Pos.Y, Z: tel.Pos.Z,
		VX: tel.Vel.X, VY: tel.Vel.Y, VZ: tel.Vel.Z, Roll: tel.Roll, Pitch: tel.Pitch, Yaw: tel.Yaw,
		Mode: tel.Mode.String(), Armed: armed, EnergyJ: tel.Energy, BatteryV: tel.BatteryV, CurrentA: tel.BatteryA,
		PressurePa: tel.PressurePa}
}
