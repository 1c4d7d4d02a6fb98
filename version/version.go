// Package version reports which skyloop build is running.
package version

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Version is the release version; builds may set it with
// -ldflags "-X skyloop/version.Version=v1.2.3".
var Version = "dev"

// SourceNote is the value of Info's "vcs.source" when the VCS keys were
// read from the source clone at run time rather than from the build.
const SourceNote = "git at run time (the build carries no VCS stamp: go run, go test, -buildvcs=false or a git worktree)"

// Info describes the running build for meta.json and `skyloop version`:
// the version, Go, OS and architecture, and the commit it was built from
// (vcs.revision, vcs.time, vcs.modified). Those come from the build's own
// VCS stamp (go build in a clone); a build without one (go run, go test,
// GOFLAGS=-buildvcs=false, a git worktree, which go does not stamp) whose
// source clone is still where it was compiled reads them from git instead,
// and says so in vcs.source. vcs.modified then counts tracked files only,
// so that the outputs a run writes into the clone do not change it.
func Info() map[string]string {
	m := map[string]string{"skyloop": Version, "go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision", "vcs.modified", "vcs.time":
				m[s.Key] = s.Value
			}
		}
	}
	if _, ok := m["vcs.revision"]; !ok {
		for k, v := range sourceVCS() {
			m[k] = v
		}
	}
	return m
}

// Describe returns the one-line form of info: "dev (commit 0123abcd,
// 2026-01-02T03:04:05Z, modified)", or the version alone without a commit.
func Describe(info map[string]string) string {
	rev := info["vcs.revision"]
	if rev == "" {
		return info["skyloop"]
	}
	parts := []string{"commit " + rev[:min(12, len(rev))]}
	if t := info["vcs.time"]; t != "" {
		parts = append(parts, t)
	}
	if info["vcs.modified"] == "true" {
		parts = append(parts, "modified")
	}
	return info["skyloop"] + " (" + strings.Join(parts, ", ") + ")"
}

// sourceVCS reads the commit of the clone this package was compiled from,
// once per process; nil when there is none (a -trimpath build, a module
// cache copy, no git, a moved or deleted clone).
var sourceVCS = sync.OnceValue(func() map[string]string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return nil
	}
	root := filepath.Dir(filepath.Dir(file))
	if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.HasPrefix(string(b), "module skyloop\n") {
		return nil
	}
	git := func(args ...string) (string, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0") // read only: never take the index lock
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err == nil
	}
	top, ok := git("rev-parse", "--show-toplevel")
	if !ok || filepath.Clean(top) != filepath.Clean(root) {
		return nil // not a clone of its own (e.g. inside another repository)
	}
	log, ok := git("-c", "log.showsignature=false", "log", "-1", "--format=%H:%ct")
	rev, ct, found := strings.Cut(log, ":")
	sec, err := strconv.ParseInt(ct, 10, 64)
	if !ok || !found || err != nil || len(rev) < 40 {
		return nil
	}
	status, ok := git("status", "--porcelain", "--untracked-files=no")
	if !ok {
		return nil
	}
	return map[string]string{"vcs.revision": rev, "vcs.time": time.Unix(sec, 0).UTC().Format(time.RFC3339),
		"vcs.modified": strconv.FormatBool(status != ""), "vcs.source": SourceNote}
})
