// Package version reports which skyloop build is running.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the release version; builds may set it with
// -ldflags "-X skyloop/version.Version=v1.2.3".
var Version = "dev"

// Info describes the running build for meta.json and `skyloop version`.
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
	return m
}
