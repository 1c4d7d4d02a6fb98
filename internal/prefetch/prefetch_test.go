package prefetch

import (
	"testing"
	"unsafe"
)

// TestHintsChangeNothing: prefetching never faults (nil, an address past
// a slice, a zero length) and leaves memory as it was.
func TestHintsChangeNothing(t *testing.T) {
	buf := make([]byte, 1000)
	for i := range buf {
		buf[i] = byte(i)
	}
	Line(nil)
	Lines(nil, 4096)
	Line(unsafe.Pointer(&buf[999]))
	Lines(unsafe.Pointer(&buf[3]), 997)
	Lines(unsafe.Pointer(&buf[3]), 0)
	Lines(unsafe.Add(unsafe.Pointer(&buf[0]), 1<<20), 1<<12)
	for i := range buf {
		if buf[i] != byte(i) {
			t.Fatalf("byte %d changed", i)
		}
	}
}

// BenchmarkLines is the cost of hinting three cache lines.
func BenchmarkLines(b *testing.B) {
	buf := make([]byte, 1<<20)
	i := 0
	for b.Loop() {
		Lines(unsafe.Pointer(&buf[i]), 192)
		i = (i + 4096) & (1<<20 - 1)
	}
}
