package engine

import (
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"skyloop/mavlink"
	"skyloop/netsim/tap"
	"skyloop/orchestrate"
	"skyloop/scenario"
	"skyloop/sim"
)

// isolation is a run's namespaces, TAP bridges and processes
// (isolation: netns).
type isolation struct {
	r       *Run
	net     *orchestrate.Net
	ports   []*tap.Port
	bridges []*tap.Behavior
	procs   *orchestrate.Procs
	links   []*mavlink.UDPLink
	results []orchestrate.ProcResult
	closed  bool
}

// The MAVLink ports over host_veth (isolation: netns): the vehicle's
// autopilot listens on 10.100.i.1:MAVLinkHostPort and sends to
// 10.100.i.2:MAVLinkCompanionPort in the namespace (PX4's onboard ports).
const (
	MAVLinkHostPort      = 14580
	MAVLinkCompanionPort = 14540
)

// procDir is where the processes start: the scenario's directory.
func (r *Run) procDir() string {
	if r.sc.Dir == "" {
		return "."
	}
	return r.sc.Dir
}

// checkIsolation finds what would stop isolation: netns before anything
// is set up or written: missing privileges, a live run holding the same
// namespaces, misspelt programs.
func (r *Run) checkIsolation() error {
	if r.sc.Isolation != "netns" {
		return nil
	}
	if err := orchestrate.CheckFree(orchestrate.Prefix(r.sc.Name)); err != nil {
		return fmt.Errorf("isolation: %w", err)
	}
	return r.eachProcess(func(k int, p scenario.Process, i int) error {
		if err := orchestrate.CheckCommand(orchestrate.Render(p.Command, i, "", r.nodes[i].ref.Name), r.procDir()); err != nil {
			return fmt.Errorf("processes[%d] (%s), vehicle %d: %w", k, p.Name, i, err)
		}
		return nil
	})
}

// eachProcess calls f for every process of the scenario (index k) and
// every vehicle i it runs on, until f fails.
func (r *Run) eachProcess(f func(k int, p scenario.Process, i int) error) error {
	for k, p := range r.sc.Processes {
		for i := range r.veh {
			if p.Group != "" && r.nodes[i].ref.Group != p.Group {
				continue
			}
			if err := f(k, p, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// startIsolation sets up every vehicle's namespace and TAP, binds the TAPs
// to the bridges and the MAVLink vehicles to host_veth (startProcesses
// starts the processes later). Whatever it made is in r.iso, also when it
// fails: the caller closes it.
func (r *Run) startIsolation() error {
	if r.sc.Isolation != "netns" {
		return nil
	}
	prefix := orchestrate.Prefix(r.sc.Name)
	nt, err := orchestrate.Up(prefix, len(r.veh), false)
	if err != nil {
		return fmt.Errorf("isolation: %w", err)
	}
	iso := &isolation{r: r, net: nt}
	r.iso = iso
	for i := range r.veh {
		for _, s := range r.nodes[i].slots {
			if b, ok := s.b.(*tap.Behavior); ok {
				p := tap.Open(nt.Vehicles[i].TAP)
				nt.Vehicles[i].TAP = nil // the port owns the file now
				b.Bind(p)
				iso.ports = append(iso.ports, p)
				iso.bridges = append(iso.bridges, b)
			}
		}
	}
	// Each MAVLink vehicle's autopilot is reachable from its namespace over
	// host_veth, like a flight controller wired to the companion computer:
	// it listens on 10.100.i.1:14580 and sends to 10.100.i.2:14540, where
	// MAVSDK (udp://:14540), MAVROS or pymavlink listen by default.
	for i := range r.veh {
		for _, s := range r.nodes[i].slots {
			vb, ok := s.b.(*mavlink.VehicleBehavior)
			if !ok {
				continue
			}
			v := nt.Vehicles[i]
			l, err := mavlink.ListenUDP(netip.AddrPortFrom(v.HostIP, MAVLinkHostPort), []netip.AddrPort{netip.AddrPortFrom(v.NSHost, MAVLinkCompanionPort)})
			if err != nil {
				return fmt.Errorf("isolation: MAVLink link of vehicle %d over host_veth: %w", i, err)
			}
			vb.AttachUDP(l)
			iso.links = append(iso.links, l)
		}
	}
	return nil
}

// startProcesses starts the scenario's processes in the namespaces. It
// runs just before the first tick, so that what they send at once does
// not wait for the run's own start-up.
func (r *Run) startProcesses() error {
	iso := r.iso
	if iso == nil {
		return nil
	}
	var specs []orchestrate.ProcSpec
	r.eachProcess(func(_ int, p scenario.Process, i int) error {
		specs = append(specs, orchestrate.ProcSpec{Name: p.Name, Vehicle: i, Node: r.nodes[i].ref.Name,
			Command: orchestrate.Render(p.Command, i, iso.net.Vehicles[i].NS, r.nodes[i].ref.Name), Restart: p.Restart,
			Stop: time.Duration(p.StopTimeout), Dir: r.procDir()})
		return nil
	})
	if len(specs) == 0 {
		return nil
	}
	procs, err := orchestrate.Start(iso.net, specs, &procOutputs{r: r, pids: map[string]io.Writer{}}, func(msg string) {
		r.log.Info(msg) // from the supervisor goroutines: never into the run's files
	})
	if err != nil {
		return fmt.Errorf("isolation: %w", err)
	}
	iso.procs = procs
	return nil
}

// close stops the processes, closes the TAPs and removes the namespaces.
func (iso *isolation) close() {
	if iso == nil || iso.closed {
		return
	}
	iso.closed = true
	iso.results = iso.procs.Stop()
	for _, l := range iso.links {
		l.Close()
	}
	for _, p := range iso.ports {
		p.Close()
	}
	if err := iso.net.Down(); err != nil {
		iso.r.log.Warn("removing the namespaces", "err", err)
	}
}

// tapOffset returns how late, on average, the frames read from the TAPs
// since the last call entered the simulation (in simulated time).
func (iso *isolation) tapOffset(p *pacer, t sim.Time) (time.Duration, bool) {
	var sum time.Duration
	n := 0
	for _, b := range iso.bridges {
		d, k := b.Lateness()
		sum += d
		n += k
	}
	if n == 0 {
		return 0, false
	}
	return time.Duration(p.factor * float64(sum) / float64(n)), true
}

// procOutputs puts process logs and pid files under procs/ in the run
// directory.
type procOutputs struct {
	r    *Run
	mu   sync.Mutex // restarts come from the supervisors' goroutines
	pids map[string]io.Writer
}

func (o *procOutputs) Logs(base string) (io.Writer, io.Writer, error) {
	if o.r.dir == nil {
		return io.Discard, io.Discard, nil
	}
	out, err := o.r.dir.Unbuffered("procs/" + base + ".out")
	if err != nil {
		return nil, nil, err
	}
	errw, err := o.r.dir.Unbuffered("procs/" + base + ".err")
	if err != nil {
		return nil, nil, err
	}
	return out, errw, nil
}

// PID appends the pid of each start (restarts add lines) to
// procs/<base>.pid.
func (o *procOutputs) PID(base string, pid int) {
	if o.r.dir == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	w := o.pids[base]
	if w == nil {
		var err error
		if w, err = o.r.dir.Unbuffered("procs/" + base + ".pid"); err != nil {
			return
		}
		o.pids[base] = w
	}
	fmt.Fprintln(w, strconv.Itoa(pid))
}
