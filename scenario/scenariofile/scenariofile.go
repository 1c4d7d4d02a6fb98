// Package scenariofile reads scenario and experiment files from disk for
// package scenario, which reads no files itself: Read opens a file and
// reads it with scenario's size limit, Load reads and parses a scenario
// and sets the directory its relative paths start in. It is an edge
// (docs/boundary.txt): the program, sweeps and tests use it; the core is
// handed the text.
package scenariofile

import (
	"fmt"
	"os"
	"path/filepath"

	"skyloop/scenario"
)

// Read reads the file at path, at most scenario.MaxFileSize+1 bytes: a
// larger file, or an endless one such as /dev/zero, is refused with a
// scenario.Errors value (bad input) without reading the rest.
func Read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return scenario.ReadLimited(filepath.Base(path), f)
}

// Load reads and checks a scenario file (see scenario.Parse); the
// scenario's Dir is the file's directory, absolute.
func Load(path string, schema ...*scenario.Schema) (*scenario.Scenario, error) {
	data, err := Read(path)
	if err != nil {
		if _, bad := err.(scenario.Errors); bad {
			return nil, err
		}
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	sc, err := scenario.Parse(filepath.Base(path), data, schema...)
	if sc != nil {
		if abs, aerr := filepath.Abs(path); aerr == nil {
			sc.Dir = filepath.Dir(abs)
		}
	}
	return sc, err
}
