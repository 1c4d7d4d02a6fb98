package runread

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/parquet-go/parquet-go"

	"skyloop/internal/untrusted"
	"skyloop/tables"
)

// MaxChunk bounds the uncompressed bytes of one column chunk of a Parquet
// table: skyloop ends a row group at tables.GroupBytes of values (8 MiB),
// so a real chunk is far smaller.
const MaxChunk = 256 << 20

// parquetBatch is how many rows are decoded at a time.
const parquetBatch = 256

// parquetRows reads a Parquet table of the schema package tables writes
// for t, giving each row as the CSV file's fields.
func parquetRows(file *untrusted.File, path string, t Table, lim Limits, f func(*Row) error) error {
	switch t {
	case Vehicles:
		return readParquet(file, path, lim, vehicleFields, f)
	case Trace:
		return readParquet(file, path, lim, traceFields, f)
	case Deliveries:
		return readParquet(file, path, lim, deliveryFields, f)
	}
	return fmt.Errorf("%s: skyloop writes no %s table as Parquet", path, t)
}

// readParquet reads the rows of a Parquet file of row type T, formatting
// each with fields into CSV fields.
func readParquet[T any](file *untrusted.File, path string, lim Limits, fields func(*T, []string) []string, f func(*Row) error) (err error) {
	defer func() {
		// A malformed file must not crash a reader: parquet-go may panic
		// on what it does not expect.
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: not a Parquet table skyloop wrote: %v", path, p)
		}
	}()
	pf, err := parquet.OpenFile(file, file.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	want := parquet.SchemaOf(new(T))
	if !parquet.EqualNodes(want, pf.Schema()) {
		return fmt.Errorf("%s: the columns are not those of the table skyloop writes (%s, want %s)", path, columns(pf.Schema()), columns(want))
	}
	if n := pf.NumRows(); n < 0 || n > int64(lim.MaxRows) {
		if n < 0 {
			return fmt.Errorf("%s: %d rows", path, n)
		}
		return tooMany(path, lim)
	}
	for i, rg := range pf.Metadata().RowGroups {
		for j, c := range rg.Columns {
			if s := c.MetaData.TotalUncompressedSize; s < 0 || s > MaxChunk {
				return fmt.Errorf("%s: row group %d, column %d: %d bytes, more than the %d a column chunk may hold (%w)", path, i, j, s, MaxChunk, untrusted.ErrTooLarge)
			}
		}
	}
	row := &Row{File: path, Col: map[string]int{}, parquet: true}
	for i, c := range want.Fields() {
		row.Col[c.Name()] = i
	}
	buf := make([]T, parquetBatch)
	var vals []string
	n := 0
	for _, rg := range pf.RowGroups() {
		r := parquet.NewGenericRowGroupReader[T](rg)
		for {
			k, rerr := r.Read(buf)
			for i := range k {
				if n >= lim.MaxRows {
					r.Close()
					return tooMany(path, lim)
				}
				n++
				vals = fields(&buf[i], vals[:0])
				row.Values, row.N = vals, n
				if err := f(row); err != nil {
					r.Close()
					return err
				}
			}
			if errors.Is(rerr, io.EOF) {
				break
			}
			if rerr != nil {
				r.Close()
				return fmt.Errorf("%s row %d: %w", path, n+1, rerr)
			}
		}
		if err := r.Close(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

// columns describes a schema's top-level columns for an error
// ("t_ns int64, id int64, ...").
func columns(s *parquet.Schema) string {
	out := ""
	for i, f := range s.Fields() {
		if i > 0 {
			out += ", "
		}
		if i == 32 {
			return out + "..."
		}
		out += f.Name()
		if f.Leaf() {
			out += " " + f.Type().String()
		}
	}
	return out
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
