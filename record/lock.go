package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Lock is one process's exclusive claim on an output path (a run
// directory, an experiment directory): a second skyloop that wants the same
// path is refused at once instead of racing the first. The claim is an
// advisory lock (flock) on the file .<name>.lock next to the path, which
// holds the owner's process id; the kernel drops it if the process dies,
// and Unlock removes the file.
type Lock struct {
	f    *os.File
	path string
}

// BusyError is returned by TryLock when another process holds the path.
type BusyError struct {
	Path string // the output path asked for
	PID  int    // the holder's process id, 0 if unknown
}

// Error says who holds the path.
func (e *BusyError) Error() string {
	who := "another skyloop process"
	if e.PID > 0 {
		who = fmt.Sprintf("another skyloop process (pid %d)", e.PID)
	}
	return fmt.Sprintf("%s is writing %s; wait for it to finish or choose another output directory", who, e.Path)
}

// ErrBusy matches every BusyError with errors.Is.
var ErrBusy = errors.New("output in use by another skyloop process")

// Is makes errors.Is(err, ErrBusy) true for a BusyError.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// lockFile returns the lock file's path for an output path.
func lockFile(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock")
}

// TryLock claims path for this process, without waiting. The parent
// directory must exist.
func TryLock(path string) (*Lock, error) {
	lf := lockFile(path)
	for attempt := 0; attempt < 100; attempt++ {
		// O_NOFOLLOW: a link left at the lock file's name (in a
		// directory someone else wrote) is not followed and truncated.
		f, err := os.OpenFile(lf, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o644)
		if err != nil {
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				b, _ := os.ReadFile(lf)
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				return nil, &BusyError{Path: path, PID: pid}
			}
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		// The previous holder removes the file when it lets go: if it did
		// so between our open and our flock, we hold a lock on a file
		// nobody else will see. Start again with the file at the path.
		var held, now unix.Stat_t
		if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(lf, &now) != nil || held.Ino != now.Ino || held.Dev != now.Dev {
			f.Close()
			continue
		}
		f.Truncate(0)
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		return &Lock{f: f, path: lf}, nil
	}
	return nil, fmt.Errorf("locking %s: the lock file %s keeps changing", path, lf)
}

// Moved tells the lock that the directory holding it was renamed and
// path (as given to TryLock) now names it; Unlock removes the file there.
func (l *Lock) Moved(path string) {
	if l != nil {
		l.path = lockFile(path)
	}
}

// Unlock removes the lock file and releases the claim. It may be called
// more than once.
func (l *Lock) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	os.Remove(l.path) // while still holding it: see TryLock
	l.f.Close()
	l.f = nil
}
