package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/internal/hostile"
	"skyloop/internal/mjtest"
	"skyloop/scenario"
	"skyloop/scenarios"
	"skyloop/vehicle/mujoco/mjlib"
)

// mjRegistry is the core's registry with MuJoCo (the netbots collection's
// robot steps in it).
var mjRegistry = func() *engine.Registry {
	g := engine.Core()
	g.UseMuJoCo(mjlib.Lib{})
	return g
}()

// config returns a variant's effective configuration, flattened to
// path -> value as in summary.csv.
func config(t *testing.T, e *Experiment, text []byte) map[string]string {
	t.Helper()
	sc, err := scenario.Parse(e.Scenario, text, mjRegistry.Schema())
	if err != nil {
		t.Fatalf("variant text does not parse: %v\n%s", err, text)
	}
	r, err := engine.Validate(sc, engine.Options{Registry: mjRegistry})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r.Effective())
	if err != nil {
		t.Fatal(err)
	}
	names, vals, err := flattenJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for i, n := range names {
		m[n] = vals[i]
	}
	return m
}

// TestBuiltinExperimentsParse loads every built-in experiment of the
// netbots impairment study, as `skyloop sweep netbots/NAME` (or netbots-classic/NAME) and
// from its file, and checks that each expands into the variants it
// describes, with the swept value in each variant's configuration, the
// collection's scenario and robot preset (netbots: the paper's robot in
// MuJoCo on paper.yaml; netbots-classic: the classic robot on
// platoon.yaml), and an ideal-network reference.
func TestBuiltinExperimentsParse(t *testing.T) {
	type want struct {
		variants []string
		column   string   // the configuration column the variants set
		values   []string // its value per variant
	}
	wants := map[string]want{
		"baseline": {[]string{"base"}, "network.params.latency", []string{"100µs"}},
		"delay":    {[]string{"latency=10ms", "latency=50ms", "latency=200ms", "latency=400ms"}, "network.params.latency", []string{"10ms", "50ms", "200ms", "400ms"}},
		"jitter":   {[]string{"jitter=50ms", "jitter=200ms", "jitter=400ms"}, "network.params.jitter", []string{"50ms", "200ms", "400ms"}},
		"load":     {[]string{"load_bps=1800e3", "load_bps=1950e3", "load_bps=2100e3"}, "vehicles[0].behaviors[2].params.rate", []string{"1800000", "1950000", "2100000"}},
		"loss":     {[]string{"loss=0.2", "loss=0.4", "loss=0.8"}, "network.params.loss", []string{"0.2", "0.4", "0.8"}},
		"policy":   {[]string{"periodic-loss0", "event-loss0", "periodic-loss0.3", "event-loss0.3"}, "vehicles[0].behaviors[1].params.policy", []string{"periodic", "event", "periodic", "event"}},
		"robots":   {[]string{"robots=3", "robots=5", "robots=8"}, "vehicles[0].count", []string{"3", "5", "8"}},
	}
	for _, coll := range []struct{ dir, scenario, suffix, preset, physics string }{
		{"netbots", "paper.yaml", "", "netbots", "mujoco"},
		{"netbots-classic", "platoon.yaml", "-classic", "classic", "native"},
	} {
		t.Run(coll.dir, func(t *testing.T) {
			if coll.physics == "mujoco" {
				mjtest.Require(t) // the paper's robot validates only with MuJoCo there
			}
			checkBuiltinExperiments(t, coll.dir, coll.scenario, coll.suffix, func(name string, c map[string]string) {
				if c["vehicles[0].params.preset"] != coll.preset || c["vehicles[0].params.physics"] != coll.physics {
					t.Errorf("%s: preset %q physics %q, want %s on %s", name, c["vehicles[0].params.preset"], c["vehicles[0].params.physics"], coll.preset, coll.physics)
				}
			}, func(base string) (string, []string, []string) {
				w := wants[base]
				return w.column, w.variants, w.values
			}, len(wants))
		})
	}
}

// checkBuiltinExperiments checks the experiments of one collection (see
// TestBuiltinExperimentsParse): each of n, on the scenario named
// scenarioName, named its file's base name plus suffix.
func checkBuiltinExperiments(t *testing.T, dir, scenarioName, suffix string, check func(string, map[string]string),
	want func(base string) (column string, variants, values []string), n int) {
	names := scenarios.CollectionExperiments(dir)
	if len(names) != n {
		t.Errorf("built-in experiments of %s: %v, the test knows %d", dir, names, n)
	}
	for _, name := range names {
		column, variants, values := want(filepath.Base(name))
		if column == "" {
			t.Errorf("%s: the test does not know it", name)
			continue
		}
		b, ok := scenarios.Lookup(name)
		if !ok {
			t.Fatalf("%s: not found", name)
		}
		fromFile, err := LoadExperiment(filepath.Join("..", "scenarios", name+".yaml"), nil, mjRegistry)
		if err != nil {
			t.Errorf("%s: loading the file: %v", name, err)
			continue
		}
		e, err := ParseExperiment(filepath.Base(name)+".yaml", b, builtinIn(dir), mjRegistry)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var vnames []string
		for _, v := range e.Variants {
			vnames = append(vnames, v.Name)
		}
		if !slices.Equal(vnames, variants) {
			t.Errorf("%s: variants %v, want %v", name, vnames, variants)
			continue
		}
		if e.Seeds != 5 || filepath.Base(e.Scenario) != scenarioName || e.Name != filepath.Base(name)+suffix {
			t.Errorf("%s: %d seeds, scenario %q, name %q", name, e.Seeds, e.Scenario, e.Name)
		}
		if len(fromFile.Variants) != len(e.Variants) {
			t.Errorf("%s: %d variants from the file, %d built in", name, len(fromFile.Variants), len(e.Variants))
		}
		for i, v := range e.Variants {
			if string(fromFile.Variants[i].Text) != string(v.Text) {
				t.Errorf("%s %s: the file and the built-in experiment differ", name, v.Name)
			}
			c := config(t, e, v.Text)
			if c[column] != values[i] || c["duration"] != "1m0s" {
				t.Errorf("%s %s: %s = %q, duration %q; want %q, 1m0s", name, v.Name, column, c[column], c["duration"], values[i])
			}
			check(name+" "+v.Name, c)
			if len(v.Reference) == 0 {
				t.Errorf("%s %s: no reference", name, v.Name)
				continue
			}
			rc := config(t, e, v.Reference)
			if rc["network.backend"] != "ideal" || rc["vehicles[0].behaviors[1].params.period"] != "2ms" || rc["vehicles[0].behaviors[2].params.rate"] != "0" {
				t.Errorf("%s %s: reference network %q, beacon period %q, load %q", name, v.Name, rc["network.backend"],
					rc["vehicles[0].behaviors[1].params.period"], rc["vehicles[0].behaviors[2].params.rate"])
			}
			if rc["vehicles[0].count"] != c["vehicles[0].count"] {
				t.Errorf("%s %s: the reference has %s robots, the variant %s", name, v.Name, rc["vehicles[0].count"], c["vehicles[0].count"])
			}
		}
	}
}

// TestExperimentErrors checks that bad experiment files are refused with
// scenario.Errors naming the file, the line and the path of the problem.
func TestExperimentErrors(t *testing.T) {
	const head = "experiment: x\nscenario: platoon.yaml\n"
	cases := []struct{ text, want string }{
		{head + "sweep: {param: network.latencyy, values: [1ms]}\n", `x.yaml:3: network.latencyy: unknown field "latencyy"`},
		{head + "base: {network.loss: 2}\n", "x.yaml:3: network.loss: must be a probability in [0, 1], got 2"},
		{head + "base: {duration: 10s}\nvariants:\n  - name: a\n    set: {network.loss: 1.5}\n", "x.yaml:6: network.loss: must be a probability in [0, 1], got 1.5"},
		{head + "base:\n  network.rate: fast\n", `x.yaml:4: network.rate: want a number, got the string "fast"`},
		{head + "base:\n  network.mode: replay\n  vehicles[robot].behaviors[beacon].policy: event\n", "x.yaml:5: vehicles[0].behaviors[1].policy: event-triggered sending depends on the vehicle's state"},
		{head + "variants:\n  - name: a\n    set:\n      vehicles[robot].count: 0\n", "x.yaml:6: vehicles[0].count: must be >= 1, got 0"},
		{head + "base:\n  vehicles[drone].count: 3\n", `x.yaml:4: vehicles[drone].count: vehicles: no element named "drone" (elements: robot)`},
		{head + "base:\n  vehicles[3].count: 3\n", "x.yaml:4: vehicles[3].count: vehicles: no element [3] (the list has 1)"},
		{head + "base:\n  vehicles[robot].behaviors[radio].period: 3ms\n", `x.yaml:4: vehicles[robot].behaviors[radio].period: vehicles[robot].behaviors: no element named "radio" (elements: platoon, beacon, traffic)`},
		{head + "base:\n  network.latency.x: 3ms\n", "x.yaml:4: network.latency.x: network.latency is not a mapping of fields"},
		{head + "base:\n  network..x: 1\n", `x.yaml:4: network..x: bad path: a field name must follow "network."`},
		{head + "reference:\n  network: {backend: nosuch}\n", `x.yaml:4: network.backend: unknown network backend "nosuch"`},
		{head + "seeds: 0\n", "x.yaml:3: seeds: must be 1..1000, got 0"},
		{head + "seed: 3\n", `x.yaml:3: seed: unknown field "seed"`},
		{"experiment: x\n\nsweep: {param: network.loss, values: [0.1]}\n", "x.yaml:1: scenario: missing: the base scenario"},
		{"experiment: x\nseeds: 2\nscenario: nope.yaml\n", `x.yaml:3: scenario: no scenario file "nope.yaml" and no built-in scenario of that name`},
		{head + "sweep: {param: network.loss, values: []}\n", "x.yaml:3: sweep.values: needs at least one value"},
		{head + "sweep:\n  values: [1]\n", "x.yaml:3: sweep.param: missing: the path of the parameter"},
		{head + "sweep: {param: description, values: [a/b]}\n", `x.yaml:3: sweep.values[0]: "description=a/b" cannot name a directory: use named variants`},
		{head + "sweep: {param: network.loss, values: [0.1]}\nvariants: [{name: a, set: {}}]\n", "x.yaml:4: variants: give either sweep or variants, not both"},
		{head + "variants:\n  - {name: a, set: {}}\n  - {name: a}\n", `x.yaml:5: variants[1].name: "a": names must be unique`},
		{head + "variants: [{name: a/b, set: {}}]\n", `x.yaml:3: variants[0].name: "a/b": names must be unique and use letters`},
		{"experiment: ../x\nscenario: platoon.yaml\n", `x.yaml:1: experiment: "../x": use letters, digits`},
		{head + "base: [1, 2]\n", "x.yaml:3: base: want a mapping"},
	}
	for _, c := range cases {
		e, err := ParseExperiment("x.yaml", []byte(c.text), builtin, nil)
		var es scenario.Errors
		if e != nil || !errors.As(err, &es) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\ngot  %v\nwant %q", c.text, err, c.want)
		}
	}
	// The problems of a variant's scenario that come from the base scenario
	// are located there.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "s.yaml"), []byte("name: s\nduration: 10s\nvehicles:\n  - {name: q, kind: groundbot, count: 1, spawn: {layout: line}}\nmeasures:\n  - {type: platoon, group: qq}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "e.yaml"), []byte("scenario: s.yaml\nbase:\n  vehicles[q].count: 2\n"), 0o644)
	_, err := LoadExperiment(filepath.Join(dir, "e.yaml"), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "s.yaml:6: measures[0].group") || strings.Contains(err.Error(), "e.yaml") {
		t.Errorf("a problem in the base scenario: %v", err)
	}
}

// TestDuplicateSweepValues checks that a value given twice, as written or
// as decoded, is refused with its file and line: it would run the same
// variant twice and write two runs into one directory.
func TestDuplicateSweepValues(t *testing.T) {
	const head = "experiment: x\nscenario: platoon.yaml\n"
	cases := []struct{ text, want string }{
		{head + "sweep: {param: network.loss, values: [0.1, 0.1]}\n",
			"x.yaml:3: sweep.values[1]: 0.1 repeats sweep.values[0]: each value must appear once"},
		{head + "sweep:\n  param: network.loss\n  values:\n    - 0.1\n    - 0.2\n    - 0.10\n",
			"x.yaml:8: sweep.values[2]: 0.10 is the same network.loss as sweep.values[0] (0.1): each value must appear once"},
		{head + "sweep: {param: network.latency, values: [1ms, 2ms, 1000us]}\n",
			"x.yaml:3: sweep.values[2]: 1000us is the same network.latency as sweep.values[0] (1ms)"},
		{head + "sweep:\n  param: vehicles[robot].behaviors[platoon].waypoints\n  values: [[[0, 0], [1, 1]], [[0, 0], [1.0, 1, 0]]]\n",
			"x.yaml:5: sweep.values[1]: [[0, 0], [1.0, 1, 0]] is the same vehicles[robot].behaviors[platoon].waypoints as sweep.values[0]"},
		{head + "sweep:\n  param: vehicles[robot].count\n  name: robots\n  values: [3, 4, 0x3]\n",
			"x.yaml:6: sweep.values[2]: 0x3 is the same vehicles[robot].count as sweep.values[0] (3)"},
	}
	for _, c := range cases {
		_, err := ParseExperiment("x.yaml", []byte(c.text), builtin, nil)
		var es scenario.Errors
		if !errors.As(err, &es) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\ngot  %v\nwant %q", c.text, err, c.want)
		}
	}
	// Distinct values are fine, and each gives one variant.
	e := mustParse(t, "x.yaml", head+"sweep: {param: network.loss, values: [0, 0.1, 0.01, 1e-3]}\n")
	var names []string
	for _, v := range e.Variants {
		names = append(names, v.Name+"|"+v.Value)
	}
	if !slices.Equal(names, []string{"loss=0|0", "loss=0.1|0.1", "loss=0.01|0.01", "loss=1e-3|1e-3"}) {
		t.Fatalf("variants: %v", names)
	}
	for i, want := range []string{"0", "0.1", "0.01", "0.001"} {
		if got := config(t, e, e.Variants[i].Text)["network.params.loss"]; got != want {
			t.Errorf("variant %s: loss %s, want %s", e.Variants[i].Name, got, want)
		}
	}
}

// TestVariantsShareNothingWritable checks that the variants of one base
// (and their references) do not see each other's values: each is built
// from the base scenario and the experiment's changes alone.
func TestVariantsShareNothingWritable(t *testing.T) {
	e := mustParse(t, "x.yaml", `experiment: x
scenario: platoon.yaml
base:
  vehicles[robot].behaviors[platoon].waypoints: &w [[0, 0], [5, 0], [5, 5]]
  world.obstacles: []
sweep:
  param: vehicles[robot].behaviors[platoon].waypoints[1]
  values: [[1, 1], [2, 2], [3, 3]]
reference:
  vehicles[robot].behaviors[platoon].waypoints[2]: [9, 9]
  network: {backend: ideal}
`)
	const col = "vehicles[0].behaviors[0].params.waypoints"
	for i, v := range e.Variants {
		want := fmt.Sprintf("[[0,0,0],[%d,%d,0],[5,5,0]]", i+1, i+1)
		if got := config(t, e, v.Text)[col]; got != want {
			t.Errorf("variant %s: waypoints %s, want %s", v.Name, got, want)
		}
		want = fmt.Sprintf("[[0,0,0],[%d,%d,0],[9,9,0]]", i+1, i+1)
		if got := config(t, e, v.Reference)[col]; got != want {
			t.Errorf("variant %s: reference waypoints %s, want %s", v.Name, got, want)
		}
	}
	// Building a variant again gives what it gave the first time: the base
	// scenario and the experiment are not changed by the variants.
	again := mustParse(t, "x.yaml", string(e.Source))
	for i := range e.Variants {
		if string(again.Variants[i].Text) != string(e.Variants[i].Text) || string(again.Variants[i].Reference) != string(e.Variants[i].Reference) {
			t.Errorf("variant %s differs when built again", e.Variants[i].Name)
		}
	}
	// An alias used in two variants is two copies.
	e = mustParse(t, "x.yaml", `experiment: x
scenario: platoon.yaml
base:
  world.obstacles: []
variants:
  - name: a
    set:
      vehicles[robot].behaviors[platoon].waypoints: &w [[0, 0], [5, 0]]
      vehicles[robot].behaviors[platoon].waypoints[0]: [7, 7]
  - name: b
    set:
      vehicles[robot].behaviors[platoon].waypoints: *w
`)
	if a, b := config(t, e, e.Variants[0].Text)[col], config(t, e, e.Variants[1].Text)[col]; a != "[[7,7,0],[5,0,0]]" || b != "[[0,0,0],[5,0,0]]" {
		t.Errorf("waypoints a %s, b %s", a, b)
	}
}

// pathologicalExperiments cost seconds and gigabytes on a loader without
// bounds, or are the costliest experiments within the limits.
func pathologicalExperiments() []struct{ name, text string } {
	const head = "experiment: x\nscenario: platoon.yaml\n"
	waypoints := func(n int) string {
		var b strings.Builder
		b.WriteString("[")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "[%d, 0], ", i)
		}
		return b.String() + "[0, 1]]"
	}
	bomb := func() string {
		var b strings.Builder
		b.WriteString(head + "base: &a0 {network.loss: 0.1}\n")
		for l := 1; l <= 9; l++ {
			fmt.Fprintf(&b, "v%d: &a%d {<<: [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]}\n", l, l, l-1, l-1, l-1, l-1, l-1, l-1, l-1, l-1, l-1)
		}
		return b.String() + "<<: *a9\n"
	}()
	return []struct{ name, text string }{
		{"merge-key bomb", bomb},
		{"variants copying a base", func() string {
			var b strings.Builder
			b.WriteString(head + "base: &b\n  vehicles[robot].behaviors[platoon].waypoints: " + waypoints(3000) + "\nvariants:\n")
			for i := 0; i < 1000; i++ {
				fmt.Fprintf(&b, "  - {name: v%d, set: *b}\n", i)
			}
			return b.String()
		}()},
		{"variants copying a small base", func() string {
			var b strings.Builder
			b.WriteString(head + "base: &b\n  vehicles[robot].behaviors[platoon].waypoints: " + waypoints(20) + "\nvariants:\n")
			for i := 0; i < 1000; i++ {
				fmt.Fprintf(&b, "  - {name: v%d, set: *b}\n", i)
			}
			return b.String()
		}()},
		{"flow sequence syntax error 300KB", head + "sweep: {param: network.loss, values: [" + strings.Repeat("0.1,", 75000) + "\n"},
		{"many sweep values", hostile.Numbered(head+"sweep: {param: network.loss, values: [", "0.%d1, ", "1]}\n")},
		{"many sweep values, some alike", hostile.Numbered(head+"sweep: {param: network.loss, values: [", "0.%d, ", "1]}\n")},
		{"the most sweep values", func() string {
			var b strings.Builder
			b.WriteString(head + "sweep: {param: network.latency, values: [")
			for i := 0; i < MaxVariants-1; i++ {
				fmt.Fprintf(&b, "%dus, ", i)
			}
			return b.String() + "1s]}\nreference: {network: {backend: ideal}}\n"
		}()},
		{"the most sweep values over long waypoints", func() string {
			var b strings.Builder
			b.WriteString(head + "base:\n  vehicles[robot].behaviors[platoon].waypoints: " + waypoints(1500) + "\nsweep: {param: network.jitter, values: [")
			for i := 0; i < MaxVariants-1; i++ {
				fmt.Fprintf(&b, "%dus, ", i)
			}
			return b.String() + "1s]}\n"
		}()},
		{"the most variants, each its own reference", func() string {
			var b strings.Builder
			b.WriteString(head + "reference: {network: {backend: ideal}}\nvariants:\n")
			for i := 0; i < MaxVariants; i++ {
				fmt.Fprintf(&b, "  - name: v%d\n    set:\n      vehicles[robot].count: %d\n      network.loss: 0.%d\n", i, i%50+2, i)
			}
			return b.String()
		}()},
		{"many duplicate sweep values", head + "sweep: {param: network.loss, values: [" + strings.Repeat("0.1, ", scenario.MaxTokens/2-20) + "1]}\n"},
		{"many variants", hostile.Numbered(head+"variants:\n", "  - {name: v%d, set: {network.loss: 0.1}}\n", "")},
		{"many bad variants", hostile.Numbered(head+"variants:\n", "  - {name: v, set: {network.loss: %d}}\n", "")},
		{"the most bad variants", func() string {
			var b strings.Builder
			b.WriteString(head + "variants:\n")
			for i := 0; i < MaxVariants; i++ {
				fmt.Fprintf(&b, "  - {name: v%d, set: {network.loss: %d}}\n", i, i+2)
			}
			return b.String()
		}()},
		{"the most variants with bad paths", func() string {
			var b strings.Builder
			b.WriteString(head + "base:\n  vehicles[robot].behaviors[platoon].waypoints: " + waypoints(1000) + "\nvariants:\n")
			for i := 0; i < MaxVariants; i++ {
				fmt.Fprintf(&b, "  - {name: v%d, set: {network.latency.x%d: 1}}\n", i, i)
			}
			return b.String()
		}()},
		{"aliases of a long string", head + "base:\n  description: &s " + strings.Repeat("a", 900_000) + "\n  world.junk: [" +
			strings.TrimSuffix(strings.Repeat("*s, ", 10_000), ", ") + "]\n"},
		{"aliases of a long quoted string", head + "base:\n  description: &s \"" + strings.Repeat("a#", 300_000) + "\"\n  world.junk: [" +
			strings.TrimSuffix(strings.Repeat("*s, ", 10_000), ", ") + "]\n"},
		{"variants aliasing a long string", func() string {
			var b strings.Builder
			b.WriteString(head + "base:\n  description: &s " + strings.Repeat("a", 500_000) + "\nvariants:\n")
			for i := 0; i < MaxVariants; i++ {
				fmt.Fprintf(&b, "  - {name: v%d, set: {network.loss: 0.%d, description: *s}}\n", i, i)
			}
			return b.String()
		}()},
		{"a long path", head + "base:\n  " + strings.Repeat("x.", 200_000) + "x: 1\n"},
		{"long key over a list", strings.Repeat("k", scenario.MaxFileSize/2) + ": [" + strings.Repeat("1,", 15000) + "1]\n"},
	}
}

// TestPathologicalExperiments loads each pathological experiment: each
// costs less than hostile.MaxAlloc, and a refusal is a scenario.Errors
// value naming the experiment file.
func TestPathologicalExperiments(t *testing.T) {
	for _, c := range pathologicalExperiments() {
		t.Run(c.name, func(t *testing.T) {
			if len(c.text) > scenario.MaxFileSize {
				t.Fatalf("input of %d bytes is over the size limit", len(c.text))
			}
			var err error
			var e *Experiment
			n := hostile.Allocated(func() { e, err = ParseExperiment("bad.yaml", []byte(c.text), builtin, nil) })
			if n > hostile.MaxAlloc {
				t.Errorf("%d bytes of input: loading allocated %d MB, want < %d MB", len(c.text), n>>20, hostile.MaxAlloc>>20)
			}
			var es scenario.Errors
			if err != nil && (!errors.As(err, &es) || len(es) == 0) {
				t.Fatalf("got %T %v, want scenario.Errors", err, err)
			}
			if len(es) > scenario.MaxErrors+1 {
				t.Errorf("%d problems listed", len(es))
			}
			first := "accepted"
			if len(es) > 0 {
				first = es[0].Error()
				if es[0].File != "bad.yaml" {
					t.Errorf("the first problem is not located in the experiment file: %v", es[0])
				}
			} else {
				first += fmt.Sprintf(" (%d variants)", len(e.Variants))
			}
			t.Logf("%d bytes, %d MB allocated: %.160s", len(c.text), n>>20, first)
		})
	}
}

// TestCheckBudget checks the bound on the cost of checking the variants:
// an experiment whose variants are too costly to check is refused at the
// variant where the budget ran out, and references shared by variants are
// checked once.
func TestCheckBudget(t *testing.T) {
	values := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "%dus, ", i+1)
		}
		return strings.TrimSuffix(b.String(), ", ")
	}
	// The platoon scenario is some 300 tokens: about 100 variants fit.
	const head = "experiment: x\nscenario: platoon.yaml\n"
	e := mustParse(t, "x.yaml", head+"sweep: {param: network.latency, values: ["+values(90)+"]}\nreference: {network: {backend: ideal}}\n")
	if len(e.Variants) != 90 {
		t.Fatalf("%d variants", len(e.Variants))
	}
	_, err := ParseExperiment("x.yaml", []byte(head+"sweep: {param: network.latency, values: ["+values(MaxVariants)+"]}\n"), builtin, nil)
	var es scenario.Errors
	if !errors.As(err, &es) || len(es) != 1 || es[0].Line != 3 || !strings.HasPrefix(es[0].Path, "sweep.values[") || !strings.Contains(es[0].Msg, "split the experiment") {
		t.Fatalf("got %v", err)
	}
}

// TestLoadExperimentReadIsCapped loads a sparse file far over the size
// limit, as an experiment and as the scenario an experiment names: the
// read stops at the limit.
func TestLoadExperimentReadIsCapped(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(256 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	n := hostile.Allocated(func() { _, err = LoadExperiment(big, builtin, nil) })
	if n > 8*scenario.MaxFileSize { // the file is 256 MiB; the race detector adds some
		t.Errorf("reading allocated %d MB", n>>20)
	}
	var es scenario.Errors
	if !errors.As(err, &es) || !strings.Contains(err.Error(), "big.yaml: file larger than") {
		t.Errorf("got %v", err)
	}
	exp := filepath.Join(dir, "e.yaml")
	if err := os.WriteFile(exp, []byte("scenario: big.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n = hostile.Allocated(func() { _, err = LoadExperiment(exp, builtin, nil) })
	if n > 8*scenario.MaxFileSize { // the file is 256 MiB; the race detector adds some
		t.Errorf("reading allocated %d MB", n>>20)
	}
	if !errors.As(err, &es) || !strings.Contains(err.Error(), "big.yaml: file larger than") {
		t.Errorf("got %v", err)
	}
	// An experiment file that is not there.
	if _, err := LoadExperiment(filepath.Join(dir, "none.yaml"), builtin, nil); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// FuzzParseExperiment feeds arbitrary bytes to ParseExperiment: it must
// never panic, a refusal must be a non-empty scenario.Errors, and an
// accepted experiment must have distinct variant names, each variant's
// scenario valid. Run it with
//
//	go test ./sweep -run '^$' -fuzz FuzzParseExperiment -fuzztime 60s
func FuzzParseExperiment(f *testing.F) {
	for _, n := range scenarios.Experiments() {
		b, _ := scenarios.Lookup(n)
		f.Add(b)
	}
	for _, s := range []string{
		smallYAML,
		"scenario: platoon.yaml\nsweep: {param: network.loss, values: [0.1, 0.1]}\n",
		"scenario: platoon.yaml\nsweep: {param: network.latency, values: [1ms, 1000us, \"1ms\"]}\n",
		"scenario: platoon.yaml\nsweep:\n  param: vehicles[robot].behaviors[platoon].waypoints\n  values: [[[0, 0], [1, 1]]]\n",
		"scenario: platoon.yaml\nsweep: {param: nope, values: [1]}\n",
		"scenario: platoon.yaml\nvariants: [{name: a, set: {network.loss: 0.5}}, {name: a, set: {}}]\n",
		"scenario: platoon.yaml\nbase: &b {network.loss: 0.2}\nvariants: [{name: a, set: *b}, {name: b, set: {<<: *b, network.jitter: 1ms}}]\n",
		"scenario: platoon.yaml\nbase: &b [*b]\n",
		"scenario: quickstart\nsweep: {param: vehicles[0].count, values: [1, 2]}\n",
		"experiment: ../x\nscenario: platoon.yaml\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseExperiment("fuzz.yaml", data, builtin, nil)
		if err != nil {
			if e != nil {
				t.Fatalf("an experiment and an error: %v", err)
			}
			var es scenario.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error is a %T, not scenario.Errors: %v", err, err)
			}
			for i, x := range es {
				if x == nil || x.File == "" || strings.TrimSpace(x.Msg) == "" || x.Line < 0 {
					t.Fatalf("problem %d: %+v", i, x)
				}
			}
			return
		}
		if e == nil || len(e.Variants) == 0 || e.Seeds < 1 || e.Seeds > 1000 || !nameOK.MatchString(e.Name) {
			t.Fatalf("accepted: %+v", e)
		}
		names := map[string]bool{}
		for _, v := range e.Variants {
			if names[v.Name] || !dirNameOK(v.Name) {
				t.Fatalf("variant %q twice or not a directory name", v.Name)
			}
			names[v.Name] = true
			if _, err := scenario.Parse(e.Scenario, v.Text, engine.Core().Schema()); err != nil {
				t.Fatalf("variant %q accepted with %v", v.Name, err)
			}
		}
	})
}
