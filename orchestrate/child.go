package orchestrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Child is a program skyloop launched and owns, such as flight firmware:
// it runs in its own process group, dies with skyloop (SIGKILL when the
// parent goes), keeps its last output for error messages, and is stopped
// with SIGTERM, then SIGKILL after a grace period.
type Child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when it exited
	err  error         // from Wait
	tail *tailBuffer
}

// StartChild starts cmd (whose Path, Args, Dir and Env are set) as a
// Child named name (for messages, e.g. "PX4"), writing its output to
// stdout and stderr and to its tail. extra, when set, also receives its
// standard output (to watch for a line).
func StartChild(name string, cmd *exec.Cmd, stdout, stderr, extra io.Writer) (*Child, error) {
	tail := &tailBuffer{max: 4096}
	outs := []io.Writer{stdout, tail}
	if extra != nil {
		outs = append(outs, extra)
	}
	cmd.Stdout = io.MultiWriter(outs...)
	cmd.Stderr = io.MultiWriter(stderr, tail)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Child{name: name, cmd: cmd, done: make(chan struct{}), tail: tail}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// PID returns the process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Done is closed when the process has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err returns, once Done is closed, why the process ended badly (its exit
// status or signal), or nil when it exited with status 0.
func (c *Child) Err() error {
	<-c.done
	return c.err
}

// Status says how the process ended, or that it runs.
func (c *Child) Status() string {
	select {
	case <-c.done:
	default:
		return c.name + " still runs"
	}
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		return c.name + " exited: " + ee.String()
	}
	if c.err != nil {
		return c.name + " failed: " + c.err.Error()
	}
	return c.name + " exited with status 0"
}

// Tail returns the process's last output lines, prefixed for appending to
// an error message ("" when it printed nothing).
func (c *Child) Tail() string {
	t := strings.TrimSpace(c.tail.String())
	if t == "" {
		return ""
	}
	lines := strings.Split(t, "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return fmt.Sprintf("; %s's last output:\n  %s", c.name, strings.Join(lines, "\n  "))
}

// Stop ends the process: SIGTERM to its process group, SIGKILL after
// grace. It returns once the process has exited.
func (c *Child) Stop(grace time.Duration) error {
	select {
	case <-c.done:
		return nil
	default:
	}
	pgid := c.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s (pid %d): %w", c.name, pgid, err)
	}
	<-c.done
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := bytes.IndexByte(t.b, '\n'); i >= 0 && len(t.b) == t.max {
		return string(t.b[i+1:])
	}
	return string(t.b)
}
