package validation

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"skyloop/components"
	"skyloop/engine"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/scenarios"
	"skyloop/sweep"
)

// The two sides of every comparison.
const (
	Native = "wifi" // skyloop's own 802.11 model and routing layer
	NS3    = "ns3"  // ns-3 3.37
)

// Length selects a case's full-length run or its shortened CI run.
type Length int

// The lengths.
const (
	Full Length = iota
	Short
)

var (
	regOnce sync.Once
	reg     *engine.Registry
)

// registry is the component set of the skyloop command.
func registry() *engine.Registry {
	regOnce.Do(func() { reg = components.Registry() })
	return reg
}

// Runs returns how many runs the case makes on each backend (Seeds, at
// least 1).
func (c *Case) Runs() int { return max(c.Seeds, 1) }

// SeedText returns the scenario the case runs on backend (Native or NS3)
// at length l for its run k (0 <= k < Runs()): its file name and YAML
// text. The two backends get the same text but for network.backend (and
// the case's Native changes), so the same radio parameters. With Seeds set,
// run k has seed k+1.
func (c *Case) SeedText(backend string, l Length, k int) (name string, text []byte, err error) {
	if k < 0 || k >= c.Runs() {
		return "", nil, fmt.Errorf("case %s: run %d: want 0 to %d", c.Name, k, c.Runs()-1)
	}
	if backend != Native && backend != NS3 {
		return "", nil, fmt.Errorf("case %s: backend %q: want %s or %s", c.Name, backend, Native, NS3)
	}
	name, base, err := c.base()
	if err != nil {
		return "", nil, err
	}
	sets := c.full()
	if l == Short {
		sets = c.short()
	}
	if backend == NS3 {
		sets = append(sets, "network.backend: "+NS3)
	} else {
		sets = append(sets, c.Native...)
	}
	if c.Seeds > 0 {
		sets = append(sets, fmt.Sprintf("seed: %d", k+1))
	}
	doc, err := scenario.ParseDocument(name, base)
	if err != nil {
		return "", nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	// One document per change: a later change of a key wins.
	var ss []scenario.Set
	for i, line := range sets {
		d, err := scenario.ParseDocument(fmt.Sprintf("%s (validation case, change %d)", c.Name, i+1), []byte(line+"\n"))
		if err != nil {
			return "", nil, fmt.Errorf("case %s: %w", c.Name, err)
		}
		for _, f := range d.Fields(d.Root, "") {
			ss = append(ss, scenario.Set{Path: f.Key, Value: f.Value, Doc: d, At: f.KeyAt})
		}
		if err := d.Err(); err != nil {
			return "", nil, fmt.Errorf("case %s: %w", c.Name, err)
		}
	}
	o, err := scenario.Override(doc, ss)
	if err != nil {
		return "", nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	return name, o.Text, nil
}

// base returns the case's scenario before the case's own changes: a
// built-in scenario, or an experiment's variant.
func (c *Case) base() (string, []byte, error) {
	if c.Experiment == "" {
		b, ok := scenarios.Lookup(c.Scenario)
		if !ok {
			return "", nil, fmt.Errorf("case %s: no built-in scenario %q", c.Name, c.Scenario)
		}
		return path.Base(c.Scenario) + ".yaml", b, nil
	}
	b, ok := scenarios.Lookup(c.Experiment)
	if !ok {
		return "", nil, fmt.Errorf("case %s: no built-in experiment %q", c.Name, c.Experiment)
	}
	dir := path.Dir(c.Experiment)
	read := func(name string) (string, []byte, string, error) {
		base := strings.TrimSuffix(name, ".yaml")
		for _, n := range []string{path.Join(dir, base), base} {
			if b, ok := scenarios.Lookup(n); ok {
				return path.Base(n) + ".yaml", b, "", nil
			}
		}
		return "", nil, "", fmt.Errorf("no built-in scenario %q", name)
	}
	e, err := sweep.ParseExperiment(path.Base(c.Experiment)+".yaml", b, read, registry())
	if err != nil {
		return "", nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	for _, v := range e.Variants {
		if v.Name == c.Variant {
			return e.Scenario, v.Text, nil
		}
	}
	return "", nil, fmt.Errorf("case %s: experiment %s has no variant %q", c.Name, c.Experiment, c.Variant)
}

// Run runs the case's run k on backend at length l into the run
// directory dir (which must not exist, or be empty), in this process.
func (c *Case) Run(backend string, l Length, k int, dir string) error {
	name, text, err := c.SeedText(backend, l, k)
	if err != nil {
		return err
	}
	sc, err := scenario.Parse(name, text, registry().Schema())
	if err != nil {
		return fmt.Errorf("case %s on %s: %w", c.Name, backend, err)
	}
	if got := sc.Network; got.IsZero() {
		return fmt.Errorf("case %s: the scenario has no network section: want a radio network", c.Name)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry()})
	if err != nil {
		return fmt.Errorf("case %s on %s: %w", c.Name, backend, err)
	}
	res, err := runner.Execute(r, dir, runner.Options{})
	if err != nil {
		return fmt.Errorf("case %s on %s: %w", c.Name, backend, err)
	}
	if got := res.Summary.Backend; got != backend {
		return fmt.Errorf("case %s: ran on backend %q, want %q (the scenario must use the native wifi backend)", c.Name, got, backend)
	}
	return nil
}

// Runner runs case c's run k on backend at length l into the run
// directory dir and returns the CPU and wall time it took (0 when not
// measured).
type Runner func(c *Case, backend string, l Length, k int, dir string) (cpu, wall time.Duration, err error)

// InProcess is the Runner that runs in this process (Case.Run), without
// measuring time.
func InProcess(c *Case, backend string, l Length, k int, dir string) (time.Duration, time.Duration, error) {
	return 0, 0, c.Run(backend, l, k, dir)
}

// RunDir is the run directory of case c's run k on backend under dir:
// dir/<backend>, or dir/<backend>/seed-<k+1> when the case has Seeds.
func RunDir(c *Case, dir, backend string, k int) string {
	if c.Seeds == 0 {
		return filepath.Join(dir, backend)
	}
	return filepath.Join(dir, backend, fmt.Sprintf("seed-%d", k+1))
}

// RunCase runs case c at length l on both backends (each of its runs),
// into RunDir's directories, with run (nil: InProcess), and compares them:
// the outcomes of a case with Seeds are pooled (Pool). With together the
// two backends' runs overlap (ns-3 is a process of its own), else the
// native ones run first.
func RunCase(c *Case, l Length, dir string, run Runner, together bool) Result {
	if run == nil {
		run = InProcess
	}
	res := Result{Case: *c, Length: l}
	var errs [2]error
	var wg sync.WaitGroup
	for i, b := range []string{Native, NS3} {
		one := func() {
			for k := range c.Runs() {
				cpu, wall, err := run(c, b, l, k, RunDir(c, dir, b, k))
				res.CPU[i] += cpu
				res.Wall[i] += wall
				if err != nil {
					errs[i] = err
					return
				}
			}
		}
		if together {
			wg.Add(1)
			go func() { defer wg.Done(); one() }()
		} else {
			one()
		}
	}
	wg.Wait()
	if res.Err = errors.Join(errs[:]...); res.Err != nil {
		return res
	}
	if res.Native, res.Err = loadRuns(c, dir, Native); res.Err != nil {
		return res
	}
	if res.NS3, res.Err = loadRuns(c, dir, NS3); res.Err != nil {
		return res
	}
	res.Rows, res.Err = Compare(c, l, res.Native, res.NS3)
	return res
}

// loadRuns reads and pools the outcomes of case c's runs on backend.
func loadRuns(c *Case, dir, backend string) (*Outcome, error) {
	var outs []*Outcome
	for k := range c.Runs() {
		o, err := Load(c, RunDir(c, dir, backend, k))
		if err != nil {
			return nil, err
		}
		outs = append(outs, o)
	}
	return Pool(outs)
}
