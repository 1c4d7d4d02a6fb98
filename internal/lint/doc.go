// Package lint holds the repository's lint test (lint_test.go): it runs
// staticcheck's unused check (U1000) and deadcode over the whole module as
// part of go test ./..., so that CI (.ci/run) fails on code nothing uses.
package lint
