package engine_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/scenario"
)

// TestFilesOnlyOnceStarted: a behaviour output file asked for while the
// run is being built (a behaviour's Start) is an error naming the file,
// never a silent nil writer; once the run has started it goes to the
// runner's file function.
func TestFilesOnlyOnceStarted(t *testing.T) {
	sc, err := scenario.Parse("files.yaml", []byte("name: files\nduration: 1s\nvehicles:\n  - {name: uav, kind: pointmass, count: 1, spawn: {layout: line, spacing: 2}}\n"), engine.Core().Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got bytes.Buffer
	r.SetFiles(func(name string) (io.Writer, error) { return &got, nil })
	if w, err := r.File("early.csv"); err == nil || w != nil || !strings.Contains(err.Error(), "early.csv") {
		t.Fatalf("before Start: %v, %v", w, err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	w, err := r.File("late.csv")
	if err != nil || w == nil {
		t.Fatalf("after Start: %v, %v", w, err)
	}
}
