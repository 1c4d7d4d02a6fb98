package record_test

import (
	"errors"
	"os"
	"path/filepath"
	"skyloop/internal/hostile"
	"skyloop/record"
	"strings"
	"syscall"
	"testing"
)

// TestDiskFullKeepsWhatWasWritten: a disk that fills up during a run fails
// the commit with the system's message; nothing appears at the destination,
// the partial files are kept with the reason, and the earlier run there is
// untouched.
func TestDiskFullKeepsWhatWasWritten(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "seed1")
	d, err := record.CreateIn(record.OS, dest)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(d.Path("v"), []byte("earlier"), 0o644)
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	fsys := &hostile.Disk{Space: 100 << 10}
	d, err = record.CreateIn(fsys, dest)
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
	var ke *record.KeptError
	if !errors.As(err, &ke) || ke.Complete || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Commit on a full disk: %v", err)
	}
	if !strings.Contains(err.Error(), "no space left on device") || strings.Contains(err.Error(), ".tmp-") {
		t.Fatalf("message %q", err)
	}
	if got := read(t, filepath.Join(dest, "v")); got != "earlier" {
		t.Fatal("the earlier run was replaced by a failed one")
	}
	if msg := read(t, filepath.Join(ke.Kept, "ERROR.txt")); !strings.Contains(msg, "no space left") {
		t.Fatalf("ERROR.txt = %q", msg)
	}
	if st, err := os.Stat(filepath.Join(ke.Kept, "trace.csv")); err != nil || st.Size() == 0 {
		t.Fatalf("partial trace.csv: %v", err)
	}
	noTemporaries(t, filepath.Dir(dest))
}

// TestFailedRenameKeepsTheFinishedRun: when the final rename fails, the
// finished run is kept under another name and the error says where.
func TestFailedRenameKeepsTheFinishedRun(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "seed1")
	d, err := record.CreateIn(&hostile.Disk{Space: 1 << 30, FailRename: dest}, dest)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(d.Path("summary.json"), []byte("{}"), 0o644)
	err = d.Commit()
	var ke *record.KeptError
	if !errors.As(err, &ke) || !ke.Complete || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Commit with a failing rename: %v", err)
	}
	if read(t, filepath.Join(ke.Kept, "summary.json")) != "{}" || !strings.Contains(err.Error(), ke.Kept) {
		t.Fatalf("finished run not kept: %v", err)
	}
	noTemporaries(t, filepath.Dir(dest))
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func noTemporaries(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") || strings.HasSuffix(e.Name(), ".lock") {
			t.Errorf("leftover %s", e.Name())
		}
	}
}
