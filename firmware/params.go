package firmware

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"skyloop/fields"
	"skyloop/sim"
	"skyloop/simport"
)

// CheckPort reports a port of instance 0 that is not a proto ("TCP" or
// "UDP") port in [1, 65000] under key port.
func CheckPort(bad fields.Errors, proto string, port int) {
	if port < 1 || port > 65000 {
		bad["port"] = fmt.Sprintf("must be a %s port in [1, 65000], got %d", proto, port)
	}
}

// CheckAccess reports a bad listen address or peer list (keys listen and
// peer) and returns the parsed access and whether it is good.
func CheckAccess(bad fields.Errors, listen, peer string) (simport.Access, bool) {
	a, err := simport.Parse(listen, peer)
	if err != nil {
		if strings.HasPrefix(err.Error(), "peer") {
			bad["peer"] = err.Error()
		} else {
			bad["listen"] = err.Error()
		}
		return a, false
	}
	return a, true
}

// CheckTimeouts reports wall-clock timeouts that are not positive (keys
// connect_timeout and step_timeout).
func CheckTimeouts(bad fields.Errors, connect, step sim.Duration) {
	if connect <= 0 {
		bad["connect_timeout"] = fmt.Sprintf("must be positive, got %v", connect)
	}
	if step <= 0 {
		bad["step_timeout"] = fmt.Sprintf("must be positive, got %v", step)
	}
}

var paramName = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,15}$`)

// CheckParams reports, in name order, firmware parameters whose name is
// not a flight stack's (upper case, at most 16 characters; the message
// says it is not kind, e.g. "a PX4 parameter name") or whose value is not
// finite, under keys params.<NAME>.
func CheckParams(bad fields.Errors, kind string, params map[string]float64) {
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !paramName.MatchString(n) {
			bad["params."+n] = "not " + kind + " (upper case, at most 16 characters)"
		} else if v := params[n]; math.IsNaN(v) || math.IsInf(v, 0) {
			bad["params."+n] = fmt.Sprintf("must be finite, got %v", v)
		}
	}
}

// Build says where a flight stack's SITL build is looked for, for the
// messages about a missing one.
type Build struct {
	// Env is the environment variable naming the directory when the
	// scenario does not (e.g. SKYLOOP_PX4_DIR).
	Env string
	// Key is the scenario key of the directory (e.g. px4.dir).
	Key string
	// What names the build in messages (e.g. "PX4 SITL").
	What string
	// HowToBuild ends every message about a missing build.
	HowToBuild string
}

// FindDir fills *dir from the environment when it is empty and need is
// true (the scenario does not name every file the directory would give),
// and checks that a directory named is one. It reports a problem under key
// dir and returns false.
func (b Build) FindDir(bad fields.Errors, dir *string, need bool) bool {
	if *dir == "" && need {
		*dir = os.Getenv(b.Env)
		if *dir == "" {
			bad["dir"] = b.What + " not found: " + b.HowToBuild
			return false
		}
	}
	if *dir != "" {
		if st, err := os.Stat(*dir); err != nil || !st.IsDir() {
			src := b.Key
			if os.Getenv(b.Env) == *dir {
				src = b.Env
			}
			bad["dir"] = fmt.Sprintf("%s is not a directory (from %s): %s", *dir, src, b.HowToBuild)
			return false
		}
	}
	return true
}

// Absolute makes each path absolute (relative to skyloop's working
// directory, where it was checked): the firmware runs in its own working
// directory under procs/, where a relative path would name another file.
// A path that cannot be made absolute is left as it is.
func Absolute(paths ...*string) {
	for _, p := range paths {
		if *p == "" {
			continue
		}
		if abs, err := filepath.Abs(*p); err == nil {
			*p = abs
		}
	}
}

// Executable reports whether path is an executable file.
func Executable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
