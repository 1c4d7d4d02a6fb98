// Package scenarios embeds the ready-made scenario files, one per
// experiment, so that `skyloop run quickstart` works from any directory.
package scenarios

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.yaml netbots/*.yaml
var files embed.FS

// Lookup returns the text of the embedded scenario with the given name
// (with or without the .yaml suffix).
func Lookup(name string) ([]byte, bool) {
	name = strings.TrimSuffix(name, ".yaml")
	b, err := files.ReadFile(name + ".yaml")
	return b, err == nil
}

// Names lists the embedded scenarios.
func Names() []string { return list(".", "") }

// Experiments lists the embedded experiment files (those that name a
// base scenario), named like "netbots/delay".
func Experiments() []string {
	var out []string
	for _, n := range list("netbots", "netbots/") {
		if b, ok := Lookup(n); ok && isExperiment(b) {
			out = append(out, n)
		}
	}
	return out
}

// isExperiment reports whether a file is an experiment: it has a
// top-level scenario key.
func isExperiment(b []byte) bool {
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "scenario:") {
			return true
		}
	}
	return false
}

func list(dir, prefix string) []string {
	ents, _ := fs.ReadDir(files, dir)
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") {
			out = append(out, prefix+strings.TrimSuffix(e.Name(), ".yaml"))
		}
	}
	sort.Strings(out)
	return out
}
