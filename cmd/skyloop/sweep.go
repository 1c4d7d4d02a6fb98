package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"skyloop/scenarios"
	"skyloop/sim"
	"skyloop/sweep"
)

func newSweepCmd() *cobra.Command {
	var out, duration, backend, tag string
	var sets []string
	var seeds, workers int
	var noFiles, quiet bool
	c := &cobra.Command{
		Use:   "sweep EXPERIMENT...",
		Short: "Run an experiment: a scenario's variants x seeds, in parallel",
		Long: `Run experiments. An experiment file (YAML) names a base scenario, changes to it
by field path for every variant (base: {network.rate: 2e6}), either a
one-factor sweep (sweep: {param: network.latency, values: [10ms, 50ms]}) or
named variants (variants: [{name, set: {path: value, ...}}]), a seed count,
and optionally the changes that make each variant's ideal-network reference
run (reference: {network: {backend: ideal, epoch: 10ms}, ...}). Paths are
dotted field names with list elements by index or name:
vehicles[robot].behaviors[beacon].policy. EXPERIMENT is a file, a built-in
experiment such as netbots/delay, or a collection: "netbots" (SPEC.md C's
robot platoon study, scenarios/netbots/), "ubanc" (SPEC.md D's network
experiments, scenarios/ubanc/) or "coverage" (SPEC.md D's coverage planning:
turn-aware vs DLS on the 8 x 15 grid, scenarios/coverage/) for all of its
experiments. --backend runs
every variant on another network backend (e.g. ns3 for the ubanc ones,
which use the native wifi model); its results go to OUT/<experiment>-<backend>/.

For each experiment, OUT/<experiment>/ gets:
  summary.csv                  one row per variant x seed: every configuration field and every metric
  meta.json                    the experiment file, effective configurations, versions
  figures/                     paths per variant, latency CDF, AoI and gap error per variant
  reference/<key>/             the reference runs (cached, one per distinct configuration)
  <variant>/seed<k>/           an ordinary run directory: config.json, summary.json, meta.json,
                               trace.csv, deliveries.csv, robots.csv, platoon.json, ...

Runs execute in parallel (--workers). A sweep can be interrupted (Ctrl-C) and
started again: finished runs are kept and skipped, and summary.csv is rebuilt
from the finished runs, so no row is ever duplicated. The same arguments give
byte-identical files. Print the tables with skyloop summarize.`,
		Example: `  skyloop sweep netbots/baseline
  skyloop sweep scenarios/netbots/delay.yaml --seeds 2 --duration 20s
  skyloop sweep netbots && skyloop summarize runs
  skyloop sweep ubanc && skyloop sweep ubanc --backend ns3
  skyloop sweep coverage   # then read runs/coverage/coverage.md and figures/coverage_paths.png`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return badInput("sweep needs at least one experiment (a file, a built-in name such as netbots/delay, or a collection: %s); built-in: %s",
					strings.Join(scenarios.Collections(), ", "), strings.Join(scenarios.Experiments(), ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if seeds < 0 || workers < 0 {
				return badInput("--seeds and --workers must be >= 0")
			}
			var dur sim.Duration
			if duration != "" {
				d, err := sim.ParseDuration(duration)
				if err != nil {
					return badInput("--duration: %v", err)
				}
				dur = d
			}
			var exps []*sweep.Experiment
			for _, a := range args {
				es, err := loadExperiments(a, backend, tag, sets)
				if err != nil {
					return err
				}
				exps = append(exps, es...)
			}
			opt := sweep.Options{Out: out, Seeds: seeds, Workers: workers, NoFiles: noFiles, Duration: dur}
			sigs.Graceful()
			opt.Stop = sigs.Stopped
			stderr := cmd.ErrOrStderr()
			start := time.Now()
			for _, e := range exps {
				t0 := time.Now()
				if !quiet {
					opt.Progress = sweepProgress(stderr, e.Name, isTerminal(stderr))
				}
				res, err := sweep.Sweep(e, opt)
				if !quiet && isTerminal(stderr) {
					fmt.Fprint(stderr, "\r\033[K")
				}
				var oe *sweep.OptionError
				if errors.As(err, &oe) {
					return usageError{err}
				}
				if errors.Is(err, sim.ErrStopped) {
					return interrupted{fmt.Errorf("stopped by %s: %d runs finished in %s (summary.csv has them); run the same command again to continue", signalName(), res.Rows, res.Dir)}
				}
				if err != nil {
					return err
				}
				if !quiet {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %d runs done, %d already finished, %d rows in %s (%.1fs)\n",
						e.Name, res.Ran, res.Skipped, res.Rows, filepath.Join(res.Dir, "summary.csv"), time.Since(t0).Seconds())
				}
			}
			if !quiet && len(exps) > 1 {
				fmt.Fprintf(cmd.OutOrStdout(), "all %d experiments in %.1fs\n", len(exps), time.Since(start).Seconds())
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&out, "out", "runs", "root directory for experiment results")
	f.IntVar(&seeds, "seeds", 0, "seeds per variant (default: the experiment's)")
	f.StringVar(&duration, "duration", "", "simulated duration of every run, e.g. 20s (default: the experiment's)")
	f.IntVar(&workers, "workers", 0, "parallel runs (default: one per CPU)")
	f.BoolVar(&noFiles, "no-files", false, "skip the per-run CSV files (summary.csv and figures stay)")
	f.BoolVarP(&quiet, "quiet", "q", false, "print nothing but errors")
	f.StringArrayVar(&sets, "set", nil, "change every variant: PATH=VALUE, as an experiment's set (repeatable), e.g. vehicles[robot].params.physics=mujoco; results go to OUT/<experiment>-<tag>/")
	f.StringVar(&tag, "tag", "", "with --set: the suffix of the experiments' directories (default: the values set, e.g. mujoco)")
	f.StringVar(&backend, "backend", "", "run every variant on this network backend (wifi, ns3, ...), checking that it has the parameters used")
	return c
}

func loadExperiments(arg, backend, tag string, sets []string) ([]*sweep.Experiment, error) {
	var opts []sweep.Option
	if backend != "" {
		opts = append(opts, sweep.Backend(backend))
	}
	if len(sets) > 0 {
		if tag == "" {
			tag = setTag(sets)
		}
		opts = append(opts, sweep.Set(tag, sets...))
	}
	if slices.Contains(scenarios.Collections(), arg) {
		var out []*sweep.Experiment
		for _, n := range scenarios.CollectionExperiments(arg) {
			es, err := loadExperiments(n, backend, tag, sets)
			if err != nil {
				return nil, err
			}
			out = append(out, es...)
		}
		return out, nil
	}
	if st, err := os.Stat(arg); err == nil {
		if st.IsDir() {
			return nil, badInput("%s is a directory, not an experiment file", arg)
		}
		e, err := sweep.LoadExperiment(arg, builtinScenario(""), registry, opts...)
		return []*sweep.Experiment{e}, asBadInput(err)
	}
	if b, ok := scenarios.Lookup(arg); ok {
		e, err := sweep.ParseExperiment(filepath.Base(arg)+".yaml", b, builtinScenario(path.Dir(arg)), registry, opts...)
		return []*sweep.Experiment{e}, asBadInput(err)
	}
	return nil, badInput("no experiment file %q and no built-in experiment of that name (built-in: %s, or a collection: %s)",
		arg, strings.Join(scenarios.Experiments(), ", "), strings.Join(scenarios.Collections(), ", "))
}

// builtinScenario finds the scenario an experiment names among the
// built-in ones: first beside a built-in experiment (in dir), then at the
// top level.
func builtinScenario(dir string) sweep.ReadScenario {
	return func(name string) (string, []byte, string, error) {
		base := strings.TrimSuffix(name, ".yaml")
		for _, n := range []string{path.Join(dir, base), base} {
			if b, ok := scenarios.Lookup(n); ok {
				return path.Base(n) + ".yaml", b, "", nil
			}
		}
		return "", nil, "", fmt.Errorf("no scenario file %q and no built-in scenario of that name", name)
	}
}

func sweepProgress(w io.Writer, name string, tty bool) func(sweep.Progress) {
	return func(p sweep.Progress) {
		state := "done"
		if p.Skipped {
			state = "already finished"
		}
		if p.Err != nil {
			state = "FAILED: " + p.Err.Error()
		}
		bar := progressBar(p.Done, p.Total, 20)
		if tty {
			fmt.Fprintf(w, "\r\033[K%s %s %d/%d %s seed %d %s", name, bar, p.Done, p.Total, p.Variant, p.Seed, state)
		} else {
			fmt.Fprintf(w, "%s %s %d/%d %s seed %d %s\n", name, bar, p.Done, p.Total, p.Variant, p.Seed, state)
		}
	}
}

func progressBar(done, total, width int) string {
	n := 0
	if total > 0 {
		n = done * width / total
	}
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

func newSummarizeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "summarize [DIR]",
		Short: "Print the tables of swept experiments (mean and std over seeds)",
		Long: `Print one table per experiment found in DIR (an experiment directory written
by skyloop sweep, or a directory of them; default runs): a row per variant with
the mean ± standard deviation over seeds of PDR, state-update latency p50/p95,
age of information, queue drops, reordered updates, gap error, its excess over
the ideal-network reference, deviation from the reference trajectory, and IP
overhead.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "runs"
			if len(args) == 1 {
				dir = args[0]
			}
			if err := sweep.Summarize(cmd.OutOrStdout(), dir); err != nil {
				return badInput("%v", err)
			}
			return nil
		},
	}
}

// setTag names the runs of a --set sweep after the values set, in the
// letters a directory name may have.
func setTag(sets []string) string {
	var parts []string
	for _, s := range sets {
		_, v, _ := strings.Cut(s, "=")
		v = strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
				return r
			}
			return '_'
		}, strings.TrimSpace(v))
		parts = append(parts, v)
	}
	return strings.Join(parts, "-")
}
