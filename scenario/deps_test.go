package scenario_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyScenarioImportsYAML: the YAML library stays behind package
// scenario, whose Raw carries undecoded parts of a file to the components
// that decode them. No other package, the engine and sweep included, and
// none of their tests, imports it. (Importing scenario makes every package
// depend on the library indirectly, so direct imports are checked.)
func TestOnlyScenarioImportsYAML(t *testing.T) {
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`,
		"skyloop/...").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	checked := map[string]bool{}
	for _, ln := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(ln)
		if len(f) == 0 {
			continue
		}
		pkg := f[0]
		checked[pkg] = true
		if pkg == "skyloop/scenario" {
			continue
		}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, "github.com/goccy/go-yaml") {
				t.Errorf("%s imports %s: only package scenario may (use scenario.Raw)", pkg, imp)
			}
		}
	}
	for _, pkg := range []string{"skyloop/engine", "skyloop/sweep"} {
		if !checked[pkg] {
			t.Errorf("go list did not list %s", pkg)
		}
	}
}
