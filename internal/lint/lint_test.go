package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"skyloop/internal/short"
	"slices"
	"strings"
	"testing"
)

// The versions .ci/run installs; the skip messages name them.
const (
	staticcheckPkg = "honnef.co/go/tools/cmd/staticcheck@v0.8.2"
	deadcodePkg    = "golang.org/x/tools/cmd/deadcode@v0.53.0"
)

// deadcodeKept are the functions deadcode reports (unreachable from every
// program in the module) that stay, each with the reason. A key is a
// package path and a function ("skyloop/sim.Seconds", methods as
// "T.m"), or a package path ending in "/" for every function of the
// packages under it. An entry deadcode no longer reports fails the test,
// so the list only shrinks.
var deadcodeKept = map[string]string{
	// Libraries whose users are outside the module's programs.
	"skyloop/extern/client/": "the Go client library for external agents (docs/protocol.md); its users are other programs and the extern and relay tests",
	"skyloop/internal/":      "test-support packages (hostile, mjtest, nodetest, ns3test, nstest): used by tests only, by design",
	// Exported helpers that tests of other packages use.
	"skyloop/sim.Seconds":                "time API beside ParseDuration; twin and groundbot tests write durations with it",
	"skyloop/transcript.Read":            "the reader of the transcript format skyloop writes; px4sitl and ardupilot tests read transcripts back with it",
	"skyloop/vehicle/mujoco.LiveModels":  "the leak check of runner's MuJoCo test (every run closes the models it loaded)",
	"skyloop/scenario/scenariofile.Load": "reads and checks a scenario file; tests in engine, runner, scenario and the firmware packages load files with it",
	// Left for the packages' owners (issue 32 rewrites these packages).
}

// tool returns the path of the installed tool name (on PATH, in GOBIN
// or in GOPATH/bin), or skips the test (fails it when
// SKYLOOP_REQUIRE_LINT is set, as in CI).
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	short.Skip(t, "runs "+name+" over the module")
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, v := range []string{"GOBIN", "GOPATH"} {
		out, err := exec.Command("go", "env", v).Output()
		dir := strings.TrimSpace(string(out))
		if err != nil || dir == "" {
			continue
		}
		dir = strings.Split(dir, string(os.PathListSeparator))[0]
		if v == "GOPATH" {
			dir = filepath.Join(dir, "bin")
		}
		if p := filepath.Join(dir, name); isFile(p) {
			return p
		}
	}
	msg := fmt.Sprintf("%s is not installed (go install %s)", name, pkg)
	if os.Getenv("SKYLOOP_REQUIRE_LINT") != "" {
		t.Fatal(msg + "; SKYLOOP_REQUIRE_LINT is set")
	}
	t.Skip(msg + "; set SKYLOOP_REQUIRE_LINT to fail instead of skipping")
	return ""
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// run runs a lint tool over the module from its root and returns its
// standard output; a non-zero exit is returned as an error only when it
// printed nothing on standard output (findings exit non-zero).
// readSources reads every Go file of the module. The tools read them in
// another process, which go test's cache does not see: read here, they
// are part of the test's inputs, so that a cached pass is not reused
// after the code changed.
func readSources(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join("..", ".."), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != filepath.Join("..", "..") && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".go") || d.Name() == "go.mod" || d.Name() == "go.sum") {
			_, err = os.ReadFile(path)
		}
		return err
	})
	if err != nil {
		t.Fatalf("reading the module's sources: %v", err)
	}
}

func run(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	if testing.Short() && os.Getenv("SKYLOOP_REQUIRE_LINT") == "" {
		t.Skip("lint runs over the whole module (a minute or two); skipped with -short")
	}
	readSources(t)
	cmd := exec.Command(bin, args...)
	cmd.Dir = filepath.Join("..", "..")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || stdout.Len() == 0) {
		return "", fmt.Errorf("%s %s: %w\n%s%s", filepath.Base(bin), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// TestUnused: staticcheck's unused check (U1000) finds nothing in the
// module, tests included: no unused functions, types, fields or
// constants.
func TestUnused(t *testing.T) {
	bin := tool(t, "staticcheck", staticcheckPkg)
	out, err := run(t, bin, "-checks", "U1000", "./...")
	if err != nil {
		t.Fatal(err)
	}
	if out = strings.TrimSpace(out); out != "" {
		t.Errorf("staticcheck -checks U1000 ./... found unused code; delete it:\n%s", out)
	}
}

// deadPackage is one package of deadcode -json's output.
type deadPackage struct {
	Path  string
	Funcs []struct {
		Name     string
		Position struct {
			File string
			Line int
		}
	}
}

// TestDeadcode: every function of the module is reachable from one of its
// programs (deadcode, which counts uses by tests as dead), but for the ones
// in deadcodeKept.
func TestDeadcode(t *testing.T) {
	bin := tool(t, "deadcode", deadcodePkg)
	out, err := run(t, bin, "-json", "./...")
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []deadPackage
	if err := json.Unmarshal([]byte(out), &pkgs); err != nil {
		t.Fatalf("reading deadcode -json: %v\n%s", err, out)
	}
	used := map[string]bool{}
	var dead []string
	for _, p := range pkgs {
		for _, f := range p.Funcs {
			key := p.Path + "." + f.Name
			if k := kept(key, p.Path); k != "" {
				used[k] = true
				continue
			}
			dead = append(dead, fmt.Sprintf("%s:%d: unreachable func: %s", f.Position.File, f.Position.Line, key))
		}
	}
	if len(dead) > 0 {
		t.Errorf("deadcode ./... found %d unreachable functions; delete them (or, when a test of dead code is all that uses one, the test too), or list one in deadcodeKept with the reason:\n%s", len(dead), strings.Join(dead, "\n"))
	}
	var stale []string
	for k := range deadcodeKept {
		if !used[k] {
			stale = append(stale, k)
		}
	}
	slices.Sort(stale)
	if len(stale) > 0 {
		t.Errorf("deadcodeKept lists what deadcode no longer reports; remove:\n%s", strings.Join(stale, "\n"))
	}
}

// kept returns the deadcodeKept key that covers the function key of
// package path, or "".
func kept(key, path string) string {
	if _, ok := deadcodeKept[key]; ok {
		return key
	}
	for k := range deadcodeKept {
		if strings.HasSuffix(k, "/") && strings.HasPrefix(path+"/", k) {
			return k
		}
	}
	return ""
}
