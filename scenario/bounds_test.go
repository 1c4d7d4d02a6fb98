package scenario_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/components"
	"skyloop/scenario/scenariofile"

	"skyloop/internal/hostile"
	"skyloop/scenario"
)

// registry has every component skyloop ships with.
var registry = components.Registry()

// fill repeats unit after head up to n bytes in all, then appends tail.
func fill(head, unit, tail string, n int) string {
	k := (n - len(head) - len(tail)) / len(unit)
	return head + strings.Repeat(unit, max(k, 0)) + tail
}

// fillMax repeats unit after head as often as the size and token limits
// allow (the largest input the YAML library gets to see), then appends
// tail.
func fillMax(head, unit, tail string) string {
	k := (scenario.MaxFileSize - len(head) - len(tail)) / len(unit)
	if t := (scenario.MaxTokens - hostile.Tokens(head) - hostile.Tokens(tail) - 2) / hostile.Tokens(unit); t < k {
		k = t
	}
	return head + strings.Repeat(unit, max(k, 0)) + tail
}

// mergeBomb is a merge-key bomb: each level merges the previous one width
// times (width^levels merges when expanded naively). 9 x 9 is 587 bytes.
func mergeBomb(levels, width int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 {k: 1}\n")
	for l := 1; l <= levels; l++ {
		fmt.Fprintf(&b, "a%d: &a%d {<<: [", l, l)
		for i := 0; i < width; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", l-1)
		}
		b.WriteString("]}\n")
	}
	fmt.Fprintf(&b, "<<: *a%d\n", levels)
	return b.String()
}

// laughs is the "billion laughs": lists of aliases of lists.
func laughs(levels, width int) string {
	var b strings.Builder
	b.WriteString("name: t\nworld:\n  obstacles: &a0 [" + strings.TrimSuffix(strings.Repeat("1, ", width), ", ") + "]\n")
	b.WriteString("nodes:\n")
	for l := 1; l <= levels; l++ {
		fmt.Fprintf(&b, "  - {name: n%d, position: &a%d [", l, l)
		for i := 0; i < width; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", l-1)
		}
		b.WriteString("]}\n")
	}
	return b.String()
}

// groupCopies refers n times to one vehicle group with m explicit
// positions: each reference is decoded (and built) again.
func groupCopies(n, m int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: t\nvehicles:\n  - &g {name: g, kind: pointmass, count: %d, spawn: {layout: explicit, positions: [", m)
	for i := 0; i < m; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "[%d, 0, 1]", i)
	}
	b.WriteString("]}}\n")
	b.WriteString(strings.Repeat("  - *g\n", n-1))
	return b.String()
}

// manyProblems has n vehicle groups with several problems each.
func manyProblems(n int) string {
	var b strings.Builder
	b.WriteString("name: t\nvehicles:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {name: g, kind: pointmass, count: 0, spawn: {layout: line, spacing: 0}}\n")
	}
	return b.String()
}

// pathological are inputs that cost seconds and gigabytes on a loader
// without bounds (see issue 12), and worst cases of the YAML library within
// the size and token limits.
func pathological() []struct{ name, text string } {
	const size = scenario.MaxFileSize
	return []struct{ name, text string }{
		// The cases of issue 12.
		{"merge-key bomb", mergeBomb(9, 9)},
		{"billion laughs", laughs(9, 9)},
		{"group copies", groupCopies(500, 1000)},
		{"flow sequence syntax error 300KB", fill("vehicles: [", "1,", "1\n", 300<<10)},
		{"count 1e9", "name: t\nvehicles:\n  - {name: d, kind: pointmass, count: 1000000000, spawn: {layout: grid, spacing: 1}}\n"},
		{"1000 groups of 100000", "name: t\nvehicles:\n" + strings.Repeat("  - {kind: pointmass, count: 100000, spawn: {layout: grid, spacing: 1}}\n", 1000)},
		{"thousands of problems", manyProblems(1200)},
		// Syntax errors.
		{"flow sequence syntax error", fillMax("vehicles: [", "1,", "1\n")},
		{"flow sequence syntax error long scalars", fillMax("vehicles: [", strings.Repeat("x", 200)+", ", "x\n")},
		{"block mapping syntax error", fillMax("name: t\nvehicles:\n", "  - {name: a}\n", "  x\n - y\n")},
		{"unclosed quote", fillMax("name: \"", "1,", "\n")},
		{"unclosed flow mapping", fillMax("world: {", "a: [1, 2], ", "\n")},
		// Costly structure.
		{"long key over a list", fillMax(strings.Repeat("k", size/2)+": [", "1,", "1]\n")},
		{"nested long keys over a list", func() string {
			var b strings.Builder
			for i := 0; i < 60; i++ {
				b.WriteString(strings.Repeat(" ", i) + strings.Repeat("k", 200) + ":\n")
			}
			return fillMax(b.String()+strings.Repeat(" ", 60)+"x: [", "1,", "1]\n")
		}()},
		{"nested flow long keys over a list", fillMax(strings.Repeat("{"+strings.Repeat("k", 200)+": ", 60)+"[", "1,", "1]"+strings.Repeat("}", 60)+"\n")},
		{"long key over comments", fillMax(strings.Repeat("k", size/2)+":\n", "#\n", "")},
		{"deep block sequence", fillMax("", "- ", "x\n")},
		{"deep block mapping", func() string {
			var b strings.Builder
			for i := 0; b.Len() < scenario.MaxFileSize/2; i++ {
				b.WriteString(strings.Repeat(" ", i) + "k:\n")
			}
			return b.String()
		}()},
		{"long block mapping", hostile.Numbered("", "k%d: 1\n", "")},
		{"long block mappings", hostile.Numbered("", "- {}\n  k%d: 1\n", "")},
		// Many nodes, all decoded.
		{"list of numbers", fillMax("name: t\nvehicles: [", "1,", "1]\n")},
		{"list of empty lists", fillMax("name: t\nvehicles: [", "[],", "[]]\n")},
		{"list of empty mappings", fillMax("name: t\nvehicles: [", "{},", "{}]\n")},
		{"unknown fields", hostile.Numbered("name: t\nworld: {", "k%d: 1, ", "}\n")},
		{"anchors", hostile.Numbered("name: t\nworld:\n  obstacles: [", "&a%d 1, ", "1]\n")},
		{"aliases of a scalar", fillMax("name: t\nworld:\n  obstacles: [&a 1, ", "*a, ", "*a]\n")},
		{"aliases of a mapping", fillMax("name: t\nvehicles: [&a {name: x, kind: pointmass}, ", "*a, ", "*a]\n")},
		{"positions", fillMax("name: t\nvehicles:\n  - {name: d, kind: pointmass, count: 1, spawn: {layout: explicit, positions: [", "[1.5, 2.5, 3.5], ", "[1, 2, 3]]}}\n")},
		{"nested flow", fillMax("vehicles: [", strings.Repeat("[", 60)+strings.Repeat("]", 60)+",", "1]\n")},
		// Cheap per token, many tokens.
		{"comments", fillMax("", "#\n", "a: 1\n")},
		{"words", fillMax("description: ", "x ", "\n")},
		{"literal block", fillMax("description: |\n", "  x\n", "")},
		{"documents", fillMax("", "---\n", "")},
		{"tags", fillMax("vehicles: [", "!x 1,", "1]\n")},
		{"null entries", fillMax("vehicles:\n", "-\n", "")},
		{"null nodes", fillMax("nodes:\n", "-\n", "")},
		{"null processes", fillMax("isolation: netns\nrealtime: 1\nprocesses:\n", "-\n", "")},
		{"processes", hostile.Numbered("isolation: netns\nrealtime: 1\nprocesses:\n", "- {name: p%d, command: x}\n", "")},
		{"named nodes", hostile.Numbered("name: t\nnodes:\n", "- {name: d-%d}\n", "")},
		{"groups and nodes", hostile.Numbered("name: t\nvehicles:\n", "- {name: d%[1]d, kind: pointmass, count: 1, spawn: {layout: line, spacing: 1}}\n", "nodes: [{name: d1-0}]\n")},
		{"nodes and groups", hostile.Numbered("name: t\nvehicles: [{name: d, kind: pointmass, count: 1000, spawn: {layout: line, spacing: 1}}]\nnodes:\n", "- {name: d-%d}\n", "")},
	}
}

// TestPathologicalScenarios loads each pathological input (parse, decode,
// generic and engine checks): each must be refused, with a scenario.Errors
// value, and cost less than hostile.MaxAlloc.
func TestPathologicalScenarios(t *testing.T) {
	for _, c := range pathological() {
		t.Run(c.name, func(t *testing.T) {
			if len(c.text) > scenario.MaxFileSize {
				t.Fatalf("input of %d bytes is over the size limit", len(c.text))
			}
			var err error
			n := hostile.Allocated(func() { _, err = scenario.Parse("bad.yaml", []byte(c.text), registry.Schema()) })
			if n > hostile.MaxAlloc {
				t.Errorf("%d bytes of input: loading allocated %d MB, want < %d MB", len(c.text), n>>20, hostile.MaxAlloc>>20)
			}
			var es scenario.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("got %v, want scenario.Errors", err)
			}
			if len(es) > scenario.MaxErrors+1 {
				t.Errorf("%d problems listed, want at most %d and a count of the rest", len(es), scenario.MaxErrors)
			}
			t.Logf("%d bytes, %d MB allocated: %.200s", len(c.text), n>>20, es[0])
		})
	}
}

func TestAnchorBudgetMessages(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{mergeBomb(9, 9), "bad.yaml:6: anchors and merge keys expand to more than 64000 YAML nodes"},
		{laughs(9, 9), "anchors and merge keys expand to more than 64000 YAML nodes"},
		{"name: t\nworld: {obstacles: &x [*x]}\n", "bad.yaml:2: alias *x is inside the value of its own anchor &x (a cycle)"},
		{"name: t\nworld: &w {check_period: 1ms, <<: *w}\n", "bad.yaml:2: alias *w is inside the value of its own anchor &w (a cycle)"},
	} {
		_, err := scenario.Parse("bad.yaml", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60q: got %v, want %q", c.text, err, c.want)
		}
	}
	// Anchors used a moderate number of times are fine.
	ok := "name: t\nvehicles:\n  - &g {name: a, kind: pointmass, count: 2, spawn: &s {layout: line, spacing: 1}}\n  - {<<: *g, name: b, spawn: *s}\n"
	if _, err := scenario.Parse("ok.yaml", []byte(ok), registry.Schema()); err != nil {
		t.Fatal(err)
	}
}

// TestManyProblemsListed checks that thousands of problems are listed as
// the first MaxErrors in line order and a count of the rest.
func TestManyProblemsListed(t *testing.T) {
	_, err := scenario.Parse("bad.yaml", []byte(manyProblems(1000)), registry.Schema())
	var es scenario.Errors
	if !errors.As(err, &es) {
		t.Fatalf("got %v", err)
	}
	if len(es) != scenario.MaxErrors+1 {
		t.Fatalf("%d problems listed, want %d and a count", len(es), scenario.MaxErrors)
	}
	for i := 1; i < scenario.MaxErrors; i++ {
		if es[i-1].Line > es[i].Line {
			t.Fatalf("not in line order:\n%v", err)
		}
	}
	if es[0].Line != 3 || es[0].Path != "vehicles[0].count" {
		t.Errorf("first problem: %v", es[0])
	}
	last := es[len(es)-1].Error()
	if !strings.HasPrefix(last, "bad.yaml: ... and ") || !strings.Contains(last, " more problems") {
		t.Errorf("last line %q, want a count of the other problems", last)
	}
}

// TestReadIsCapped loads files larger than the limit: the read stops at
// the limit (a sparse 256 MB file and /dev/zero), and the refusal is a
// scenario.Errors value.
func TestReadIsCapped(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(256 << 20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	paths := []string{big}
	if _, err := os.Stat("/dev/zero"); err == nil {
		paths = append(paths, "/dev/zero")
	}
	for _, p := range paths {
		var err error
		n := hostile.Allocated(func() { _, err = scenariofile.Load(p, registry.Schema()) })
		if n > 4*scenario.MaxFileSize {
			t.Errorf("%s: reading allocated %d MB", p, n>>20)
		}
		var es scenario.Errors
		if !errors.As(err, &es) || !strings.Contains(err.Error(), fmt.Sprintf("file larger than %d bytes", scenario.MaxFileSize)) {
			t.Errorf("%s: got %v", p, err)
		}
	}
	// A file of exactly the limit is read (and then judged on content).
	edge := filepath.Join(t.TempDir(), "edge.yaml")
	os.WriteFile(edge, []byte(fill("name: t\n", "#\n", "", scenario.MaxFileSize)), 0o644)
	if _, err := scenariofile.Load(edge); err == nil || strings.Contains(err.Error(), "larger than") {
		t.Errorf("a file of exactly MaxFileSize bytes: %v", err)
	}
}

// TestLimitsAcceptRealFiles checks that the limits leave room: every
// shipped scenario loads, and so does a large but plain one.
func TestLimitsAcceptRealFiles(t *testing.T) {
	// Scenarios flown by real firmware check that it is there: give them
	// directories shaped like ArduPilot's tree and PX4's build.
	fw := t.TempDir()
	for name, mode := range map[string]os.FileMode{
		"ardupilot/build/sitl/bin/arducopter": 0o755, "ardupilot/Tools/autotest/default_params/copter.parm": 0o644,
		"px4/bin/px4": 0o755, "px4/etc/init.d-posix/rcS": 0o644, "px4/etc/init.d-posix/airframes/10016_none_iris": 0o644,
	} {
		p := filepath.Join(fw, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SKYLOOP_ARDUPILOT_DIR", filepath.Join(fw, "ardupilot"))
	t.Setenv("SKYLOOP_PX4_DIR", filepath.Join(fw, "px4"))
	files, _ := filepath.Glob("../scenarios/*.yaml")
	for _, f := range files {
		if _, err := scenariofile.Load(f, registry.Schema()); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	var b strings.Builder
	b.WriteString("# a large hand-written scenario\nname: big\ndescription: >\n" + strings.Repeat("  many words of description here\n", 200))
	b.WriteString("world:\n  obstacles:\n")
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&b, "    - {name: box%d, min: [%d, 0, 0], max: [%d, 1, 3]} # shelf %d\n", i, i, i+1, i)
	}
	b.WriteString("vehicles:\n  - name: d\n    kind: pointmass\n    count: 2000\n    spawn:\n      layout: explicit\n      positions:\n")
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "        - [%d.5, %d.25, 10]\n", i, i)
	}
	var err error
	n := hostile.Allocated(func() { _, err = scenario.Parse("big.yaml", []byte(b.String()), registry.Schema()) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d KB plain scenario: %d MB allocated", b.Len()>>10, n>>20)
}

func TestProblemsInFieldOrder(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: t\nworld: {obstacles: [")
	for i := 0; i < 150; i++ {
		b.WriteString("1, ")
	}
	b.WriteString("1]}\nvehicles: [{name: d, kind: pointmass, count: 1, spawn: {layout: line, spacing: 1}}]\n")
	_, err := scenario.Parse("bad.yaml", []byte(b.String()))
	var es scenario.Errors
	if !errors.As(err, &es) || len(es) != scenario.MaxErrors+1 {
		t.Fatalf("got %v", err)
	}
	for i := 0; i < scenario.MaxErrors; i++ {
		if want := fmt.Sprintf("world.obstacles[%d]", i); es[i].Path != want {
			t.Fatalf("problem %d is at %s, want %s", i, es[i].Path, want)
		}
	}
	if want := "bad.yaml: ... and 51 more problems (the first 100 are listed)"; es[scenario.MaxErrors].Error() != want {
		t.Errorf("last line %q, want %q", es[scenario.MaxErrors].Error(), want)
	}
}

// TestJustUnderParseCost finds, for each structure the YAML library finds
// costly (long keys over many nodes, deep nesting, long block mappings),
// the largest input the pre-parse estimate lets through, and checks that
// loading it stays within hostile.MaxAlloc: the estimate is calibrated.
func TestJustUnderParseCost(t *testing.T) {
	list := strings.Repeat("1,", scenario.MaxTokens/2-50) + "1]\n"
	families := []struct {
		name string
		gen  func(n int) string
		max  int
	}{
		{"long key over a list", func(n int) string { return strings.Repeat("k", n) + ": [" + list }, 64 << 10},
		{"nested long keys over a list", func(n int) string {
			var b strings.Builder
			for i := 0; i < 30; i++ {
				b.WriteString(strings.Repeat(" ", i) + strings.Repeat("k", n) + ":\n")
			}
			return b.String() + strings.Repeat(" ", 30) + "x: [" + strings.Repeat("1,", scenario.MaxTokens/2-200) + "1]\n"
		}, 8000},
		{"nested flow keys over a list", func(n int) string {
			return "a: " + strings.Repeat("{"+strings.Repeat("k", n)+": ", 10) + "[" + strings.Repeat("1,", scenario.MaxTokens/2-200) + "1]" + strings.Repeat("}", 10) + "\n"
		}, 8000},
		{"deep block sequence", func(n int) string {
			return strings.Repeat("- ", n) + "x\n" + strings.Repeat("- y\n", max(scenario.MaxTokens/2-n/2-10, 0))
		}, scenario.MaxTokens - 40},
		{"deep block mapping", func(n int) string {
			var b strings.Builder
			for i := 0; i < n; i++ {
				b.WriteString(strings.Repeat(" ", i) + "k:\n")
			}
			return b.String()
		}, 1400},
		{"long block mapping", func(n int) string {
			var b strings.Builder
			for i := 0; i < n; i++ {
				fmt.Fprintf(&b, "k%d: 1\n", i)
			}
			return b.String()
		}, scenario.MaxTokens/3 - 10},
	}
	costly := func(text string) bool {
		_, err := scenario.ParseDocument("x.yaml", []byte(text))
		return err != nil && strings.Contains(err.Error(), "too costly")
	}
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			lo, hi := 1, f.max // lo passes, hi may not
			if costly(f.gen(lo)) {
				t.Fatalf("n=%d is already too costly", lo)
			}
			if !costly(f.gen(hi)) {
				lo = hi
			}
			for hi-lo > 1 {
				mid := (lo + hi) / 2
				if costly(f.gen(mid)) {
					hi = mid
				} else {
					lo = mid
				}
			}
			text := f.gen(lo)
			if len(text) > scenario.MaxFileSize {
				t.Fatalf("generator made %d bytes", len(text))
			}
			n := hostile.Allocated(func() { scenario.Parse("x.yaml", []byte(text), registry.Schema()) })
			if n > hostile.MaxAlloc {
				t.Errorf("n=%d (%d bytes), the largest let through: loading allocated %d MB", lo, len(text), n>>20)
			}
			t.Logf("n=%d (%d bytes) let through: %d MB allocated", lo, len(text), n>>20)
		})
	}
}
