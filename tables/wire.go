package tables

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// The row format between skyloop and skyloop-parquet, both ways: a header
// line naming the format's version and the table, then for each row the
// byte 'r' and its values in the order of the columns, then the byte 'e'
// and the number of rows. Integers are 8 bytes little-endian, numbers the
// 8 bytes of their IEEE 754 bits (so every value, NaN included, crosses
// unchanged), text a uvarint length and the bytes, an optional number a
// byte 0 (null) or 1 and the number. A reader trusts nothing of it: text
// is bounded by MaxText, a stream without its end or with another count
// is an error.
const (
	// wireVersion is the first word of the header line; a program of
	// another version writes another one and is refused.
	wireVersion = "skyloop-rows/1"
	// MaxText bounds a text value of a row (a mode, a traffic kind).
	MaxText = 4096
	rowMark = 'r'
	endMark = 'e'
)

// ErrVersion is wrapped by the error of a stream whose header is not this
// version's: skyloop and skyloop-parquet were built from different
// versions of skyloop.
var ErrVersion = errors.New("another version of the row format")

// Name returns the table a row type is written to ("trace",
// "deliveries", "vehicles").
func Name[T Row]() string {
	var r T
	switch any(&r).(type) {
	case *TraceRow:
		return "trace"
	case *DeliveryRow:
		return "deliveries"
	default:
		return "vehicles"
	}
}

// header is the header line of table T's stream.
func header[T Row]() string { return wireVersion + " " + Name[T]() + "\n" }

// AppendHeader appends the header of a stream of table T's rows to b.
func AppendHeader[T Row](b []byte) []byte { return append(b, header[T]()...) }

// AppendRow appends row r to b.
func AppendRow[T Row](b []byte, r *T) []byte {
	b = append(b, rowMark)
	switch r := any(r).(type) {
	case *TraceRow:
		b = appendText(b, r.Event)
		b = appendInts(b, r.TNs, r.Src, r.Dst, r.Seq, r.TGenNs, r.Bytes)
		b = appendText(b, r.Kind)
		b = appendText(b, r.Reason)
	case *DeliveryRow:
		b = appendInts(b, r.TRxNs, r.TTickNs, r.Src, r.Dst, r.Seq, r.TGenNs, r.TSendNs, r.Bytes)
		b = appendText(b, r.Kind)
		b = appendInts(b, r.LatencyNs)
		if r.RxDbm == nil {
			b = append(b, 0)
		} else {
			b = append(b, 1)
			b = appendFloats(b, *r.RxDbm)
		}
	case *VehicleRow:
		b = appendInts(b, r.TNs, r.ID)
		b = appendFloats(b, r.X, r.Y, r.Z, r.VX, r.VY, r.VZ, r.Roll, r.Pitch, r.Yaw)
		b = appendText(b, r.Mode)
		b = appendInts(b, r.Armed)
		b = appendFloats(b, r.EnergyJ, r.BatteryV, r.CurrentA, r.PressurePa)
	}
	return b
}

// AppendEnd appends the end of a stream of n rows to b.
func AppendEnd(b []byte, n int64) []byte {
	return binary.LittleEndian.AppendUint64(append(b, endMark), uint64(n))
}

func appendInts(b []byte, vs ...int64) []byte {
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func appendFloats(b []byte, vs ...float64) []byte {
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

func appendText(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// Decoder reads a stream of rows from a source it does not trust.
type Decoder struct {
	r    *bufio.Reader
	from string // the stream's source, for errors
	n    int64  // rows read
	err  error
	buf  [8]byte
	end  bool
}

// NewDecoder reads the stream from r, naming it from (a program, a
// pipe) in its errors.
func NewDecoder(r io.Reader, from string) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 64<<10), from: from}
}

// Header reads the stream's header, which must be this version's for
// table T.
func Header[T Row](d *Decoder) error {
	want := header[T]()
	got := make([]byte, 0, len(want))
	for len(got) < 64 {
		c, err := d.r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && len(got) == 0 {
				return fmt.Errorf("%s: no rows: the stream is empty", d.from)
			}
			if !errors.Is(err, io.EOF) {
				return fmt.Errorf("%s: reading the header: %w", d.from, err)
			}
			break
		}
		got = append(got, c)
		if c == '\n' {
			break
		}
	}
	if string(got) != want {
		return fmt.Errorf("%s: the stream starts %q, not %q (%w)", d.from, got, want, ErrVersion)
	}
	return nil
}

// Rows returns how many rows were read.
func (d *Decoder) Rows() int64 { return d.n }

// Next reads the next row into r: false at the stream's end (the end mark
// with the right count) or on an error (Err).
func Next[T Row](d *Decoder, r *T) bool {
	if d.err != nil || d.end {
		return false
	}
	c, err := d.r.ReadByte()
	switch {
	case errors.Is(err, io.EOF):
		d.err = fmt.Errorf("%s: the stream ends after %d rows without its end mark (%w)", d.from, d.n, io.ErrUnexpectedEOF)
		return false
	case err != nil:
		d.err = fmt.Errorf("%s: %w", d.from, err)
		return false
	case c == endMark:
		if n := d.int(); d.err == nil && n != d.n {
			d.err = fmt.Errorf("%s: the stream ends saying %d rows after %d", d.from, n, d.n)
		}
		if _, err := d.r.ReadByte(); d.err == nil && !errors.Is(err, io.EOF) {
			d.err = fmt.Errorf("%s: more bytes after the end of the stream", d.from)
		}
		d.end = d.err == nil
		return false
	case c != rowMark:
		d.err = fmt.Errorf("%s: byte %#x where a row should start, after %d rows", d.from, c, d.n)
		return false
	}
	switch r := any(r).(type) {
	case *TraceRow:
		r.Event = d.text()
		r.TNs, r.Src, r.Dst, r.Seq, r.TGenNs, r.Bytes = d.int(), d.int(), d.int(), d.int(), d.int(), d.int()
		r.Kind, r.Reason = d.text(), d.text()
	case *DeliveryRow:
		r.TRxNs, r.TTickNs, r.Src, r.Dst, r.Seq, r.TGenNs, r.TSendNs, r.Bytes = d.int(), d.int(), d.int(), d.int(), d.int(), d.int(), d.int(), d.int()
		r.Kind = d.text()
		r.LatencyNs = d.int()
		r.RxDbm = nil
		switch d.byte() {
		case 0:
		case 1:
			v := d.float()
			r.RxDbm = &v
		default:
			d.fail("rx_dbm is neither null nor a number")
		}
	case *VehicleRow:
		r.TNs, r.ID = d.int(), d.int()
		r.X, r.Y, r.Z, r.VX, r.VY, r.VZ = d.float(), d.float(), d.float(), d.float(), d.float(), d.float()
		r.Roll, r.Pitch, r.Yaw = d.float(), d.float(), d.float()
		r.Mode = d.text()
		r.Armed = d.int()
		r.EnergyJ, r.BatteryV, r.CurrentA, r.PressurePa = d.float(), d.float(), d.float(), d.float()
	}
	if d.err != nil {
		return false
	}
	d.n++
	return true
}

// Err returns the error that ended the stream, nil at its proper end.
// A stream that has not reached its end yet has no error.
func (d *Decoder) Err() error { return d.err }

// Ended reports whether the stream reached its end mark.
func (d *Decoder) Ended() bool { return d.end }

func (d *Decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%s: row %d: %s", d.from, d.n+1, what)
	}
}

func (d *Decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	c, err := d.r.ReadByte()
	if err != nil {
		d.cut(err)
	}
	return c
}

func (d *Decoder) int() int64 {
	if d.err != nil {
		return 0
	}
	if _, err := io.ReadFull(d.r, d.buf[:]); err != nil {
		d.cut(err)
		return 0
	}
	return int64(binary.LittleEndian.Uint64(d.buf[:]))
}

func (d *Decoder) float() float64 { return math.Float64frombits(uint64(d.int())) }

func (d *Decoder) text() string {
	if d.err != nil {
		return ""
	}
	n, err := binary.ReadUvarint(d.r)
	if err != nil {
		d.cut(err)
		return ""
	}
	if n > MaxText {
		d.fail(fmt.Sprintf("a text of %d bytes, more than the %d allowed", n, MaxText))
		return ""
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(d.r, b); err != nil {
		d.cut(err)
		return ""
	}
	return string(b)
}

// cut records an error in the middle of a row.
func (d *Decoder) cut(err error) {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if d.err == nil {
		d.err = fmt.Errorf("%s: row %d cut short: %w", d.from, d.n+1, err)
	}
}
