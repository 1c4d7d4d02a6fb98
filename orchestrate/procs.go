package orchestrate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ProcSpec is a program to run inside one vehicle's namespace.
type ProcSpec struct {
	Name    string // process name (from the scenario)
	Vehicle int    // vehicle index
	Node    string // the vehicle's node name
	Command string // already rendered
	Restart string // none or on-failure
	Stop    time.Duration
	Dir     string // working directory
}

// Render fills a command template for vehicle i of namespace set nt.
func Render(tmpl string, i int, ns, node string) string {
	r := strings.NewReplacer("{i}", strconv.Itoa(i), "{sysid}", strconv.Itoa(1+i), "{tcp_port}", strconv.Itoa(4560+i),
		"{udp_port}", strconv.Itoa(14560+i), "{ns}", ns, "{ip}", VehicleIP(i).String(),
		"{host_ip}", fmt.Sprintf("10.100.%d.1", i), "{name}", node)
	return r.Replace(tmpl)
}

// Outputs opens a process's log files and writes its pid file.
type Outputs interface {
	Logs(base string) (stdout, stderr io.Writer, err error)
	PID(base string, pid int)
}

// ProcResult is how one process ended.
type ProcResult struct {
	Name     string `json:"name"`
	Vehicle  int    `json:"vehicle"`
	Command  string `json:"command"`
	Starts   int    `json:"starts"`
	ExitCode int    `json:"exit_code"` // -1 when killed by a signal
	Signal   string `json:"signal,omitempty"`
	// StoppedByRun is true when the process was still running at the end
	// and skyloop stopped it.
	StoppedByRun bool   `json:"stopped_by_run"`
	Error        string `json:"error,omitempty"`
}

// Proc is one supervised process.
type Proc struct {
	spec ProcSpec
	ns   string
	out  Outputs
	log  func(msg string)

	mu      sync.Mutex
	cmd     *exec.Cmd
	res     ProcResult
	stop    bool
	done    chan struct{} // closed when supervision ends
	exited  chan struct{} // closed when the current child exits
	stdout  io.Writer
	stderr  io.Writer
	base    string
	maxRuns int
}

// Procs is a set of supervised processes.
type Procs struct {
	list []*Proc
}

// Start launches every spec inside its vehicle's namespace of nt.
// Processes that fail to start are reported in the error; the ones
// started so far keep running until Stop.
func Start(nt *Net, specs []ProcSpec, out Outputs, log func(string)) (*Procs, error) {
	ps := &Procs{}
	for _, s := range specs {
		if s.Vehicle < 0 || s.Vehicle >= len(nt.Vehicles) {
			ps.Stop()
			return nil, fmt.Errorf("process %s: no vehicle %d", s.Name, s.Vehicle)
		}
		p := &Proc{spec: s, ns: nt.Vehicles[s.Vehicle].NS, out: out, log: log, done: make(chan struct{}), maxRuns: 6,
			res:  ProcResult{Name: s.Name, Vehicle: s.Vehicle, Command: s.Command},
			base: fmt.Sprintf("%d-%s", s.Vehicle, s.Name)}
		var err error
		if p.stdout, p.stderr, err = out.Logs(p.base); err != nil {
			ps.Stop()
			return nil, err
		}
		if err := p.launch(); err != nil {
			ps.Stop()
			return nil, fmt.Errorf("process %s on vehicle %d (%s): %w", s.Name, s.Vehicle, s.Node, err)
		}
		ps.list = append(ps.list, p)
		go p.supervise()
	}
	return ps, nil
}

// launch starts the child: `ip netns exec NS sh -c COMMAND`, in its own
// process group.
func (p *Proc) launch() error {
	cmd := exec.Command("ip", "netns", "exec", p.ns, "/bin/sh", "-c", p.spec.Command)
	cmd.Dir = p.spec.Dir
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	cmd.Env = append(os.Environ(), "SKYLOOP_NS="+p.ns, "SKYLOOP_VEHICLE="+strconv.Itoa(p.spec.Vehicle),
		"SKYLOOP_IP="+VehicleIP(p.spec.Vehicle).String())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	p.mu.Lock()
	p.cmd = cmd
	p.res.Starts++
	p.exited = make(chan struct{})
	p.mu.Unlock()
	p.out.PID(p.base, cmd.Process.Pid)
	return nil
}

// supervise waits for the child and restarts it on failure when asked.
func (p *Proc) supervise() {
	defer close(p.done)
	for {
		err := p.cmd.Wait()
		p.mu.Lock()
		close(p.exited)
		p.res.ExitCode, p.res.Signal = 0, ""
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.res.ExitCode = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.res.ExitCode, p.res.Signal = -1, ws.Signal().String()
			}
		} else if err != nil {
			p.res.Error = err.Error()
		}
		stopping := p.stop
		failed := p.res.ExitCode != 0 || p.res.Error != ""
		runs := p.res.Starts
		p.mu.Unlock()
		if stopping {
			return
		}
		if p.log != nil {
			p.log(fmt.Sprintf("process %s on vehicle %d exited (code %d%s)", p.spec.Name, p.spec.Vehicle, p.res.ExitCode, sig(p.res.Signal)))
		}
		if !failed || p.spec.Restart != "on-failure" || runs >= p.maxRuns {
			return
		}
		time.Sleep(time.Second)
		p.mu.Lock()
		stopping = p.stop
		p.mu.Unlock()
		if stopping {
			return
		}
		if err := p.launch(); err != nil {
			p.mu.Lock()
			p.res.Error = "restart failed: " + err.Error()
			p.mu.Unlock()
			return
		}
		if p.log != nil {
			p.log(fmt.Sprintf("process %s on vehicle %d restarted", p.spec.Name, p.spec.Vehicle))
		}
	}
}

func sig(s string) string {
	if s == "" {
		return ""
	}
	return ", " + s
}

// Stop ends every process: SIGTERM to its process group, SIGKILL after its
// stop timeout, and returns how each ended.
func (ps *Procs) Stop() []ProcResult {
	if ps == nil {
		return nil
	}
	for _, p := range ps.list {
		p.mu.Lock()
		p.stop = true
		running := p.cmd != nil && p.cmd.ProcessState == nil
		select {
		case <-p.exited:
			running = false
		default:
		}
		if running {
			p.res.StoppedByRun = true
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		}
		p.mu.Unlock()
	}
	var out []ProcResult
	for _, p := range ps.list {
		select {
		case <-p.done:
		case <-time.After(p.spec.Stop):
			p.mu.Lock()
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			p.mu.Unlock()
			<-p.done
		}
		p.mu.Lock()
		out = append(out, p.res)
		p.mu.Unlock()
	}
	return out
}
