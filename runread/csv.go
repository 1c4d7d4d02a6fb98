package runread

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"skyloop/internal/untrusted"
)

// csvRows reads a CSV table: a header, then records with as many fields.
func csvRows(file *untrusted.File, path string, _ Table, lim Limits, f func(*Row) error) error {
	capped := &recordCap{r: file, path: path, max: lim.MaxRecord, line: 1}
	cr := csv.NewReader(bufio.NewReaderSize(capped, 64<<10))
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err == io.EOF {
		return fmt.Errorf("%s: empty, not even a header", path)
	}
	if err != nil {
		return csvError(path, err)
	}
	row := &Row{File: path, Col: make(map[string]int, len(head))}
	for i, h := range head {
		row.Col[string([]byte(h))] = i
	}
	for n := 0; ; n++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return csvError(path, err)
		}
		if n >= lim.MaxRows {
			return tooMany(path, lim)
		}
		row.Values = rec
		row.N, _ = cr.FieldPos(0)
		if err := f(row); err != nil {
			return err
		}
	}
}

// csvError names the file and line of a CSV reading error.
func csvError(path string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s line %d: %w", path, pe.Line, pe.Err)
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) || errors.Is(err, errLongRecord) {
		return err // already names the file
	}
	return fmt.Errorf("%s: %w", path, err)
}

// errLongRecord is wrapped by the error of a record past Limits.MaxRecord.
var errLongRecord = errors.New("a record longer than the limit")

// recordCap passes a CSV file through, failing when a record (a line
// ended outside quotes) runs past max bytes: encoding/csv would hold a
// whole record in memory, however long (/dev/zero, or a sparse file, is
// one endless line).
type recordCap struct {
	r      io.Reader
	path   string
	max    int
	n      int // bytes of the current record
	line   int // line the current record starts on
	lines  int // newlines inside it
	quoted bool
}

func (c *recordCap) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for _, b := range p[:n] {
		c.n++
		switch {
		case b == '"':
			c.quoted = !c.quoted
		case b == '\n' && !c.quoted:
			c.line += c.lines + 1
			c.n, c.lines = 0, 0
		case b == '\n':
			c.lines++
		}
		if c.n > c.max {
			return 0, &longRecord{path: c.path, line: c.line, max: c.max}
		}
	}
	return n, err
}

// longRecord is the error of a record past the cap.
type longRecord struct {
	path      string
	line, max int
}

func (e *longRecord) Error() string {
	return fmt.Sprintf("%s line %d: a record longer than %d bytes: not a table skyloop wrote (%v)", e.path, e.line, e.max, untrusted.ErrTooLarge)
}

// Is makes the error match errLongRecord and untrusted.ErrTooLarge.
func (e *longRecord) Is(target error) bool {
	return target == errLongRecord || target == untrusted.ErrTooLarge
}
