package main

import (
	"errors"
	"os"
	"strings"

	"skyloop/scenario"
	"skyloop/scenarios"
)

// loadScenario reads a scenario from a file, or from the built-in set when
// no file of that name exists.
func loadScenario(arg string) (*scenario.Scenario, error) {
	if st, err := os.Stat(arg); err == nil {
		if st.IsDir() {
			return nil, badInput("%s is a directory, not a scenario file", arg)
		}
		sc, err := scenario.Load(arg, registry.Check)
		return sc, asBadInput(err)
	} else if !os.IsNotExist(err) {
		return nil, badInput("reading scenario: %v", err)
	}
	if b, ok := scenarios.Lookup(arg); ok {
		return scenario.Parse(strings.TrimSuffix(arg, ".yaml")+".yaml", b, registry.Check)
	}
	return nil, badInput("no scenario file %q and no built-in scenario of that name (built-in: %s)",
		arg, strings.Join(scenarios.Names(), ", "))
}

// asBadInput marks an error reading an input file (missing permission, a
// device, a file too large) as bad input, like the problems found in it.
func asBadInput(err error) error {
	var se scenario.Errors
	if err == nil || errors.As(err, &se) {
		return err
	}
	return usageError{err}
}

func tempDir() string { return os.TempDir() }

func removeAll(dir string) { os.RemoveAll(dir) }
