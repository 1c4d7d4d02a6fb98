package tables_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"skyloop/internal/parquettest"
	"skyloop/internal/untrusted"
	"skyloop/tables"
	"skyloop/tables/parquetio"
)

// TestMain builds skyloop-parquet.
func TestMain(m *testing.M) { os.Exit(parquettest.Main(m)) }

// Rows with the values that must cross unchanged: NaN, infinities,
// negative zero, a null and a missing power, empty and long text, and more
// than a row group of them.
func traceRows() []tables.TraceRow {
	var rs []tables.TraceRow
	for i := range tables.GroupRows + 321 {
		r := tables.TraceRow{Event: "rx", TNs: int64(i) * 1000, Src: int64(i % 7), Dst: int64(i % 5), Seq: int64(i), TGenNs: -int64(i), Bytes: 60, Kind: "beacon"}
		if i%11 == 0 {
			r.Event, r.Reason = "drop", "loss"
		}
		if i == 3 {
			r.Kind = strings.Repeat("k", tables.MaxText)
		}
		rs = append(rs, r)
	}
	return rs
}

func deliveryRows() []tables.DeliveryRow {
	var rs []tables.DeliveryRow
	for i, v := range []float64{-71.25, math.NaN(), math.Inf(-1), math.Copysign(0, -1), 1e-300} {
		v := v
		rs = append(rs, tables.DeliveryRow{TRxNs: int64(i), Src: 1, Dst: 2, Seq: int64(i), Kind: "state", LatencyNs: 10, RxDbm: &v})
		rs = append(rs, tables.DeliveryRow{TRxNs: int64(i), Src: 3, Kind: "", LatencyNs: math.MaxInt64})
	}
	return rs
}

func vehicleRows() []tables.VehicleRow {
	var rs []tables.VehicleRow
	for i := range 1000 {
		f := float64(i) / 3
		rs = append(rs, tables.VehicleRow{TNs: int64(i), ID: int64(i % 10), X: f, Y: -f, Z: math.Copysign(0, -1), VX: math.NaN(), VY: math.Inf(1),
			Roll: 1e-9 * f, Mode: "offboard", Armed: int64(i % 2), EnergyJ: f * f, PressurePa: 101325.125})
	}
	return rs
}

// viaChild writes rows through skyloop-parquet into a file and returns
// its bytes and the file.
func viaChild[T tables.Row](t *testing.T, rows []T) ([]byte, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), tables.Name[T]()+".parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := tables.NewWriter[T](f, filepath.Base(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		w.Add(r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b, path
}

// inProcess writes rows with the Parquet writer in this process, as
// skyloop did before the writer moved to skyloop-parquet.
func inProcess[T tables.Row](t *testing.T, rows []T) []byte {
	t.Helper()
	var b bytes.Buffer
	tab := parquetio.NewTable[T](&b, "in process")
	for _, r := range rows {
		tab.Add(r)
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sameFile reports whether two Parquet files are the same but for their
// footers' created_by, which parquet-go takes from the program's build
// information: "github.com/parquet-go/parquet-go version 0.32.1(build )"
// in skyloop and skyloop-parquet alike (go build), the bare module path in
// a test binary, which has no version of its dependencies. Everything
// before the footer must be equal byte for byte, and the footers' metadata
// but created_by.
func sameFile(t *testing.T, a, b []byte) bool {
	t.Helper()
	meta := func(f []byte) ([]byte, format.FileMetaData) {
		pf, err := parquet.OpenFile(bytes.NewReader(f), int64(len(f)))
		if err != nil {
			t.Fatal(err)
		}
		m := *pf.Metadata()
		m.CreatedBy = ""
		n := int(binary.LittleEndian.Uint32(f[len(f)-8:]))
		return f[:len(f)-8-n], m
	}
	da, ma := meta(a)
	db, mb := meta(b)
	return bytes.Equal(da, db) && reflect.DeepEqual(ma, mb)
}

// readBack reads the file at path through skyloop-parquet.
func readBack[T tables.Row](t *testing.T, path string, maxRows int) ([]T, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	var got []T
	err = tables.Read(f, st.Size(), path, maxRows, func(r *T) error {
		got = append(got, *r)
		return nil
	})
	return got, err
}

// same reports whether two rows are equal bit for bit (NaN included).
func same[T tables.Row](a, b T) bool {
	var x, y []byte
	return bytes.Equal(tables.AppendRow(x, &a), tables.AppendRow(y, &b))
}

func roundTrip[T tables.Row](t *testing.T, rows []T) {
	t.Helper()
	b, path := viaChild(t, rows)
	if want := inProcess(t, rows); !sameFile(t, b, want) {
		t.Errorf("%s through skyloop-parquet: %d bytes, not the %d bytes the Parquet writer gives in process", tables.Name[T](), len(b), len(want))
	}
	got, err := readBack[T](t, path, len(rows))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%s: read back %d rows of %d", tables.Name[T](), len(got), len(rows))
	}
	for i := range rows {
		if !same(got[i], rows[i]) {
			t.Fatalf("%s row %d read back as %+v, written %+v", tables.Name[T](), i+1, got[i], rows[i])
		}
	}
}

// TestTablesThroughTheProgramAreTheLibrarysBytes: a table written through
// skyloop-parquet is byte for byte the file the Parquet writer gives in
// process (what skyloop wrote before), and reads back value for value.
func TestTablesThroughTheProgramAreTheLibrarysBytes(t *testing.T) {
	roundTrip(t, traceRows())
	roundTrip(t, deliveryRows())
	roundTrip(t, vehicleRows())
}

// TestReadStopsAtMaxRows: more rows than allowed is an error wrapping
// untrusted.ErrTooLarge.
func TestReadStopsAtMaxRows(t *testing.T) {
	_, path := viaChild(t, vehicleRows())
	_, err := readBack[tables.VehicleRow](t, path, 999)
	if !errors.Is(err, untrusted.ErrTooLarge) || !strings.Contains(err.Error(), path) {
		t.Errorf("1000 rows read with at most 999: %v, want an error naming %s and wrapping ErrTooLarge", err, path)
	}
}

// TestMissingProgramSaysHowToInstall: without skyloop-parquet, a Parquet
// table's error names the program and the install command.
func TestMissingProgramSaysHowToInstall(t *testing.T) {
	t.Setenv(tables.EnvProgram, "")
	t.Setenv("PATH", t.TempDir())
	f, err := os.Create(filepath.Join(t.TempDir(), "trace.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = tables.NewWriter[tables.TraceRow](f, "trace.parquet")
	if !errors.Is(err, tables.ErrNoProgram) || !strings.Contains(err.Error(), "go install ./cmd/...") || !strings.Contains(err.Error(), "skyloop-parquet") {
		t.Errorf("NewWriter without the program: %v", err)
	}
	if err := tables.Check(); !errors.Is(err, tables.ErrNoProgram) {
		t.Errorf("Check without the program: %v", err)
	}
}

// TestHostileProgramOutput: what comes back from the program is checked
// and bounded, and every error names where it came from.
func TestHostileProgramOutput(t *testing.T) {
	_, path := viaChild(t, vehicleRows()[:3])
	row := tables.VehicleRow{TNs: 1, Mode: "hover"}
	good := slices.Clip(tables.AppendRow(tables.AppendHeader[tables.VehicleRow](nil), &row))
	long := tables.AppendHeader[tables.VehicleRow](nil)
	long = append(long, 'r')
	long = append(long, make([]byte, 16+9*8)...)
	long = append(long, 0xff, 0xff, 0xff, 0xff, 0x0f) // a text of 4 GiB
	for _, c := range []struct {
		name   string
		out    []byte
		stderr string
		code   int
		want   string
		is     error
	}{
		{"garbage", []byte("PAR1\x00\x01"), "", 0, "starts", tables.ErrVersion},
		{"another version", []byte("skyloop-rows/0 vehicles\n"), "", 0, "another version", tables.ErrVersion},
		{"no end", good, "", 0, "without its end mark", nil},
		{"wrong count", tables.AppendEnd(good, 5), "", 0, "saying 5 rows after 1", nil},
		{"bytes after the end", append(tables.AppendEnd(good, 1), 'x'), "", 0, "after the end", nil},
		{"a row cut short", good[:len(good)-3], "", 0, "cut short", nil},
		{"a bad mark", append(good, 'z'), "", 0, "where a row should start", nil},
		{"a text too long", long, "", 0, "more than the 4096 allowed", nil},
		{"more rows than allowed", tables.AppendRow(good, &row), "", 0, "more than 1 rows", untrusted.ErrTooLarge},
		{"its own error", nil, "trace.parquet: broken\x1b[2J", 1, "trace.parquet: broken?[2J", nil},
		{"too large", nil, "trace.parquet: big", tables.TooLargeStatus, "trace.parquet: big", untrusted.ErrTooLarge},
		{"crash", good, "", 2, "failed without a message", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			if err := os.WriteFile(out, c.out, 0o644); err != nil {
				t.Fatal(err)
			}
			fake := filepath.Join(dir, "fake-parquet")
			script := "#!/bin/sh\ncat '" + out + "'\nprintf '%s' '" + c.stderr + "' >&2\nexit " + string(rune('0'+c.code)) + "\n"
			if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv(tables.EnvProgram, fake)
			_, err := readBack[tables.VehicleRow](t, path, 1)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("%v does not wrap %v", err, c.is)
			}
			if c.stderr == "" && !strings.Contains(err.Error(), fake) {
				t.Errorf("%v does not name the program", err)
			}
		})
	}
}

// TestProgramCompletesTheFileWhenSkyloopDies: when its input ends without
// the end mark (skyloop killed), skyloop-parquet still writes a whole
// Parquet file with every row it received, and says so.
func TestProgramCompletesTheFileWhenSkyloopDies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vehicles.parquet")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	rows := vehicleRows()
	b := tables.AppendHeader[tables.VehicleRow](nil)
	for i := range rows {
		b = tables.AppendRow(b, &rows[i])
	}
	cmd := exec.Command(os.Getenv(tables.EnvProgram), "write", "vehicles", "vehicles.parquet")
	cmd.Stdin, cmd.Stdout = bytes.NewReader(b), out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "holds the 1000 rows received") {
		t.Errorf("rows without their end: %v, %q; want a failure saying the file holds the 1000 rows", err, stderr.String())
	}
	got, err := readBack[tables.VehicleRow](t, path, len(rows))
	if err != nil || len(got) != len(rows) {
		t.Fatalf("the file after skyloop died: %d rows, %v; want %d", len(got), err, len(rows))
	}
}
