package runner

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"skyloop/engine"
	"skyloop/record"
	"skyloop/scenarios"
)

// fullDisk lets limit bytes be written in all, then fails with ENOSPC.
type fullDisk struct{ left int }

type fullFile struct {
	f *os.File
	d *fullDisk
}

func (w *fullFile) Write(p []byte) (int, error) {
	if len(p) > w.d.left {
		return 0, &os.PathError{Op: "write", Path: w.f.Name(), Err: syscall.ENOSPC}
	}
	w.d.left -= len(p)
	return w.f.Write(p)
}
func (w *fullFile) Close() error { return w.f.Close() }

func (d *fullDisk) Create(name string) (io.WriteCloser, error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	return &fullFile{f: f, d: d}, nil
}
func (d *fullDisk) WriteFile(name string, data []byte) error { return record.OS.WriteFile(name, data) }
func (d *fullDisk) Rename(o, n string, noReplace bool) error {
	return record.OS.Rename(o, n, noReplace)
}

// TestDiskFullDuringARun: a run whose disk fills up fails with the system's
// message, keeps its partial files with the reason, and commits nothing.
func TestDiskFullDuringARun(t *testing.T) {
	text, _ := scenarios.Lookup("quickstart")
	dest := filepath.Join(t.TempDir(), "q")
	_, err := Execute(buildYAML(t, string(text), engine.Options{}), dest, Options{FS: &fullDisk{left: 200 << 10}})
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), dest+".incomplete") {
		t.Fatalf("run on a full disk: %v", err)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatal("a failed run was committed")
	}
	if b, _ := os.ReadFile(filepath.Join(dest+".incomplete", "ERROR.txt")); !strings.Contains(string(b), "no space left") {
		t.Fatalf("ERROR.txt = %q", b)
	}
}
