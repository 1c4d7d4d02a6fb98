// Package short is the quick tier of the test suite: `go test -short
// ./...` runs the tests that need nothing but Go and finishes in about two
// minutes on two cores. Tests that need other tools (ns-3, Chromium, Node,
// Python, MuJoCo, tshark, Cyclone DDS, root for network namespaces, Slurm,
// the linters) or that take long call Skip, which skips them in that tier,
// saying why. CI and the README's test command run the full suite.
package short

import "testing"

// Skip skips t under -short, saying what it needs or why it is long.
func Skip(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s (the full suite runs it)", why)
	}
}
