package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	var out, duration, backend, tag, shard string
	var sets []string
	var seeds, workers int
	var noFiles, quiet bool
	var progressEvery time.Duration
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
experiment such as netbots/delay, or a collection: "netbots" (the robot
platoon impairment study as the netbots paper ran it: its robot in MuJoCo,
its track and controller, scenarios/netbots/), "netbots-classic" (the same
experiments on skyloop's classic robot and warehouse track, into
OUT/<experiment>-classic/), "ubanc" (UB-ANC's network experiments,
scenarios/ubanc/) or "coverage" (UB-ANC's coverage planning: turn-aware vs
DLS on the 8 x 15 grid, scenarios/coverage/) for all of its experiments.
--backend runs every variant on another network backend (e.g. ns3 for the ubanc ones,
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
byte-identical files. Print the tables with skyloop summarize.

Sharding over processes or machines (docs/cluster.md has Slurm, Kubernetes
and Docker recipes): --shard K/N (0 <= K < N) runs only shard K of N: the
runs whose key (experiment, variant, seed) hashes to K, and the reference
runs whose key does, so that N shards run every run once. Each shard writes
into its own --out, or all into one shared directory at the same time; a
shard writes its runs and OUT/<experiment>/shard-K-of-N.json (its share, its
state and the sweep's plan), but no summary.csv, meta.json or figures. A
stopped or killed shard continues where it stopped when started again with
the same arguments. When all have finished, skyloop sweep merge puts them
together (see skyloop sweep merge --help).`,
		Example: `  skyloop sweep netbots/baseline
  skyloop sweep scenarios/netbots/delay.yaml --seeds 2 --duration 20s
  skyloop sweep netbots && skyloop summarize runs
  skyloop sweep netbots-classic   # the classic robot and track
  skyloop sweep ubanc && skyloop sweep ubanc --backend ns3
  skyloop sweep coverage   # then read runs/coverage/coverage.md and figures/coverage_paths.png
  skyloop sweep netbots/delay --shard 0/4 --out /shared/runs   # ... 3/4, one per machine
  skyloop sweep merge /shared/runs                              # once all four have finished`,
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
			var sh sweep.Shard
			if cmd.Flags().Changed("shard") {
				var err error
				if sh, err = sweep.ParseShard(shard); err != nil {
					return badInput("%v", err)
				}
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
			opt := sweep.Options{Out: out, Seeds: seeds, Workers: workers, NoFiles: noFiles, Duration: dur, Shard: sh, Command: invocation}
			sigs.Graceful()
			opt.Stop = sigs.Stopped
			stderr := cmd.ErrOrStderr()
			start := time.Now()
			for _, e := range exps {
				t0 := time.Now()
				var tr *sweepTracker
				if !quiet {
					name := e.Name
					if sh.Sharded() {
						name += " [shard " + sh.String() + "]"
					}
					if isTerminal(stderr) {
						opt.Progress = sweepProgress(stderr, name, true)
					} else {
						tr = newSweepTracker(newLogger(stderr, slog.LevelInfo), name, progressEvery)
						opt.Progress = tr.Progress
					}
				}
				res, err := sweep.Sweep(e, opt)
				if tr != nil {
					tr.Close()
					tr = nil
				}
				if !quiet && isTerminal(stderr) {
					fmt.Fprint(stderr, "\r\033[K")
				}
				var oe *sweep.OptionError
				if errors.As(err, &oe) {
					return usageError{err}
				}
				if errors.Is(err, sim.ErrStopped) && sh.Sharded() {
					return interrupted{fmt.Errorf("stopped by %s: shard %s has %d of its %d runs finished in %s; run the same command again to continue",
						signalName(), sh, res.Ran+res.Skipped, res.Runs, res.Dir)}
				}
				if errors.Is(err, sim.ErrStopped) {
					return interrupted{fmt.Errorf("stopped by %s: %d runs finished in %s (summary.csv has them); run the same command again to continue", signalName(), res.Rows, res.Dir)}
				}
				if err != nil {
					return err
				}
				if !quiet && sh.Sharded() {
					fmt.Fprintf(cmd.OutOrStdout(), "%s shard %s: %d runs done, %d already finished (its share: %d runs, %d references) in %s (%.1fs)\n",
						e.Name, sh, res.Ran, res.Skipped, res.Runs, res.References, res.Dir, time.Since(t0).Seconds())
				} else if !quiet {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %d runs done, %d already finished, %d rows in %s (%.1fs)\n",
						e.Name, res.Ran, res.Skipped, res.Rows, filepath.Join(res.Dir, "summary.csv"), time.Since(t0).Seconds())
				}
			}
			if !quiet && len(exps) > 1 {
				fmt.Fprintf(cmd.OutOrStdout(), "all %d experiments in %.1fs\n", len(exps), time.Since(start).Seconds())
			}
			if !quiet && sh.Sharded() {
				fmt.Fprintf(cmd.OutOrStdout(), "once all %d shards have finished: skyloop sweep merge DIR... (the shards' --out directories; --out to merge them elsewhere)\n", sh.Count)
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
	f.DurationVar(&progressEvery, "progress-every", defaultProgressEvery, "when stderr is not a terminal (CI, Slurm, nohup): besides a line per finished run, log a progress line (runs done, ETA) this often of wall time; 0: never")
	f.StringArrayVar(&sets, "set", nil, "change every variant: PATH=VALUE, as an experiment's set (repeatable), e.g. vehicles[robot].params.physics=mujoco; results go to OUT/<experiment>-<tag>/")
	f.StringVar(&tag, "tag", "", "with --set: the suffix of the experiments' directories (default: the values set, e.g. mujoco)")
	f.StringVar(&backend, "backend", "", "run every variant on this network backend (wifi, ns3, ...), checking that it has the parameters used")
	f.StringVar(&shard, "shard", "", "run only shard K of N (K/N, 0 <= K < N) of every experiment; then skyloop sweep merge (see docs/cluster.md)")
	c.AddCommand(newSweepMergeCmd())
	return c
}

func newSweepMergeCmd() *cobra.Command {
	var out string
	var quiet bool
	c := &cobra.Command{
		Use:   "merge DIR...",
		Short: "Put the shards of sweeps together: every run checked, then summary.csv and the figures",
		Long: `Merge the shards of sweeps run with skyloop sweep --shard K/N. Each DIR is a
shard's --out directory (or an experiment directory in it) holding
<experiment>/shard-K-of-N.json; every experiment found is merged on its own.

For each experiment, merge checks that every run and reference run of the
sweep is finished in one of the DIRs. If any is missing, it names each (its
variant and seed or reference, its key, the shard that runs it, what that
shard's manifest says and the command to run it again), writes nothing and
exits 1: a summary is never partial. A run found in two DIRs (a shard run
twice) must have identical files, as runs are deterministic; if they differ,
merge names the files and exits 1. Otherwise it hard-links (or, across file
systems, copies) the runs into OUT/<experiment>/, or leaves them in place
when all shards of the experiment wrote into one shared directory and --out
is not given, and writes summary.csv, meta.json, figures/, the analysis and
report.html: byte for byte what one unsharded sweep writes. Shards run with
different arguments or skyloop builds are refused. Merging again is safe:
runs already in place are kept.

Shard directories may come from other machines: their manifests are checked
as untrusted input before anything is written. The experiment's and the
variants' names must be names a sweep gives (one directory each, never a
path), the plan within a sweep's limits (at most 1000 seeds and 1000
variants), and each manifest must list exactly the runs its plan gives its
shard; a manifest that does not is named with the field at fault. Every file
merge writes is inside OUT/<experiment> (or the shared directory): it refuses
to merge into a directory with a symbolic link below it, and a run holding a
link is not copied.

Exit codes: 0 merged, 1 runs missing or differing, 2 bad arguments (no
shard manifest in a DIR, shards in several DIRs without --out, a manifest
that is not what skyloop sweep --shard writes).`,
		Example: `  skyloop sweep merge /shared/runs                        # all shards wrote into /shared/runs
  skyloop sweep merge runs-0 runs-1 runs-2 runs-3 -o runs  # one --out per shard`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return badInput("merge needs the shards' directories: skyloop sweep merge DIR... [--out OUT]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			t0 := time.Now()
			res, err := sweep.Merge(args, sweep.MergeOptions{Out: out})
			if !quiet {
				for _, r := range res {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %d runs and %d references of %d shards from %s, %d linked or copied; %d rows in %s\n",
						r.Experiment, r.Runs, r.References, r.Shards, strings.Join(r.Sources, ", "), r.Placed, r.Rows, filepath.Join(r.Dir, "summary.csv"))
				}
			}
			var oe *sweep.OptionError
			var me *sweep.ManifestError
			if errors.As(err, &oe) || errors.As(err, &me) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			if !quiet {
				fmt.Fprintf(cmd.OutOrStdout(), "merged %d experiments in %.1fs\n", len(res), time.Since(t0).Seconds())
			}
			return nil
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "", "root directory for the merged experiments (OUT/<experiment>); default: in place, when each experiment's shards share one directory")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing but errors")
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
	if hint := didYouMean(arg, append(scenarios.Experiments(), scenarios.Collections()...)); hint != "" {
		return nil, badInput("no experiment file %q and no built-in experiment or collection of that name%s (skyloop scenarios lists them all)", arg, hint)
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
