package record

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// FS is what a run directory needs from the file system to write its
// files and put them in place. OS is the real one; tests wrap it to inject
// faults (a full disk, a failing rename) and check that nothing is lost.
type FS interface {
	// Create creates or truncates a file for writing.
	Create(name string) (io.WriteCloser, error)
	// WriteFile writes a whole file.
	WriteFile(name string, data []byte) error
	// Rename renames oldpath to newpath; with noReplace it fails with
	// fs.ErrExist when newpath exists, atomically where the file system
	// allows.
	Rename(oldpath, newpath string, noReplace bool) error
}

// OS is the operating system's file system.
var OS FS = osFS{}

type osFS struct{}

func (osFS) Create(name string) (io.WriteCloser, error) { return os.Create(name) }

func (osFS) WriteFile(name string, data []byte) error { return os.WriteFile(name, data, 0o644) }

func (osFS) Rename(oldpath, newpath string, noReplace bool) error {
	if !noReplace {
		return os.Rename(oldpath, newpath)
	}
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOTEMPTY):
		return fs.ErrExist
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EINVAL):
		// A file system without RENAME_NOREPLACE: check, then rename.
		if _, err := os.Lstat(newpath); err == nil {
			return fs.ErrExist
		}
		return os.Rename(oldpath, newpath)
	}
	return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
}
