// Package parquettest builds the skyloop-parquet program (cmd/skyloop-parquet)
// for the tests of packages that write or read Parquet tables: skyloop
// runs it as a child process (package tables), and a test binary is not
// installed next to it.
package parquettest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"skyloop/tables"
)

// Main builds skyloop-parquet into a temporary directory, points
// $SKYLOOP_PARQUET at it (inherited by skyloop processes the tests start),
// runs the tests and removes the directory; it returns m.Run's code. A
// package's TestMain calls it: os.Exit(parquettest.Main(m)).
func Main(m *testing.M) int {
	dir, err := os.MkdirTemp("", "skyloop-parquet-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	prog := filepath.Join(dir, tables.Program)
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, "build", "-o", prog, "skyloop/cmd/skyloop-parquet")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building %s for the tests: %v\n%s", tables.Program, err, out)
		return 1
	}
	os.Setenv(tables.EnvProgram, prog)
	return m.Run()
}
