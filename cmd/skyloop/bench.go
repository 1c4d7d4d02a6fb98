package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"skyloop/engine"
	"skyloop/netsim"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/sim"
)

// benchFlags are bench's command-line settings.
type benchFlags struct {
	runs, workers, vehicles int
	memProfileRate          int
	files, contend, asJSON  bool
	phases                  bool
	cpuProfile, memProfile  string
	duration, warmup        string
	sets                    []string
}

func newBenchCmd() *cobra.Command {
	var fl benchFlags
	c := &cobra.Command{
		Use:   "bench [SCENARIO]",
		Short: "Measure whole-run speed (default: the bench-swarm100 scenario)",
		Long: `Run a scenario several times without writing a run directory and report the
median speed: simulated seconds per wall second (x real time), nanoseconds per
vehicle-tick and per delivery, heap allocations per tick (from the start,
or the end of the warm-up, to the last tick: the summary built after it is
not counted), and memory per
vehicle: the live heap the built run holds (Go's HeapInuse after a
garbage collection, less what was in use before the build), and what it
holds at the end of the run, divided by the vehicle count. Over the native
Wi-Fi model it also reports the radio model's work, the same in every run:
frames on the air and their arrivals at the receivers in reception range
(each a PHY decision) per measured simulated second, and the wall time per
arrival, which is what a packet-level radio model's cost grows with.

--vehicles N sets the vehicle count of the scenario's vehicle group (the
scenario must have exactly one); a grid spawn layout gets ceil(sqrt(N))
columns, so the swarm stays square with the same spacing. --duration
sets the simulated duration. --set PATH=VALUE changes any field, with the
paths of a sweep (repeatable). --warmup D (whole seconds) leaves the first
D of simulated time out of the wall times, the speed, the time per
vehicle-tick and the allocations: a beacon with a stagger starts vehicle
i at i*stagger, so N vehicles reach their full load only after that.
scripts/scaling.sh runs the scaling matrix for docs/performance.md with
these flags.

--phases also reports where a tick's wall time goes: every phase of the
tick (record, world, network, agents, vehicles, positions, progress) with
its wall time per tick, its share of the measured wall time, and per call
(a phase that runs every 10 ticks costs ten times its per-tick figure
when it runs). Over several workers the network may step ahead beside
the vehicles: that step then counts in the vehicles phase.

--json prints one JSON object with the figures instead of the text.

Without --files, per-packet and per-sample CSV output is skipped (metrics stay
exact), as in the core's benchmark target; with --files the CSV streams are
formatted and written to a temporary directory.

With --contend a CPU-bound process runs beside the benchmark for its whole
duration, as on a machine where something else is busy: compare --workers 1
and 2 (and the default) with and without it.

To find what allocates once a run is warm, write two allocation profiles
recording every allocation (--memprofile FILE --memprofilerate 1) of the
same run with two durations and subtract one from the other:
go tool pprof -sample_index=alloc_objects -diff_base SHORT -top LONG.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runBench(cmd, args, &fl) },
	}
	c.Flags().IntVar(&fl.runs, "runs", 3, "number of runs (the median is reported)")
	c.Flags().IntVar(&fl.workers, "workers", 0, "goroutines stepping vehicles (default: the scenario's, or automatic, as skyloop run)")
	c.Flags().BoolVar(&fl.contend, "contend", false, "run a CPU-bound process beside the benchmark (a busy machine)")
	c.Flags().BoolVar(&fl.files, "files", false, "also write the per-packet and per-sample CSV files")
	c.Flags().IntVar(&fl.vehicles, "vehicles", 0, "vehicle count of the scenario's single vehicle group (default: the scenario's)")
	c.Flags().StringVar(&fl.duration, "duration", "", "simulated duration, e.g. 10s (default: the scenario's)")
	c.Flags().StringVar(&fl.warmup, "warmup", "", "leave this much simulated time, whole seconds, out of the measurement (e.g. 1s)")
	c.Flags().StringArrayVar(&fl.sets, "set", nil, "change the scenario: PATH=VALUE, as a sweep's set (repeatable), e.g. vehicles[0].behaviors[beacon].stagger=100us")
	c.Flags().BoolVar(&fl.asJSON, "json", false, "print the figures as one JSON object")
	c.Flags().BoolVar(&fl.phases, "phases", false, "also report the wall time of each phase of the tick (after the warm-up, all runs)")
	c.Flags().StringVar(&fl.cpuProfile, "cpuprofile", "", "write a CPU profile of all runs to this file (go tool pprof)")
	c.Flags().StringVar(&fl.memProfile, "memprofile", "", "write an allocation profile of all runs to this file (go tool pprof -sample_index=alloc_space)")
	c.Flags().IntVar(&fl.memProfileRate, "memprofilerate", 4096, "with --memprofile, record one allocation per this many bytes allocated; 1 records every one (exact counts, slower), to find what allocates per tick")
	return c
}

// benchPlan is what bench measures: the scenario, its simulated duration
// (dur overrides the scenario's when set, end is the one that applies)
// and the warm-up left out of the measurement.
type benchPlan struct {
	sc     *scenario.Scenario
	dur    *sim.Duration
	end    sim.Duration
	warmup sim.Duration
}

// runBench is bench: it checks the flags, measures fl.runs runs and
// prints the figures.
func runBench(cmd *cobra.Command, args []string, fl *benchFlags) error {
	p, err := fl.plan(cmd, args)
	if err != nil {
		return err
	}
	sigs.Graceful()
	if fl.contend {
		stop, err := startSpinner()
		if err != nil {
			return err
		}
		defer stop()
	}
	if fl.cpuProfile != "" {
		stop, err := startCPUProfile(fl.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if fl.memProfile != "" {
		runtime.MemProfileRate = fl.memProfileRate
	}
	samples := make([]benchSample, 0, fl.runs)
	for i := 0; i < fl.runs; i++ {
		if sigs.Stopped() {
			return interrupted{fmt.Errorf("stopped by %s after %d of %d runs", signalName(), i, fl.runs)}
		}
		s, err := benchOnce(p, fl, i)
		if err != nil {
			return err
		}
		samples = append(samples, s)
	}
	if fl.memProfile != "" {
		if err := writeHeapProfile(fl.memProfile); err != nil {
			return err
		}
	}
	f := benchSummary(samples, fl, p.warmup)
	out := cmd.OutOrStdout()
	if fl.asJSON {
		b, err := json.Marshal(f)
		if err != nil {
			return fmt.Errorf("bench: encoding the figures: %w", err)
		}
		fmt.Fprintf(out, "%s\n", b)
		return nil
	}
	last := samples[len(samples)-1].res.Summary
	printBench(out, f, sim.Duration(last.DurationNs), p.warmup)
	return nil
}

// plan checks the flags and loads the scenario (args[0], or
// bench-swarm100).
func (fl *benchFlags) plan(cmd *cobra.Command, args []string) (benchPlan, error) {
	var p benchPlan
	name := "bench-swarm100"
	if len(args) == 1 {
		name = args[0]
	}
	if fl.runs < 1 {
		return p, badInput("--runs must be >= 1, got %d", fl.runs)
	}
	if fl.workers < 0 {
		return p, badInput("--workers must be >= 0, got %d", fl.workers)
	}
	if fl.memProfileRate < 1 {
		return p, badInput("--memprofilerate must be >= 1, got %d", fl.memProfileRate)
	}
	if cmd.Flags().Changed("vehicles") && fl.vehicles < 1 {
		return p, badInput("--vehicles must be >= 1, got %d", fl.vehicles)
	}
	if fl.duration != "" {
		d, err := sim.ParseDuration(fl.duration)
		if err != nil {
			return p, badInput("--duration: %v", err)
		}
		p.dur = &d
	}
	sc, err := benchScenario(name, fl.vehicles, fl.sets)
	if err != nil {
		return p, err
	}
	// The benchmark times the run; report.html is written after it
	// from its files (with --files), which is not the run's speed.
	sc.Outputs.Report = false
	p.sc, p.end = sc, sc.Duration
	if p.dur != nil {
		p.end = *p.dur
	}
	if fl.warmup != "" {
		if p.warmup, err = sim.ParseDuration(fl.warmup); err != nil {
			return p, badInput("--warmup: %v", err)
		}
		if p.warmup < 0 || p.warmup%sim.Second != 0 || p.warmup >= p.end {
			return p, badInput("--warmup %v must be a whole number of seconds, less than the %v simulated", p.warmup, p.end)
		}
	}
	return p, nil
}

// startCPUProfile starts a CPU profile into the file path; stop ends it
// and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// benchSample is what one measured run gives.
type benchSample struct {
	// wall is the wall time from the end of the warm-up (the start
	// without one) to the end of the run, fullWall from the start.
	wall, fullWall float64
	// heapBuilt and heapEnd are the live heap bytes the run holds once
	// built and at its end.
	heapBuilt, heapEnd float64
	// mallocs and ticks are the heap allocations and ticks measured.
	mallocs uint64
	ticks   int64
	workers int
	res     *runner.Result
	// work is what the network's radio model did in the measured span
	// (netsim.WorkCounter; zero for other backends).
	work netsim.Work
	// phases are the phases' calls and wall times in the measured span
	// (with --phases).
	phases []sim.PhaseTime
}

// benchOnce builds and runs the scenario once (run i) and measures it.
func benchOnce(p benchPlan, fl *benchFlags, i int) (benchSample, error) {
	var s benchSample
	var mb, m0, m1, me, mk runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&mb)
	// The measurement starts after the warm-up: the engine
	// reports progress at the end of every simulated second.
	// Allocations are counted up to the last tick (the
	// progress report at the end), without the summary.
	var warmed time.Time
	kernelDone := false
	var r *engine.Run
	var w0, w1 netsim.Work // the radio model's work at the warm-up's end and the run's
	work := func() netsim.Work {
		if wc, ok := r.Backend().(netsim.WorkCounter); ok {
			return wc.Work()
		}
		return netsim.Work{}
	}
	opt := engine.Options{NoFiles: !fl.files, Workers: fl.workers, Duration: p.dur, Registry: registry}
	opt.Progress = func(now, end sim.Time) {
		if p.warmup > 0 && now == sim.Time(p.warmup) {
			runtime.ReadMemStats(&m0)
			warmed = time.Now()
			w0 = work()
			if fl.phases {
				r.TimePhases(time.Now) // from zero
			}
		}
		if now == end {
			runtime.ReadMemStats(&mk)
			kernelDone = true
			w1 = work()
		}
	}
	r, err := engine.Build(p.sc, opt)
	if err != nil {
		return s, benchError(err)
	}
	if fl.phases {
		r.TimePhases(time.Now)
	}
	dir := ""
	if fl.files {
		dir = fmt.Sprintf("%s/skyloop-bench-%d", tempDir(), i)
	}
	runtime.GC()
	runtime.ReadMemStats(&m0)
	s.heapBuilt = float64(m0.HeapInuse) - float64(mb.HeapInuse)
	start := time.Now()
	res, err := runner.Execute(r, dir, runner.Options{})
	stop := time.Now()
	runtime.ReadMemStats(&m1)
	if err != nil {
		return s, benchError(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&me)
	runtime.KeepAlive(r)
	s.heapEnd = float64(me.HeapInuse) - float64(mb.HeapInuse)
	if dir != "" {
		removeAll(dir)
	}
	if p.warmup > 0 && warmed.IsZero() {
		return s, fmt.Errorf("bench: the run did not report the end of its warm-up at %v", p.warmup)
	}
	if warmed.IsZero() {
		warmed = start
	}
	s.wall = stop.Sub(warmed).Seconds()
	s.fullWall = stop.Sub(start).Seconds()
	s.workers = r.Workers()
	if kernelDone {
		m1.Mallocs = mk.Mallocs
	}
	s.mallocs = m1.Mallocs - m0.Mallocs
	s.work = netsim.Work{Transmissions: w1.Transmissions - w0.Transmissions, Arrivals: w1.Arrivals - w0.Arrivals}
	s.ticks = res.Summary.Ticks - int64(p.warmup/p.sc.Tick)
	s.res = res
	s.phases = r.PhaseTimes()
	return s, nil
}

// benchError is err of building or running the scenario, an option's
// error as a usage error.
func benchError(err error) error {
	var oe *engine.OptionError
	if errors.As(err, &oe) {
		return usageError{err}
	}
	return err
}

// benchSummary computes the figures of the runs samples (at least one).
func benchSummary(samples []benchSample, fl *benchFlags, warmup sim.Duration) benchFigures {
	var walls, fullWalls, heapBuilt, heapEnd []float64
	var mallocs uint64
	var ticks int64
	for _, s := range samples {
		walls = append(walls, s.wall)
		fullWalls = append(fullWalls, s.fullWall)
		heapBuilt = append(heapBuilt, s.heapBuilt)
		heapEnd = append(heapEnd, s.heapEnd)
		mallocs += s.mallocs
		ticks += s.ticks
	}
	last := samples[len(samples)-1]
	slices.Sort(walls)
	med := walls[len(walls)/2]
	s := last.res.Summary
	f := benchFigures{
		Scenario:   s.Scenario,
		Vehicles:   len(s.Vehicles),
		Workers:    last.workers,
		SimSeconds: sim.Duration(s.DurationNs).Seconds(),
		Warmup:     warmup.Seconds(),
		Runs:       fl.runs,
		Files:      fl.files,
		Contend:    fl.contend,
		WallMedian: med,
		WallMin:    walls[0],
		WallMax:    walls[len(walls)-1],
		Deliveries: s.Network.Total.Rx,
		Allocs:     float64(mallocs) / float64(ticks),
	}
	f.XRealtime = (f.SimSeconds - f.Warmup) / med
	if f.Vehicles > 0 {
		f.NsVehicleTick = med * 1e9 / float64(ticks/int64(fl.runs)) / float64(f.Vehicles)
		f.HeapPerVehicle = median(heapBuilt) / float64(f.Vehicles)
		f.HeapEndPerVehicle = median(heapEnd) / float64(f.Vehicles)
	}
	if f.Deliveries > 0 {
		f.NsDelivery = median(fullWalls) * 1e9 / float64(f.Deliveries)
	}
	if w := last.work; w.Arrivals > 0 {
		measured := f.SimSeconds - f.Warmup
		f.TransmissionsPerS = float64(w.Transmissions) / measured
		f.ArrivalsPerS = float64(w.Arrivals) / measured
		f.NsArrival = med * 1e9 / float64(w.Arrivals)
	}
	f.Phases = benchPhases(samples, ticks)
	return f
}

// benchPhase is one phase of the tick over every run's measured span:
// its calls, its wall time, per tick measured and per call, and its share
// of the runs' measured wall time.
type benchPhase struct {
	Name      string  `json:"name"`
	Calls     int64   `json:"calls"`
	WallS     float64 `json:"wall_s"`
	UsPerTick float64 `json:"us_per_tick"`
	UsPerCall float64 `json:"us_per_call"`
	Share     float64 `json:"share"`
}

// benchPhases sums the phase times of the runs samples (ticks measured
// in all); nil without --phases.
func benchPhases(samples []benchSample, ticks int64) []benchPhase {
	var out []benchPhase
	var wall float64
	for _, s := range samples {
		wall += s.wall
		for i, pt := range s.phases {
			if i == len(out) {
				out = append(out, benchPhase{Name: pt.Name})
			}
			out[i].Calls += pt.Calls
			out[i].WallS += pt.Wall.Seconds()
		}
	}
	for i := range out {
		ph := &out[i]
		if ticks > 0 {
			ph.UsPerTick = ph.WallS * 1e6 / float64(ticks)
		}
		if ph.Calls > 0 {
			ph.UsPerCall = ph.WallS * 1e6 / float64(ph.Calls)
		}
		if wall > 0 {
			ph.Share = ph.WallS / wall
		}
	}
	return out
}

// printBench prints the figures f as text; simulated is the run's
// simulated duration, warmup the warm-up left out.
func printBench(out io.Writer, f benchFigures, simulated, warmup sim.Duration) {
	fmt.Fprintf(out, "%s: %d vehicles, %v simulated, %d deliveries, files %v, %d runs, %d workers%s\n", f.Scenario, f.Vehicles,
		simulated, f.Deliveries, onOff(f.Files), f.Runs, f.Workers, contendText(f.Contend))
	after := ""
	if warmup > 0 {
		after = fmt.Sprintf(" after a %v warm-up", warmup)
	}
	fmt.Fprintf(out, "wall time%s: median %.3fs (min %.3fs, max %.3fs)\n", after, f.WallMedian, f.WallMin, f.WallMax)
	fmt.Fprintf(out, "speed: %sx real time\n", speedText(f.XRealtime))
	if f.Vehicles > 0 {
		fmt.Fprintf(out, "%.1f ns per vehicle-tick\n", f.NsVehicleTick)
	}
	if f.Deliveries > 0 {
		fmt.Fprintf(out, "%.1f ns per delivery (whole run time / deliveries)\n", f.NsDelivery)
	}
	if f.ArrivalsPerS > 0 {
		fmt.Fprintf(out, "radio model: %.0f frames on the air and %.0f arrivals at receivers in range per simulated second, %.1f ns per arrival (wall time / arrivals)\n",
			f.TransmissionsPerS, f.ArrivalsPerS, f.NsArrival)
	}
	if len(f.Phases) > 0 {
		fmt.Fprintf(out, "phases (wall time per tick, share of the wall time, per call; the network's step ahead beside the vehicles counts in vehicles):\n")
		for _, ph := range f.Phases {
			fmt.Fprintf(out, "  %-10s %10.2f µs %6.1f%% %10.2f µs per call (%d calls)\n", ph.Name, ph.UsPerTick, 100*ph.Share, ph.UsPerCall, ph.Calls)
		}
	}
	fmt.Fprintf(out, "%.4f heap allocations per tick\n", f.Allocs)
	if f.Vehicles > 0 {
		fmt.Fprintf(out, "memory per vehicle: %.1f KiB live heap after the build, %.1f KiB at the end of the run\n",
			f.HeapPerVehicle/1024, f.HeapEndPerVehicle/1024)
	}
}

// benchFigures are the figures bench reports (--json prints them as they
// are).
type benchFigures struct {
	Scenario   string  `json:"scenario"`
	Vehicles   int     `json:"vehicles"`
	Workers    int     `json:"workers"`
	SimSeconds float64 `json:"sim_seconds"`
	// Warmup is the simulated time before the measurement starts: the
	// wall times, speed, time per vehicle-tick and allocations cover the
	// rest of the run.
	Warmup     float64 `json:"warmup_s"`
	Runs       int     `json:"runs"`
	Files      bool    `json:"files"`
	Contend    bool    `json:"contend"`
	WallMedian float64 `json:"wall_median_s"`
	WallMin    float64 `json:"wall_min_s"`
	WallMax    float64 `json:"wall_max_s"`
	XRealtime  float64 `json:"x_realtime"`
	// NsVehicleTick is the median wall time per tick and vehicle.
	NsVehicleTick float64 `json:"ns_per_vehicle_tick"`
	// NsDelivery is the median wall time of the whole run (warm-up
	// included) divided by the run's deliveries (0 without deliveries).
	NsDelivery float64 `json:"ns_per_delivery"`
	// Allocs is heap allocations per measured tick over all runs, up to
	// the last tick (the end-of-run summary is not counted).
	Allocs     float64 `json:"allocs_per_tick"`
	Deliveries uint64  `json:"deliveries"`
	// HeapPerVehicle is the live heap the built run holds (HeapInuse after
	// a collection, less before the build) per vehicle, median of runs.
	HeapPerVehicle float64 `json:"heap_bytes_per_vehicle"`
	// HeapEndPerVehicle is the same at the end of the run, the run still
	// held.
	HeapEndPerVehicle float64 `json:"heap_end_bytes_per_vehicle"`
	// TransmissionsPerS and ArrivalsPerS are the frames the radio model
	// put on the air and their arrivals at the nodes in reception range
	// (each a receiver's PHY decision) per measured simulated second, and
	// NsArrival the median wall time per arrival; 0 for backends that do
	// not count their work (netsim.WorkCounter: the native Wi-Fi model
	// does). The counts are the same in every run.
	TransmissionsPerS float64 `json:"transmissions_per_s,omitempty"`
	ArrivalsPerS      float64 `json:"arrivals_per_s,omitempty"`
	NsArrival         float64 `json:"ns_per_arrival,omitempty"`
	// Phases are the phases of the tick with --phases, over every run's
	// measured span.
	Phases []benchPhase `json:"phases,omitempty"`
}

// median returns the median of xs (the upper one of an even count), which
// it sorts; 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// benchScenario loads the scenario to measure. With vehicles > 0 the
// vehicle count of its single vehicle group is set to vehicles, and a
// grid spawn layout gets ceil(sqrt(vehicles)) columns; then each of sets
// (PATH=VALUE, as in a sweep's set) is applied. The changed scenario is
// checked like any other, problems located in the scenario file or the
// flag that caused them.
func benchScenario(arg string, vehicles int, sets []string) (*scenario.Scenario, error) {
	sc, err := loadScenario(arg)
	if err != nil || (vehicles == 0 && len(sets) == 0) {
		return sc, err
	}
	var changes []scenario.Set
	if vehicles > 0 {
		if len(sc.Vehicles) != 1 {
			return nil, badInput("--vehicles needs a scenario with exactly one vehicle group; %s has %d", sc.Name, len(sc.Vehicles))
		}
		change, err := flagSet("--vehicles", "vehicles[0].count", strconv.Itoa(vehicles))
		if err != nil {
			return nil, err
		}
		changes = append(changes, change)
		if sc.Vehicles[0].Spawn.Kind == "grid" {
			cols := int(math.Ceil(math.Sqrt(float64(vehicles))))
			change, err := flagSet("--vehicles", "vehicles[0].spawn.columns", strconv.Itoa(cols))
			if err != nil {
				return nil, err
			}
			changes = append(changes, change)
		}
	}
	for _, s := range sets {
		path, value, ok := strings.Cut(s, "=")
		if !ok || path == "" {
			return nil, badInput("--set %q: want PATH=VALUE, such as vehicles[0].behaviors[beacon].stagger=100us", s)
		}
		change, err := flagSet("--set "+path, path, value)
		if err != nil {
			return nil, err
		}
		changes = append(changes, change)
	}
	name, data, dir, err := scenarioSource(arg)
	if err != nil {
		return nil, err
	}
	base, err := scenario.ParseDocument(name, data)
	if err != nil {
		return nil, asBadInput(err)
	}
	ov, err := scenario.Override(base, changes)
	if err != nil {
		return nil, asBadInput(err)
	}
	if sc, err = parseScenario(name, ov.Text); err == nil {
		// The engine's checks too, so that problems in the file are
		// located in the flag that caused them.
		var es scenario.Errors
		if _, verr := engine.Validate(sc, engine.Options{Registry: registry}); errors.As(verr, &es) {
			err = verr
		}
	}
	if err != nil {
		return nil, asBadInput(ov.Locate(err))
	}
	sc.Dir = dir
	return sc, nil
}

// flagSet is the override of path with value (YAML) given by a flag.
func flagSet(flag, path, value string) (scenario.Set, error) {
	doc, err := scenario.ParseDocument(flag, []byte("value: "+value+"\n"))
	if err != nil {
		return scenario.Set{}, asBadInput(err)
	}
	fs := doc.Fields(doc.Root, "")
	if err := doc.Err(); err != nil || len(fs) != 1 || fs[0].Key != "value" {
		return scenario.Set{}, badInput("%s: %q is not one YAML value", flag, value)
	}
	return scenario.Set{Path: path, Value: fs[0].Value, Doc: doc, At: fs[0].KeyAt}, nil
}

// writeHeapProfile writes the allocation profile gathered so far to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("--memprofile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func contendText(on bool) string {
	if on {
		return ", beside 1 CPU-bound process"
	}
	return ""
}

// startSpinner starts a CPU-bound child process (this program's hidden
// spin command) and returns a function that stops it.
func startSpinner() (func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--contend: %w", err)
	}
	cmd := exec.Command(exe, "__spin")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlives us
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("--contend: starting the CPU-bound process: %w", err)
	}
	return func() {
		cmd.Process.Kill()
		cmd.Wait()
	}, nil
}

// newSpinCmd is the hidden command bench --contend runs beside a
// benchmark: one thread spinning until killed.
func newSpinCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "__spin",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sigs.Graceful()
			runtime.GOMAXPROCS(1)
			x := uint64(1)
			for !sigs.Stopped() {
				for i := 0; i < 1<<20; i++ {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			if x == 0 {
				fmt.Println(x)
			}
			return nil
		},
	}
}

// speedText formats an x-real-time figure with one decimal, or three
// significant digits below 1 (a 3000-vehicle run at 0.0287x is not 0.0x).
func speedText(x float64) string {
	if x < 1 {
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}
