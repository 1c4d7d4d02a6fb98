// Package boundary holds the tests of the boundary between skyloop's
// deterministic core and its edges. The list itself is docs/boundary.txt:
// every package of the module as core, edge or program, with why, and the
// allowlist of what core packages still import from outside. The tests
// check that every package is listed, that no core package reaches a
// forbidden import (go list -deps, with the chain of imports that reaches
// it) or reads the wall clock, that every allowlist line is still needed,
// and that docs/architecture.md's table is the list.
package boundary
