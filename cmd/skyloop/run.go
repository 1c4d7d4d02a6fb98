package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"skyloop/engine"
	"skyloop/extern"
	"skyloop/foxglove"
	"skyloop/mavlink/mavnet"
	"skyloop/metrics"
	"skyloop/record"
	"skyloop/runner"
	"skyloop/sim"
	"skyloop/twin"
	"skyloop/version"
	"skyloop/view"
)

type runFlags struct {
	out      string
	seed     seedFlag
	duration string
	workers  int
	noFiles  bool
	quiet    bool
	verbose  bool
	realtime float64
	udp      bool
	udpCfg   mavnet.UDPConfig
	foxglove string
	serve    string
	hosts    []string
	twin     bool
	listen   string
	progress time.Duration // off a terminal: how often to log a progress line
}

// defaultServeAddr is where --serve serves the web view without an address.
const defaultServeAddr = "127.0.0.1:8080"

// defaultFoxgloveAddr is where --foxglove serves without an address
// (Foxglove's default for WebSocket connections).
const defaultFoxgloveAddr = "127.0.0.1:8765"

// seedFlag is --seed: unset means the scenario's seed. It takes the same
// range as the scenario's seed field.
type seedFlag struct {
	v   uint64
	set bool
}

func (s *seedFlag) String() string {
	if !s.set {
		return ""
	}
	return strconv.FormatUint(s.v, 10)
}

func (s *seedFlag) Set(v string) error {
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not a seed: want an integer in 0..%d, the range of the scenario's seed", v, uint64(math.MaxUint64))
	}
	s.v, s.set = n, true
	return nil
}

func (s *seedFlag) Type() string { return "uint" }

func newRunCmd() *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "run SCENARIO",
		Short: "Run a scenario and write its run directory",
		Long: `Run a scenario (a YAML file, or the name of a built-in scenario such as quickstart)
and write the results to a run directory:

  config.json      the effective configuration, every default filled in
  config.yaml      the same as a scenario file: skyloop run config.yaml runs this run again
  meta.json        versions, host, seed, wall-clock time (the only file that differs between identical runs)
  summary.json     metrics: PDR with drop reasons, latency, age of information, overhead,
                   per-vehicle distance/energy, minimum separation, agent reports
  trace.csv        every packet event: event,t_ns,src,dst,seq,t_gen_ns,bytes,kind,reason
  deliveries.csv   every delivery with its arrival time and the tick that consumed it
  vehicles.csv     vehicle states at the sample period
  events.csv       mode changes, arrivals, commands, collisions
  profile.png      altitude and east offset against time (multirotor runs)
  trajectory.png   the paths seen from above
  report.html      the tables and figures in one page (outputs: {report: false} to skip)
  run.mcap         outputs: {mcap: true}: the run for Foxglove
  *.parquet        outputs: {format: parquet}: trace, deliveries and vehicles instead of the CSVs
  mavlink-*.tlog   MAVLink telemetry logs of vehicles with the mavlink behaviour
  packets.pcap     outputs: {pcap: true}: every packet sent, any backend (Wireshark)
  capture.pcap     the backend's own capture (wifi or ns3 with pcap: true)
  procs/<node>.out|err
                   output of external agents' processes (extern behaviour)
  clock.csv        real-time runs: each module's clock offset from the simulation, every 10 ms
  procs/<i>-<name>.out|err|pid
                   isolation: netns: the processes run in vehicle i's namespace
  procs/px4-<i>.out|err, procs/px4-<i>/
                   real PX4 (controller: px4-sitl): its console and its working directory
  procs/ardupilot-<i>.out|err, procs/ardupilot-<i>/
                   real ArduCopter (controller: ardupilot-sitl): its console, eeprom and logs
  twin/            --twin: the ideal-network twin's own run directory
  twin.png         --twin: every vehicle's path in the run (solid) and in the twin (dashed)

With --twin (or outputs: {twin: true} in the scenario) the scenario runs a second
time, after the first, with the same seed, physics and agents on the ideal network
(network: {backend: ideal}, keeping network.epoch, mode and position_period; no loss,
no range limit, delivery at the next tick), into twin/ (no plots or report of its own). summary.json's "twin" section
and the console then say what the network cost, overall and per vehicle: mission
completion time (the mission_done or coverage_done event of a waypoints, stations or
coverage behaviour, or
the last leg a gcs ground station saw done; null when not completed), extra distance
and energy, the excess of every measure's error (gap_err_mean_m, ...), and the
deviation from the twin's trajectory (mean and max distance at the same sample times,
every outputs.sample_period). It costs one more run. Scenarios whose agents reach
outside skyloop are refused: external agents, real firmware (px4-sitl, ardupilot-sitl),
MAVLink UDP links, TAP bridges, isolation: netns, and --realtime.

With --serve[=ADDR] (default 127.0.0.1:8080) the run is shown live
in a browser at http://ADDR/: the vehicles in 3D with trails (and a top view),
the radio links heard in the last second coloured by their delivery ratio,
packet flashes, the selected vehicle's telemetry, the network figures and the
events; add --realtime 1 to watch at the speed of the clock.

With --foxglove[=ADDR] (default 127.0.0.1:8765) the run is also
served live over the Foxglove WebSocket protocol: in Foxglove, open a connection
to ws://ADDR and see the vehicles in the 3D and Map panels, their telemetry, the
network events and the log, updated 25 times a second; add --realtime 1 to
watch at the speed of the clock. The run never waits for Foxglove.

Both serve loopback addresses openly. On any other address (--serve=0.0.0.0:8080,
to watch from another machine) skyloop makes a random token and prints the
address with ?token=...: every request needs it (the page keeps it in a cookie).
Either way a server answers only requests that name it in their Host header (the
listen address; localhost names on loopback; the machine's addresses and host
name on 0.0.0.0; more with --allow-host), so that a web page cannot reach it
through a name of its own (DNS rebinding); the page changes the run only by
same-origin JSON requests, and the WebSocket takes clients with no Origin, the
page itself, the Foxglove app, desktop applications and any client given the
URL with its token.

With --realtime the run is paced to the wall clock, so that people and programs
can take part; with --mavlink-udp every vehicle running the mavlink behaviour is
also reachable over UDP on loopback with PX4 SITL's ports: vehicle i (node id i,
MAVLink system i+1) listens on 127.0.0.1:14580+i and sends its telemetry to
127.0.0.1:14540+i (MAVSDK, pymavlink, offboard programs) and 127.0.0.1:14550
(QGroundControl), and answers whoever talks to it.

Scenarios with isolation: netns (root) give every vehicle a network namespace whose
TAP device crosses the simulated network, run the scenario's processes in them, and
remove them at the end, also after Ctrl-C (docs/isolation.md).

Without --out the directory is runs/<scenario name>/seed<N>/. The directory is
written atomically: it appears only when the run completed. A failed or
interrupted run (SIGINT, SIGTERM, SIGHUP: it stops at the next tick) keeps its
partial files in <dir>.incomplete with the reason in ERROR.txt. skyloop only
replaces an earlier run directory or an empty one, and only if it is still the
same when the run ends (else the finished run goes to <dir>.1 and the run
fails); a second run into a directory being written is refused.

The same scenario and seed always give byte-identical files (meta.json aside),
whatever the number of workers.`,
		Example: `  skyloop run quickstart
  skyloop run scenarios/quickstart.yaml --seed 7 --duration 30s --out /tmp/q7
  skyloop run mavlink-sitl --realtime 1 --mavlink-udp   # then connect QGroundControl
  skyloop run munils-50 --realtime 1 --foxglove         # then connect Foxglove to ws://127.0.0.1:8765
  skyloop run munils-50-wifi --realtime 1 --serve       # then open http://127.0.0.1:8080/
  sudo skyloop run netns-ping                            # real ping between simulated drones`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return badInput("run needs exactly one scenario (a file or a built-in name), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runScenario(cmd, args[0], f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.out, "out", "", "run directory (default runs/<scenario>/seed<N>)")
	fl.Var(&f.seed, "seed", "run seed, 0..18446744073709551615 (default: the scenario's)")
	fl.StringVar(&f.duration, "duration", "", "simulated duration, e.g. 30s (default: the scenario's)")
	fl.IntVar(&f.workers, "workers", 0, "goroutines stepping vehicles (default: the scenario's, or automatic)")
	fl.BoolVar(&f.noFiles, "no-files", false, "skip trace.csv, deliveries.csv and vehicles.csv (metrics stay exact)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print nothing but errors")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log agent diagnostics to stderr")
	fl.DurationVar(&f.progress, "progress-every", defaultProgressEvery, "when stderr is not a terminal (CI, Slurm, nohup): log a progress line (simulated time, x real time, ETA) this often of wall time; 0: never")
	fl.Float64Var(&f.realtime, "realtime", 0, "pace the run to the wall clock at this real-time factor, e.g. 1 (default: as fast as possible)")
	fl.BoolVar(&f.udp, "mavlink-udp", false, "connect every mavlink vehicle to UDP on loopback (PX4 SITL ports)")
	fl.StringVar(&f.foxglove, "foxglove", "", "serve the run live to Foxglove over its WebSocket protocol: --foxglove (on "+defaultFoxgloveAddr+") or --foxglove=ADDR (not loopback: a token is printed, required); use with --realtime")
	fl.Lookup("foxglove").NoOptDefVal = defaultFoxgloveAddr
	fl.StringVar(&f.listen, "listen", "", "also accept external agents and relays from other hosts on this address (host:port, e.g. 0.0.0.0:7000), over TLS: the certificate fingerprint and the token are printed (docs/remote.md)")
	fl.BoolVar(&f.twin, "twin", false, "also run the scenario on an ideal network with the same seed and report what the network cost (summary.json twin, twin/, twin.png)")
	fl.StringVar(&f.serve, "serve", "", "serve the live web view: --serve (on "+defaultServeAddr+") or --serve=ADDR (not loopback: a token is printed, required); Foxglove can connect to the same address; use with --realtime")
	fl.Lookup("serve").NoOptDefVal = defaultServeAddr
	fl.StringSliceVar(&f.hosts, "allow-host", nil, "with --serve or --foxglove: another name (or address) the server is reached by, beyond its listen address's, e.g. a cluster node's DNS name (repeatable)")
	d := mavnet.DefaultUDPConfig()
	f.udpCfg.Host = d.Host
	fl.IntVar(&f.udpCfg.BindBase, "mavlink-bind-base", d.BindBase, "vehicle i listens on this port + i")
	fl.IntVar(&f.udpCfg.OffboardBase, "mavlink-offboard-base", d.OffboardBase, "vehicle i sends telemetry to this port + i")
	fl.IntVar(&f.udpCfg.GCSPort, "mavlink-gcs-port", d.GCSPort, "every vehicle sends telemetry to this port (ground station)")
	return c
}

func runScenario(cmd *cobra.Command, arg string, f runFlags) error {
	// Every flag is checked before anything is read or started.
	var opt engine.Options
	var ropt runner.Options
	if f.seed.set {
		s := f.seed.v
		opt.Seed = &s
	}
	if f.duration != "" {
		d, err := sim.ParseDuration(f.duration)
		if err != nil {
			return badInput("--duration: %v", err)
		}
		opt.Duration = &d
	}
	if f.workers < 0 {
		return badInput("--workers must be >= 0, got %d", f.workers)
	}
	opt.Workers = f.workers
	opt.NoFiles = f.noFiles
	if f.realtime != 0 && runner.CheckFactor(f.realtime) != nil { // NaN fails too
		return badInput("--realtime must be a real-time factor from %v to %v, or 0 for as fast as possible; got %v", runner.MinFactor, runner.MaxFactor, f.realtime)
	}
	opt.Realtime = f.realtime
	if f.listen != "" {
		if _, _, err := net.SplitHostPort(f.listen); err != nil {
			return badInput("--listen %q: want host:port, e.g. 0.0.0.0:7000: %v", f.listen, err)
		}
		if f.twin {
			return badInput("--listen serves external agents, which a --twin run cannot repeat: give one or the other")
		}
		ropt.ExternListen = f.listen
	}
	if f.udp {
		for name, p := range map[string]int{"--mavlink-bind-base": f.udpCfg.BindBase, "--mavlink-offboard-base": f.udpCfg.OffboardBase,
			"--mavlink-gcs-port": f.udpCfg.GCSPort} {
			if p < 1 || p > 65535 {
				return badInput("%s must be a UDP port, got %d", name, p)
			}
		}
	}
	sc, text, err := loadScenarioText(arg)
	if err != nil {
		return err
	}
	if f.udp {
		n := 0
		for _, g := range sc.Vehicles {
			n += g.Count
		}
		for name, p := range map[string]int{"--mavlink-bind-base": f.udpCfg.BindBase, "--mavlink-offboard-base": f.udpCfg.OffboardBase} {
			if p+n > 65535 {
				return badInput("%s must be a UDP port that leaves room for every vehicle (%d), got %d", name, n, p)
			}
		}
		ropt.Attach = mavnet.UDPAttacher(f.udpCfg)
	}
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
	}
	opt.Logger = newLogger(cmd.ErrOrStderr(), level)
	opt.Registry = registry

	r, err := engine.Build(sc, opt)
	if err != nil {
		var oe *engine.OptionError
		if errors.As(err, &oe) {
			return usageError{err}
		}
		return err
	}
	if f.listen != "" && !hasExtern(r) {
		r.Close()
		return badInput("--listen %s: the scenario has no external agents (behaviour type: extern) for other hosts to connect to", f.listen)
	}
	if f.twin || sc.Outputs.Twin {
		if ropt.Twin, err = buildTwin(r, text, opt, f); err != nil {
			r.Close()
			return err
		}
	}
	seed := sc.Seed
	if opt.Seed != nil {
		seed = *opt.Seed
	}
	out := f.out
	if out == "" {
		out = filepath.Join("runs", sc.Name, fmt.Sprintf("seed%d", seed))
	}

	sigs.Graceful()
	opt.Stop = sigs.Stopped

	stderr := cmd.ErrOrStderr()
	if f.udp && !f.quiet {
		listMAVLink(stderr, r, f)
	}
	wallStart := time.Now()
	tty := isTerminal(stderr)
	switch {
	case f.quiet:
	case tty:
		opt.Progress = progressPrinter(stderr, wallStart)
	case f.progress > 0:
		opt.Progress = progressLogger(newLogger(stderr, slog.LevelInfo), sc.Name, wallStart, f.progress)
	}
	r.SetOptions(opt)
	if ropt.Twin != nil {
		ropt.Twin.SetOptions(opt)
	}
	ropt.Meta = func() map[string]any {
		host, _ := os.Hostname()
		return map[string]any{"version": version.Info(), "host": host, "args": os.Args, "realtime": f.realtime,
			"wall_start": wallStart.UTC().Format(time.RFC3339Nano), "wall_seconds": time.Since(wallStart).Seconds()}
	}
	if f.foxglove != "" && f.serve != "" {
		return badInput("--serve already serves Foxglove's protocol on its address: give --serve or --foxglove, not both")
	}
	if f.serve != "" {
		var pace *runner.PaceControl
		if f.realtime > 0 {
			pace = &runner.PaceControl{Stopped: sigs.Stopped}
			ropt.Pace = pace
		}
		token, err := tokenFor(f.serve)
		if err != nil {
			return badInput("--serve: %v", err)
		}
		srv, err := foxglove.NewServer(f.serve, foxglove.ServerOptions{Log: opt.Logger, Pages: view.LivePages(pacer(pace), f.realtime), Token: token, Hosts: f.hosts})
		if err != nil {
			return badInput("--serve: %v", err)
		}
		defer srv.Close()
		ropt.Live = srv
		if !f.quiet {
			q := ""
			if token != "" {
				q = "?token=" + token
			}
			fmt.Fprintf(stderr, "live view: http://%s/%s (Foxglove: ws://%s/%s)\n", srv.Addr(), q, srv.Addr(), q)
			if f.realtime == 0 {
				opt.Logger.Warn("--serve without --realtime: the run may end before the page connects")
			}
		}
	}
	if f.foxglove != "" {
		token, err := tokenFor(f.foxglove)
		if err != nil {
			return badInput("--foxglove: %v", err)
		}
		srv, err := foxglove.NewServer(f.foxglove, foxglove.ServerOptions{Log: opt.Logger, Token: token, Hosts: f.hosts})
		if err != nil {
			return badInput("--foxglove: %v", err)
		}
		defer srv.Close()
		ropt.Live = srv
		if !f.quiet {
			url := srv.URL()
			if token != "" {
				url += "/?token=" + token
			}
			fmt.Fprintf(stderr, "Foxglove: open a Foxglove WebSocket connection to %s (https://app.foxglove.dev/?ds=foxglove-websocket&ds.url=%s)\n", url, url)
			if f.realtime == 0 {
				opt.Logger.Warn("--foxglove without --realtime: the run may end before Foxglove connects")
			}
		}
	}
	res, err := runner.Execute(r, out, ropt)
	if opt.Progress != nil && tty {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if errors.Is(err, sim.ErrStopped) {
		return interrupted{fmt.Errorf("stopped by %s: %w", signalName(), err)}
	}
	var oe *engine.OptionError
	if errors.Is(err, record.ErrNotRunDir) || errors.As(err, &oe) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	if !f.quiet {
		printSummary(cmd.OutOrStdout(), res, time.Since(wallStart))
	}
	return nil
}

// buildTwin builds the ideal-network twin of r (see package twin) from the
// scenario's text with the same options, or says why it cannot be made.
func buildTwin(r *engine.Run, text []byte, opt engine.Options, f runFlags) (*engine.Run, error) {
	sc := r.Scenario()
	if f.udp {
		return nil, badInput("--twin: %v: --mavlink-udp connects the vehicles to programs outside (%s)", twin.ErrUnsupported, twin.Supported)
	}
	tsc, err := twin.Scenario(sc.File, text, sc.Dir, registry.Schema())
	if err != nil {
		return nil, fmt.Errorf("--twin: %w", err)
	}
	tw, err := engine.Build(tsc, opt)
	if err != nil {
		return nil, fmt.Errorf("--twin: building the ideal-network twin: %w", err)
	}
	if err := twin.Check(r, tw); err != nil {
		tw.Close()
		return nil, badInput("--twin: %v", err)
	}
	return tw, nil
}

// progressPrinter returns a progress callback that redraws one status line
// at most twice a second.
func progressPrinter(w io.Writer, start time.Time) func(now, end sim.Time) {
	last := time.Time{}
	return func(now, end sim.Time) {
		if time.Since(last) < 500*time.Millisecond {
			return
		}
		last = time.Now()
		el := time.Since(start).Seconds()
		speed := now.Seconds() / max(el, 1e-9)
		fmt.Fprintf(w, "\r\033[Ksimulated %v of %v (%.0f%%), %sx real time", sim.Duration(now), sim.Duration(end),
			100*float64(now)/float64(end), runSpeed(speed))
	}
}

// runSpeed formats a run's speed (x real time): whole numbers from 1x,
// two significant digits below (a 10,000-drone run goes at 0.02x, not
// "0x").
func runSpeed(x float64) string {
	if x < 1 {
		return strconv.FormatFloat(x, 'g', 2, 64)
	}
	return strconv.FormatFloat(x, 'f', 0, 64)
}

func printSummary(w io.Writer, res *runner.Result, wall time.Duration) {
	s := res.Summary
	simS := s.DurationNs.Seconds()
	fmt.Fprintf(w, "%s seed %d: %v simulated in %.2fs (%sx real time), %d nodes, %s network\n",
		s.Scenario, s.Seed, sim.Duration(s.DurationNs), wall.Seconds(), runSpeed(simS/max(wall.Seconds(), 1e-9)), s.Nodes, s.Backend)
	t := s.Network.Total
	fmt.Fprintf(w, "network: %d packets sent, %d of %d expected receptions (PDR %.4f)", t.Tx, t.Rx, t.Expected, t.PDR)
	if len(t.Drops) > 0 {
		var parts []string
		for k, v := range t.Drops {
			parts = append(parts, fmt.Sprintf("%s %d", k, v))
		}
		sort.Strings(parts)
		fmt.Fprintf(w, "; drops: %s", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	if t.Latency.Count > 0 {
		fmt.Fprintf(w, "latency: mean %s, p50 %s, p95 %s, max %s\n", ms(t.Latency.Mean), ms(float64(t.Latency.P50)),
			ms(float64(t.Latency.P95)), ms(float64(t.Latency.Max)))
	}
	kinds := make([]string, 0, len(s.Network.ByKind))
	for k := range s.Network.ByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		ks := s.Network.ByKind[k]
		fmt.Fprintf(w, "  %-6s tx %7d  PDR %.4f  p95 %s  %.0f B/s (IP)\n", k, ks.Tx, ks.PDR, ms(float64(ks.Latency.P95)), ks.Overhead.IPBytesPerS)
	}
	if a := s.Network.AoI; a != nil {
		fmt.Fprintf(w, "age of information (state): mean %.3fs over %d pairs (min %.3fs, max %.3fs)\n", a.MeanS, a.Pairs, a.MinS, a.MaxS)
	}
	var dist, energy float64
	for _, v := range s.Vehicles {
		dist += v.DistanceM
		energy += v.EnergyJ
	}
	fmt.Fprintf(w, "vehicles: %d, %.1f m travelled, %.1f J used", len(s.Vehicles), dist, energy)
	if sp := s.Separation; sp != nil {
		fmt.Fprintf(w, "; closest approach %.2f m (vehicles %d and %d at %v), %d collisions", sp.MinM, sp.Pair[0], sp.Pair[1], sim.Duration(sp.TNs), sp.Collisions)
	}
	fmt.Fprintln(w)
	for _, name := range slices.Sorted(maps.Keys(s.Measures)) {
		switch m := s.Measures[name].(type) {
		case metrics.PlatoonResult:
			fmt.Fprintf(w, "measure %s: platoon %s, gap error mean %.3f m, max %.3f m\n", name, m.Group, m.GapErrMeanM, m.GapErrMaxM)
		case metrics.FormationResult:
			fmt.Fprintf(w, "measure %s: formation %s (%s, %d vehicles), error mean %.3f m, max %.3f m, final %.3f m", name, m.Group, m.Mode,
				m.Vehicles, m.ErrMeanM, m.ErrMaxM, m.ErrFinalM)
			switch {
			case m.SettledS < 0:
				fmt.Fprintf(w, ", not settled within %.2f m", m.ToleranceM)
			default:
				fmt.Fprintf(w, ", within %.2f m from %.2fs", m.ToleranceM, m.SettledS)
			}
			if m.SpacingMinM != nil {
				fmt.Fprintf(w, "; spacing %.2f-%.2f m", *m.SpacingMinM, *m.SpacingMaxM)
			}
			if m.BehindMean != nil {
				fmt.Fprintf(w, ", behind %.2f", *m.BehindMean)
			}
			fmt.Fprintf(w, "; closest approach %.2f m\n", m.ClosestM)
		}
	}
	for _, name := range sortedAgentNames(s.Agents) {
		if g, ok := s.Agents[name]["gcs"].(map[string]any); ok {
			fmt.Fprintf(w, "ground station %s: %v of %d vehicles completed all %v legs\n", name, g["vehicles_done"], len(s.Vehicles), g["legs"])
		}
		if c, ok := s.Agents[name]["coverage"].(map[string]any); ok {
			printCoverage(w, name, c)
		}
		if g, ok := s.Agents[name]["mavlink_gcs"].(map[string]any); ok {
			for _, v := range slices.Sorted(maps.Keys(g)) {
				r, ok := g[v].(map[string]any)
				if !ok {
					continue
				}
				fmt.Fprintf(w, "MAVLink station %s -> %s: script complete %v", name, v, r["complete"])
				if d, ok := r["commands_done_s"]; ok {
					fmt.Fprintf(w, ", upload+arm+start done after %.3fs", d)
				}
				if d, ok := r["mission_done_s"]; ok {
					fmt.Fprintf(w, ", landed after %.1fs", d)
				}
				fmt.Fprintf(w, " (%v frames sent)\n", r["sends"])
			}
		}
		if m, ok := s.Agents[name]["mavlink"].(map[string]any); ok {
			if ms, ok := m["milestones_s"].(map[string]float64); ok && len(ms) > 0 {
				var parts []string
				for _, k := range []string{"ARM", "TAKEOFF", "LOITER", "LAND", "DISARM"} {
					if t, ok := ms[k]; ok {
						parts = append(parts, fmt.Sprintf("%s %.2fs", k, t))
					}
				}
				fmt.Fprintf(w, "MAVLink %s (system %v): %s\n", name, m["system_id"], strings.Join(parts, ", "))
			}
		}
	}
	for _, c := range s.Clock {
		fmt.Fprintf(w, "clock %s: offset from the simulation mean |%.3f ms|, p99 %.3f ms, max %.3f ms, drift %+.1f µs/s over %d samples\n",
			c.Module, c.MeanAbs/1e6, c.P99Ns/1e6, c.MaxNs/1e6, c.DriftNsPerS/1e3, c.Samples)
	}
	if len(s.Processes) > 0 {
		byCode := map[string]int{}
		var keys []string
		for _, p := range s.Processes {
			k := fmt.Sprintf("%s exit %d", p.Name, p.ExitCode)
			switch {
			case p.Signal != "" && p.StoppedByRun:
				k = fmt.Sprintf("%s stopped by the run (%s)", p.Name, p.Signal)
			case p.StoppedByRun:
				k = fmt.Sprintf("%s stopped by the run (exit %d)", p.Name, p.ExitCode)
			case p.Signal != "":
				k = fmt.Sprintf("%s killed by %s", p.Name, p.Signal)
			case p.Error != "":
				k = fmt.Sprintf("%s failed: %s", p.Name, p.Error)
			}
			if byCode[k] == 0 {
				keys = append(keys, k)
			}
			byCode[k]++
		}
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%d x %s", byCode[k], k)
		}
		fmt.Fprintf(w, "processes: %s (logs in procs/)\n", strings.Join(parts, ", "))
	}
	if e, ok := s.Services["extern"].(map[string]any); ok {
		if r, ok := e["refused"].(extern.RefusalReport); ok && r.Total > 0 {
			fmt.Fprintf(w, "extern: connections refused before authentication: %s (the run went on; the log has them)\n", r)
		}
	}
	if tw := s.Twin; tw != nil {
		printTwin(w, tw)
	}
	if res.Dir != "" {
		fmt.Fprintf(w, "results: %s\n", res.Dir)
	}
}

// printTwin prints what the network cost, from the comparison with the
// ideal-network twin.
func printTwin(w io.Writer, tw *twin.Report) {
	o := tw.Overall
	where := ""
	if tw.Dir != "" {
		where = " in " + tw.Dir + "/"
	}
	fmt.Fprintf(w, "network cost (vs the ideal-network twin%s):\n", where)
	if o.Missions > 0 {
		fmt.Fprintf(w, "  mission completion: %s (twin %s): %s; %d of %d vehicles completed (twin %d)\n",
			secs(o.CompletionS, false), secs(o.TwinCompletionS, false), secs(o.CompletionDeltaS, true), o.Completed, o.Missions, o.TwinCompleted)
	} else {
		fmt.Fprintln(w, "  mission completion: no vehicle reported a mission done")
	}
	fmt.Fprintf(w, "  extra distance %+.2f m, extra energy %+.1f J", o.ExtraDistanceM, o.ExtraEnergyJ)
	if o.TrajDevMeanM != nil {
		fmt.Fprintf(w, "; deviation from the twin's trajectory: mean %.3f m, max %.3f m", *o.TrajDevMeanM, *o.TrajDevMaxM)
	}
	fmt.Fprintln(w)
	for _, m := range slices.Sorted(maps.Keys(tw.Measures)) {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(tw.Measures[m])) {
			parts = append(parts, fmt.Sprintf("%s %+.4f", k, tw.Measures[m][k]))
		}
		fmt.Fprintf(w, "  measure %s excess: %s\n", m, strings.Join(parts, ", "))
	}
	if len(tw.Vehicles) > 20 {
		fmt.Fprintf(w, "  (per vehicle: summary.json twin.vehicles)\n")
		return
	}
	fmt.Fprintf(w, "  %-12s %14s %12s %12s %12s %12s\n", "vehicle", "completion", "distance m", "energy J", "dev mean m", "dev max m")
	for _, v := range tw.Vehicles {
		dm, dx := "-", "-"
		if v.TrajDevMeanM != nil {
			dm, dx = fmt.Sprintf("%.3f", *v.TrajDevMeanM), fmt.Sprintf("%.3f", *v.TrajDevMaxM)
		}
		fmt.Fprintf(w, "  %-12s %14s %+12.2f %+12.1f %12s %12s\n", v.Name, secs(v.CompletionDeltaS, true), v.ExtraDistanceM, v.ExtraEnergyJ, dm, dx)
	}
}

// secs formats a time in seconds, or "never"/"-" when there is none.
func secs(s *float64, delta bool) string {
	switch {
	case s == nil && delta:
		return "-"
	case s == nil:
		return "never"
	case delta:
		return fmt.Sprintf("%+.3fs", *s)
	}
	return fmt.Sprintf("%.3fs", *s)
}

// listMAVLink tells the user where the MAVLink vehicles listen.
func listMAVLink(w io.Writer, r *engine.Run, f runFlags) {
	n := 0
	for _, node := range r.Nodes() {
		if !r.HasBehavior(node.ID, "mavlink") {
			continue
		}
		i := int(node.ID)
		fmt.Fprintf(w, "MAVLink %s: system %d, udp %s:%d -> :%d (offboard/SDK), :%d (ground station)\n", node.Name, i+1,
			f.udpCfg.Host, f.udpCfg.BindBase+i, f.udpCfg.OffboardBase+i, f.udpCfg.GCSPort)
		n++
	}
	if n == 0 {
		fmt.Fprintln(w, "warning: --mavlink-udp but no vehicle runs the mavlink behaviour")
	}
	if f.realtime == 0 {
		fmt.Fprintln(w, "warning: --mavlink-udp without --realtime: simulated time runs as fast as the computer allows")
	}
}

func sortedAgentNames(m map[string]map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func ms(ns float64) string { return fmt.Sprintf("%.3fms", ns/1e6) }

// isTerminal reports whether w is a character device (an interactive
// terminal), where a redrawn progress line makes sense.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// pacer returns p as the view's Pacer, nil when there is none (a nil
// *runner.PaceControl in the interface would not be nil).
func pacer(p *runner.PaceControl) view.Pacer {
	if p == nil {
		return nil
	}
	return p
}

// tokenFor returns a fresh random token for a server on addr when addr is
// not loopback (anyone who can reach it needs the token), else "".
func tokenFor(addr string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", addr, err)
	}
	if foxglove.IsLoopback(host) {
		return "", nil
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// printCoverage prints a coverage behaviour's plan and flight.
func printCoverage(w io.Writer, name string, c map[string]any) {
	pl, _ := c["planned"].(map[string]any)
	fmt.Fprintf(w, "coverage %s (%v): planned %v of %v cells, %.1f m, %v turns (%.0f deg), %.1f J (planning model)\n",
		name, c["planner"], pl["cells"], pl["free_cells"], pl["distance_m"], pl["turns"], pl["turn_deg"], pl["energy_j"])
	fl, ok := c["flown"].(map[string]any)
	if !ok {
		fmt.Fprintf(w, "  flight not finished before the end of the run\n")
		return
	}
	fmt.Fprintf(w, "  flown: %.1f m in %.1f s (%.2f m/s), %.0f deg turned, %.1f J (planning model), %.0f J (physics)\n",
		fl["distance_m"], fl["time_s"], fl["avg_speed_mps"], fl["turn_deg"], fl["planning_energy_j"], fl["energy_j"])
}

// hasExtern reports whether the run has external agents or an external
// network simulator: what --listen serves.
func hasExtern(r *engine.Run) bool {
	for _, c := range r.Components() {
		switch c.(type) {
		case *extern.Behavior, *extern.NetBackend:
			return true
		}
	}
	return false
}
