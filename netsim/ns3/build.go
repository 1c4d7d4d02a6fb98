// Package ns3 runs ns-3 as a skyloop network backend: a C++ program built
// against the system's ns-3 (Debian libns3-dev 3.37), driven in lockstep
// over its standard input and output. See docs/ns3.md for the protocol and
// the timing guarantees.
package ns3

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

//go:embed cxx/skyloop-ns3.cc
var source []byte

// modules are the ns-3 libraries the program links.
var modules = []string{"ns3-core", "ns3-network", "ns3-internet", "ns3-wifi", "ns3-mobility", "ns3-olsr", "ns3-aodv", "ns3-propagation", "ns3-traffic-control"}

// ErrNoNS3 reports a machine without the ns-3 development files.
var ErrNoNS3 = errors.New("ns-3 3.37 development files not found: install the Debian packages with " +
	"`apt-get install -y libns3-dev libsqlite3-dev libgsl-dev pkg-config g++`")

var buildMu sync.Mutex

// Binary returns the path of the skyloop-ns3 program, building it on first
// use into the user cache directory (SKYLOOP_CACHE overrides it), keyed by a
// hash of the source and of the ns-3 installation, so a changed source or
// ns-3 triggers a rebuild. Building takes about 15 s.
//
// SKYLOOP_NS3_BINARY, when set, names a program to use instead (tests use it
// to stand in failing processes).
func Binary() (string, error) {
	if b := os.Getenv("SKYLOOP_NS3_BINARY"); b != "" {
		return b, nil
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if _, err := exec.LookPath("pkg-config"); err != nil {
		return "", ErrNoNS3
	}
	ver, err := exec.Command("pkg-config", "--modversion", "ns3-core").Output()
	if err != nil {
		return "", ErrNoNS3
	}
	libs, err := exec.Command("pkg-config", append([]string{"--libs"}, modules...)...).Output()
	if err != nil {
		return "", fmt.Errorf("%w (pkg-config --libs failed: %v)", ErrNoNS3, err)
	}
	h := sha256.New()
	h.Write(source)
	h.Write(ver)
	h.Write(libs)
	key := hex.EncodeToString(h.Sum(nil))[:16]
	cache := os.Getenv("SKYLOOP_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		cache = filepath.Join(base, "skyloop")
	}
	dir := filepath.Join(cache, "ns3", key)
	bin := filepath.Join(dir, "skyloop-ns3")
	if st, err := os.Stat(bin); err == nil && st.Mode()&0o111 != 0 {
		return bin, nil
	}
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	if _, err := exec.LookPath(cxx); err != nil {
		return "", fmt.Errorf("%w (no C++ compiler %q)", ErrNoNS3, cxx)
	}
	// Debian's ns-3 names some libraries by path (ns3-stats.pc:
	// /usr/lib/<triplet>/libsqlite3.so), which packages that libns3-dev
	// does not depend on bring: name a missing one rather than let the
	// linker fail at the end of the build.
	for _, f := range strings.Fields(string(libs)) {
		if filepath.IsAbs(f) {
			if _, err := os.Stat(f); err != nil {
				return "", fmt.Errorf("%w (pkg-config --libs %s names %s, which is not installed)",
					ErrNoNS3, strings.Join(modules, " "), f)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("ns-3 backend cache: %w", err)
	}
	src := filepath.Join(dir, "skyloop-ns3.cc")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", fmt.Errorf("ns-3 backend cache: %w", err)
	}
	tmp := bin + ".tmp"
	args := append([]string{"-O2", "-std=c++17", "-o", tmp, src}, strings.Fields(string(libs))...)
	cmd := exec.Command(cxx, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := out.String()
		if len(msg) > 4000 {
			msg = msg[len(msg)-4000:]
		}
		return "", fmt.Errorf("building the ns-3 backend (%s %s) failed: %v\n%s", cxx, strings.Join(args, " "), err, msg)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("ns-3 backend cache: %w", err)
	}
	return bin, nil
}
