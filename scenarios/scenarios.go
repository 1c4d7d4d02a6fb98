// Package scenarios embeds the ready-made scenario files, one per
// experiment, so that `skyloop run quickstart` works from any directory.
package scenarios

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.yaml netbots/*.yaml netbots-classic/*.yaml ubanc/*.yaml coverage/*.yaml
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

// collections are the directories of built-in experiments: the netbots
// platoon study (on the netbots paper's robot and track, and on the
// classic ones), UB-ANC's network experiments and its coverage
// planning experiment.
var collections = []string{"netbots", "netbots-classic", "ubanc", "coverage"}

// Collections lists the directories of built-in experiments; each name
// runs all of its experiments (skyloop sweep ubanc).
func Collections() []string { return append([]string(nil), collections...) }

// Experiments lists the embedded experiment files (those that name a
// base scenario), named like "netbots/delay", of every collection.
func Experiments() []string {
	var out []string
	for _, c := range collections {
		out = append(out, CollectionExperiments(c)...)
	}
	return out
}

// CollectionExperiments lists the embedded experiment files of one
// collection, such as "ubanc/range".
func CollectionExperiments(dir string) []string {
	var out []string
	for _, n := range list(dir, dir+"/") {
		if b, ok := Lookup(n); ok && isExperiment(b) {
			out = append(out, n)
		}
	}
	return out
}

// CollectionScenarios lists the embedded scenarios (not experiments) of
// one collection, such as "coverage/survey".
func CollectionScenarios(dir string) []string {
	var out []string
	for _, n := range list(dir, dir+"/") {
		if b, ok := Lookup(n); ok && !isExperiment(b) {
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
