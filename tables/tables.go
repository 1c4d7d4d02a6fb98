// Package tables holds the rows of a run's per-packet and per-sample tables
// as Apache Parquet files, for runs too large for text (scenario: outputs:
// {format: parquet}): trace.parquet, deliveries.parquet and
// vehicles.parquet, with the columns of trace.csv, deliveries.csv and
// vehicles.csv in the same order. Numbers keep their full precision (the
// CSV files round some to a few decimals); a power the backend does not
// model is null.
//
// The Parquet library (github.com/parquet-go/parquet-go, used by package
// tables/parquetio) is heavy to compile, so skyloop itself does not link
// it: it hands the rows to a separate program, skyloop-parquet
// (cmd/skyloop-parquet), over a pipe in the simple row format of this
// package (wire.go), and reads Parquet tables back through it
// (child.go). skyloop runs it only when a scenario asks for Parquet or a
// run directory holds Parquet tables; `go install ./cmd/...` installs both.
package tables

import (
	"math"

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

// Row-group bounds: a table ends its row group (and the group goes to the
// file) once it holds GroupRows rows or about GroupBytes bytes of values
// (Row.Size), whichever comes first. So a run's memory for its tables
// stays bounded however long it runs, the rows written so far are in the
// file as the run goes, and a stopped run loses nothing: Close ends the
// last group and writes the footer. The boundaries depend only on the
// rows, never on timing, so the same run gives the same bytes.
const (
	GroupRows  = 1 << 16
	GroupBytes = 8 << 20
)

// Row is a row type of the tables.
type Row interface {
	TraceRow | DeliveryRow | VehicleRow
	// Size is roughly how many bytes the row's values take (fixed-width
	// columns plus the text), for GroupBytes.
	Size() int
}

// Size implements Row.
func (r TraceRow) Size() int { return 6*8 + len(r.Event) + len(r.Kind) + len(r.Reason) }

// Size implements Row.
func (r DeliveryRow) Size() int { return 10*8 + len(r.Kind) }

// Size implements Row.
func (r VehicleRow) Size() int { return 16*8 + len(r.Mode) }

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
