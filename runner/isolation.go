package runner

import (
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"skyloop/edge"
	"skyloop/engine"
	"skyloop/orchestrate"
	"skyloop/scenario"
)

// isolation is a run's namespaces and the processes in them (isolation:
// netns). The TAP bridges and MAVLink links bind to the namespaces as edge
// components (edge.Env.Namespace).
type isolation struct {
	r       *engine.Run
	on      bool
	net     *orchestrate.Net
	procs   *orchestrate.Procs
	results []orchestrate.ProcResult
	taken   []*edge.Namespace // given to the components
	outputs *procOutputs
	stopped bool
	closed  bool
}

func newIsolation(r *engine.Run) *isolation {
	return &isolation{r: r, on: r.Scenario().Isolation == "netns"}
}

// check finds what would stop isolation: netns before anything is set up
// or written: missing privileges, a live run holding the same namespaces,
// misspelt programs.
func (iso *isolation) check() error {
	if !iso.on {
		return nil
	}
	sc := iso.r.Scenario()
	if err := orchestrate.CheckFree(orchestrate.Prefix(sc.Name), iso.r.Vehicles()); err != nil {
		return fmt.Errorf("isolation: %w", err)
	}
	return iso.eachProcess(func(k int, p scenario.Process, i int) error {
		if err := orchestrate.CheckCommand(orchestrate.Render(p.Command, i, "", iso.r.Nodes()[i].Name), procDir(iso.r)); err != nil {
			return fmt.Errorf("processes[%d] (%s), vehicle %d: %w", k, p.Name, i, err)
		}
		return nil
	})
}

// eachProcess calls f for every process of the scenario (index k) and
// every vehicle i it runs on, until f fails.
func (iso *isolation) eachProcess(f func(k int, p scenario.Process, i int) error) error {
	nodes := iso.r.Nodes()
	for k, p := range iso.r.Scenario().Processes {
		for i := 0; i < iso.r.Vehicles(); i++ {
			if p.Group != "" && nodes[i].Group != p.Group {
				continue
			}
			if err := f(k, p, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// up makes every vehicle's namespace and gives them to the components.
// Whatever it made is removed by close, also when it fails.
func (iso *isolation) up(env *edge.Env) error {
	if !iso.on {
		return nil
	}
	nt, err := orchestrate.Up(orchestrate.Prefix(iso.r.Scenario().Name), iso.r.Vehicles(), false)
	if err != nil {
		return fmt.Errorf("isolation: %w", err)
	}
	iso.net = nt
	ns := make([]*edge.Namespace, len(nt.Vehicles))
	for i, v := range nt.Vehicles {
		ns[i] = &edge.Namespace{Name: v.NS, HostIP: v.HostIP, NSHost: v.NSHost}
		if v.TAP != nil { // a nil *os.File would make a non-nil interface
			ns[i].TAP = v.TAP
		}
	}
	env.SetNamespaces(ns)
	iso.taken = ns
	iso.outputs = &procOutputs{open: env.Output, pids: map[string]io.Writer{}}
	return nil
}

// startProcesses starts the scenario's processes in the namespaces.
func (iso *isolation) startProcesses() error {
	if iso.net == nil {
		return nil
	}
	var specs []orchestrate.ProcSpec
	nodes := iso.r.Nodes()
	iso.eachProcess(func(_ int, p scenario.Process, i int) error {
		specs = append(specs, orchestrate.ProcSpec{Name: p.Name, Vehicle: i, Node: nodes[i].Name,
			Command: orchestrate.Render(p.Command, i, iso.net.Vehicles[i].NS, nodes[i].Name), Restart: p.Restart,
			Stop: time.Duration(p.StopTimeout), Dir: procDir(iso.r)})
		return nil
	})
	if len(specs) == 0 {
		return nil
	}
	procs, err := orchestrate.Start(iso.net, specs, iso.outputs, func(msg string) {
		iso.r.Logger().Info(msg) // from the supervisor goroutines: never into the run's files
	})
	if err != nil {
		return fmt.Errorf("isolation: %w", err)
	}
	iso.procs = procs
	return nil
}

// stopProcesses stops the processes and keeps how they ended.
func (iso *isolation) stopProcesses() {
	if iso.stopped {
		return
	}
	iso.stopped = true
	iso.results = iso.procs.Stop()
}

// close stops the processes and removes the namespaces (with the TAPs no
// component took).
func (iso *isolation) close() {
	if iso.closed || iso.net == nil {
		return
	}
	iso.closed = true
	iso.stopProcesses()
	for i, ns := range iso.taken {
		if ns.TAP == nil {
			iso.net.Vehicles[i].TAP = nil // a component owns it and closed it
		}
	}
	if err := iso.net.Down(); err != nil {
		iso.r.Logger().Warn("removing the namespaces", "err", err)
	}
}

// procOutputs puts process logs and pid files under procs/ in the run
// directory.
type procOutputs struct {
	open func(name string) (io.Writer, error) // nil: the run writes no files
	mu   sync.Mutex                           // restarts come from the supervisors' goroutines
	pids map[string]io.Writer
}

// Logs implements orchestrate.Outputs.
func (o *procOutputs) Logs(base string) (io.Writer, io.Writer, error) {
	if o.open == nil {
		return io.Discard, io.Discard, nil
	}
	out, err := o.open("procs/" + base + ".out")
	if err != nil {
		return nil, nil, err
	}
	errw, err := o.open("procs/" + base + ".err")
	if err != nil {
		return nil, nil, err
	}
	return out, errw, nil
}

// PID appends the pid of each start (restarts add lines) to
// procs/<base>.pid.
func (o *procOutputs) PID(base string, pid int) {
	if o.open == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	w := o.pids[base]
	if w == nil {
		var err error
		if w, err = o.open("procs/" + base + ".pid"); err != nil {
			return
		}
		o.pids[base] = w
	}
	fmt.Fprintln(w, strconv.Itoa(pid))
}
