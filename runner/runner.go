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
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/orchestrate"
	"skyloop/record"
	"skyloop/report"
	"skyloop/sim"
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
	sc := r.Scenario()
	iso := newIsolation(r)
	if err := iso.check(); err != nil {
		r.Close()
		return nil, &engine.OptionError{Err: err}
	}
	var dir *record.Dir
	if dest != "" {
		fsys := opt.FS
		if fsys == nil {
			fsys = record.OS
		}
		if dir, err = record.CreateIn(fsys, dest); err != nil {
			r.Close()
			return nil, err
		}
	}
	var undo closers
	var out *outputs
	keep := true // keep partial files on failure (not when nothing ran)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error (please report with the scenario): %v", p)
		}
		if err != nil {
			undo.run(err)
			r.Close()
			// Every exit completes the files the outputs encode
			// (run.mcap, *.parquet): partial files are readable too.
			if cerr := out.abandon(); cerr != nil {
				if dir != nil && keep {
					err = fmt.Errorf("%w (and completing the partial files: %v)", err, cerr)
				} else {
					r.Logger().Warn("closing the run's outputs", "err", cerr)
				}
			}
			if dir != nil && keep {
				err = dir.Fail(err)
			} else {
				dir.Discard()
			}
		}
	}()
	realtime := r.Realtime()
	if realtime != 0 {
		if err := CheckFactor(realtime); err != nil {
			return nil, fmt.Errorf("realtime: %w", err)
		}
	}
	if dir != nil && realtime > 0 {
		dir.SetAsync() // the disk must not stall ticks
	}
	out, err = openOutputs(dir, sc.Outputs, r.NoFiles(), realtime > 0)
	if err != nil {
		return nil, err
	}
	if dir != nil && sc.Outputs.Plots && !r.NoFiles() {
		names := make([]string, r.Vehicles())
		for i := range names {
			names[i] = r.Nodes()[i].Name
		}
		out.tracks = report.NewTracker(names, 4000)
	}
	var sinks []foxglove.Sink
	if dir != nil && sc.Outputs.MCAP && !r.NoFiles() {
		f, err := dir.File("run.mcap")
		if err != nil {
			return nil, err
		}
		out.mcap = foxglove.NewMCAP(f)
		sinks = append(sinks, out.mcap)
		out.foxAll = true
	}
	if opt.Live != nil {
		sinks = append(sinks, opt.Live)
	}
	if len(sinks) > 0 {
		if out.fox, err = newFoxglove(r, sinks); err != nil {
			return nil, err
		}
	}
	if opt.track || opt.Twin != nil {
		out.keepTrack(r)
	}
	r.SetRecorder(out, out.wantsVehicles())
	if dir != nil {
		r.SetFiles(dir.File)
	}
	env := &edge.Env{Tick: sim.Duration(r.Tick()), Nodes: r.Nodes(), IsVehicle: func(id int) bool { return id >= 0 && id < r.Vehicles() },
		Origin: sc.World.Origin, Dir: procDir(r), Log: r.Logger(), Realtime: realtime, Ready: opt.ExternReady,
		Listen: opt.ExternListen, Remote: opt.ExternRemote}
	if dir != nil {
		env.Output = func(name string) (io.Writer, error) { return dir.Unbuffered(name) }
		env.WorkDir = func(name string) (string, error) {
			p := dir.Path(name)
			if err := os.MkdirAll(p, 0o755); err != nil {
				return "", fmt.Errorf("creating %s: %w", name, err)
			}
			return p, nil
		}
	}
	if opt.Attach != nil {
		var attachErr error
		r.Behaviors(func(i int, b agent.Behavior) {
			if attachErr != nil {
				return
			}
			c, err := opt.Attach(r.Nodes()[i], b)
			if err != nil {
				attachErr = fmt.Errorf("connecting node %s: %w", r.Nodes()[i].Name, err)
				if errors.Is(err, syscall.EADDRINUSE) {
					attachErr = &engine.OptionError{Err: attachErr} // bad input: a port taken
				}
				return
			}
			if c != nil {
				undo.push(func(error) { c.Close() })
			}
		})
		if attachErr != nil {
			keep = false // bad input found before anything ran: write nothing
			return nil, attachErr
		}
	}
	// Namespaces first: components bind to them.
	undo.push(func(error) { iso.close() })
	if err = iso.up(env); err != nil {
		return nil, err
	}
	for _, c := range r.Components() {
		undo.push(func(error) { c.Close() })
		if err = c.Open(env); err != nil {
			return nil, err
		}
	}
	if opt.ExternListen != "" && !env.HasService("extern") {
		return nil, &engine.OptionError{Err: fmt.Errorf("--listen %s: the scenario has no external agents (behaviour type: extern) for other hosts to connect to", opt.ExternListen)}
	}
	for _, s := range env.Services() {
		undo.push(func(cause error) { s.Close(cause) })
		if err = s.Start(); err != nil {
			return nil, err
		}
	}
	if u, ok := r.Backend().(netsim.OutputDirUser); ok && dir != nil {
		u.SetOutputDir(dir.Path(""))
	}
	if u, ok := r.Backend().(netsim.FileUser); ok && dir != nil {
		u.SetFiles(dir.File)
	}
	var first []sim.Phase
	var clock *clockLog
	if realtime > 0 {
		p := newPacer(realtime, r.Logger(), opt.Pace)
		clock = newClockLog(out, p, r.Backend(), bridges(r))
		first = append(first, sim.Phase{Name: "pace", Every: 1, Run: p.wait})
		every := max(int64(10*sim.Millisecond/r.Tick()), 1)
		first = append(first, sim.Phase{Name: "clock", Every: every, Run: clock.sample})
	}
	r.SetWallClock(time.Now) // the worker pool's tuner: the core reads no clock
	if err = r.Start(first...); err != nil {
		return nil, err
	}
	sched := ""
	if realtime > 0 {
		var restore func()
		sched, restore = realtimeThreads()
		r.Logger().Debug("real-time run", "kernel thread", sched)
		undo.push(func(error) { restore() })
	}
	// The processes start just before the first tick, so that what they
	// send at once does not wait for the run's own start-up, and stop
	// first.
	undo.push(func(error) { iso.stopProcesses() })
	if err = iso.startProcesses(); err != nil {
		return nil, err
	}
	if opt.Started != nil {
		opt.Started()
	}
	err = r.Run()
	if opt.Ended != nil {
		opt.Ended()
	}
	if err != nil {
		return nil, err
	}
	undo.run(nil) // processes, services, components, namespaces: before the summary
	core, err := r.Finish()
	if err != nil {
		return nil, err
	}
	if err = out.close(); err != nil {
		return nil, err
	}
	sum := &Summary{Summary: core, Clock: clock.summary(), Scheduling: sched}
	for _, s := range env.Services() {
		if rp, ok := s.(reporter); ok {
			if k, v := rp.Report(); v != nil {
				if sum.Services == nil {
					sum.Services = map[string]any{}
				}
				sum.Services[k] = v
			}
		}
	}
	if sc.Isolation == "netns" {
		sum.Processes = iso.results
		if sum.Processes == nil {
			sum.Processes = []orchestrate.ProcResult{}
		}
	}
	res = &Result{Summary: sum}
	if out.traj != nil {
		res.figures = twin.FromSummary(core, out.done, out.traj)
	}
	if opt.Twin != nil {
		if res.Twin, err = runTwin(opt, dir, res); err != nil {
			return nil, err
		}
	}
	if dir == nil {
		return res, nil
	}
	if out.pcap != nil && out.pcap.Err() != nil {
		return nil, out.pcap.Err()
	}
	if err = writeFiles(r, dir, out, res, opt); err != nil {
		return nil, err
	}
	if err = dir.Commit(); err != nil {
		return nil, err
	}
	res.Dir = dir.Dest()
	if sc.Outputs.Report && !r.NoFiles() {
		writeReport(res.Dir, r.Logger())
	}
	return res, nil
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

// writeFiles writes the run's documents and plots into dir.
func writeFiles(r *engine.Run, dir *record.Dir, out *outputs, res *Result, opt Options) error {
	sc := r.Scenario()
	sum := res.Summary
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
	if out.tracks != nil {
		var obs []geom.Box
		for _, o := range sc.World.Obstacles {
			obs = append(obs, geom.Box{Min: o.Min, Max: o.Max})
		}
		png, err := report.TrajectoryPNG(fmt.Sprintf("%s, seed %d: trajectories (circles: starts, crosses: targets)", sc.Name, r.Seed()), out.tracks.Tracks, obs)
		if err != nil {
			return err
		}
		if err = report.WriteFile(dir.Path("trajectory.png"), png); err != nil {
			return err
		}
		if r.Aerial() && r.Vehicles() <= 12 {
			png, err := report.ProfilePNG(fmt.Sprintf("%s, seed %d: altitude and east offset", sc.Name, r.Seed()), out.tracks.Tracks)
			if err != nil {
				return err
			}
			if err = report.WriteFile(dir.Path("profile.png"), png); err != nil {
				return err
			}
		}
	}
	if res.Twin != nil && out.tracks != nil {
		names := make([]string, r.Vehicles())
		for i := range names {
			names[i] = r.Nodes()[i].Name
		}
		png, err := report.TwinPNG(fmt.Sprintf("%s, seed %d: the run (solid) and its ideal-network twin (dashed)", sc.Name, r.Seed()),
			names, res.figures.Track.Positions, res.Twin.figures.Track.Positions)
		if err != nil {
			return err
		}
		if err = report.WriteFile(dir.Path("twin.png"), png); err != nil {
			return err
		}
	}
	if err := dir.JSON("summary.json", sum); err != nil {
		return err
	}
	m := map[string]any{"scenario": sc.Name, "scenario_file": sc.File, "seed": r.Seed(),
		"duration_ns": r.End(), "ticks": int64(r.End()) / int64(r.Tick()), "workers": r.Workers()}
	if opt.Meta != nil {
		for k, v := range opt.Meta() {
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

// procDir is where launched programs start: the scenario's directory.
func procDir(r *engine.Run) string {
	if d := r.Scenario().Dir; d != "" {
		return d
	}
	return "."
}
