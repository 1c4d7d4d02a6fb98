package scenario_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"skyloop/engine"
	"skyloop/scenario"
	"skyloop/scenarios"
)

const overrideBase = `name: t
world:
network:
  latency: 1ms
  loss: 0
vehicles:
  - name: a
    count: 1
    behaviors:
      - type: beacon
        period: 100ms
      - type: traffic
        rate: 0
  - name: b
    count: 2
    behaviors: []
`

// sets reads an experiment-like document of path: value lines as sets.
func sets(t *testing.T, text string) []scenario.Set {
	t.Helper()
	doc, err := scenario.ParseDocument("x.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	var out []scenario.Set
	for _, f := range doc.Fields(doc.Root, "") {
		out = append(out, scenario.Set{Path: f.Key, Value: f.Value, Doc: doc, At: f.KeyAt})
	}
	if err := doc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func override(t *testing.T, base, set string) (*scenario.Overridden, error) {
	t.Helper()
	doc, err := scenario.ParseDocument("base.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	return scenario.Override(doc, sets(t, set))
}

// TestOverridePaths applies paths of every form and checks the text.
func TestOverridePaths(t *testing.T) {
	cases := []struct{ name, set, want string }{
		{"nothing", "{}", overrideBase},
		{"dotted field", "network.latency: 5ms\n", strings.Replace(overrideBase, "latency: 1ms", "latency: 5ms", 1)},
		{"a new field", "network.jitter: 2ms\n", strings.Replace(overrideBase, "  loss: 0\n", "  loss: 0\n  jitter: 2ms\n", 1)},
		{"new mappings", "outputs.plots.size: 3\n", overrideBase + "outputs:\n  plots:\n    size: 3\n"},
		{"into null", "world.check_period: 1s\n", strings.Replace(overrideBase, "world:\n", "world:\n  check_period: 1s\n", 1)},
		{"element by index", "vehicles[1].count: 5\n", strings.Replace(overrideBase, "count: 2", "count: 5", 1)},
		{"element by name", "vehicles[b].count: 5\n", strings.Replace(overrideBase, "count: 2", "count: 5", 1)},
		{"element by type", "vehicles[a].behaviors[traffic].rate: 1000\n", strings.Replace(overrideBase, "rate: 0", "rate: 1000", 1)},
		{"index then type", "vehicles[0].behaviors[beacon].period: 1s\n", strings.Replace(overrideBase, "period: 100ms", "period: 1s", 1)},
		{"a mapping replaces a mapping", "network: {backend: ideal}\n", strings.Replace(overrideBase, "  latency: 1ms\n  loss: 0\n", "  backend: ideal\n", 1)},
		{"a whole element", "vehicles[a].behaviors[0]: {type: beacon, policy: event}\n",
			strings.Replace(overrideBase, "      - type: beacon\n        period: 100ms\n", "      -\n        type: beacon\n        policy: event\n", 1)},
		{"a list", "vehicles[b].behaviors: [{type: platoon}]\n", strings.Replace(overrideBase, "    behaviors: []\n", "    behaviors:\n      -\n        type: platoon\n", 1)},
		{"an empty list", "vehicles[a].behaviors: []\n", strings.Replace(overrideBase,
			"    behaviors:\n      - type: beacon\n        period: 100ms\n      - type: traffic\n        rate: 0\n", "    behaviors: []\n", 1)},
		{"later sets win", "network.latency: 5ms\nnetwork: {latency: 7ms}\n", strings.Replace(overrideBase, "  latency: 1ms\n  loss: 0\n", "  latency: 7ms\n", 1)},
		{"a value needing quotes", "name: \"a: b #c\"\n", strings.Replace(overrideBase, "name: t", `name: "a: b #c"`, 1)},
	}
	for _, c := range cases {
		ov, err := override(t, overrideBase, c.set)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !sameYAML(t, ov.Text, c.want) {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, ov.Text, c.want)
		}
		if _, err := scenario.ParseDocument("out.yaml", ov.Text); err != nil {
			t.Errorf("%s: the text does not parse: %v", c.name, err)
		}
	}
}

// TestOverrideErrors checks the refusals of paths: each names the
// experiment file, the line of the path and the path.
func TestOverrideErrors(t *testing.T) {
	cases := []struct{ set, want string }{
		{"x: 1\nvehicles[c].count: 1\n", `x.yaml:2: vehicles[c].count: vehicles: no element named "c" (elements: a, b)`},
		{"vehicles[2].count: 1\n", "x.yaml:1: vehicles[2].count: vehicles: no element [2] (the list has 2)"},
		{"vehicles[-1].count: 1\n", "x.yaml:1: vehicles[-1].count: vehicles: no element [-1] (the list has 2)"},
		{"vehicles[a].behaviors[radio].period: 1s\n", `vehicles[a].behaviors: no element named "radio" (elements: beacon, traffic)`},
		{"vehicles[b].behaviors[0]: {}\n", "vehicles[b].behaviors: no element [0] (the list has 0)"},
		{"network[0]: 1\n", "x.yaml:1: network[0]: network is not a list"},
		{"vehicles.count: 1\n", "vehicles.count: vehicles is not a mapping of fields"},
		{"network.latency.ms: 1\n", "network.latency is not a mapping of fields"},
		{"\n\n\"[0]\": 1\n", "x.yaml:3: [0]: the scenario is not a list"},
		{"network..latency: 1\n", `bad path: a field name must follow "network."`},
		{"network.: 1\n", `bad path: a field name must follow "network."`},
		{"network.[0]: 1\n", `bad path: a field name must follow "network."`},
		{"vehicles[0]count: 1\n", `bad path at "count": want .field or [element]`},
		{"\"network latency\": 1\n", `bad path at " latency": want .field or [element]`},
		{"\"\": 1\n", "empty path"},
		{"\"vehicles[a/b]\": 1\n", `bad path at "[a/b]"`},
		{strings.Repeat("a.", 300) + "a: 1\n", "bad path: more than 200 levels"},
	}
	for _, c := range cases {
		ov, err := override(t, overrideBase, c.set)
		var es scenario.Errors
		if ov != nil || !errors.As(err, &es) || len(es) != 1 || es[0].File != "x.yaml" || es[0].Line == 0 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\ngot  %v\nwant %q", c.set, err, c.want)
		}
	}
	// Two elements of one name: only an index tells them apart.
	_, err := override(t, "vehicles:\n  - {name: a}\n  - {name: a}\n", "vehicles[a].count: 1\n")
	if err == nil || !strings.Contains(err.Error(), `x.yaml:1: vehicles[a].count: vehicles: "a" names elements 0 and 1: use an index`) {
		t.Errorf("ambiguous name: %v", err)
	}
	// Every bad set is reported.
	_, err = override(t, overrideBase, "vehicles[c].count: 1\nnetwork.latency: 1ms\nvehicles[9]: {}\n")
	var es scenario.Errors
	if !errors.As(err, &es) || len(es) != 2 || es[0].Line != 1 || es[1].Line != 3 {
		t.Errorf("two bad sets: %v", err)
	}
}

// TestOverrideLocate checks that problems found in an overridden scenario
// are reported where each line came from: the experiment file for values
// it set, the scenario for the rest.
func TestOverrideLocate(t *testing.T) {
	base, ok := scenarios.Lookup("netbots/platoon")
	if !ok {
		t.Fatal("no platoon scenario")
	}
	doc, err := scenario.ParseDocument("platoon.yaml", base)
	if err != nil {
		t.Fatal(err)
	}
	check := func(set string) error {
		ov, err := scenario.Override(doc, sets(t, set))
		if err != nil {
			return err
		}
		_, err = scenario.Parse("platoon.yaml", ov.Text, engine.Core().Schema())
		return ov.Locate(err)
	}
	if err := check("description: x\nnetwork.latency: 5ms\n"); err != nil {
		t.Fatalf("a good set: %v", err)
	}
	cases := []struct{ set, want string }{
		{"description: x\nnetwork.loss: 2\n", "x.yaml:2: network.loss: must be a probability in [0, 1], got 2"},
		{"\nnetwork: {backend: impair, latency: 1ms, lost: 2}\n", `x.yaml:2: network.lost: unknown field "lost"`},
		{"vehicles[robot].behaviors[beacon].policy: sometimes\n", `x.yaml:1: vehicles[0].behaviors[1].policy:`},
		{"\n\n\nvehicles[robot]: {name: robot, kind: groundbot, count: 2}\n", "x.yaml:4: vehicles[0].spawn.layout: missing"},
		// The scenario's own lines stay the scenario's.
		{"vehicles[robot].count: 3\nmeasures[0].gap: 1.0\nnetwork.backend: ideal\n", "platoon.yaml:25: network.jitter: unknown field"},
	}
	for _, c := range cases {
		err := check(c.set)
		var es scenario.Errors
		if !errors.As(err, &es) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\ngot  %v\nwant %q", c.set, err, c.want)
		}
	}
	// By hand: every line of the text maps to its origin.
	ov, err := scenario.Override(doc, sets(t, "description: x\n\nnetwork.latency: 5ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(ov.Text), "\n")
	seen := 0
	for i, l := range lines {
		var want string
		switch strings.TrimSpace(l) {
		case "description: x":
			want = "x.yaml:1"
		case "latency: 5ms":
			want = "x.yaml:3"
		case "name: platoon":
			want = "platoon.yaml:10"
		case "tick: 2ms":
			want = "platoon.yaml:13"
		case "jitter: 0s":
			want = "platoon.yaml:25"
		default:
			continue
		}
		seen++
		err := ov.Locate(scenario.Errors{{File: "platoon.yaml", Line: i + 1, Msg: "m"}})
		if got := err.Error(); got != want+": m" {
			t.Errorf("line %d %q is located at %s, want %s", i+1, l, got, want)
		}
	}
	if seen != 5 {
		t.Errorf("%d of the 5 lines looked for are in the text:\n%s", seen, ov.Text)
	}
	plain := errors.New("not located")
	if ov.Locate(plain) != plain {
		t.Errorf("Locate changed an error without lines")
	}
}

// TestOverrideAliases checks that aliased values are copies: setting one
// leaves the others, and the base document is not changed by overrides.
func TestOverrideAliases(t *testing.T) {
	const base = "a: &x {k: 1, l: [1, 2]}\nb: *x\nc:\n  <<: *x\n  m: 3\n"
	ov, err := override(t, base, "a.k: 2\nb.l: [5]\nc.l: []\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "a:\n  k: 2\n  l:\n    - 1\n    - 2\nb:\n  k: 1\n  l:\n    - 5\nc:\n  k: 1\n  l: []\n  m: 3\n"
	if !sameYAML(t, ov.Text, want) {
		t.Errorf("got\n%s\nwant\n%s", ov.Text, want)
	}
	doc, err := scenario.ParseDocument("base.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	first, err := scenario.Override(doc, sets(t, "a.l[0]: 9\nb: {z: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := scenario.Override(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{a: {k: 1, l: [1, 2]}, b: {k: 1, l: [1, 2]}, c: {k: 1, l: [1, 2], m: 3}}"; !sameYAML(t, again.Text, want) {
		t.Errorf("the base changed after an override:\n%s", again.Text)
	}
	if !sameYAML(t, first.Text, "{a: {k: 1, l: [9, 2]}, b: {z: 1}, c: {k: 1, l: [1, 2], m: 3}}") {
		t.Errorf("first override:\n%s", first.Text)
	}
	// One set value used twice (an experiment's base, applied to every
	// variant) is a copy each time.
	s := sets(t, "a.l: [7, 8]\n")
	s = append(s, sets(t, "a.l[0]: 0\n")...)
	one, err := scenario.Override(doc, s)
	if err != nil {
		t.Fatal(err)
	}
	two, err := scenario.Override(doc, s[:1])
	if err != nil {
		t.Fatal(err)
	}
	if !sameYAML(t, one.Text, "{a: {k: 1, l: [0, 8]}, b: {k: 1, l: [1, 2]}, c: {k: 1, l: [1, 2], m: 3}}") ||
		!sameYAML(t, two.Text, "{a: {k: 1, l: [7, 8]}, b: {k: 1, l: [1, 2]}, c: {k: 1, l: [1, 2], m: 3}}") {
		t.Errorf("a set value shared between overrides:\n%s\n---\n%s", one.Text, two.Text)
	}
}

// TestOverrideTooLarge checks that an override whose text would exceed
// the file size limit (aliases of a long string) is refused, without
// printing it all.
func TestOverrideTooLarge(t *testing.T) {
	set := "description: &s " + strings.Repeat("a", 100_000) + "\njunk: [" + strings.TrimSuffix(strings.Repeat("*s, ", 2000), ", ") + "]\n"
	ov, err := override(t, overrideBase, set)
	if ov != nil || !scenario.TooLarge(err) || !strings.Contains(err.Error(), "x.yaml: with the changes applied, base.yaml is larger than") {
		t.Fatalf("got %v", err)
	}
	// Just under the limit is fine.
	set = "description: &s " + strings.Repeat("a", 100_000) + "\njunk: [*s, *s, *s, *s, *s, *s, *s, *s]\n"
	ov, err = override(t, overrideBase, set)
	if err != nil || scenario.TooLarge(err) || len(ov.Text) < 900_000 {
		t.Fatalf("got %v", err)
	}
	if scenario.TooLarge(errors.New("x")) || scenario.TooLarge(scenario.Errors{{File: "x.yaml", Line: 1, Msg: "m"}}) {
		t.Errorf("TooLarge of other errors")
	}
}

// sameYAML reports whether two YAML texts hold the same values (key order
// included).
func sameYAML(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w yaml.MapSlice
	if err := yaml.Unmarshal(got, &g); err != nil {
		t.Fatalf("%v:\n%s", err, got)
	}
	if err := yaml.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want: %v", err)
	}
	return fmt.Sprint(g) == fmt.Sprint(w)
}
