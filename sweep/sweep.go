package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"skyloop/engine"
	"skyloop/internal/untrusted"
	"skyloop/record"
	"skyloop/report"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/sim"
	"skyloop/twin"
	"skyloop/version"
)

// Options adjust a sweep.
type Options struct {
	Out      string       // root directory; results go to Out/<experiment>
	Seeds    int          // overrides the experiment's seed count when > 0
	Duration sim.Duration // overrides every variant's duration when > 0
	Workers  int          // parallel runs; 0 = GOMAXPROCS
	NoFiles  bool         // no per-run CSV files (summary.csv and figures stay)
	// Shard runs only one part of the sweep (see Shard); the zero Shard
	// runs all of it. A shard writes its runs and its manifest
	// shard-K-of-N.json, not summary.csv, meta.json or the figures: Merge
	// makes those once every shard has finished.
	Shard Shard
	// Command is the command line that started the sweep, kept in a
	// shard's manifest to tell how to run the shard again.
	Command  []string
	Progress func(p Progress)
	Stop     func() bool
}

// Progress reports a finished (or skipped) run.
type Progress struct {
	Done, Total int
	Variant     string
	Seed        int
	Skipped     bool
	Err         error
}

// Result summarises a sweep.
type Result struct {
	Dir          string
	Ran, Skipped int
	Rows         int // rows of summary.csv (0 for a shard, which writes none)
	// Runs is how many runs the sweep (or the shard) has, References how
	// many reference runs.
	Runs, References int
	// Shard is the part of the sweep run (the zero Shard: all of it).
	Shard Shard
}

// OptionError reports a command-line override that does not suit an
// experiment (a duration that is not a whole number of its ticks, say).
type OptionError struct{ Err error }

// Error returns the wrapped error's message.
func (e *OptionError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *OptionError) Unwrap() error { return e.Err }

// prepared is a variant with what its runs need.
type prepared struct {
	v      *Variant
	eff    []byte // effective configuration (scenario seed)
	refKey string // "" without a reference
}

type job struct {
	ov   *scenario.Overridden
	name string // variant, or reference/<key>
	seed int    // 0 for a reference run (the scenario's seed)
	dir  string
	key  string
	meta map[string]any
}

// Sweep runs every reference and every variant x seed of e that has not
// finished before, then writes summary.csv, meta.json and the figures. It
// may be stopped (Options.Stop, sim.ErrStopped) and run again: finished runs
// are kept and not redone, and the files then equal those of a sweep that
// was never stopped.
//
// With Options.Shard, it runs only the shard's runs and references and
// writes the shard's manifest instead of the sweep-level files; shards may
// write into one directory at the same time, or each into its own.
func Sweep(e *Experiment, opt Options) (*Result, error) {
	if opt.Out == "" {
		opt.Out = "runs"
	}
	if err := opt.Shard.check(); err != nil {
		return nil, &OptionError{fmt.Errorf("--shard %s: %w", opt.Shard, err)}
	}
	seeds := e.Seeds
	if opt.Seeds > MaxSeeds {
		return nil, &OptionError{fmt.Errorf("--seeds %d: at most %d seeds per variant", opt.Seeds, MaxSeeds)}
	}
	if opt.Seeds > 0 {
		seeds = opt.Seeds
	}
	eopt := engine.Options{Workers: 1, NoFiles: opt.NoFiles, Registry: e.reg}
	if opt.Duration > 0 {
		d := opt.Duration
		eopt.Duration = &d
	}
	preps := make([]prepared, len(e.Variants))
	for i := range e.Variants {
		v := &e.Variants[i]
		eff, err := effective(v.run, e, eopt)
		if err != nil {
			return nil, variantError(v.Name, err)
		}
		preps[i] = prepared{v: v, eff: eff}
		if v.ref != nil {
			reff, err := effective(v.ref, e, engine.Options{Duration: eopt.Duration, NoFiles: true, Registry: e.reg})
			if err != nil {
				return nil, variantError(v.Name+" (reference)", err)
			}
			preps[i].refKey = hash(reff, "reference")
		}
	}
	dir := filepath.Join(opt.Out, e.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	// One sweep per experiment directory at a time: two would race on
	// summary.csv and on every run. Shards claim their own part: they
	// share no sweep-level file and no run.
	lockPath := dir
	if opt.Shard.Sharded() {
		lockPath = filepath.Join(dir, strings.TrimSuffix(opt.Shard.file(), ".json"))
	}
	lock, err := record.TryLock(lockPath)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	res := &Result{Dir: dir, Shard: opt.Shard}
	var man *manifest
	if opt.Shard.Sharded() {
		man = &manifest{Shard: opt.Shard.Index, Shards: opt.Shard.Count, State: stateRunning, Command: opt.Command,
			Runs: []manifestRun{}, References: []string{}, Versions: version.Info(), Plan: makePlan(e, preps, seeds, opt.NoFiles)}
	}

	var refJobs []job
	seen := map[string]bool{}
	for _, p := range preps {
		if p.refKey == "" || seen[p.refKey] {
			continue
		}
		seen[p.refKey] = true
		if !opt.Shard.owns(refShardKey(e.Name, p.refKey)) {
			continue
		}
		res.References++
		if man != nil {
			man.References = append(man.References, p.refKey)
		}
		j := job{ov: p.v.ref, name: "reference/" + p.refKey, dir: filepath.Join(dir, "reference", p.refKey), key: p.refKey}
		j.meta = map[string]any{"key": j.key, "experiment": e.Name, "reference_of": p.v.Name}
		if !finished(j.dir, j.key) {
			refJobs = append(refJobs, j)
		}
	}
	var jobs []job
	total := 0
	for _, p := range preps {
		for s := 1; s <= seeds; s++ {
			if opt.Shard.owns(runShardKey(e.Name, p.v.Name, s)) {
				total++
			}
		}
	}
	res.Runs = total
	done := 0
	for _, p := range preps {
		for s := 1; s <= seeds; s++ {
			if !opt.Shard.owns(runShardKey(e.Name, p.v.Name, s)) {
				continue
			}
			j := job{ov: p.v.run, name: p.v.Name, seed: s, dir: filepath.Join(dir, p.v.Name, fmt.Sprintf("seed%d", s))}
			j.key = runKey(p.eff, s, opt.NoFiles)
			if man != nil {
				man.Runs = append(man.Runs, manifestRun{Variant: p.v.Name, Seed: s, Key: j.key})
			}
			j.meta = map[string]any{"key": j.key, "experiment": e.Name, "variant": p.v.Name, "value": p.v.Value}
			if finished(j.dir, j.key) {
				completeRun(j.dir, opt.NoFiles)
				res.Skipped++
				done++
				if opt.Progress != nil {
					opt.Progress(Progress{Done: done, Total: total, Variant: p.v.Name, Seed: s, Skipped: true})
				}
				continue
			}
			jobs = append(jobs, j)
		}
	}
	if man != nil {
		if err := man.write(dir); err != nil {
			return nil, err
		}
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var stopped atomic.Bool
	stop := func() bool {
		if stopped.Load() {
			return true
		}
		if opt.Stop != nil && opt.Stop() {
			stopped.Store(true)
			return true
		}
		return false
	}
	var mu sync.Mutex
	var firstErr error
	// References and runs share the workers: a run needs its reference
	// only for the summary, so no core waits for the references.
	run := func(js []job) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < min(workers, max(len(js), 1)); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= len(js) || stop() {
						return
					}
					j := js[i]
					report := j.seed != 0 // references are not counted
					err := runOne(e, j, eopt, stop)
					mu.Lock()
					switch {
					case err == nil:
						if report {
							res.Ran++
						}
					case errors.Is(err, sim.ErrStopped):
					default:
						if firstErr == nil {
							firstErr = fmt.Errorf("%s seed %d: %w", j.name, j.seed, err)
							if j.seed == 0 {
								firstErr = fmt.Errorf("%s: %w", j.name, err)
							}
						}
						stopped.Store(true)
					}
					if report && !errors.Is(err, sim.ErrStopped) {
						done++
						if opt.Progress != nil {
							opt.Progress(Progress{Done: done, Total: total, Variant: j.name, Seed: j.seed, Err: err})
						}
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	run(append(refJobs, jobs...))
	if man != nil {
		// A shard writes no sweep-level file but its manifest, with how
		// it ended (a killed shard's says running).
		man.State = stateDone
		switch {
		case firstErr != nil:
			man.State, man.Error = stateFailed, firstErr.Error()
		case stopped.Load():
			man.State = stateStopped
		}
		if err := man.write(dir); err != nil && firstErr == nil {
			firstErr = err
		}
		if firstErr != nil {
			return res, firstErr
		}
		if stopped.Load() {
			return res, sim.ErrStopped
		}
		return res, nil
	}
	// The summary always reflects every finished run, also after a stop.
	rows, err := writeSummary(dir, e, preps, seeds)
	if err != nil {
		return nil, err
	}
	res.Rows = rows
	if firstErr != nil {
		return res, firstErr
	}
	if stopped.Load() {
		return res, sim.ErrStopped
	}
	if err := sweepFiles(dir, e, preps, seeds, version.Info()); err != nil {
		return nil, err
	}
	return res, nil
}

// sweepFiles writes the sweep-level files but summary.csv, from the
// finished runs in dir: meta.json (with the versions of the build that
// made the runs), the figures, the analysis and report.html.
func sweepFiles(dir string, e *Experiment, preps []prepared, seeds int, versions map[string]string) error {
	if err := writeMeta(dir, e, preps, seeds, versions); err != nil {
		return err
	}
	if err := figures(dir, e, preps, seeds); err != nil {
		return err
	}
	if err := analyse(dir, e, preps, seeds); err != nil {
		return fmt.Errorf("%s analysis: %w", e.Analysis.Type, err)
	}
	if page, err := ReportHTML(dir); err == nil {
		// The experiment's page: its table and figures (skyloop report
		// html makes it again, or for several experiments at once).
		if err := report.WriteFile(filepath.Join(dir, "report.html"), page); err != nil {
			return err
		}
	}
	return nil
}

func variantError(name string, err error) error {
	var es scenario.Errors
	if errors.As(err, &es) {
		return err
	}
	var oe *engine.OptionError
	if errors.As(err, &oe) {
		return &OptionError{fmt.Errorf("variant %s: %w", name, oe.Err)}
	}
	return fmt.Errorf("variant %s: %w", name, err)
}

// runOne executes one run into j.dir.
func runOne(e *Experiment, j job, base engine.Options, stop func() bool) error {
	sc, err := parse(j.ov, e)
	if err != nil {
		return err
	}
	opt := base
	if j.seed > 0 {
		s := uint64(j.seed)
		opt.Seed = &s
	} else {
		opt.NoFiles = true // a reference needs its summary and track only
	}
	r, err := engine.Build(sc, opt)
	if err != nil {
		return j.ov.Locate(err)
	}
	r.SetOptions(engine.Options{Stop: stop})
	ropt := runner.Options{Meta: func() map[string]any { return j.meta }}
	if sc.Outputs.Twin && j.seed > 0 {
		// Every run of the variant makes its ideal-network twin.
		if ropt.Twin, err = buildTwin(r, j.ov, e, opt); err != nil {
			r.Close()
			return err
		}
		ropt.Twin.SetOptions(engine.Options{Stop: stop})
	}
	_, err = runner.Execute(r, j.dir, ropt)
	if errors.Is(err, sim.ErrStopped) {
		// A stopped run is redone when the sweep resumes: its partial
		// files are ours and of no use.
		var ke *record.KeptError
		if errors.As(err, &ke) && ke.Kept != "" && ke.Kept != j.dir {
			os.RemoveAll(ke.Kept)
		}
		return sim.ErrStopped
	}
	return err
}

// buildTwin builds the ideal-network twin of the run r of ov.
func buildTwin(r *engine.Run, ov *scenario.Overridden, e *Experiment, opt engine.Options) (*engine.Run, error) {
	tsc, err := twin.Scenario(e.Scenario, ov.Text, e.ScenarioDir, e.reg.Schema())
	if err != nil {
		return nil, err
	}
	tw, err := engine.Build(tsc, opt)
	if err != nil {
		return nil, fmt.Errorf("building the ideal-network twin: %w", err)
	}
	if err := twin.Check(r, tw); err != nil {
		tw.Close()
		return nil, err
	}
	return tw, nil
}

// hash identifies what decides a run's results: a finished run directory
// whose key matches is not run again.
func hash(eff []byte, extra string) string {
	h := sha256.New()
	h.Write(eff)
	h.Write([]byte{0})
	h.Write([]byte(extra))
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// finished reports whether dir holds a complete run with the given key.
func finished(dir, key string) bool {
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err != nil {
		return false
	}
	b, err := untrusted.ReadFileIn(dir, "meta.json", untrusted.MaxJSON)
	if err != nil {
		return false
	}
	var m struct {
		Key string `json:"key"`
	}
	return json.Unmarshal(b, &m) == nil && m.Key == key
}

// completeRun writes the report.html of a finished run that should have
// one and has not: the runner writes it just after the run directory is
// in place, so a sweep killed in between (SIGKILL, a lost machine) leaves
// a finished run without its report. It is the page the runner would
// have written, from the same files; a report that cannot be made is a
// warning, as in the runner.
func completeRun(dir string, noFiles bool) {
	os.Remove(filepath.Join(dir, ".report.html.tmp")) // the runner's, if it died writing it
	if noFiles || fileExists(filepath.Join(dir, "report.html")) {
		return
	}
	b, err := untrusted.ReadFileIn(dir, "config.json", untrusted.MaxJSON)
	if err != nil {
		return
	}
	var cfg struct {
		Outputs struct {
			Report bool `json:"report"`
		} `json:"outputs"`
	}
	if json.Unmarshal(b, &cfg) != nil || !cfg.Outputs.Report {
		return
	}
	page, err := report.RunHTML(dir)
	if err == nil {
		err = report.WriteFile(filepath.Join(dir, "report.html"), page)
	}
	if err != nil {
		slog.Warn("report.html not written; skyloop report html makes it", "dir", dir, "err", err)
	}
}

func writeMeta(dir string, e *Experiment, preps []prepared, seeds int, versions map[string]string) error {
	vs := make([]map[string]any, len(preps))
	for i, p := range preps {
		vs[i] = map[string]any{"name": p.v.Name, "value": p.v.Value, "config": json.RawMessage(p.eff)}
		if p.refKey != "" {
			vs[i]["reference"] = "reference/" + p.refKey
		}
	}
	m := map[string]any{"experiment": e.Name, "description": e.Description, "file": e.File, "spec": string(e.Source),
		"scenario": e.Scenario, "param": e.Param, "seeds": seeds, "variants": vs, "versions": versions}
	if e.Backend != "" {
		m["backend"] = e.Backend
	}
	if e.Analysis != nil {
		m["analysis"] = e.Analysis
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return report.WriteFile(filepath.Join(dir, "meta.json"), append(b, '\n'))
}
