// Package untrusted reads files that skyloop did not just write itself:
// run directories handed over by someone else, shard manifests, models
// named in a scenario. Every such read needs the same checks, and they
// live here: regular files only (not a device, a FIFO or a directory), a
// size cap checked before reading and enforced while reading (a file that
// grows under the reader is cut off with an error), and, for files named
// relative to a directory, no way out of it (no "..", no symlink that
// leads elsewhere; os.Root does the confinement).
package untrusted

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Size caps for the kinds of files skyloop reads back. They are far above
// what a real run writes at its documented limits and far below what
// would exhaust a machine's memory.
const (
	// MaxJSON caps summary.json, meta.json, config.json, manifests and
	// other small structured files.
	MaxJSON = 64 << 20
	// MaxCSV caps a run's CSV tables (trace.csv, vehicles.csv, ...).
	MaxCSV = 4 << 30
	// MaxImage caps a figure embedded in a report.
	MaxImage = 32 << 20
	// MaxModel caps a model file (MJCF, mesh) named by a scenario.
	MaxModel = 64 << 20
)

// openFlags open without blocking: opening a named pipe for reading
// otherwise waits for a writer, possibly for ever, before the check can
// refuse it. O_NONBLOCK does not change reads of regular files.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK

// ErrTooLarge is wrapped by the errors of files over their cap.
var ErrTooLarge = errors.New("file too large")

// ErrNotRegular is wrapped by the errors of paths that are not regular
// files.
var ErrNotRegular = errors.New("not a regular file")

// File is an open regular file whose reads stop with an error past its
// cap.
type File struct {
	f    *os.File
	name string
	max  int64
	read int64
}

// Open opens path for reading if it is a regular file (symlinks are
// followed) of at most max bytes.
func Open(path string, max int64) (*File, error) {
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, err
	}
	return check(f, path, max)
}

// OpenIn opens name, a slash-separated path relative to dir, for reading
// if it stays inside dir (symlinks included) and is a regular file of at
// most max bytes.
func OpenIn(dir, name string, max int64) (*File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(name, openFlags, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Path = dir + string(os.PathSeparator) + name
		}
		return nil, err
	}
	return check(f, f.Name(), max)
}

func check(f *os.File, path string, max int64) (*File, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(st.Mode()))}
	}
	if st.Size() > max {
		f.Close()
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %s, more than the %s allowed", ErrTooLarge, bytes(st.Size()), bytes(max))}
	}
	return &File{f: f, name: path, max: max}, nil
}

// Name returns the path the file was opened with.
func (f *File) Name() string { return f.name }

// Bounded returns the open file and how many bytes of it may be read (its
// size, at most its cap), to hand it to a child process (a reader in
// another program), which must read no more than that.
func (f *File) Bounded() (*os.File, int64) { return f.f, min(f.Size(), f.max) }

// Size returns the file's size when it was opened.
func (f *File) Size() int64 {
	st, err := f.f.Stat()
	if err != nil {
		return 0
	}
	return st.Size()
}

// Read implements io.Reader; past the cap it fails with ErrTooLarge.
func (f *File) Read(p []byte) (int, error) {
	if f.read >= f.max {
		// The file grew past its cap after it was opened: see whether
		// there is more.
		var one [1]byte
		n, err := f.f.Read(one[:])
		if n > 0 {
			return 0, &fs.PathError{Op: "read", Path: f.name, Err: fmt.Errorf("%w: grew past the %s allowed while being read", ErrTooLarge, bytes(f.max))}
		}
		return 0, err
	}
	if rest := f.max - f.read; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := f.f.Read(p)
	f.read += int64(n)
	return n, err
}

// ReadAt implements io.ReaderAt for formats read from the end (Parquet's
// footer): reads stop at the cap with an error wrapping ErrTooLarge.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fmt.Errorf("negative offset %d", off)}
	}
	if off+int64(len(p)) > f.max {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fmt.Errorf("%w: a read past the %s allowed", ErrTooLarge, bytes(f.max))}
	}
	return f.f.ReadAt(p, off)
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// ReadFile reads the whole of path, a regular file of at most max bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f)
}

// ReadFileIn reads the whole of name inside dir (see OpenIn).
func ReadFileIn(dir, name string, max int64) ([]byte, error) {
	f, err := OpenIn(dir, name, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f)
}

func readAll(f *File) ([]byte, error) {
	b := make([]byte, 0, f.Size()+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeDevice != 0 || m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	default:
		return "not a plain file"
	}
}

func bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
