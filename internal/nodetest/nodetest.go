// Package nodetest runs the Node.js readers that tests use to check
// skyloop's files with software we did not write (@mcap/core and
// hyparquet, installed by `npm ci` in foxglove/testdata/node). It is used
// by tests only.
package nodetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"skyloop/internal/short"
	"strings"
	"testing"
)

// Readers returns the node executable and the absolute path of
// foxglove/testdata/node once the npm packages pkgs are installed there.
// It skips t with the reason when Node.js or a package is missing, and
// fails it instead when SKYLOOP_REQUIRE_NODE is set (as in CI, which
// installs them).
func Readers(t testing.TB, pkgs ...string) (node, dir string) {
	t.Helper()
	short.Skip(t, "needs Node.js")
	dir, err := readersDir()
	if err == nil {
		node, err = exec.LookPath("node")
	}
	for _, pkg := range pkgs {
		if err == nil {
			_, err = os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg)))
		}
	}
	if err != nil {
		what := "Node.js or " + strings.Join(pkgs, ", ")
		if os.Getenv("SKYLOOP_REQUIRE_NODE") != "" {
			t.Fatalf("%s is required (SKYLOOP_REQUIRE_NODE) but missing: %v; run npm ci in %s", what, err, dir)
		}
		t.Skipf("skipping: %s missing (%v); install Node.js and run `npm ci` in %s (CI does)", what, err, dir)
	}
	return node, dir
}

// readersDir finds foxglove/testdata/node from the module root above the
// test's working directory.
func readersDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "foxglove", "testdata", "node"), nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no go.mod above " + wd)
		}
	}
}

// JSON runs script (a file of dir) with node on files, given as absolute
// paths, and decodes what it prints into v. A failing script's error is
// reduced to its message.
func JSON(node, dir, script string, v any, files ...string) error {
	args := []string{script}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return err
		}
		args = append(args, abs)
	}
	cmd := exec.Command(node, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.Index(msg, "Error: "); i >= 0 { // the message, not the source line
			msg = strings.SplitN(msg[i:], "\n", 2)[0]
		}
		return fmt.Errorf("%s %v: %v: %s", script, files, err, msg)
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("%s printed %q: %v", script, out, err)
	}
	return nil
}
