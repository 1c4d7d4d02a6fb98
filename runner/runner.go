// Package runner executes a built run (package engine) and owns everything
// of it that lives outside the simulation: the run directory and its files,
// pacing to the wall clock and real-time scheduling, network namespaces
// and the processes in them, and the edge components (package edge) —
// external agents, MAVLink UDP links, TAP bridges — which it opens before
// the first tick and closes after the last, in reverse order, whatever
// happens.
package runner

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"skyloop/agent"
	"skyloop/edge"
	"skyloop/engine"
	"skyloop/foxglove"
	"skyloop/netsim"
	"skyloop/orchestrate"
	"skyloop/record"
	"skyloop/report"
	"skyloop/scenario"
	"skyloop/sim"
	"skyloop/tables"
	"skyloop/twin"
)

// Options adjust how a run is executed.
type Options struct {
	// Meta, when set, is called at the end for the facts only the caller
	// knows (wall time, host, versions), written to meta.json.
	Meta func() map[string]any
	// Attach, when set, is called for every behaviour before the first
	// tick to connect it to the outside world (a MAVLink UDP port on
	// loopback, say); a non-nil closer it returns is closed after the run.
	Attach func(node agent.NodeRef, b agent.Behavior) (io.Closer, error)
	// ExternReady, when set, is told the Unix socket, the TCP address and
	// the token of the external-agent server once it listens, instead of
	// the message printed for agents that connect on their own.
	ExternReady func(socket, addr, token string)
	// ExternListen, when set, is a TCP address where the extern server
	// also accepts agents and relays from other hosts, over TLS.
	ExternListen string
	// Started and Ended, when set, are called just before the first tick
	// (every service started, every external agent connected) and just
	// after the last: the span of the simulation proper, for speed
	// figures.
	Started, Ended func()
	// ExternRemote, when set, is told that address, the certificate's
	// fingerprint and the token (by default they are printed).
	ExternRemote func(addr, fingerprint, token string)
	// FS is the file system the run directory is written through (nil:
	// the operating system's); tests inject disk faults with it.
	FS record.FS
	// Live, when set, also receives the run's Foxglove messages (the
	// Foxglove WebSocket server of skyloop run --foxglove).
	Live foxglove.Sink
	// Pace, when set, lets a user pause a real-time run and change its
	// real-time factor (the live view's buttons).
	Pace *PaceControl
	// Twin, when set, is the run's ideal-network twin (package twin),
	// built from the twin scenario with the same engine options and
	// checked with twin.Check. Execute runs it after the run, into the run
	// directory's twin/ (with the same Meta and FS, nothing else), and adds
	// the comparison to summary.json (twin) and, with plots, twin.png.
	// Execute closes it, whatever happens.
	Twin *engine.Run
	// track keeps the sampled trajectory and the mission completions (a
	// run compared with its twin, and the twin).
	track bool
}

// Summary is summary.json: the core's summary and what the edges add.
type Summary struct {
	*engine.Summary
	// Clock is each module's offset from the master clock (real-time
	// runs); clock.csv has the samples.
	Clock []ClockSummary `json:"clock,omitempty"`
	// Scheduling is the kernel thread's scheduling policy in real-time
	// runs (SCHED_FIFO when permitted).
	Scheduling string `json:"scheduling,omitempty"`
	// Processes says how each orchestrated process ended (isolation:
	// netns).
	Processes []orchestrate.ProcResult `json:"processes,omitempty"`
	// Twin is what the network cost: the comparison with the run's
	// ideal-network twin (Options.Twin).
	Twin *twin.Report `json:"twin,omitempty"`
	// Services holds what the run's edge services report, by service:
	// the extern server's connections refused before authentication
	// ("extern": {"refused": ...}).
	Services map[string]any `json:"services,omitempty"`
}

// reporter is an edge service with something to say in summary.json.
type reporter interface {
	// Report returns the service's key and its section (nil: nothing).
	Report() (key string, v any)
}

// Result is what Execute returns.
type Result struct {
	// Dir is the committed run directory ("" when no files were written).
	Dir     string
	Summary *Summary
	// Twin is the twin's result (Options.Twin).
	Twin *Result
	// figures are what the run is compared on (kept with Options.Twin,
	// and for the twin itself).
	figures *twin.Figures
}

// closers is a stack of things to undo, run in reverse order.
type closers []func(cause error)

func (c *closers) push(f func(cause error)) { *c = append(*c, f) }

// run undoes everything, last first.
func (c *closers) run(cause error) {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i](cause)
	}
	*c = nil
}

// Execute runs r. With a non-empty dest it writes the run directory there
// atomically (see package record); on failure the partial files are kept
// in dest.incomplete.
func Execute(r *engine.Run, dest string, opt Options) (res *Result, err error) {
	if tw := opt.Twin; tw != nil {
		defer tw.Close() // nothing when it ran
	}
	e := &execution{r: r, opt: opt, keep: true}
	if err := e.openDir(dest); err != nil {
		r.Close()
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error (please report with the scenario): %v", p)
		}
		if err != nil {
			err = e.fail(err)
		}
	}()
	for _, step := range []func() error{
		e.checkRealtime, e.openOutputs, e.attachEdges, e.start, e.run, e.finish, e.runTwin, e.writeFiles, e.commit,
	} {
		if err = step(); err != nil {
			return nil, err
		}
	}
	return e.res, nil
}

// execution is one run of Execute: what its steps share.
type execution struct {
	r    *engine.Run
	opt  Options
	iso  *isolation
	dir  *record.Dir // nil: no run directory
	out  *outputs
	env  *edge.Env
	undo closers
	// keep is whether a failure keeps the partial files (not when
	// nothing ran).
	keep  bool
	clock *clockLog
	sched string // the kernel thread's scheduling (real-time runs)
	res   *Result
}

// openDir checks the isolation and creates the run directory (none
// without dest).
func (e *execution) openDir(dest string) error {
	e.iso = newIsolation(e.r)
	if err := e.iso.check(); err != nil {
		return &engine.OptionError{Err: err}
	}
	if dest == "" {
		return nil
	}
	if e.r.Scenario().Outputs.Format == scenario.Parquet && !e.r.NoFiles() {
		// Before the run directory exists: nothing to keep.
		if err := tables.Check(); err != nil {
			return &engine.OptionError{Err: fmt.Errorf("outputs.format parquet: %w, or write CSV tables (outputs: {format: csv})", err)}
		}
	}
	fsys := e.opt.FS
	if fsys == nil {
		fsys = record.OS
	}
	var err error
	e.dir, err = record.CreateIn(fsys, dest)
	return err
}

// checkRealtime checks the real-time factor; the run directory of a
// real-time run writes asynchronously (the disk must not stall ticks).
func (e *execution) checkRealtime() error {
	rt := e.r.Realtime()
	if rt == 0 {
		return nil
	}
	if err := CheckFactor(rt); err != nil {
		return fmt.Errorf("realtime: %w", err)
	}
	if e.dir != nil && rt > 0 {
		e.dir.SetAsync()
	}
	return nil
}

// fail undoes what the steps did after one failed with err: the edges
// are closed last opened first, the run, every output completed (run.mcap,
// *.parquet: partial files are readable too) and the partial run directory
// kept (or discarded when nothing ran). It returns the error to report.
func (e *execution) fail(err error) error {
	e.undo.run(err)
	e.r.Close()
	keep := e.dir != nil && e.keep
	if cerr := e.out.abandon(); cerr != nil {
		if keep {
			err = fmt.Errorf("%w (and completing the partial files: %v)", err, cerr)
		} else {
			e.r.Logger().Warn("closing the run's outputs", "err", cerr)
		}
	}
	if keep {
		return e.dir.Fail(err)
	}
	e.dir.Discard()
	return err
}

// openOutputs opens the run's outputs (outputTable) and makes them the
// run's recorder.
func (e *execution) openOutputs() error {
	var err error
	e.out, err = openOutputs(e)
	if err != nil {
		return err
	}
	e.r.SetRecorder(e.out, e.out.wantsVehicles())
	if e.dir != nil {
		e.r.SetFiles(e.dir.File)
	}
	return nil
}

// tempDir makes a temporary working directory for a launched program
// called name, in a run that writes no files (edge.Env.TempDir).
func tempDir(name string) (string, func(), error) {
	d, err := os.MkdirTemp("", "skyloop-"+name+"-*")
	if err != nil {
		return "", nil, err
	}
	if abs, err := filepath.Abs(d); err == nil { // a relative TMPDIR
		d = abs
	}
	return d, func() { os.RemoveAll(d) }, nil
}

// attachEdges connects the run to the world outside it: the behaviours
// Options.Attach links, the namespaces, the edge components (the network
// backend first) and the services they share, each closed by the undo
// stack whatever happens.
func (e *execution) attachEdges() error {
	r, dir, opt := e.r, e.dir, e.opt
	e.env = &edge.Env{Tick: sim.Duration(r.Tick()), Nodes: r.Nodes(), IsVehicle: func(id int) bool { return id >= 0 && id < r.Vehicles() },
		Origin: r.Scenario().World.Origin, Dir: procDir(r), Log: r.Logger(), Realtime: r.Realtime(), Ready: opt.ExternReady,
		Listen: opt.ExternListen, Remote: opt.ExternRemote, TempDir: tempDir}
	if dir != nil {
		e.env.Output = func(name string) (io.Writer, error) { return dir.Unbuffered(name) }
		e.env.Create = dir.File
		e.env.WorkDir = func(name string) (string, error) {
			p := dir.Path(name)
			if err := os.MkdirAll(p, 0o755); err != nil {
				return "", fmt.Errorf("creating %s: %w", name, err)
			}
			return p, nil
		}
	}
	if err := e.attach(); err != nil {
		e.keep = false // bad input found before anything ran: write nothing
		return err
	}
	// Namespaces first: components bind to them.
	e.undo.push(func(error) { e.iso.close() })
	if err := e.iso.up(e.env); err != nil {
		return err
	}
	for _, c := range r.Components() {
		e.undo.push(func(error) { c.Close() })
		if err := c.Open(e.env); err != nil {
			return err
		}
	}
	if opt.ExternListen != "" && !e.env.HasService("extern") {
		return &engine.OptionError{Err: fmt.Errorf("--listen %s: the scenario has no external agents (behaviour type: extern) for other hosts to connect to", opt.ExternListen)}
	}
	for _, s := range e.env.Services() {
		e.undo.push(func(cause error) { s.Close(cause) })
		if err := s.Start(); err != nil {
			return err
		}
	}
	if u, ok := r.Backend().(netsim.FileUser); ok && dir != nil {
		u.SetFiles(dir.File)
	}
	return nil
}

// attach calls Options.Attach for every behaviour.
func (e *execution) attach() error {
	if e.opt.Attach == nil {
		return nil
	}
	var attachErr error
	e.r.Behaviors(func(i int, b agent.Behavior) {
		if attachErr != nil {
			return
		}
		node := e.r.Nodes()[i]
		c, err := e.opt.Attach(node, b)
		if err != nil {
			attachErr = fmt.Errorf("connecting node %s: %w", node.Name, err)
			if errors.Is(err, syscall.EADDRINUSE) {
				attachErr = &engine.OptionError{Err: attachErr} // bad input: a port taken
			}
			return
		}
		if c != nil {
			e.undo.push(func(error) { c.Close() })
		}
	})
	return attachErr
}

// start starts the run (pacing and clock sampling first in real-time
// runs) and, just before the first tick, the launched processes, so that
// what they send at once does not wait for the run's own start-up; they
// stop first.
func (e *execution) start() error {
	r := e.r
	realtime := r.Realtime()
	var first []sim.Phase
	if realtime > 0 {
		p := newPacer(realtime, r.Logger(), e.opt.Pace)
		e.clock = newClockLog(e.out, p, r.Backend(), bridges(r))
		first = append(first, sim.Phase{Name: "pace", Every: 1, Run: p.wait})
		every := max(int64(10*sim.Millisecond/r.Tick()), 1)
		first = append(first, sim.Phase{Name: "clock", Every: every, Run: e.clock.sample})
	}
	r.SetWallClock(time.Now) // the worker pool's tuner: the core reads no clock
	if err := r.Start(first...); err != nil {
		return err
	}
	if realtime > 0 {
		var restore func()
		e.sched, restore = realtimeThreads()
		r.Logger().Debug("real-time run", "kernel thread", e.sched)
		e.undo.push(func(error) { restore() })
	}
	e.undo.push(func(error) { e.iso.stopProcesses() })
	return e.iso.startProcesses()
}

// run steps the run to its end.
func (e *execution) run() error {
	if e.opt.Started != nil {
		e.opt.Started()
	}
	err := e.r.Run()
	if e.opt.Ended != nil {
		e.opt.Ended()
	}
	return err
}

// finish closes the edges (processes, services, components, namespaces:
// before the summary), finishes the run, completes the outputs' files and
// makes the result.
func (e *execution) finish() error {
	e.undo.run(nil)
	core, err := e.r.Finish()
	if err != nil {
		return err
	}
	if err = e.out.close(); err != nil {
		return err
	}
	sum := &Summary{Summary: core, Clock: e.clock.summary(), Scheduling: e.sched}
	for _, s := range e.env.Services() {
		if rp, ok := s.(reporter); ok {
			if k, v := rp.Report(); v != nil {
				if sum.Services == nil {
					sum.Services = map[string]any{}
				}
				sum.Services[k] = v
			}
		}
	}
	if e.r.Scenario().Isolation == "netns" {
		sum.Processes = e.iso.results
		if sum.Processes == nil {
			sum.Processes = []orchestrate.ProcResult{}
		}
	}
	e.res = &Result{Summary: sum}
	if t := e.out.track; t != nil {
		e.res.figures = twin.FromSummary(core, t.done, t.traj)
	}
	return nil
}

// runTwin runs the ideal-network twin (Options.Twin).
func (e *execution) runTwin() error {
	if e.opt.Twin == nil {
		return nil
	}
	var err error
	e.res.Twin, err = runTwin(e.opt, e.dir, e.res)
	return err
}

// writeFiles writes the run's documents and figures (none without a run
// directory).
func (e *execution) writeFiles() error {
	if e.dir == nil {
		return nil
	}
	return writeFiles(e)
}

// commit moves the run directory into place and writes report.html
// (outputs.report), which reads the committed files back.
func (e *execution) commit() error {
	if e.dir == nil {
		return nil
	}
	if err := e.dir.Commit(); err != nil {
		return err
	}
	e.res.Dir = e.dir.Dest()
	if e.r.Scenario().Outputs.Report && !e.r.NoFiles() {
		writeReport(e.res.Dir, e.r.Logger())
	}
	return nil
}

// runTwin executes the twin of the run whose result is res into dir's
// twin/ (no files when dir is nil) and adds the comparison to res's
// summary.
func runTwin(opt Options, dir *record.Dir, res *Result) (*Result, error) {
	tw := opt.Twin
	dest, rel := "", ""
	if dir != nil {
		dest, rel = dir.Path("twin"), "twin"
	}
	tres, err := Execute(tw, dest, Options{Meta: opt.Meta, FS: opt.FS, track: true})
	if err != nil {
		return nil, fmt.Errorf("the ideal-network twin: %w", err)
	}
	res.Summary.Twin = &twin.Report{Dir: rel, Network: tres.Summary.Backend, Comparison: *twin.Compare(res.figures, tres.figures)}
	return tres, nil
}

// newFoxglove starts the run's Foxglove messages on sinks: run.mcap
// (outputs: {mcap: true}) and the live server.
func newFoxglove(r *engine.Run, sinks []foxglove.Sink) (*foxglove.Recorder, error) {
	sc := r.Scenario()
	run := foxglove.Run{Vehicles: r.Vehicles(), Origin: sc.World.Origin, Scenario: sc.Name, Seed: r.Seed()}
	for _, n := range r.Nodes() {
		run.Nodes = append(run.Nodes, n.Name)
	}
	for _, o := range sc.World.Obstacles {
		run.Boxes = append(run.Boxes, foxglove.Box{Name: o.Name, Min: o.Min, Max: o.Max})
	}
	for _, n := range sc.Nodes {
		run.Fixed = append(run.Fixed, n.Position)
	}
	return foxglove.NewRecorder(run, sinks...)
}

// writeReport writes report.html into the finished run directory dir. It
// reads the run's files back, so it comes after the commit; a report that
// cannot be made is a warning, never a failed run (skyloop report html
// makes it again).
func writeReport(dir string, log *slog.Logger) {
	page, err := report.RunHTML(dir)
	if err == nil {
		tmp := filepath.Join(dir, ".report.html.tmp")
		if err = os.WriteFile(tmp, page, 0o644); err == nil {
			err = os.Rename(tmp, filepath.Join(dir, "report.html"))
		}
	}
	if err != nil {
		log.Warn("report.html not written; skyloop report html makes it", "dir", dir, "err", err)
	}
}

// writeFiles writes the run's documents into e's run directory, and the
// figures of its sinks (fileSink).
func writeFiles(e *execution) error {
	r, dir, res := e.r, e.dir, e.res
	sc := r.Scenario()
	if err := dir.JSON("config.json", r.Effective()); err != nil {
		return err
	}
	// config.yaml: the same configuration as a scenario file, which
	// `skyloop run` runs again to the same outputs.
	yml, err := r.EffectiveScenario()
	if err != nil {
		return err
	}
	f, err := dir.File("config.yaml")
	if err != nil {
		return err
	}
	if _, err := f.Write(yml); err != nil {
		return fmt.Errorf("writing config.yaml: %w", err)
	}
	if err := e.out.writeFiles(e); err != nil {
		return err
	}
	if err := dir.JSON("summary.json", res.Summary); err != nil {
		return err
	}
	m := map[string]any{"scenario": sc.Name, "scenario_file": sc.File, "seed": r.Seed(),
		"duration_ns": r.End(), "ticks": int64(r.End()) / int64(r.Tick()), "workers": r.Workers()}
	if e.opt.Meta != nil {
		for k, v := range e.opt.Meta() {
			m[k] = v
		}
	}
	return dir.JSON("meta.json", m)
}

// bridges returns the behaviours that report how late frames from outside
// entered the simulation (the TAP bridges of isolation: netns).
func bridges(r *engine.Run) []latecomer {
	var out []latecomer
	r.Behaviors(func(_ int, b agent.Behavior) {
		if l, ok := b.(latecomer); ok {
			out = append(out, l)
		}
	})
	return out
}

// latecomer is implemented by behaviours that inject frames read from the
// outside world: Lateness returns and resets the total wall-clock delay
// between reading frames and injecting them, and their number.
type latecomer interface {
	Lateness() (time.Duration, int)
}

// procDir is where launched programs start: the scenario's directory
// (skyloop's working directory for a scenario given as text), absolute.
func procDir(r *engine.Run) string {
	d := r.Scenario().Dir
	if d == "" {
		d = "."
	}
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}
