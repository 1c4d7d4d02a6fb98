// Package runtest runs a scenario given as text into a run directory, for
// tests: parse, build and execute, the test failing at the first error.
package runtest

import (
	"path/filepath"
	"testing"

	"skyloop/engine"
	"skyloop/runner"
	"skyloop/scenario"
)

// Run parses text (called name in errors) against the registry reg, builds
// the run and executes it into a new directory under t.TempDir(). It
// returns the result and the run directory.
func Run(t testing.TB, reg *engine.Registry, name, text string) (*runner.Result, string) {
	t.Helper()
	sc, err := scenario.Parse(name, []byte(text), reg.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	res, err := runner.Execute(r, dir, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res, dir
}
