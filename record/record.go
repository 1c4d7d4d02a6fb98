// Package record writes a run directory: CSV streams while the run goes,
// JSON documents at the end. Everything is written into a temporary
// directory next to the destination and renamed into place only when the
// run has finished, so a run directory is either complete or absent; a
// failed run leaves its partial files in <dest>.incomplete with the error in
// ERROR.txt. skyloop never deletes or replaces a directory it did not
// write (one without the Marker file), and two processes never write the
// same destination at once (Lock).
package record

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// Dir is a run directory being written.
type Dir struct {
	fs    FS
	dest  string
	tmp   string
	lock  *Lock
	prev  found // what was at dest when the run started
	files []*CSV
	raw   []*os.File
	async bool
	done  bool   // committed, aborted or discarded
	kept  string // where the files ended up if not at dest
}

// SetAsync makes the streams opened from now on write through a goroutine,
// so that the disk never blocks the writer (real-time runs).
func (d *Dir) SetAsync() { d.async = true }

// stream wraps a new file for a buffered stream.
func (d *Dir) stream(f io.WriteCloser, name string) *CSV {
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
// skyloop only ever deletes or replaces directories that carry it (or
// empty ones).
const Marker = ".skyloop-run"

const markerText = "written by skyloop: a run directory, replaced by the next run into the same place\n"

// ErrNotRunDir is returned by Create when the destination exists and is not
// a run directory: skyloop never deletes what it did not write.
var ErrNotRunDir = errors.New("exists and is not a skyloop run directory")

// found is what inspect saw at a path.
type found struct {
	exists, empty bool
	dev, ino      uint64
}

// inspect checks what is at dest: nothing, a run directory, or an empty
// directory are fine; anything else is not ours to replace.
func inspect(dest string) (found, error) {
	st, err := os.Lstat(dest)
	if errors.Is(err, fs.ErrNotExist) {
		return found{}, nil
	}
	if err != nil {
		return found{}, fmt.Errorf("output %s: %w", dest, err)
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		return found{}, fmt.Errorf("output %s: %w (it is a symbolic link)", dest, ErrNotRunDir)
	case !st.IsDir():
		return found{}, fmt.Errorf("output %s: %w (it is a file)", dest, ErrNotRunDir)
	}
	f := found{exists: true}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		f.dev, f.ino = uint64(sys.Dev), sys.Ino
	}
	if hasMarker(dest) {
		return f, nil
	}
	ents, err := os.ReadDir(dest)
	if err != nil {
		return found{}, fmt.Errorf("output %s: %w", dest, err)
	}
	if len(ents) > 0 {
		return found{}, fmt.Errorf("output %s: %w; choose another directory or remove it", dest, ErrNotRunDir)
	}
	f.empty = true
	return f, nil
}

// hasMarker reports whether dir is a directory (not a link to one) holding
// the run-directory marker.
func hasMarker(dir string) bool {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return false
	}
	m, err := os.Lstat(filepath.Join(dir, Marker))
	return err == nil && m.Mode().IsRegular()
}

// isEmptyDir reports whether dir is a directory with nothing in it.
func isEmptyDir(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err == nil && len(ents) == 0
}

// CreateIn starts a run directory on the file system fsys (record.OS, or
// one that injects faults in tests; locks, directories and removals use
// the operating system's) that will end up at dest. The parent of dest is
// created if needed. dest is claimed for this process (TryLock)
// until Commit, Abort or Discard: a second run into the same place is
// refused with a BusyError. An existing dest must be an earlier run
// directory or empty; it is replaced at Commit only if it is still that
// same directory. Temporaries left next to dest by an earlier run that
// died are removed.
func CreateIn(fsys FS, dest string) (*Dir, error) {
	parent := filepath.Dir(dest)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("creating output directory: %w", err)
	}
	lock, err := TryLock(dest)
	if err != nil {
		return nil, err
	}
	prev, err := inspect(dest)
	if err != nil {
		lock.Unlock()
		return nil, err
	}
	removeStale(parent, filepath.Base(dest))
	// The temporary directory's path is absolute (Path's too): programs a
	// run launches get paths inside it and run in directories of their
	// own, where a relative path would name another file. dest stays as
	// given, for messages.
	abs, err := filepath.Abs(parent)
	if err != nil {
		lock.Unlock()
		return nil, fmt.Errorf("creating output directory: %w", err)
	}
	tmp, err := os.MkdirTemp(abs, "."+filepath.Base(dest)+".tmp-")
	if err != nil {
		lock.Unlock()
		return nil, fmt.Errorf("creating output directory: %w", err)
	}
	if err := fsys.WriteFile(filepath.Join(tmp, Marker), []byte(markerText)); err != nil {
		os.RemoveAll(tmp)
		lock.Unlock()
		return nil, fmt.Errorf("creating output directory: %w", err)
	}
	return &Dir{fs: fsys, dest: dest, tmp: tmp, lock: lock, prev: prev}, nil
}

// removeStale deletes the temporary directories of earlier runs into
// parent/base that did not finish (killed, machine crashed). The caller
// holds the lock on parent/base, so none of them is still being written;
// only directories with the marker (or empty ones) are touched.
func removeStale(parent, base string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	prefix := "." + base + ".tmp-"
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		p := filepath.Join(parent, e.Name())
		if hasMarker(p) {
			os.RemoveAll(p)
		} else if isEmptyDir(p) {
			os.Remove(p)
		}
	}
}

// Path returns the absolute path of a file inside the (temporary)
// directory.
func (d *Dir) Path(name string) string { return filepath.Join(d.tmp, name) }

// Dest returns where the directory will be once committed.
func (d *Dir) Dest() string { return d.dest }

// CSV opens a CSV stream with the given header line.
func (d *Dir) CSV(name, header string) (*CSV, error) {
	f, err := d.fs.Create(d.Path(name))
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
	f, err := d.fs.Create(d.Path(name))
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
	if err := d.fs.WriteFile(d.Path(name), b); err != nil {
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
			first = fmt.Errorf("closing %s: %w", filepath.Base(f.Name()), err)
		}
	}
	d.raw = nil
	return first
}

// KeptError reports a run whose directory did not end up at its
// destination: the files are kept at Kept, complete (the destination was
// taken by something else meanwhile) or partial (the run failed).
type KeptError struct {
	Err      error
	Kept     string
	Complete bool
	tmp      string
}

// Error names the problem and where the files are, never a temporary path.
func (e *KeptError) Error() string {
	msg := e.Err.Error()
	if e.tmp != "" && e.Kept != e.tmp {
		msg = strings.ReplaceAll(msg, e.tmp, e.Kept)
	}
	if e.Complete {
		return fmt.Sprintf("%s; the finished run is kept in %s", msg, e.Kept)
	}
	return fmt.Sprintf("%s (partial outputs kept in %s)", msg, e.Kept)
}

// Unwrap returns the cause.
func (e *KeptError) Unwrap() error { return e.Err }

// ErrDestChanged is the cause of a KeptError from Commit when the
// destination was changed by someone else while the run was going.
var ErrDestChanged = errors.New("changed while the run was going")

// Commit closes every stream and moves the directory into place. It
// replaces what was at the destination when the run started only if it is
// still there unchanged (an earlier run directory, or an empty directory);
// if anything else has appeared there, nothing is replaced and the finished
// run is kept under a new name (a KeptError with Complete set). On a write
// error the partial files are kept as by Abort. A stale <dest>.incomplete
// of an earlier failed run is removed once the run is in place.
func (d *Dir) Commit() error {
	if d.done {
		return errors.New("internal error: run directory committed twice")
	}
	if err := d.closeFiles(); err != nil {
		return d.Fail(err)
	}
	d.done = true
	defer d.lock.Unlock()
	cur, err := inspect(d.dest)
	changed := err != nil || cur.exists && (!d.prev.exists || cur.dev != d.prev.dev || cur.ino != d.prev.ino || cur.empty != d.prev.empty)
	if changed {
		return d.keepElsewhere(fmt.Errorf("%s %w (something else was put there): not replaced", d.dest, ErrDestChanged))
	}
	old := ""
	if cur.exists {
		old = d.tmp + ".old" // a stale temporary if we die now: removed by the next run
		if err := d.fs.Rename(d.dest, old, false); err != nil {
			return d.keepElsewhere(fmt.Errorf("replacing %s: %w", d.dest, err))
		}
	}
	if err := d.fs.Rename(d.tmp, d.dest, true); err != nil {
		if old != "" {
			d.fs.Rename(old, d.dest, false)
		}
		if errors.Is(err, fs.ErrExist) {
			err = fmt.Errorf("%s %w (something else was put there): not replaced", d.dest, ErrDestChanged)
		} else {
			err = fmt.Errorf("moving the run into %s: %w", d.dest, err)
		}
		return d.keepElsewhere(err)
	}
	d.kept = d.dest
	if old != "" {
		if cur.empty {
			os.Remove(old)
		} else if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("removing the previous run at %s: %w", d.dest, err)
		}
	}
	if inc := d.dest + ".incomplete"; hasMarker(inc) {
		os.RemoveAll(inc)
	}
	return nil
}

// keepElsewhere puts the finished run at the first free <dest>.N.
func (d *Dir) keepElsewhere(cause error) error {
	for n := 1; n < 1000; n++ {
		alt := fmt.Sprintf("%s.%d", d.dest, n)
		err := d.fs.Rename(d.tmp, alt, true)
		if err == nil {
			d.kept = alt
			return &KeptError{Err: cause, Kept: alt, Complete: true, tmp: d.tmp}
		}
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	d.kept = d.tmp
	return &KeptError{Err: cause, Kept: d.tmp, Complete: true, tmp: d.tmp}
}

// Fail aborts the run (see Abort) and returns err as a KeptError naming
// where the partial files are. An err that is already a KeptError (from
// Commit) is returned as it is.
func (d *Dir) Fail(err error) error {
	var ke *KeptError
	if errors.As(err, &ke) {
		return err
	}
	kept := d.Abort(err)
	return &KeptError{Err: err, Kept: kept, tmp: d.tmp}
}

// Abort keeps what was written for diagnosis: the partial directory moves
// to <dest>.incomplete with the cause in ERROR.txt, replacing an earlier
// run's partial directory there (one with the marker); if something else
// is there, the next free <dest>.incomplete.N is used. It returns the path
// of the kept directory. After Commit, Abort or Discard it does nothing
// and returns where the files went.
func (d *Dir) Abort(cause error) string {
	if d.done {
		return d.kept
	}
	d.done = true
	defer d.lock.Unlock()
	d.closeFiles()
	msg := ""
	if cause != nil {
		msg = strings.TrimSpace(cause.Error())
	}
	if msg == "" {
		msg = "the run did not finish (no error was given)"
	}
	base := d.dest + ".incomplete"
	if hasMarker(base) {
		os.RemoveAll(base) // an earlier failed run's
	}
	for n := 0; n < 1000; n++ {
		keep := base
		if n > 0 {
			keep = fmt.Sprintf("%s.%d", base, n)
		}
		d.fs.WriteFile(d.Path("ERROR.txt"), []byte(strings.ReplaceAll(msg, d.tmp, keep)+"\n"))
		err := d.fs.Rename(d.tmp, keep, true)
		if err == nil {
			d.kept = keep
			return keep
		}
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	d.fs.WriteFile(d.Path("ERROR.txt"), []byte(msg+"\n"))
	d.kept = d.tmp
	return d.tmp
}

// Discard removes the temporary directory and everything in it.
func (d *Dir) Discard() {
	if d == nil || d.done {
		return
	}
	d.done = true
	d.closeFiles()
	os.RemoveAll(d.tmp)
	d.lock.Unlock()
}

// CSV is a buffered CSV stream. Rows are built with the Append methods and
// ended with End; write errors are remembered and returned by Close.
type CSV struct {
	f     io.WriteCloser
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

// Str appends a string field, quoted by encoding/csv's rules when it
// needs to be (a comma, quote, line break or leading space); invalid UTF-8
// and NUL bytes become U+FFFD and line breaks \n, so that every CSV reader
// (Go's, Python's) reads back the same text.
func (c *CSV) Str(s string) *CSV {
	c.sep()
	c.row = appendField(c.row, s)
	return c
}

// Quoted appends a free-text field; it is the same as Str.
func (c *CSV) Quoted(s string) *CSV { return c.Str(s) }

// fieldFixer writes NUL bytes as U+FFFD and every line break as \n
// (Go's csv reader turns \r\n into \n; Python's keeps it).
var fieldFixer = strings.NewReplacer("\x00", "\uFFFD", "\r\n", "\n", "\r", "\n")

// appendField appends s as one CSV field.
func appendField(dst []byte, s string) []byte {
	plain := s != `\.` && (len(s) == 0 || s[0] > ' ')
	for i := 0; i < len(s) && plain; i++ {
		switch b := s[i]; {
		case b == ',', b == '"', b == '\n', b == '\r', b == 0, b >= utf8.RuneSelf:
			// quoting or replacement may be needed: the slow path decides
			plain = false
		}
	}
	if plain {
		return append(dst, s...)
	}
	s = strings.ToValidUTF8(fieldFixer.Replace(s), "\uFFFD")
	need := s == `\.` || strings.ContainsAny(s, ",\"\r\n")
	if r, _ := utf8.DecodeRuneInString(s); !need && len(s) > 0 && unicode.IsSpace(r) {
		need = true
	}
	if !need {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
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
