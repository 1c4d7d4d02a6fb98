package netbots

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/internal/hostile"
	"skyloop/scenario"
)

// TestDuplicateSweepValues checks that a value given twice, as written or
// as decoded, is refused with its file and line: it would run the same
// variant twice and write two runs into one directory.
func TestDuplicateSweepValues(t *testing.T) {
	cases := []struct{ text, want string }{
		{"experiment: x\nsweep: {param: loss, values: [0.1, 0.1]}\n",
			"x.yaml:2: sweep.values[1]: 0.1 repeats sweep.values[0]: each value must appear once"},
		{"experiment: x\nsweep:\n  param: loss\n  values:\n    - 0.1\n    - 0.2\n    - 0.10\n",
			"x.yaml:7: sweep.values[2]: 0.10 is the same loss as sweep.values[0] (0.1): each value must appear once"},
		{"experiment: x\nsweep: {param: latency, values: [1ms, 2ms, 1000us]}\n",
			"x.yaml:2: sweep.values[2]: 1000us is the same latency as sweep.values[0] (1ms)"},
		{"experiment: x\nsweep: {param: waypoints, values: [[[0, 0], [1, 1]], [[0, 0], [1.0, 1, 0]]]}\n",
			"sweep.values[1]: [[0, 0], [1.0, 1, 0]] is the same waypoints as sweep.values[0]"},
		{"experiment: x\nsweep: {param: robots, values: [2, 3, 0x2]}\n",
			"sweep.values[2]: 0x2 is the same robots as sweep.values[0] (2)"},
	}
	for _, c := range cases {
		_, err := ParseExperiment("x.yaml", []byte(c.text))
		var es scenario.Errors
		if !errors.As(err, &es) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\ngot  %v\nwant %q", c.text, err, c.want)
		}
	}
	// Distinct values are fine, and each gives one variant.
	e, err := ParseExperiment("x.yaml", []byte("experiment: x\nsweep: {param: loss, values: [0, 0.1, 0.01, 1e-3]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Variants) != 4 || e.Variants[3].Name != "loss=1e-3" {
		t.Fatalf("variants: %+v", e.Variants)
	}
}

// TestVariantsShareNothingWritable checks that the sweep's variants do not
// see each other's values (they share the base's waypoint list).
func TestVariantsShareNothingWritable(t *testing.T) {
	e, err := ParseExperiment("x.yaml", []byte("experiment: x\nbase: {waypoints: [[0, 0], [5, 0]]}\nsweep: {param: waypoints, values: [[[0, 0], [1, 1]], [[0, 0], [2, 2]]]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if e.Base.Waypoints[1].X != 5 || e.Variants[0].Params.Waypoints[1].X != 1 || e.Variants[1].Params.Waypoints[1].X != 2 {
		t.Fatalf("base %v, variants %v %v", e.Base.Waypoints, e.Variants[0].Params.Waypoints, e.Variants[1].Params.Waypoints)
	}
}

// pathologicalExperiments cost seconds and gigabytes on a loader without
// bounds (issue 12), or are the costliest experiments within the limits.
func pathologicalExperiments() []struct{ name, text string } {
	bomb := func() string {
		var b strings.Builder
		b.WriteString("experiment: x\nbase: &a0 {loss: 0.1}\n")
		for l := 1; l <= 9; l++ {
			fmt.Fprintf(&b, "v%d: &a%d {<<: [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]}\n", l, l, l-1, l-1, l-1, l-1, l-1, l-1, l-1, l-1, l-1)
		}
		return b.String() + "<<: *a9\n"
	}()
	return []struct{ name, text string }{
		{"merge-key bomb", bomb},
		{"variants copying a base", func() string {
			var b strings.Builder
			b.WriteString("experiment: x\nbase: &b {loss: 0.1, waypoints: [")
			for i := 0; i < 3000; i++ {
				fmt.Fprintf(&b, "[%d, 0], ", i)
			}
			b.WriteString("[0, 1]]}\nvariants:\n")
			for i := 0; i < 1000; i++ {
				fmt.Fprintf(&b, "  - {name: v%d, set: *b}\n", i)
			}
			return b.String()
		}()},
		{"flow sequence syntax error 300KB", "experiment: x\nsweep: {param: loss, values: [" + strings.Repeat("0.1,", 75000) + "\n"},
		{"many sweep values", hostile.Numbered("experiment: x\nsweep: {param: loss, values: [", "0.%d1, ", "1]}\n")},
		{"many sweep values, some alike", hostile.Numbered("experiment: x\nsweep: {param: loss, values: [", "0.%d, ", "1]}\n")},
		{"many sweep values over long waypoints", func() string {
			var b strings.Builder
			b.WriteString("experiment: x\nbase: {waypoints: [")
			for i := 0; i < 1500; i++ {
				fmt.Fprintf(&b, "[%d, 0], ", i)
			}
			return hostile.Numbered(b.String()+"[0, 1]]}\nsweep: {param: jitter, values: [", "%dus, ", "1s]}\n")
		}()},
		{"many duplicate sweep values", "experiment: x\nsweep: {param: loss, values: [" + strings.Repeat("0.1, ", scenario.MaxTokens/2-20) + "1]}\n"},
		{"many variants", hostile.Numbered("experiment: x\nvariants:\n", "  - {name: v%d, set: {loss: 0.1}}\n", "")},
		{"many bad variants", hostile.Numbered("experiment: x\nvariants:\n", "  - {name: v, set: {loss: %d}}\n", "")},
		{"long key over a list", strings.Repeat("k", scenario.MaxFileSize/2) + ": [" + strings.Repeat("1,", 15000) + "1]\n"},
	}
}

// TestPathologicalExperiments loads each pathological experiment: each
// costs less than hostile.MaxAlloc, and a refusal is a scenario.Errors value.
func TestPathologicalExperiments(t *testing.T) {
	for _, c := range pathologicalExperiments() {
		t.Run(c.name, func(t *testing.T) {
			if len(c.text) > scenario.MaxFileSize {
				t.Fatalf("input of %d bytes is over the size limit", len(c.text))
			}
			var err error
			n := hostile.Allocated(func() { _, err = ParseExperiment("bad.yaml", []byte(c.text)) })
			if n > hostile.MaxAlloc {
				t.Errorf("%d bytes of input: loading allocated %d MB, want < %d MB", len(c.text), n>>20, hostile.MaxAlloc>>20)
			}
			var es scenario.Errors
			if err != nil && !errors.As(err, &es) {
				t.Fatalf("got %T %v, want scenario.Errors", err, err)
			}
			if len(es) > scenario.MaxErrors+1 {
				t.Errorf("%d problems listed", len(es))
			}
			first := "accepted"
			if len(es) > 0 {
				first = es[0].Error()
			}
			t.Logf("%d bytes, %d MB allocated: %.160s", len(c.text), n>>20, first)
		})
	}
}

// TestLoadExperimentReadIsCapped loads a sparse file far over the size
// limit: the read stops at the limit.
func TestLoadExperimentReadIsCapped(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(256 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	n := hostile.Allocated(func() { _, err = LoadExperiment(big) })
	if n > 4*scenario.MaxFileSize {
		t.Errorf("reading allocated %d MB", n>>20)
	}
	var es scenario.Errors
	if !errors.As(err, &es) || !strings.Contains(err.Error(), "big.yaml: file larger than") {
		t.Errorf("got %v", err)
	}
}

// FuzzParseExperiment feeds arbitrary bytes to ParseExperiment: it must
// never panic, a refusal must be a non-empty scenario.Errors naming the
// file, and an accepted experiment must have distinct variant names and
// valid parameters. Run it with
//
//	go test ./netbots -run '^$' -fuzz FuzzParseExperiment -fuzztime 60s
func FuzzParseExperiment(f *testing.F) {
	files, _ := filepath.Glob("../scenarios/netbots/*.yaml")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		sweepYAML,
		"experiment: x\nsweep: {param: loss, values: [0.1, 0.1]}\n",
		"experiment: x\nsweep: {param: loss, values: [0.1, 0.10, 1e-1]}\n",
		"experiment: x\nsweep: {param: latency, values: [1ms, 1000us, \"1ms\"]}\n",
		"experiment: x\nsweep: {param: waypoints, values: [[[0, 0], [1, 1]]]}\n",
		"experiment: x\nsweep: {param: nope, values: [1]}\n",
		"experiment: x\nvariants: [{name: a, set: {loss: 0.5}}, {name: a, set: {}}]\n",
		"experiment: x\nvariants: [{name: a/b, set: {robots: 4}}]\n",
		"experiment: x\nbase: &b {loss: 0.2}\nvariants: [{name: a, set: *b}, {name: b, set: {<<: *b, jitter: 1ms}}]\n",
		"experiment: x\nbase: &b [*b]\n",
		"experiment: x\nseeds: 1001\nbase: {mode: replay, policy: event}\n",
		"experiment: x\nsweep: {param: loss, values: []}\nvariants: []\n",
		"experiment: ../x\n",
		"{experiment: x, sweep: {param: robots, values: [2, 0x2, 1e3]}}",
		"experiment: x\noutputs: {trace: false}\nsweep: {param: epoch, values: [10ms, 20ms]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseExperiment("fuzz.yaml", data)
		if err != nil {
			if e != nil {
				t.Fatalf("an experiment and an error: %v", err)
			}
			var es scenario.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error is a %T, not scenario.Errors: %v", err, err)
			}
			for i, x := range es {
				if x == nil || x.File != "fuzz.yaml" || strings.TrimSpace(x.Msg) == "" || x.Line < 0 {
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
			if names[v.Name] {
				t.Fatalf("variant %q twice", v.Name)
			}
			names[v.Name] = true
			if bad := v.Params.Validate(); len(bad) > 0 {
				t.Fatalf("variant %q accepted with %v", v.Name, bad)
			}
		}
	})
}
