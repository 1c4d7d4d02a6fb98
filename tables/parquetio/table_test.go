package parquetio

import (
	"bytes"
	"testing"

	"github.com/parquet-go/parquet-go"

	"skyloop/tables"
)

// traceRow is the i-th row of a made-up trace.
func traceRow(i int) tables.TraceRow {
	r := tables.TraceRow{Event: "rx", TNs: int64(i) * 1000, Src: int64(i % 7), Dst: int64(i % 5), Seq: int64(i), TGenNs: int64(i) * 990, Bytes: 60, Kind: "beacon"}
	if i%11 == 0 {
		r.Event, r.Reason = "drop", "loss"
	}
	return r
}

// TestRowGroupsReachTheFileAsRowsCome: a table hands every full row group
// to its file while rows keep coming (before Close), so memory stays
// bounded and a stopped run has its rows on disk; row groups are bounded
// in rows (tables.GroupRows) and in bytes (tables.GroupBytes, the wider vehicle rows),
// and Close writes the last group and the footer.
func TestRowGroupsReachTheFileAsRowsCome(t *testing.T) {
	var buf bytes.Buffer
	tab := NewTable[tables.TraceRow](&buf, "trace.parquet")
	n := 3*tables.GroupRows + 5
	written := []int{}
	for i := range n {
		tab.Add(traceRow(i))
		if (i+1)%tables.GroupRows == 0 {
			written = append(written, buf.Len())
		}
	}
	for k, b := range written {
		if b == 0 || k > 0 && b <= written[k-1] {
			t.Fatalf("after %d row groups' worth of rows the file had only %v bytes: rows are not written as they come", k+1, written)
		}
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if f.NumRows() != int64(n) {
		t.Errorf("%d rows in the file, want %d", f.NumRows(), n)
	}
	groups := f.RowGroups()
	if len(groups) != 4 {
		t.Errorf("%d row groups, want 4", len(groups))
	}
	for i, g := range groups {
		if g.NumRows() > tables.GroupRows {
			t.Errorf("row group %d has %d rows, more than %d", i, g.NumRows(), tables.GroupRows)
		}
	}
	rows := make([]tables.TraceRow, n)
	r := parquet.NewGenericReader[tables.TraceRow](bytes.NewReader(buf.Bytes()))
	if k, err := r.Read(rows); k != n {
		t.Fatalf("read %d rows back: %v", k, err)
	}
	for _, i := range []int{0, tables.GroupRows - 1, tables.GroupRows, n - 1} {
		if rows[i] != traceRow(i) {
			t.Errorf("row %d read back as %+v, want %+v", i, rows[i], traceRow(i))
		}
	}

	// Vehicle rows are wider: their groups end on the byte bound first.
	buf.Reset()
	vt := NewTable[tables.VehicleRow](&buf, "vehicles.parquet")
	for i := range 2 * tables.GroupRows {
		vt.Add(tables.VehicleRow{TNs: int64(i), ID: int64(i % 10), X: float64(i), Mode: "offboard"})
	}
	if err := vt.Close(); err != nil {
		t.Fatal(err)
	}
	f, err = parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	per := tables.GroupBytes/(16*8+len("offboard")) + 1
	for i, g := range f.RowGroups() {
		if g.NumRows() > int64(per) {
			t.Errorf("vehicles row group %d has %d rows, more than the %d of %d bytes", i, g.NumRows(), per, tables.GroupBytes)
		}
	}
	if f.NumRows() != 2*tables.GroupRows || len(f.RowGroups()) < 3 {
		t.Errorf("vehicles: %d rows in %d groups", f.NumRows(), len(f.RowGroups()))
	}
}

// TestCloseIsFinal: Close can be called again, rows added after it are
// ignored, and the file stays the one Close wrote.
func TestCloseIsFinal(t *testing.T) {
	var buf bytes.Buffer
	tab := NewTable[tables.TraceRow](&buf, "trace.parquet")
	for i := range 10 {
		tab.Add(traceRow(i))
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	size := buf.Len()
	tab.Add(traceRow(10))
	if err := tab.Close(); err != nil || buf.Len() != size {
		t.Fatalf("second Close: %v, file %d bytes then %d", err, size, buf.Len())
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || f.NumRows() != 10 {
		t.Fatalf("file after two Closes: %v, %v rows", err, f)
	}
}

// TestSameRowsSameBytes: row-group boundaries depend only on the rows.
func TestSameRowsSameBytes(t *testing.T) {
	write := func() []byte {
		var buf bytes.Buffer
		tab := NewTable[tables.TraceRow](&buf, "trace.parquet")
		for i := range tables.GroupRows + 100 {
			tab.Add(traceRow(i))
		}
		if err := tab.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	a, b := write(), write()
	if !bytes.Equal(a, b) {
		t.Fatalf("the same rows gave two files (%d and %d bytes)", len(a), len(b))
	}
}
