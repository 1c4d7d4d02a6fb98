// Package record writes a run directory: CSV streams while the run goes,
// JSON documents at the end. Everything is written into a temporary
// directory next to the destination and renamed into place only when the
// run has finished, so a run directory is either complete or absent; a
// failed run leaves its partial files in <dest>.incomplete with the error in
// ERROR.txt.
package record

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// Dir is a run directory being written.
type Dir struct {
	dest  string
	tmp   string
	files []*CSV
	raw   []*os.File
	async bool
}

// SetAsync makes the streams opened from now on write through a goroutine,
// so that the disk never blocks the writer (real-time runs).
func (d *Dir) SetAsync() { d.async = true }

// stream wraps a new file for a buffered stream.
func (d *Dir) stream(f *os.File, name string) *CSV {
	c := &CSV{f: f, name: name}
	var sink io.Writer = f
	if d.async {
		c.async = newAsyncFile(f)
		sink = c.async
	}
	c.w = bufio.NewWriterSize(sink, 1<<16)
	return c
}

// Marker is the file that marks a directory as a skyloop run directory.
// Commit only ever replaces directories that carry it.
const Marker = ".skyloop-run"

// ErrNotRunDir is returned by Create when the destination exists and is not
// a run directory: skyloop never deletes what it did not write.
var ErrNotRunDir = errors.New("exists and is not a skyloop run directory")

// Create starts a run directory that will end up at dest. The parent of
// dest is created if needed. An existing dest is replaced at Commit only
// if it is empty or an earlier run directory.
func Create(dest string) (*Dir, error) {
	if st, err := os.Stat(dest); err == nil {
		if !st.IsDir() {
			return nil, fmt.Errorf("output %s: %w (it is a file)", dest, ErrNotRunDir)
		}
		ents, _ := os.ReadDir(dest)
		if _, err := os.Stat(filepath.Join(dest, Marker)); err != nil && len(ents) > 0 {
			return nil, fmt.Errorf("output %s: %w; choose another directory or remove it", dest, ErrNotRunDir)
		}
	}
	parent := filepath.Dir(dest)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("creating output directory: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dest)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("creating output directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, Marker), []byte("written by skyloop; the directory may be replaced by a new run\n"), 0o644); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("creating output directory: %w", err)
	}
	return &Dir{dest: dest, tmp: tmp}, nil
}

// Path returns the path of a file inside the (temporary) directory.
func (d *Dir) Path(name string) string { return filepath.Join(d.tmp, name) }

// Dest returns where the directory will be once committed.
func (d *Dir) Dest() string { return d.dest }

// CSV opens a CSV stream with the given header line.
func (d *Dir) CSV(name, header string) (*CSV, error) {
	f, err := os.Create(d.Path(name))
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", name, err)
	}
	c := d.stream(f, name)
	c.w.WriteString(header)
	c.w.WriteByte('\n')
	d.files = append(d.files, c)
	return c, nil
}

// File opens a buffered binary stream (a packet capture, a telemetry
// log); like the CSV streams it is flushed and closed by Commit or Abort,
// and write errors surface there.
func (d *Dir) File(name string) (io.Writer, error) {
	if dir := filepath.Dir(name); dir != "." {
		if err := os.MkdirAll(d.Path(dir), 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	f, err := os.Create(d.Path(name))
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", name, err)
	}
	c := d.stream(f, name)
	d.files = append(d.files, c)
	return c, nil
}

// Unbuffered opens a file written straight through: logs of child
// processes (which write to it directly, so it can be followed during the
// run and nothing is lost if skyloop dies) and pid files. It is closed by
// Commit or Abort.
func (d *Dir) Unbuffered(name string) (*os.File, error) {
	if dir := filepath.Dir(name); dir != "." {
		if err := os.MkdirAll(d.Path(dir), 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	f, err := os.Create(d.Path(name))
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", name, err)
	}
	d.raw = append(d.raw, f)
	return f, nil
}

// JSON writes v as indented JSON to a file.
func (d *Dir) JSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", name, err)
	}
	b = append(b, '\n')
	if err := os.WriteFile(d.Path(name), b, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

func (d *Dir) closeFiles() error {
	var first error
	for _, c := range d.files {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	d.files = nil
	for _, f := range d.raw {
		if err := f.Close(); err != nil && first == nil {
			first = fmt.Errorf("closing %s: %w", f.Name(), err)
		}
	}
	d.raw = nil
	return first
}

// Commit closes every stream and moves the directory into place, replacing
// an earlier run at the same destination.
func (d *Dir) Commit() error {
	if err := d.closeFiles(); err != nil {
		return err
	}
	old := ""
	if _, err := os.Stat(d.dest); err == nil {
		old = d.tmp + ".old"
		if err := os.Rename(d.dest, old); err != nil {
			return fmt.Errorf("replacing %s: %w", d.dest, err)
		}
	}
	if err := os.Rename(d.tmp, d.dest); err != nil {
		return fmt.Errorf("moving run into %s: %w", d.dest, err)
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("removing the previous run: %w", err)
		}
	}
	return nil
}

// Abort keeps what was written for diagnosis: the partial directory moves
// to <dest>.incomplete (replacing an older one) with cause in ERROR.txt.
// It returns the path of the kept directory.
func (d *Dir) Abort(cause error) string {
	d.closeFiles()
	msg := "run did not finish\n"
	if cause != nil {
		msg = cause.Error() + "\n"
	}
	os.WriteFile(d.Path("ERROR.txt"), []byte(msg), 0o644)
	keep := d.dest + ".incomplete"
	os.RemoveAll(keep)
	if err := os.Rename(d.tmp, keep); err != nil {
		return d.tmp
	}
	return keep
}

// Discard removes the temporary directory and everything in it.
func (d *Dir) Discard() {
	d.closeFiles()
	os.RemoveAll(d.tmp)
}

// CSV is a buffered CSV stream. Rows are built with the Append methods and
// ended with End; write errors are remembered and returned by Close.
type CSV struct {
	f     *os.File
	async *asyncFile // nil: bufio writes to f directly
	w     *bufio.Writer
	name  string
	row   []byte
	n     int // fields in the current row
	err   error
}

// Int appends an integer field.
func (c *CSV) Int(v int64) *CSV {
	c.sep()
	c.row = strconv.AppendInt(c.row, v, 10)
	return c
}

// Uint appends an unsigned integer field.
func (c *CSV) Uint(v uint64) *CSV {
	c.sep()
	c.row = strconv.AppendUint(c.row, v, 10)
	return c
}

// Float appends a float field with prec digits after the point.
func (c *CSV) Float(v float64, prec int) *CSV {
	c.sep()
	c.row = strconv.AppendFloat(c.row, v, 'f', prec, 64)
	return c
}

// Str appends a string field; fields must not contain commas, quotes or
// newlines (callers write identifiers and fixed words).
func (c *CSV) Str(s string) *CSV {
	c.sep()
	c.row = append(c.row, s...)
	return c
}

// Quoted appends a free-text field, quoted when needed.
func (c *CSV) Quoted(s string) *CSV {
	c.sep()
	need := false
	for i := 0; i < len(s); i++ {
		if s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r' {
			need = true
			break
		}
	}
	if !need {
		c.row = append(c.row, s...)
		return c
	}
	c.row = append(c.row, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			c.row = append(c.row, '"')
		}
		c.row = append(c.row, s[i])
	}
	c.row = append(c.row, '"')
	return c
}

func (c *CSV) sep() {
	if c.n > 0 {
		c.row = append(c.row, ',')
	}
	c.n++
}

// End writes the row built so far.
func (c *CSV) End() {
	c.row = append(c.row, '\n')
	if _, err := c.w.Write(c.row); err != nil && c.err == nil {
		c.err = fmt.Errorf("writing %s: %w", c.name, err)
	}
	c.row = c.row[:0]
	c.n = 0
}

// Write appends raw bytes to the stream (io.Writer); errors are kept and
// reported by Close.
func (c *CSV) Write(b []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(b)
	if err != nil {
		c.err = fmt.Errorf("writing %s: %w", c.name, err)
	}
	return n, err
}

// Close flushes and closes the file.
func (c *CSV) Close() error {
	if c.f == nil {
		return c.err
	}
	if err := c.w.Flush(); err != nil && c.err == nil {
		c.err = fmt.Errorf("writing %s: %w", c.name, err)
	}
	if c.async != nil {
		if err := c.async.Close(); err != nil && c.err == nil {
			c.err = fmt.Errorf("writing %s: %w", c.name, err)
		}
	}
	if err := c.f.Close(); err != nil && c.err == nil {
		c.err = fmt.Errorf("closing %s: %w", c.name, err)
	}
	c.f = nil
	return c.err
}
