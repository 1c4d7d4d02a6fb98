// Package runread reads the tables of a finished run directory whatever
// format the run wrote them in: vehicles, trace, deliveries and events,
// from vehicles.csv or vehicles.parquet and so on (scenario: outputs:
// {format: csv|parquet}). skyloop view, skyloop report html and sweeps
// read runs through it, so a new output format is one more row of the
// formats table here (and one sink in package runner).
//
// A run directory may come from someone else (a colleague's results, a
// shard of a cluster sweep): every file is read as untrusted input. It
// must be a regular file inside the directory (untrusted.OpenIn) under
// untrusted.MaxCSV bytes; a CSV record is at most Limits.MaxRecord bytes;
// a table has at most Limits.MaxRows rows; a Parquet file must have the
// schema skyloop writes (package tables) and column chunks of bounded
// size. Every error names the file, and the line (CSV) or row (Parquet)
// where there is one.
package runread

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"skyloop/internal/untrusted"
)

// Table is a kind of record a run directory holds, named as its files
// are without the extension.
type Table string

// The tables of a run directory.
const (
	// Vehicles is every vehicle's state at every sample.
	Vehicles Table = "vehicles"
	// Trace is every network event (tx, rx, drop).
	Trace Table = "trace"
	// Deliveries is every packet handed to a receiver.
	Deliveries Table = "deliveries"
	// Events is the run's event log.
	Events Table = "events"
)

// Limits bound what Rows reads of one table.
type Limits struct {
	// MaxRecord is the most bytes of one CSV record (0: DefaultMaxRecord).
	MaxRecord int
	// MaxRows is the most rows of one table (0: DefaultMaxRows); past it
	// Rows fails with an error wrapping untrusted.ErrTooLarge.
	MaxRows int
}

const (
	// DefaultMaxRecord bounds a CSV record: skyloop's rows are well under
	// a kilobyte.
	DefaultMaxRecord = 1 << 20
	// DefaultMaxRows bounds the rows of one table: far more than a run
	// writes at its documented limits.
	DefaultMaxRows = 100_000_000
)

// Row is one record of a table as text, in the columns of the table's CSV
// file: Parquet values are given as the CSV would hold them, integers and
// text exactly, numbers at full precision ('g', shortest), a null as "".
// The row and its Values are reused from one call to the next.
type Row struct {
	// Col is each column's index in Values, by name.
	Col map[string]int
	// Values are the row's fields.
	Values []string
	// File is the path of the file being read.
	File string
	// N is the line the record starts on (CSV, the header is line 1) or
	// the row's number from 1 (Parquet).
	N       int
	parquet bool
}

// Where names the row for an error: "DIR/trace.csv line 3" or
// "DIR/trace.parquet row 2".
func (r *Row) Where() string {
	if r.parquet {
		return r.File + " row " + strconv.Itoa(r.N)
	}
	return r.File + " line " + strconv.Itoa(r.N)
}

// Get returns the column name's value and whether the table has it.
func (r *Row) Get(name string) (string, bool) {
	i, ok := r.Col[name]
	if !ok || i >= len(r.Values) {
		return "", false
	}
	return r.Values[i], true
}

// Stop, returned by Rows' callback, ends the reading early without an
// error (a reader that has what it wants).
var Stop = errors.New("stop reading")

// format is one way a run writes its tables: the files' extension and
// how to read one. Adding an output format adds a row here.
type format struct {
	ext  string
	rows func(file *untrusted.File, path string, t Table, lim Limits, f func(*Row) error) error
}

// formats are tried in order; a run writes each table in one format.
var formats = []format{
	{ext: "csv", rows: csvRows},
	{ext: "parquet", rows: parquetRows},
}

// Rows calls f for each row of table t of the run directory dir, in the
// order written, from whichever of its files the run wrote (t.csv, then
// t.parquet). f's error stops the reading and is returned as it is (f
// names the row with Row.Where); Stop ends it without an error. When the
// run wrote no such table the error wraps fs.ErrNotExist.
func Rows(dir string, t Table, lim Limits, f func(*Row) error) error {
	if lim.MaxRecord <= 0 {
		lim.MaxRecord = DefaultMaxRecord
	}
	if lim.MaxRows <= 0 {
		lim.MaxRows = DefaultMaxRows
	}
	for _, fm := range formats {
		name := string(t) + "." + fm.ext
		file, err := untrusted.OpenIn(dir, name, untrusted.MaxCSV)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return explain(dir, name, err)
		}
		defer file.Close()
		err = fm.rows(file, filepath.Join(dir, name), t, lim, f)
		if errors.Is(err, Stop) {
			return nil
		}
		return err
	}
	return &fs.PathError{Op: "read", Path: filepath.Join(dir, string(t)+".*"), Err: fmt.Errorf("no %s table (%s): %w", t, Names(t), fs.ErrNotExist)}
}

// Find returns the name of the file that holds table t in dir
// ("trace.parquet"), or "" when the run wrote none.
func Find(dir string, t Table) string {
	for _, fm := range formats {
		name := string(t) + "." + fm.ext
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return name
		}
	}
	return ""
}

// Names lists the files that may hold table t ("trace.csv or
// trace.parquet"), for messages.
func Names(t Table) string {
	s := ""
	for i, fm := range formats {
		switch {
		case i == 0:
		case i == len(formats)-1:
			s += " or "
		default:
			s += ", "
		}
		s += string(t) + "." + fm.ext
	}
	return s
}

// explain adds to the error of opening name in dir what the file is when
// it is a symbolic link: the link is refused because it leads out of the
// run directory or to something that is not a regular file (/dev/zero).
func explain(dir, name string, err error) error {
	path := filepath.Join(dir, name)
	if to, lerr := os.Readlink(path); lerr == nil {
		return fmt.Errorf("%s is a symbolic link to %s: refused, a run's files are regular files inside its directory (%w)", path, to, err)
	}
	return err
}

// tooMany is the error of a table past lim.MaxRows.
func tooMany(path string, lim Limits) error {
	return fmt.Errorf("%s: more than %d rows (%w)", path, lim.MaxRows, untrusted.ErrTooLarge)
}
