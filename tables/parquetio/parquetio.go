// Package parquetio writes and reads the Parquet tables of package tables
// with github.com/parquet-go/parquet-go. Only the skyloop-parquet program
// (cmd/skyloop-parquet) links it: skyloop runs that program as a child
// (package tables), so that a first `go run ./cmd/skyloop` does not compile
// the Parquet library and what it pulls in.
package parquetio

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"skyloop/tables"
)

// batch is how many rows a table buffers before handing them to the
// Parquet writer.
const batch = 4096

// Table writes rows of type T to one Parquet file, one row group after
// another (tables.GroupRows, tables.GroupBytes). The first error stops
// writing and is returned by Close; rows added after Close are ignored.
type Table[T tables.Row] struct {
	w      *parquet.GenericWriter[T]
	rows   []T
	err    error
	name   string
	closed bool
	// the row group being filled: rows and bytes (Row.Size)
	groupRows, groupBytes int
}

// NewTable starts a Parquet file named name (for errors) on out.
func NewTable[T tables.Row](out io.Writer, name string) *Table[T] {
	return &Table[T]{w: parquet.NewGenericWriter[T](out, parquet.Compression(&parquet.Snappy)), rows: make([]T, 0, batch), name: name}
}

// Add appends a row.
func (t *Table[T]) Add(r T) {
	if t == nil || t.err != nil || t.closed {
		return
	}
	t.rows = append(t.rows, r)
	t.groupRows++
	t.groupBytes += r.Size()
	switch {
	case t.groupRows >= tables.GroupRows || t.groupBytes >= tables.GroupBytes:
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

// MaxChunk bounds the uncompressed bytes of one column chunk of a Parquet
// table: skyloop ends a row group at tables.GroupBytes of values (8 MiB),
// so a real chunk is far smaller.
const MaxChunk = 256 << 20

// readBatch is how many rows are decoded at a time.
const readBatch = 256

// ErrTooLarge is wrapped by the errors of a table past a bound (rows,
// bytes of a column chunk).
var ErrTooLarge = tables.ErrTooLarge

// Read calls f with each row of the Parquet file in (size bytes, named
// path in errors), which must have the schema package tables writes for
// T, at most maxRows rows and column chunks of at most MaxChunk bytes. The
// file is untrusted: a malformed one gives an error, never a crash.
func Read[T tables.Row](in io.ReaderAt, size int64, path string, maxRows int, f func(*T) error) (err error) {
	defer func() {
		// A malformed file must not crash a reader: parquet-go may panic
		// on what it does not expect.
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: not a Parquet table skyloop wrote: %v", path, p)
		}
	}()
	pf, err := parquet.OpenFile(in, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	want := parquet.SchemaOf(new(T))
	if !parquet.EqualNodes(want, pf.Schema()) {
		return fmt.Errorf("%s: the columns are not those of the table skyloop writes (%s, want %s)", path, columns(pf.Schema()), columns(want))
	}
	if n := pf.NumRows(); n < 0 || n > int64(maxRows) {
		if n < 0 {
			return fmt.Errorf("%s: %d rows", path, n)
		}
		return fmt.Errorf("%s: more than %d rows (%w)", path, maxRows, ErrTooLarge)
	}
	for i, rg := range pf.Metadata().RowGroups {
		for j, c := range rg.Columns {
			if s := c.MetaData.TotalUncompressedSize; s < 0 || s > MaxChunk {
				return fmt.Errorf("%s: row group %d, column %d: %d bytes, more than the %d a column chunk may hold (%w)", path, i, j, s, MaxChunk, ErrTooLarge)
			}
		}
	}
	buf := make([]T, readBatch)
	n := 0
	for _, rg := range pf.RowGroups() {
		r := parquet.NewGenericRowGroupReader[T](rg)
		for {
			k, rerr := r.Read(buf)
			for i := range k {
				if n >= maxRows {
					r.Close()
					return fmt.Errorf("%s: more than %d rows (%w)", path, maxRows, ErrTooLarge)
				}
				n++
				if err := f(&buf[i]); err != nil {
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
