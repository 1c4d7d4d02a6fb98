// Package sweep runs experiments: a base scenario, the changes that make
// its variants (a one-factor sweep of one parameter, or named variants),
// and seeds; every variant x seed is an ordinary engine run. A sweep runs
// in parallel, can be interrupted and resumed with byte-identical results,
// caches the ideal-network reference runs its variants are compared with,
// and writes summary.csv (one row per variant x seed with the full
// configuration and the metrics), meta.json and figures. Summarize prints
// the tables.
//
// An experiment file:
//
//	experiment: delay                  # the output directory (default: the file name)
//	description: base latency 10/50/200/400 ms
//	scenario: platoon.yaml             # a file next to this one, or a built-in scenario
//	seeds: 5                           # seeds 1..5 for every variant
//	base: {duration: 60s}              # changes for every variant, by field path
//	sweep: {param: network.latency, values: [10ms, 50ms, 200ms, 400ms]}
//	# or: variants: [{name: a, set: {network.loss: 0.1}}, ...]
//	reference:                         # the ideal-network run each variant is compared with
//	  network: {backend: ideal, epoch: 10ms}
//	  vehicles[robot].behaviors[beacon].period: 2ms
//	analysis:                          # optional tables and figures of UB-ANC's experiments (see Analysis)
//	  type: node-to-node               # or end-to-end
//	  lines: network.params.mode       # config.json path: one line per value
//	  panels: network.params.preamble_detection  # one figure per value
//
// Paths are those of scenario.Set.
package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"skyloop/engine"
	"skyloop/scenario"
	"skyloop/scenario/scenariofile"
)

// MaxVariants bounds the variants of one experiment.
const MaxVariants = 1000

// MaxSeeds bounds the seeds of every variant (an experiment's seeds, or
// Options.Seeds).
const MaxSeeds = 1000

// file is an experiment file as written.
type file struct {
	Experiment  string       `yaml:"experiment"`
	Description string       `yaml:"description"`
	Scenario    string       `yaml:"scenario"`
	Seeds       int          `yaml:"seeds"`
	Base        scenario.Raw `yaml:"base"`
	Sweep       *struct {
		Param  string         `yaml:"param"`
		Name   string         `yaml:"name"`
		Values []scenario.Raw `yaml:"values"`
	} `yaml:"sweep"`
	Variants []struct {
		Name string       `yaml:"name"`
		Set  scenario.Raw `yaml:"set"`
	} `yaml:"variants"`
	Reference scenario.Raw `yaml:"reference"`
	Analysis  *Analysis    `yaml:"analysis"`
}

// Analysis asks for the tables and figures of one of UB-ANC's network
// experiments, besides summary.csv and the usual figures.
type Analysis struct {
	// Type is node-to-node (a sender on the stations behaviour sends to a
	// fixed receiver: packets received per station vs distance and RSS;
	// node2node.csv) or end-to-end (data relayed from one node to another:
	// data rates and routing overhead per node, delay CDF; end2end.csv) or
	// coverage (vehicles on the coverage behaviour: plan and flight figures
	// per run, coverage.csv, and the plans over the grid,
	// figures/coverage_paths.png).
	Type string `yaml:"type" json:"type"`
	// Lines and Panels are paths in the runs' config.json (flattened as in
	// summary.csv, e.g. network.params.mode): the figures draw one line
	// per value of Lines, in one figure per value of Panels. Empty: one
	// line per variant, one figure.
	Lines  string `yaml:"lines" json:"lines"`
	Panels string `yaml:"panels" json:"panels"`
}

// Analysis types.
const (
	NodeToNode = "node-to-node"
	EndToEnd   = "end-to-end"
	Coverage   = "coverage"
)

// Option adjusts how an experiment file is read.
type Option func(*options)

type options struct {
	backend string
	sets    []string
	tag     string
}

// Set changes every variant (and reference) of the experiment by field
// path after the experiment's own changes: sets are PATH=VALUE, as in an
// experiment's set; the results go to <experiment>-<tag>/, other runs
// than the experiment's own.
func Set(tag string, sets ...string) Option {
	return func(o *options) { o.tag, o.sets = tag, append(o.sets, sets...) }
}

// Backend runs every variant (and reference) of the experiment on the
// named network backend: network.backend is set to it after the
// experiment's own changes, and the variants are checked on that backend,
// so that a parameter it does not have is reported.
func Backend(name string) Option { return func(o *options) { o.backend = name } }

// Variant is one configuration of an experiment.
type Variant struct {
	Name string
	// Value is the swept parameter's value as written ("" for named
	// variants).
	Value string
	// Text is the variant's scenario as YAML; Reference its reference
	// run's ("" without one).
	Text, Reference []byte
	run, ref        *scenario.Overridden
}

// Experiment is a checked experiment: variants x seeds.
type Experiment struct {
	Name        string
	Description string
	// Param is the swept parameter's path ("" for named variants).
	Param    string
	Seeds    int
	Variants []Variant
	// Scenario is the base scenario's file name; ScenarioDir its
	// directory ("" for a built-in one), where relative paths in it start.
	Scenario    string
	ScenarioDir string
	Source      []byte // the experiment file
	File        string
	// Analysis is the experiment's analysis (nil: none).
	Analysis *Analysis
	// Backend is the network backend every variant was switched to ("":
	// the scenario's own).
	Backend string
	// reg names the component types the scenario may use.
	reg *engine.Registry
}

// ReadScenario finds the base scenario an experiment names: it returns the
// name to report problems under, the text and the directory relative paths
// in it start from ("" for built-in scenarios).
type ReadScenario func(name string) (file string, data []byte, dir string, err error)

var nameOK = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.=-]*$`)

// LoadExperiment reads and checks an experiment file; its scenario is a
// file relative to it or, failing that, found by builtin (which may be
// nil), and is built with the component types of reg (nil: engine.Core()).
// Problems come back as scenario.Errors with file, line and path.
func LoadExperiment(path string, builtin ReadScenario, reg *engine.Registry, opts ...Option) (*Experiment, error) {
	data, err := scenariofile.Read(path)
	if err != nil {
		if _, bad := err.(scenario.Errors); bad {
			return nil, err // larger than scenario.MaxFileSize
		}
		return nil, fmt.Errorf("reading experiment: %w", err)
	}
	dir := filepath.Dir(path)
	read := func(name string) (string, []byte, string, error) {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, name)
		}
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			b, err := scenariofile.Read(p)
			abs, _ := filepath.Abs(filepath.Dir(p))
			return filepath.Base(p), b, abs, err
		}
		if builtin != nil {
			return builtin(name)
		}
		return "", nil, "", fmt.Errorf("no scenario file %s", p)
	}
	return ParseExperiment(filepath.Base(path), data, read, reg, opts...)
}

// ParseExperiment checks experiment text named name (for messages); read
// finds its scenario, built with the component types of reg (nil:
// engine.Core()).
func ParseExperiment(name string, data []byte, read ReadScenario, reg *engine.Registry, opts ...Option) (*Experiment, error) {
	if reg == nil {
		reg = engine.Core()
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	doc, err := scenario.ParseDocument(name, data)
	if err != nil {
		return nil, err
	}
	f := file{Seeds: 5}
	doc.Decode(doc.Root, "", &f)
	// Problems with a top-level field are reported at its key (at the top
	// when it is missing).
	fields := map[string]scenario.Field{}
	for _, fl := range doc.Fields(doc.Root, "") {
		fields[fl.Key] = fl
	}
	at := func(key string) scenario.Raw {
		if fl, ok := fields[key]; ok {
			return fl.KeyAt
		}
		return doc.Root
	}
	// item returns the i-th element of a top-level list (or the list's key).
	item := func(key string, i int) scenario.Raw {
		if it, ok := doc.Item(fields[key].Value, i); ok {
			return it
		}
		return at(key)
	}
	e := &Experiment{Name: f.Experiment, Description: f.Description, Seeds: f.Seeds, Source: data, File: name, reg: reg,
		Analysis: f.Analysis, Backend: o.backend}
	if a := f.Analysis; a != nil && a.Type != NodeToNode && a.Type != EndToEnd && a.Type != Coverage {
		doc.Errorf(at("analysis"), "analysis.type", "must be %s, %s or %s, got %q", NodeToNode, EndToEnd, Coverage, a.Type)
	}
	if e.Name == "" {
		e.Name = strings.TrimSuffix(name, filepath.Ext(name))
	}
	if o.backend != "" {
		// Its own directory: the runs on another backend are other runs.
		e.Name += "-" + o.backend
	}
	if len(o.sets) > 0 {
		e.Name += "-" + o.tag
	}
	if !nameOK.MatchString(e.Name) {
		doc.Errorf(at("experiment"), "experiment", "%q: use letters, digits, '.', '_', '-' (it names the output directory)", e.Name)
	}
	if f.Seeds < 1 || f.Seeds > MaxSeeds {
		doc.Errorf(at("seeds"), "seeds", "must be 1..%d, got %d", MaxSeeds, f.Seeds)
	}
	base := sets(doc, f.Base, "base")
	if o.backend != "" {
		if _, ok := reg.Backend(o.backend); !ok {
			return nil, &OptionError{fmt.Errorf("--backend %q: want one of %s", o.backend, strings.Join(reg.BackendNames(), ", "))}
		}
		bd, err := scenario.ParseDocument("--backend", []byte("network.backend: "+o.backend+"\n"))
		if err != nil {
			return nil, &OptionError{fmt.Errorf("--backend %q: %w", o.backend, err)}
		}
		base = append(base, sets(bd, bd.Root, "")...)
	}
	for _, kv := range o.sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, &OptionError{fmt.Errorf("--set %q: want PATH=VALUE", kv)}
		}
		bd, err := scenario.ParseDocument("--set", []byte(strings.TrimSpace(k)+": "+v+"\n"))
		if err != nil {
			return nil, &OptionError{fmt.Errorf("--set %q: %w", kv, err)}
		}
		base = append(base, sets(bd, bd.Root, "")...)
	}
	ref := sets(doc, f.Reference, "reference")
	if f.Sweep != nil && len(f.Variants) > 0 {
		doc.Errorf(at("variants"), "variants", "give either sweep or variants, not both")
	}
	if len(f.Variants) > MaxVariants {
		doc.Errorf(at("variants"), "variants", "more than %d variants: split the experiment", MaxVariants)
	}
	if f.Sweep != nil && len(f.Sweep.Values) > MaxVariants {
		doc.Errorf(at("sweep"), "sweep.values", "more than %d values: split the experiment", MaxVariants)
	}
	if f.Scenario == "" {
		doc.Errorf(doc.Root, "scenario", "missing: the base scenario (a file next to this one, or a built-in name)")
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	scFile, scData, scDir, err := read(f.Scenario)
	if err != nil {
		var es scenario.Errors
		if errors.As(err, &es) {
			return nil, err
		}
		doc.Errorf(at("scenario"), "scenario", "%v", err)
		return nil, doc.Err()
	}
	e.Scenario, e.ScenarioDir = scFile, scDir
	scDoc, err := scenario.ParseDocument(scFile, scData)
	if err != nil {
		return nil, err
	}
	ck := checker{e: e, doc: doc, base: scDoc, problems: map[string]bool{}, cache: map[string]checked{}}
	ck.floor = ck.overrideCost(base)
	switch {
	case f.Sweep != nil:
		e.Param = f.Sweep.Param
		label := f.Sweep.Name
		if label == "" {
			label = lastKey(e.Param)
		}
		if e.Param == "" {
			doc.Errorf(at("sweep"), "sweep.param", "missing: the path of the parameter to vary, such as network.latency")
		}
		if len(f.Sweep.Values) == 0 {
			doc.Errorf(at("sweep"), "sweep.values", "needs at least one value")
		}
		if e.Param == "" {
			break
		}
		// Two values written alike would write into one directory, and two
		// that give the same configuration (0.1 and 0.10, 1s and 1000ms)
		// would run the same variant twice.
		type first struct {
			index int
			value string
		}
		names := map[string]first{}
		configs := map[string]first{}
		for i, v := range f.Sweep.Values {
			path := fmt.Sprintf("sweep.values[%d]", i)
			val := doc.Text(v)
			vname := label + "=" + val
			if prev, dup := names[vname]; dup {
				doc.Errorf(v, path, "%s repeats sweep.values[%d]: each value must appear once", val, prev.index)
				continue
			}
			names[vname] = first{i, val}
			if !dirNameOK(vname) {
				doc.Errorf(v, path, "%q cannot name a directory: use named variants", vname)
				continue
			}
			s := append(append([]scenario.Set(nil), base...), scenario.Set{Path: e.Param, Value: v, Doc: doc, At: v})
			va, eff := ck.variant(vname, val, path, v, s, ref)
			if va == nil {
				continue
			}
			if prev, dup := configs[eff]; dup {
				doc.Errorf(v, path, "%s is the same %s as sweep.values[%d] (%s): each value must appear once", val, e.Param, prev.index, prev.value)
				continue
			}
			configs[eff] = first{i, val}
			e.Variants = append(e.Variants, *va)
		}
	case len(f.Variants) > 0:
		seen := map[string]bool{}
		for i, v := range f.Variants {
			path := fmt.Sprintf("variants[%d]", i)
			if !nameOK.MatchString(v.Name) || seen[v.Name] {
				doc.Errorf(item("variants", i), path+".name", "%q: names must be unique and use letters, digits, '.', '_', '=', '-'", v.Name)
				continue
			}
			seen[v.Name] = true
			s := append(append([]scenario.Set(nil), base...), sets(doc, v.Set, path+".set")...)
			if va, _ := ck.variant(v.Name, "", path, item("variants", i), s, ref); va != nil {
				e.Variants = append(e.Variants, *va)
			}
		}
	default:
		if va, _ := ck.variant("base", "", "base", at("base"), base, ref); va != nil {
			e.Variants = append(e.Variants, *va)
		}
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	if len(ck.errs) > 0 {
		sortErrors(ck.errs, name)
		if len(ck.errs) > scenario.MaxErrors {
			ck.errs = append(ck.errs[:scenario.MaxErrors:scenario.MaxErrors], &scenario.Error{File: name,
				Msg: fmt.Sprintf("... and %d more problems", len(ck.errs)-scenario.MaxErrors)})
		}
		return nil, ck.errs
	}
	return e, nil
}

// sets reads a mapping of path: value.
func sets(doc *scenario.Document, m scenario.Raw, path string) []scenario.Set {
	var out []scenario.Set
	for _, f := range doc.Fields(m, path) {
		out = append(out, scenario.Set{Path: f.Key, Value: f.Value, Doc: doc, At: f.KeyAt})
	}
	return out
}

// lastKey returns the last field name of a path (network.latency ->
// latency, vehicles[robot].count -> count).
func lastKey(p string) string {
	p = strings.TrimRight(p, "]")
	if i := strings.LastIndexAny(p, ".["); i >= 0 {
		p = p[i+1:]
	}
	return p
}

func dirNameOK(s string) bool {
	return s != "" && len(s) <= 200 && s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00\n")
}

// Checking an experiment parses a scenario per variant and reference, so
// that its cost grows with the variants times the scenario: the scenarios
// it checks may hold at most maxCheckTokens YAML tokens and maxCheckBytes
// bytes in all (a reference shared by variants counts once), which keeps
// an experiment file within the costs that the limits on input files
// promise (scenario/limits.go). Building a variant's scenario costs at
// least the base scenario's size, also when it fails.
const (
	maxCheckTokens = scenario.MaxTokens
	maxCheckBytes  = scenario.MaxFileSize / 2
)

// checker builds and checks variants, collecting their problems once each.
type checker struct {
	e        *Experiment
	doc      *scenario.Document // the experiment file
	base     *scenario.Document
	errs     scenario.Errors
	problems map[string]bool
	// cache holds the check of every scenario text checked (variants often
	// share their reference).
	cache         map[string]checked
	tokens, bytes int
	floor         int  // the least that building a variant's scenario costs, in bytes
	over          bool // the budget is spent: no more variants are checked
}

type checked struct {
	eff string
	err error // not located
}

// overrideCost returns the size of the base scenario with the base sets
// applied (or without them, when they fail).
func (c *checker) overrideCost(base []scenario.Set) int {
	for _, s := range [][]scenario.Set{base, nil} {
		if ov, err := scenario.Override(c.base, s); err == nil {
			return len(ov.Text)
		}
	}
	return scenario.MaxFileSize
}

func (c *checker) fail(err error) {
	var es scenario.Errors
	if !errors.As(err, &es) {
		es = scenario.Errors{{File: c.e.File, Msg: err.Error()}}
	}
	for _, e := range es {
		k := e.Error()
		if !c.problems[k] {
			c.problems[k] = true
			c.errs = append(c.errs, e)
		}
	}
}

// variant applies the sets (and, for the reference, ref after them) and
// checks the resulting scenarios completely. It returns the variant and
// its effective configuration, or nil after recording the problems; path
// and at locate the variant in the experiment file.
func (c *checker) variant(name, value, path string, at scenario.Raw, s, ref []scenario.Set) (*Variant, string) {
	v := &Variant{Name: name, Value: value}
	eff, ov, err := c.check(s, path, at)
	if err != nil {
		c.fail(err)
		return nil, ""
	}
	v.run, v.Text = ov, ov.Text
	if len(ref) > 0 {
		_, rov, err := c.check(append(append([]scenario.Set(nil), s...), ref...), path, at)
		if err != nil {
			c.fail(err)
			return nil, ""
		}
		v.ref, v.Reference = rov, rov.Text
	}
	return v, eff
}

// errSpent stops the checks once the budget is spent (the problem is
// recorded once).
var errSpent = scenario.Errors{}

// check builds the scenario with the sets applied and returns its
// effective configuration as JSON.
func (c *checker) check(s []scenario.Set, path string, at scenario.Raw) (string, *scenario.Overridden, error) {
	if c.over {
		return "", nil, errSpent
	}
	ov, err := scenario.Override(c.base, s)
	cost := c.floor
	if err == nil {
		cost = max(cost, len(ov.Text))
	} else if scenario.TooLarge(err) {
		cost = scenario.MaxFileSize
	}
	c.bytes += cost
	if err != nil {
		return "", nil, c.spent(err, path, at)
	}
	r, ok := c.cache[string(ov.Text)]
	if !ok {
		c.tokens += scenario.Tokens(ov.Text)
		if err := c.spent(nil, path, at); err != nil {
			return "", nil, err
		}
		b, err := effectiveOf(ov.Text, c.e, engine.Options{Registry: c.e.reg})
		r = checked{string(b), err}
		c.cache[string(ov.Text)] = r
	}
	if r.err != nil {
		return "", nil, ov.Locate(r.err)
	}
	return r.eff, ov, nil
}

// spent returns err, or the problem that the budget is spent.
func (c *checker) spent(err error, path string, at scenario.Raw) error {
	if c.tokens <= maxCheckTokens && c.bytes <= maxCheckBytes {
		return err
	}
	c.over = true
	if err != nil {
		c.fail(err)
	}
	return scenario.Errors{{File: c.e.File, Line: c.doc.Line(at), Path: path,
		Msg: fmt.Sprintf("checking the variants up to this one means parsing more than %d YAML tokens or %d KiB of scenarios: split the experiment",
			maxCheckTokens, maxCheckBytes>>10)}}
}

// effective parses an overridden scenario and returns its effective
// configuration as JSON; problems are located in the files they came from.
func effective(ov *scenario.Overridden, e *Experiment, opt engine.Options) ([]byte, error) {
	b, err := effectiveOf(ov.Text, e, opt)
	if err != nil {
		return nil, ov.Locate(err)
	}
	return b, nil
}

// effectiveOf is effective for a scenario's text, with problems located in
// the text.
func effectiveOf(text []byte, e *Experiment, opt engine.Options) ([]byte, error) {
	sc, err := scenario.Parse(e.Scenario, text, e.reg.Schema())
	if sc == nil {
		return nil, err
	}
	sc.Dir = e.ScenarioDir
	// Validate reports Parse's problems with its own.
	r, err := engine.Validate(sc, opt)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(r.Effective()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// parse reads an overridden scenario. Its problems, if any, come back
// from engine.Validate (or Build) with the engine's own.
func parse(ov *scenario.Overridden, e *Experiment) (*scenario.Scenario, error) {
	sc, err := scenario.Parse(e.Scenario, ov.Text, e.reg.Schema())
	if sc == nil {
		return nil, ov.Locate(err)
	}
	sc.Dir = e.ScenarioDir
	return sc, nil
}

// sortErrors orders problems by file, the experiment file first, and line.
func sortErrors(es scenario.Errors, first string) {
	sort.SliceStable(es, func(i, j int) bool {
		if (es[i].File == first) != (es[j].File == first) {
			return es[i].File == first
		}
		if es[i].File != es[j].File {
			return es[i].File < es[j].File
		}
		return es[i].Line < es[j].Line
	})
}
