package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"skyloop/engine"
	"skyloop/scenario"
	"skyloop/scenario/scenariofile"
	"skyloop/scenarios"
)

// loadScenario reads a scenario from a file, or from the built-in set when
// no file of that name exists.
func loadScenario(arg string) (*scenario.Scenario, error) {
	sc, _, err := loadScenarioText(arg)
	return sc, err
}

// loadScenarioText is loadScenario that also returns the scenario's text.
func loadScenarioText(arg string) (*scenario.Scenario, []byte, error) {
	name, data, dir, err := scenarioSource(arg)
	if err != nil {
		return nil, nil, err
	}
	sc, err := parseScenario(name, data)
	if err != nil {
		return nil, nil, asBadInput(err)
	}
	sc.Dir = dir
	return sc, data, nil
}

// parseScenario decodes scenario text, every component part included,
// with the registry's schema. When the file has problems, those of the
// engine's checks come with them, so that all are reported at once;
// otherwise the engine checks the scenario once, when the run is built
// (engine.Validate).
func parseScenario(name string, data []byte) (*scenario.Scenario, error) {
	sc, err := scenario.Parse(name, data, registry.Schema())
	if err == nil {
		return sc, nil
	}
	if sc != nil {
		var es scenario.Errors
		if _, verr := engine.Validate(sc, engine.Options{Registry: registry}); errors.As(verr, &es) {
			err = verr
		}
	}
	return nil, err
}

// scenarioSource reads the text of a scenario file, or of a built-in
// scenario when no file of that name exists. It returns the name to parse
// the text under, the text, and the directory the scenario's relative
// paths start in ("" for a built-in scenario).
func scenarioSource(arg string) (name string, data []byte, dir string, err error) {
	if st, err := os.Stat(arg); err == nil {
		if st.IsDir() {
			return "", nil, "", badInput("%s is a directory, not a scenario file", arg)
		}
		data, err := scenariofile.Read(arg)
		if err != nil {
			if _, bad := err.(scenario.Errors); bad {
				return "", nil, "", err
			}
			return "", nil, "", asBadInput(fmt.Errorf("reading scenario: %w", err))
		}
		if abs, err := filepath.Abs(arg); err == nil {
			dir = filepath.Dir(abs)
		}
		return filepath.Base(arg), data, dir, nil
	} else if !os.IsNotExist(err) {
		return "", nil, "", badInput("reading scenario: %v", err)
	}
	if b, ok := scenarios.Lookup(arg); ok {
		return strings.TrimSuffix(arg, ".yaml") + ".yaml", b, "", nil
	}
	if hint := didYouMean(arg, builtinScenarioNames()); hint != "" {
		return "", nil, "", badInput("no scenario file %q and no built-in scenario of that name%s (skyloop scenarios lists them all)", arg, hint)
	}
	return "", nil, "", badInput("no scenario file %q and no built-in scenario of that name (built-in: %s; skyloop scenarios lists them all)",
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
