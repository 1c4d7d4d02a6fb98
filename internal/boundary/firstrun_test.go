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
					d, importer(t, deps, d), h.prefix, h.program, h.why)
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

// importer names a package of skyloop among deps that imports dep
// directly or through other packages outside skyloop, for the message.
func importer(t *testing.T, deps []string, dep string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(goList(t, "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./cmd/skyloop"))), "\n")
	for _, l := range lines {
		fs := strings.Fields(l)
		if len(fs) == 0 || !strings.HasPrefix(fs[0], module+"/") {
			continue
		}
		for _, imp := range fs[1:] {
			if strings.HasPrefix(imp, strings.Join(strings.SplitN(dep, "/", 4)[:3], "/")) {
				return fs[0]
			}
		}
	}
	return "?"
}
