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
