package record

import (
	"io"
	"sync"
)

// asyncFile hands writes to a goroutine that does the write system calls,
// so that the caller (a real-time run's kernel thread) is never blocked by
// the disk: a write into the page cache can stall for tens of milliseconds
// while the kernel flushes dirty pages. Writes block only when asyncDepth
// chunks are already waiting. Write errors surface at Close.
type asyncFile struct {
	f    io.Writer
	ch   chan []byte
	free chan []byte
	done chan struct{}
	mu   sync.Mutex
	err  error
}

// asyncDepth is how many chunks (up to 64 KiB each from the buffered
// writers) may wait for the disk.
const asyncDepth = 64

func newAsyncFile(f io.Writer) *asyncFile {
	a := &asyncFile{f: f, ch: make(chan []byte, asyncDepth), free: make(chan []byte, asyncDepth), done: make(chan struct{})}
	go a.run()
	return a
}

func (a *asyncFile) run() {
	defer close(a.done)
	for b := range a.ch {
		a.mu.Lock()
		failed := a.err != nil
		a.mu.Unlock()
		if !failed {
			if _, err := a.f.Write(b); err != nil {
				a.mu.Lock()
				a.err = err
				a.mu.Unlock()
			}
		}
		select {
		case a.free <- b:
		default:
		}
	}
}

// Write queues a copy of p; it reports an earlier write's error if one
// happened.
func (a *asyncFile) Write(p []byte) (int, error) {
	a.mu.Lock()
	err := a.err
	a.mu.Unlock()
	if err != nil {
		return 0, err
	}
	var b []byte
	select {
	case b = <-a.free:
	default:
	}
	a.ch <- append(b[:0], p...)
	return len(p), nil
}

// Close waits for the queued writes and returns the first error.
func (a *asyncFile) Close() error {
	close(a.ch)
	<-a.done
	return a.err
}
