package scenario

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse. Parse must never panic (it
// recovers panics of the YAML library itself), and every failure must be a
// non-empty Errors value whose every element names the file and says
// something.
//
// Run it with
//
//	go test ./scenario -run XXX -fuzz FuzzParse -fuzztime 60s
//
// With SKYLOOP_FUZZ_STRICT=1 in the environment the target also fails on
// inputs that made the YAML library panic (Parse reports those as "cannot
// parse YAML: ..."), to collect them as findings.
func FuzzParse(f *testing.F) {
	quickstart, err := os.ReadFile("../scenarios/quickstart.yaml")
	if err != nil {
		f.Fatalf("reading the quickstart seed: %v", err)
	}
	f.Add(quickstart)
	for _, s := range []string{
		// Minimal valid scenario, block and flow style.
		"vehicles:\n  - {name: d, kind: pointmass, count: 1, spawn: {layout: line, spacing: 1}}\n",
		"{name: t, vehicles: [{name: d, kind: pointmass, count: 1, spawn: {layout: line, spacing: 1}}]}",
		// Anchors and aliases, including an undefined and a recursive one.
		"name: t\nvehicles:\n  - {name: a, kind: pointmass, count: 2, spawn: &sp {layout: line, spacing: 1}}\n  - {name: b, kind: pointmass, count: 2, spawn: *sp}\n",
		"name: t\nvehicles:\n  - spawn: *nowhere\n",
		"a: &x [*x]\nb: &y {c: *y}\n",
		// Merge keys, single and list, and of a scalar.
		"vehicles:\n  - &g {name: a, kind: pointmass, count: 2}\n  - <<: *g\n    name: b\n",
		"vehicles:\n  - &a {kind: pointmass}\n  - &b {count: 1}\n  - <<: [*a, *b]\n    name: c\n",
		"vehicles:\n  - <<: 5\n",
		// Tabs and odd whitespace.
		"name:\tt\nvehicles:\n\t- {name: d}\n",
		"\ufeffname: t\r\nduration: 5\r\n",
		// Deeply nested lists and mappings. Kept moderate: the YAML
		// parser's time grows with the square of the depth, and deep
		// seeds make the fuzzer spend its time minimizing.
		"vehicles: " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n",
		"world:" + strings.Repeat(" {a:", 40) + " 1" + strings.Repeat("}", 40) + "\n",
		strings.Repeat("- ", 40) + "x\n",
		// Huge numbers, NaN and infinities.
		"seed: 99999999999999999999999\nworkers: -9223372036854775809\nvehicles:\n  - {count: 1e999, yaw: 0x7fffffffffffffffff}\n",
		"vehicles:\n  - {name: a, yaw: .nan, count: 1}\n  - {name: b, yaw: -.inf, spawn: {origin: [.inf, .NaN, 1e308]}}\n",
		"duration: 9223372036854775807ns\ntick: 1ns\n",
		// Unicode names and keys.
		"name: дрон\nvehicles:\n  - name: 無人機\n    kind: pointmass\n    \u00e9: 1\n",
		// Document separators and end markers.
		"---\nname: a\n---\nname: b\n...\n",
		"---\n...\n",
		"# only a comment\n",
		// Tags, complex keys, block scalars, NUL bytes.
		"name: !!binary aGVsbG8=\ncount: !!str 3\n",
		"? [a, b]\n: c\n",
		"description: |\n  line one\n  line two\nname: >-\n  folded\n",
		"name: \"\x00\"\n\x00",
		// Anchors expanding past the node budget, cycles through merge
		// keys, and nesting the pre-scan measures.
		"a0: &a0 {k: 1}\na1: &a1 {<<: [*a0, *a0, *a0]}\na2: &a2 {<<: [*a1, *a1, *a1]}\n<<: *a2\n",
		"name: t\nworld: &w {check_period: 1ms, <<: *w}\n",
		"name: t\nworld: {obstacles: &l [1, [*l]]}\n",
		"vehicles: &v [*v, *v]\n",
		"k: ]]]]]]]]\nv: [[[[[[[[[[[[1]]]]]]]]]]]]\n",
		"description: don't [[[[\nvehicles: [{name: 'a', kind: \"b\"}]\n",
		"- - - - - - - - - - - - - - x\n",
		"k:\n k:\n  k:\n   k:\n    k: [1, 2]\n",
	} {
		f.Add([]byte(s))
	}
	strict := os.Getenv("SKYLOOP_FUZZ_STRICT") != ""
	f.Fuzz(func(t *testing.T, data []byte) {
		var sc *Scenario
		var err error
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		sc, err = Parse("fuzz.yaml", data)
		runtime.ReadMemStats(&m1)
		if n := m1.TotalAlloc - m0.TotalAlloc; n > 100<<20 {
			t.Fatalf("%d bytes of input allocated %d MB", len(data), n>>20)
		}
		if err == nil {
			if sc == nil {
				t.Fatal("Parse returned neither a scenario nor an error")
			}
			if sc.File != "fuzz.yaml" {
				t.Fatalf("scenario File = %q", sc.File)
			}
			if err := sc.Err(); err != nil {
				t.Fatalf("Parse succeeded but Err() = %v", err)
			}
			return
		}
		if sc != nil {
			t.Fatalf("Parse returned a scenario and an error: %v", err)
		}
		var es Errors
		if !errors.As(err, &es) {
			t.Fatalf("error is a %T, not Errors: %v", err, err)
		}
		if len(es) == 0 {
			t.Fatal("empty Errors")
		}
		for i, e := range es {
			if e == nil {
				t.Fatalf("error %d is nil", i)
			}
			if e.File != "fuzz.yaml" {
				t.Errorf("error %d: File = %q, want fuzz.yaml (%v)", i, e.File, e)
			}
			if strings.TrimSpace(e.Msg) == "" {
				t.Errorf("error %d has an empty message (%+v)", i, *e)
			}
			if e.Line < 0 {
				t.Errorf("error %d has line %d", i, e.Line)
			}
			if i == MaxErrors && i == len(es)-1 && e.Line == 0 && strings.HasPrefix(e.Msg, "... and ") {
				continue // the count of problems not listed
			}
			if i >= MaxErrors {
				t.Errorf("more than %d problems listed", MaxErrors)
			}
			if i > 0 && es[i-1].Line > e.Line {
				t.Errorf("errors not sorted by line: %v", err)
			}
			if strict && strings.HasPrefix(e.Msg, "cannot parse YAML") {
				t.Errorf("the YAML library panicked: %v", e)
			}
		}
	})
}
