package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"skyloop/engine"
	"skyloop/runner"
	"skyloop/sim"
)

func newBenchCmd() *cobra.Command {
	var runs, workers int
	var files, contend bool
	var cpuProfile, memProfile string
	c := &cobra.Command{
		Use:   "bench [SCENARIO]",
		Short: "Measure whole-run speed (default: the bench-swarm100 scenario)",
		Long: `Run a scenario several times without writing a run directory and report the
median speed: simulated seconds per wall second (x real time), nanoseconds per
vehicle-tick and per delivery, and heap allocations per tick.

Without --files, per-packet and per-sample CSV output is skipped (metrics stay
exact), as in the core's benchmark target; with --files the CSV streams are
formatted and written to a temporary directory.

With --contend a CPU-bound process runs beside the benchmark for its whole
duration, as on a machine where something else is busy: compare --workers 1
and 2 (and the default) with and without it.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "bench-swarm100"
			if len(args) == 1 {
				name = args[0]
			}
			if runs < 1 {
				return badInput("--runs must be >= 1, got %d", runs)
			}
			if workers < 0 {
				return badInput("--workers must be >= 0, got %d", workers)
			}
			sc, err := loadScenario(name)
			if err != nil {
				return err
			}
			sigs.Graceful()
			if contend {
				stop, err := startSpinner()
				if err != nil {
					return err
				}
				defer stop()
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return fmt.Errorf("--cpuprofile: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("--cpuprofile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			if memProfile != "" {
				runtime.MemProfileRate = 4096
			}
			var walls []float64
			var last *runner.Result
			var mallocs uint64
			var ticks int64
			var usedWorkers int
			for i := 0; i < runs; i++ {
				if sigs.Stopped() {
					return interrupted{fmt.Errorf("stopped by %s after %d of %d runs", signalName(), i, runs)}
				}
				r, err := engine.Build(sc, engine.Options{NoFiles: !files, Workers: workers, Registry: registry})
				if err != nil {
					return err
				}
				dir := ""
				if files {
					dir = fmt.Sprintf("%s/skyloop-bench-%d", tempDir(), i)
				}
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				start := time.Now()
				res, err := runner.Execute(r, dir, runner.Options{})
				wall := time.Since(start).Seconds()
				runtime.ReadMemStats(&m1)
				if err != nil {
					return err
				}
				if dir != "" {
					removeAll(dir)
				}
				walls = append(walls, wall)
				usedWorkers = r.Workers()
				mallocs += m1.Mallocs - m0.Mallocs
				ticks += res.Summary.Ticks
				last = res
			}
			if memProfile != "" {
				if err := writeHeapProfile(memProfile); err != nil {
					return err
				}
			}
			slices.Sort(walls)
			med := walls[len(walls)/2]
			s := last.Summary
			simS := sim.Duration(s.DurationNs).Seconds()
			nveh := len(s.Vehicles)
			deliv := s.Network.Total.Rx
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: %d vehicles, %v simulated, %d deliveries, files %v, %d runs, %d workers%s\n", s.Scenario, nveh,
				sim.Duration(s.DurationNs), deliv, onOff(files), runs, usedWorkers, contendText(contend))
			fmt.Fprintf(out, "wall time: median %.3fs (min %.3fs, max %.3fs)\n", med, walls[0], walls[len(walls)-1])
			fmt.Fprintf(out, "speed: %.1fx real time\n", simS/med)
			if nveh > 0 {
				fmt.Fprintf(out, "%.1f ns per vehicle-tick\n", med*1e9/float64(s.Ticks)/float64(nveh))
			}
			if deliv > 0 {
				fmt.Fprintf(out, "%.1f ns per delivery (whole run time / deliveries)\n", med*1e9/float64(deliv))
			}
			fmt.Fprintf(out, "%.4f heap allocations per tick\n", float64(mallocs)/float64(ticks))
			return nil
		},
	}
	c.Flags().IntVar(&runs, "runs", 3, "number of runs (the median is reported)")
	c.Flags().IntVar(&workers, "workers", 0, "goroutines stepping vehicles (default: the scenario's, or automatic, as skyloop run)")
	c.Flags().BoolVar(&contend, "contend", false, "run a CPU-bound process beside the benchmark (a busy machine)")
	c.Flags().BoolVar(&files, "files", false, "also write the per-packet and per-sample CSV files")
	c.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of all runs to this file (go tool pprof)")
	c.Flags().StringVar(&memProfile, "memprofile", "", "write an allocation profile of all runs to this file (go tool pprof -sample_index=alloc_space)")
	return c
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
