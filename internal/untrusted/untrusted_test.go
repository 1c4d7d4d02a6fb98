package untrusted

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadsRegularFilesUnderTheCap(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.csv")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFile(p, 5)
	if err != nil || string(b) != "hello" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if _, err := ReadFile(p, 4); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), p) {
		t.Fatalf("over the cap: %v", err)
	}
	b, err = ReadFileIn(dir, "a.csv", 10)
	if err != nil || string(b) != "hello" {
		t.Fatalf("ReadFileIn = %q, %v", b, err)
	}
}

func TestRefusesDevicesDirectoriesAndPipes(t *testing.T) {
	if _, err := ReadFile("/dev/zero", 1<<20); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a device") {
		t.Fatalf("/dev/zero: %v", err)
	}
	dir := t.TempDir()
	if _, err := Open(dir, 1<<20); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a directory") {
		t.Fatalf("directory: %v", err)
	}
	// A symlink inside the directory to a device is refused as the device.
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "trace.csv")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(dir, "trace.csv"), 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("symlink to a device: %v", err)
	}
}

func TestOpenInStaysInsideTheDirectory(t *testing.T) {
	outer := t.TempDir()
	dir := filepath.Join(outer, "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outer, "secret"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret", filepath.Join(dir, "leak.png")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "abs.png")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"leak.png", "abs.png", "../secret"} {
		if _, err := ReadFileIn(dir, name, 1<<20); err == nil {
			t.Errorf("%s: read outside the directory", name)
		}
	}
	// A symlink that stays inside is followed.
	if err := os.WriteFile(filepath.Join(dir, "real"), []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFileIn(dir, "alias", 10); err != nil || string(b) != "ok" {
		t.Fatalf("inside symlink: %q, %v", b, err)
	}
}

func TestAFileThatGrowsIsCutOff(t *testing.T) {
	p := filepath.Join(t.TempDir(), "grow")
	if err := os.WriteFile(p, []byte("abcd"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.WriteString("efgh")
	g.Close()
	if _, err := io.ReadAll(f); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("grown file: %v", err)
	}
}

// TestANamedPipeIsRefusedWithoutWaiting: a named pipe nobody writes to is
// refused at once; opening it does not wait for a writer.
func TestANamedPipeIsRefusedWithoutWaiting(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "trace.csv")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	done := make(chan error, 2)
	go func() { _, err := Open(p, 1<<20); done <- err }()
	go func() { _, err := OpenIn(dir, "trace.csv", 1<<20); done <- err }()
	for i := 0; i < 2; i++ {
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a named pipe") {
				t.Errorf("named pipe: %v", err)
			}
		case <-time.After(time.Minute):
			// Not a timing bound: without O_NONBLOCK the open waits for
			// ever; a minute is long enough for any loaded machine.
			t.Fatal("opening a named pipe waits for a writer")
		}
	}
}
