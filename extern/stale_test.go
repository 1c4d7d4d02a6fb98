package extern

import (
	"os"
	"path/filepath"
	"testing"

	"skyloop/record"
)

// TestStaleSocketDirsRemoved: the socket directory of a skyloop that died
// (its owner lock free) is removed by the next server; a running server's
// and directories without the lock are left alone.
func TestStaleSocketDirsRemoved(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, lockFile bool) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(p, 0o755)
		os.WriteFile(filepath.Join(p, "extern.sock"), nil, 0o644)
		if lockFile {
			os.WriteFile(filepath.Join(p, ".owner.lock"), []byte("12345\n"), 0o644)
		}
		return p
	}
	dead := mk(tmpPrefix+"dead", true)
	live := mk(tmpPrefix+"live", false)
	held, err := record.TryLock(filepath.Join(live, "owner"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	unknown := mk(tmpPrefix+"old", false)
	other := mk("someone-else", true)
	removeStaleDirs(dir)
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Error("a dead server's directory was kept")
	}
	for _, p := range []string{live, unknown, other} {
		if _, err := os.Stat(filepath.Join(p, "extern.sock")); err != nil {
			t.Errorf("%s was touched: %v", filepath.Base(p), err)
		}
	}
}

// TestStartingServersSurviveCleanup: servers starting while others clean
// up stale directories keep theirs (a directory is only visible to the
// cleanup once its owner lock is held).
func TestStartingServersSurviveCleanup(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				removeStaleDirs(os.TempDir())
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for i := 0; i < 200; i++ {
		s := NewServer(Config{Tick: 1})
		if err := s.Start(); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		if _, err := os.Stat(filepath.Dir(s.SocketPath())); err != nil {
			t.Fatalf("start %d: the server's directory is gone: %v", i, err)
		}
		s.Close(nil)
	}
}
