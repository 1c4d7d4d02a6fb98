package boundary

import (
	"strings"
	"testing"
)

// heavy are libraries that skyloop itself must not link: they take longer
// to compile than the rest of a first `go run ./cmd/skyloop` from empty
// caches (scripts/first-run.sh), so a separate program links them and
// skyloop runs it as a child when a run needs it.
var heavy = []struct{ prefix, program, why string }{
	{"github.com/parquet-go/", "cmd/skyloop-parquet", "Parquet tables (package tables runs it)"},
}

// TestSkyloopLinksNoHeavyLibrary: cmd/skyloop's build has none of the
// heavy libraries, and the program that has each does.
func TestSkyloopLinksNoHeavyLibrary(t *testing.T) {
	deps := strings.Fields(string(goList(t, "-deps", "./cmd/skyloop")))
	for _, h := range heavy {
		for _, d := range deps {
			if strings.HasPrefix(d, h.prefix) {
				t.Errorf("cmd/skyloop imports %s (through %s): %s belongs in %s, which skyloop runs as a child for %s",
					d, importers(t, h.prefix), h.prefix, h.program, h.why)
				break
			}
		}
		found := false
		for _, d := range strings.Fields(string(goList(t, "-deps", "./"+h.program))) {
			found = found || strings.HasPrefix(d, h.prefix)
		}
		if !found {
			t.Errorf("%s does not link %s: then who does? (update this test)", h.program, h.prefix)
		}
	}
}

// importers names the packages of skyloop that import a package under
// prefix directly, for the message.
func importers(t *testing.T, prefix string) string {
	t.Helper()
	var who []string
	for _, l := range strings.Split(string(goList(t, "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./cmd/skyloop")), "\n") {
		fs := strings.Fields(l)
		if len(fs) == 0 || !strings.HasPrefix(fs[0], module+"/") {
			continue
		}
		for _, imp := range fs[1:] {
			if strings.HasPrefix(imp, prefix) {
				who = append(who, fs[0])
				break
			}
		}
	}
	return strings.Join(who, ", ")
}
