package px4sitl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long PX4 gets to shut down after SIGTERM.
const stopGrace = 3 * time.Second

// process is one running PX4.
type process struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when it exited
	err     error         // from Wait
	tailOut *tailBuffer
}

// launch starts `px4 -i inst -d -w wd rootfs` with the airframe, the
// parameters and the logger setting in its environment, in its own process
// group (killed with skyloop).
func launch(p *Params, inst int, wd string, stdout, stderr io.Writer) (*process, error) {
	model, err := p.Model()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(p.Bin, "-i", strconv.Itoa(inst), "-d", "-w", wd, p.Rootfs)
	cmd.Dir = wd
	env := []string{"PX4_SIM_MODEL=" + model, "PX4_SYS_AUTOSTART=" + strconv.Itoa(p.Airframe)}
	if !p.Logger {
		env = append(env, "PX4_PARAM_SDLOG_BACKEND=0")
	}
	names := make([]string, 0, len(p.Params))
	for n := range p.Params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		env = append(env, "PX4_PARAM_"+n+"="+strconv.FormatFloat(p.Params[n], 'g', -1, 64))
	}
	// PX4's own variables from skyloop's environment would change what
	// the scenario says (another model, a remote simulator host): drop them.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PX4_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	tail := &tailBuffer{max: 4096}
	cmd.Stdout = io.MultiWriter(stdout, tail)
	cmd.Stderr = io.MultiWriter(stderr, tail)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pr := &process{cmd: cmd, done: make(chan struct{}), tailOut: tail}
	go func() {
		pr.err = cmd.Wait()
		close(pr.done)
	}()
	return pr, nil
}

func (pr *process) pid() int { return pr.cmd.Process.Pid }

// status says how the process ended, or that it runs.
func (pr *process) status() string {
	select {
	case <-pr.done:
	default:
		return "PX4 still runs"
	}
	var ee *exec.ExitError
	if errors.As(pr.err, &ee) {
		return "PX4 exited: " + ee.String()
	}
	if pr.err != nil {
		return "PX4 failed: " + pr.err.Error()
	}
	return "PX4 exited with status 0"
}

// tail returns PX4's last output lines, for error messages.
func (pr *process) tail() string {
	t := strings.TrimSpace(pr.tailOut.String())
	if t == "" {
		return ""
	}
	lines := strings.Split(t, "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return "; PX4's last output:\n  " + strings.Join(lines, "\n  ")
}

// stop ends PX4: SIGTERM to its process group, SIGKILL after stopGrace.
// PX4 does not exit on its own when the simulator goes away; left running,
// its simulator thread spins at full speed.
func (pr *process) stop() error {
	select {
	case <-pr.done:
		return nil
	default:
	}
	pgid := pr.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-pr.done:
		return nil
	case <-time.After(stopGrace):
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing PX4 (pid %d): %w", pgid, err)
	}
	<-pr.done
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
