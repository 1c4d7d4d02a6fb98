package hostile

import (
	"io"
	"os"
	"syscall"

	"skyloop/record"
)

// Disk is the real file system with injected faults, for record.CreateIn
// and runner.Options.FS: files created through it share Space bytes, then
// fail with ENOSPC; a rename to FailRename fails with EIO.
type Disk struct {
	Space      int
	FailRename string
}

type diskFile struct {
	f *os.File
	d *Disk
}

func (w *diskFile) Write(p []byte) (int, error) {
	if len(p) > w.d.Space {
		return 0, &os.PathError{Op: "write", Path: w.f.Name(), Err: syscall.ENOSPC}
	}
	w.d.Space -= len(p)
	return w.f.Write(p)
}

func (w *diskFile) Close() error { return w.f.Close() }

// Create implements record.FS.
func (d *Disk) Create(name string) (io.WriteCloser, error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	return &diskFile{f: f, d: d}, nil
}

// WriteFile implements record.FS (whole-file writes do not fail).
func (d *Disk) WriteFile(name string, data []byte) error { return record.OS.WriteFile(name, data) }

// Rename implements record.FS.
func (d *Disk) Rename(oldpath, newpath string, noReplace bool) error {
	if newpath == d.FailRename {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EIO}
	}
	return record.OS.Rename(oldpath, newpath, noReplace)
}
