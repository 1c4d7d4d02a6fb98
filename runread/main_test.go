package runread

import (
	"os"
	"testing"

	"skyloop/internal/parquettest"
)

// TestMain builds skyloop-parquet, which reads and writes the Parquet
// tables of the tests.
func TestMain(m *testing.M) { os.Exit(parquettest.Main(m)) }
