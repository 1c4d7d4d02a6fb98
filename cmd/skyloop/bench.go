package main

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"skyloop/engine"
	"skyloop/sim"
)

func newBenchCmd() *cobra.Command {
	var runs, workers int
	var files bool
	c := &cobra.Command{
		Use:   "bench [SCENARIO]",
		Short: "Measure whole-run speed (default: the bench-swarm100 scenario)",
		Long: `Run a scenario several times without writing a run directory and report the
median speed: simulated seconds per wall second (x real time), nanoseconds per
vehicle-tick and per delivery, and heap allocations per tick.

Without --files, per-packet and per-sample CSV output is skipped (metrics stay
exact), as in the core's benchmark target; with --files the CSV streams are
formatted and written to a temporary directory.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "bench-swarm100"
			if len(args) == 1 {
				name = args[0]
			}
			if runs < 1 {
				return badInput("--runs must be >= 1, got %d", runs)
			}
			sc, err := loadScenario(name)
			if err != nil {
				return err
			}
			var walls []float64
			var last *engine.Result
			var mallocs uint64
			var ticks int64
			for i := 0; i < runs; i++ {
				r, err := engine.Build(sc, engine.Options{NoFiles: !files, Workers: workers})
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
				res, err := r.Execute(dir, nil)
				wall := time.Since(start).Seconds()
				runtime.ReadMemStats(&m1)
				if err != nil {
					return err
				}
				if dir != "" {
					removeAll(dir)
				}
				walls = append(walls, wall)
				mallocs += m1.Mallocs - m0.Mallocs
				ticks += res.Summary.Ticks
				last = res
			}
			slices.Sort(walls)
			med := walls[len(walls)/2]
			s := last.Summary
			simS := sim.Duration(s.DurationNs).Seconds()
			nveh := len(s.Vehicles)
			deliv := s.Network.Total.Rx
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: %d vehicles, %v simulated, %d deliveries, files %v, %d runs\n", s.Scenario, nveh, sim.Duration(s.DurationNs), deliv, onOff(files), runs)
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
	c.Flags().IntVar(&workers, "workers", 1, "goroutines stepping vehicles")
	c.Flags().BoolVar(&files, "files", false, "also write the per-packet and per-sample CSV files")
	return c
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
