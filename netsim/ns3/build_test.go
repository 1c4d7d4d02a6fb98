package ns3

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingLibraryNamedByPkgConfig: when ns-3's pkg-config names a
// library by a path that is not installed (Debian's ns3-stats.pc and
// libsqlite3.so without libsqlite3-dev), Binary says which file is missing
// and how to install it, before compiling anything.
func TestMissingLibraryNamedByPkgConfig(t *testing.T) {
	bin := t.TempDir()
	missing := filepath.Join(t.TempDir(), "libsqlite3.so")
	pkgConfig := "#!/bin/sh\ncase \"$1\" in\n--modversion) echo 3.37 ;;\n--libs) echo \"-lns3-stats " + missing + " -lns3-core\" ;;\nesac\n"
	if err := os.WriteFile(filepath.Join(bin, "pkg-config"), []byte(pkgConfig), 0o755); err != nil {
		t.Fatal(err)
	}
	// A compiler that would fail loudly if it were run.
	cxx := filepath.Join(bin, "cxx")
	if err := os.WriteFile(cxx, []byte("#!/bin/sh\necho the compiler ran >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("CXX", cxx)
	t.Setenv("SKYLOOP_NS3_BINARY", "")
	t.Setenv("SKYLOOP_CACHE", t.TempDir())
	_, err := Binary()
	if err == nil || !errors.Is(err, ErrNoNS3) || !strings.Contains(err.Error(), missing) ||
		!strings.Contains(err.Error(), "libsqlite3-dev") {
		t.Fatalf("Binary() = %v, want ErrNoNS3 naming %s and the install line with libsqlite3-dev", err, missing)
	}
}

// TestBuildCacheKeyedBySource: the cached program is keyed by its source,
// so a changed skyloop-ns3.cc is rebuilt (not the stale program run) and
// an unchanged one is not.
func TestBuildCacheKeyedBySource(t *testing.T) {
	bin := t.TempDir()
	pkgConfig := "#!/bin/sh\ncase \"$1\" in\n--modversion) echo 3.37 ;;\n--libs) echo \"-lns3-core\" ;;\nesac\n"
	if err := os.WriteFile(filepath.Join(bin, "pkg-config"), []byte(pkgConfig), 0o755); err != nil {
		t.Fatal(err)
	}
	// A compiler that writes an executable to its -o argument and counts
	// its runs.
	runs := filepath.Join(t.TempDir(), "runs")
	cxx := filepath.Join(bin, "cxx")
	script := "#!/bin/sh\necho run >> " + runs + "\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then printf '#!/bin/sh\\n' > \"$2\"; chmod +x \"$2\"; fi; shift; done\n"
	if err := os.WriteFile(cxx, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("CXX", cxx)
	t.Setenv("SKYLOOP_NS3_BINARY", "")
	t.Setenv("SKYLOOP_CACHE", t.TempDir())
	orig := source
	t.Cleanup(func() { source = orig })
	built := func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), "run")
	}
	first, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	source = append(append([]byte(nil), orig...), "\n// changed\n"...)
	second, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	source = orig
	again, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	if first == second || again != first || built() != 2 {
		t.Fatalf("programs %s, %s (changed source), %s (original again); compiler ran %d times, want 2 different programs, the first reused, 2 builds",
			first, second, again, built())
	}
}
