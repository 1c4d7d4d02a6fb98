package runner

import (
	"os"
	"testing"

	"skyloop/internal/parquettest"
)

// TestMain builds skyloop-parquet, which writes and reads the Parquet
// tables of runs in format parquet.
func TestMain(m *testing.M) { os.Exit(parquettest.Main(m)) }
