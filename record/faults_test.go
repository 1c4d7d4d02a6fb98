package record

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// faultFS is the real file system with injected faults: files created
// through it fail with ENOSPC after limit bytes in all, and renames to
// failRename fail with EIO.
type faultFS struct {
	limit      int
	written    int
	failRename string
}

type faultFile struct {
	f  *os.File
	fs *faultFS
}

func (w *faultFile) Write(p []byte) (int, error) {
	if w.fs.written+len(p) > w.fs.limit {
		return 0, &os.PathError{Op: "write", Path: w.f.Name(), Err: syscall.ENOSPC}
	}
	w.fs.written += len(p)
	return w.f.Write(p)
}

func (w *faultFile) Close() error { return w.f.Close() }

func (f *faultFS) Create(name string) (io.WriteCloser, error) {
	file, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{f: file, fs: f}, nil
}

func (f *faultFS) WriteFile(name string, data []byte) error { return OS.WriteFile(name, data) }

func (f *faultFS) Rename(oldpath, newpath string, noReplace bool) error {
	if newpath == f.failRename {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EIO}
	}
	return OS.Rename(oldpath, newpath, noReplace)
}

// TestDiskFullKeepsWhatWasWritten: a disk that fills up during a run fails
// the commit with the system's message; nothing appears at the destination,
// the partial files are kept with the reason, and the earlier run there is
// untouched.
func TestDiskFullKeepsWhatWasWritten(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "seed1")
	d := mustCreate(t, dest)
	writeFile(t, d.Path("v"), "earlier")
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	fsys := &faultFS{limit: 100 << 10}
	d, err := CreateIn(fsys, dest)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.CSV("trace.csv", "a,b")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100000; i++ {
		c.Int(int64(i)).Str("row").End()
	}
	err = d.Commit()
	var ke *KeptError
	if !errors.As(err, &ke) || ke.Complete || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Commit on a full disk: %v", err)
	}
	if !strings.Contains(err.Error(), "no space left on device") || strings.Contains(err.Error(), ".tmp-") {
		t.Fatalf("message %q", err)
	}
	if got := readFile(t, filepath.Join(dest, "v")); got != "earlier" {
		t.Fatal("the earlier run was replaced by a failed one")
	}
	if msg := readFile(t, filepath.Join(ke.Kept, "ERROR.txt")); !strings.Contains(msg, "no space left") {
		t.Fatalf("ERROR.txt = %q", msg)
	}
	if st, err := os.Stat(filepath.Join(ke.Kept, "trace.csv")); err != nil || st.Size() == 0 {
		t.Fatalf("partial trace.csv: %v", err)
	}
	assertNoTemporaries(t, filepath.Dir(dest))
}

// TestFailedRenameKeepsTheFinishedRun: when the final rename fails, the
// finished run is kept under another name and the error says where.
func TestFailedRenameKeepsTheFinishedRun(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "seed1")
	d, err := CreateIn(&faultFS{limit: 1 << 30, failRename: dest}, dest)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, d.Path("summary.json"), "{}")
	err = d.Commit()
	var ke *KeptError
	if !errors.As(err, &ke) || !ke.Complete || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Commit with a failing rename: %v", err)
	}
	if readFile(t, filepath.Join(ke.Kept, "summary.json")) != "{}" || !strings.Contains(err.Error(), ke.Kept) {
		t.Fatalf("finished run not kept: %v", err)
	}
	assertNoTemporaries(t, filepath.Dir(dest))
}
