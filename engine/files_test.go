package engine_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"skyloop/agent"
	"skyloop/engine"
	"skyloop/fields"
	"skyloop/scenario"
	"skyloop/sim"
)

// filerParams are the parameters of the test behaviour filer (none).
type filerParams struct{}

func (*filerParams) Validate() fields.Errors { return nil }

// filer asks for an output file in Start and in its first Step, and keeps
// what it got.
type filer struct {
	early, late       io.Writer
	earlyErr, lateErr error
	stepped           bool
}

func (f *filer) Start(ctx *agent.Context) error {
	f.early, f.earlyErr = ctx.File("early.csv")
	return nil
}

func (f *filer) Schedule() (period, offset sim.Duration) { return sim.Second, 0 }

func (f *filer) Step(ctx *agent.Context) {
	if !f.stepped {
		f.stepped = true
		f.late, f.lateErr = ctx.File("late.csv")
	}
}

// filesRun builds a one-vehicle run whose vehicle runs filer, with files
// going to open (nil: none set) and NoFiles as given.
func filesRun(t *testing.T, noFiles bool, open func(string) (io.Writer, error)) (*engine.Run, *filer) {
	t.Helper()
	reg := engine.Core()
	var got *filer
	reg.AddBehavior(agent.Spec{Name: "filer", Doc: "Asks for files (tests).", Vehicle: true,
		Params: func() agent.Params { return &filerParams{} },
		New:    func(agent.Params) agent.Behavior { got = &filer{}; return got }})
	sc, err := scenario.Parse("files.yaml", []byte("name: files\nduration: 1s\nvehicles:\n  - {name: uav, kind: pointmass, count: 1, spawn: {layout: line, spacing: 2}, behaviors: [{type: filer}]}\n"), reg.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: reg, NoFiles: noFiles})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	if open != nil {
		r.SetFiles(open)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	if err := r.RunUntil(sim.Time(r.Tick())); err != nil {
		t.Fatal(err)
	}
	return r, got
}

// TestFilesOnlyOnceStarted: a behaviour output file asked for while the
// run is being built (a behaviour's Start) is an error naming the file,
// never a silent nil writer; once the run has started it goes to the
// runner's file function.
func TestFilesOnlyOnceStarted(t *testing.T) {
	var got bytes.Buffer
	_, f := filesRun(t, false, func(name string) (io.Writer, error) { return &got, nil })
	if f.early != nil || f.earlyErr == nil || !strings.Contains(f.earlyErr.Error(), "early.csv") {
		t.Fatalf("in Start: %v, %v", f.early, f.earlyErr)
	}
	if f.lateErr != nil || f.late != io.Writer(&got) {
		t.Fatalf("in Step: %v, %v; want the runner's writer", f.late, f.lateErr)
	}
}

// TestFilesNeverNil: a run that writes no files (no directory, or
// NoFiles) gives a behaviour io.Discard, not a nil writer it would have
// to check for.
func TestFilesNeverNil(t *testing.T) {
	for _, c := range []struct {
		name    string
		noFiles bool
		open    func(string) (io.Writer, error)
	}{
		{"no directory", false, nil},
		{"NoFiles", true, func(string) (io.Writer, error) { t.Error("NoFiles run opened a file"); return nil, nil }},
	} {
		_, f := filesRun(t, c.noFiles, c.open)
		if f.lateErr != nil || f.late != io.Discard {
			t.Errorf("%s: %v, %v; want io.Discard", c.name, f.late, f.lateErr)
		}
	}
}
