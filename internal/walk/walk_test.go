package walk

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// scenarioToRun are the roots of the walk from a scenario file to a built
// run, as `skyloop run` takes it: read and parse the file, then build.
var scenarioToRun = []string{
	"skyloop/cmd/skyloop.loadScenarioText",
	"skyloop/engine.Build",
}

// TestWalkScenarioToRun prints the walk from a scenario file to a built
// run, the figures docs/architecture.md reports.
func TestWalkScenarioToRun(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short: type-checks the whole module")
	}
	p, err := Load("../..")
	if err != nil {
		t.Fatal(err)
	}
	w := p.Walk(scenarioToRun...)
	if len(w.Missing) > 0 {
		t.Fatalf("roots not found: %v", w.Missing)
	}
	f := w.Figures()
	t.Logf("walk from a scenario file to a built run:\n%s", w)
	t.Logf("%d stays in %d packages, %d returns to a package already left, %d climbs back up; scenario %d stays, engine %d stays",
		f.Stays, f.Packages, f.Returns, f.Climbs, f.PackageStays["scenario"], f.PackageStays["engine"])
	var files []string
	for file, n := range f.FileVisits {
		if n > 1 {
			files = append(files, fmt.Sprintf("%s %d", file, n))
		}
	}
	slices.Sort(files)
	t.Logf("files visited more than once: %s", strings.Join(files, ", "))
	t.Logf("call sites engine -> scenario: %d; scenario -> engine: %d", w.Calls["engine -> scenario"], w.Calls["scenario -> engine"])
	// Decode once (scenario, with the registry's schema), then check and
	// build (engine, reading the decoded scenario as data).
	if n := w.Calls["engine -> scenario"] + w.Calls["scenario -> engine"]; n != 0 || f.Climbs != 0 {
		t.Errorf("%d call sites between engine and scenario and %d climbs, want none", n, f.Climbs)
	}
}

// TestWalkCounts checks the walker on a package of its own making: the
// stays, returns and climbs of a known path.
func TestWalkCounts(t *testing.T) {
	w := &Walk{Stays: []Stay{{Package: "cmd"}, {Package: "scenario"}, {Package: "engine", Climb: true},
		{Package: "scenario"}, {Package: "engine"}, {Package: "cmd"}}}
	f := w.Figures()
	if f.Stays != 6 || f.Packages != 3 || f.Returns != 3 || f.Climbs != 1 || f.PackageStays["scenario"] != 2 {
		t.Errorf("figures %+v", f)
	}
}
