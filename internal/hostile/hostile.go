// Package hostile makes the inputs that tests of skyloop's file loaders
// feed them: files filled up to the loaders' limits, and a way to measure
// what loading one costs. It is used by tests only.
package hostile

import (
	"fmt"
	"runtime"
	"strings"

	"skyloop/scenario"
)

// MaxAlloc is the most loading any input file may cost, accepted or not:
// 100 MB (tests assert on bytes allocated, never on time).
const MaxAlloc = 100 << 20

// Allocated returns the bytes f allocated.
func Allocated(f func()) uint64 {
	runtime.GC()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// Tokens counts YAML tokens as the loaders' limit does.
func Tokens(s string) int { return scenario.Tokens([]byte(s)) }

// Numbered writes head, then format (with one %d, counting from 0) as
// often as the size and token limits allow, then tail.
func Numbered(head, format, tail string) string {
	var b strings.Builder
	b.WriteString(head)
	budget := scenario.MaxTokens - Tokens(head) - Tokens(tail) - 2
	for i := 0; ; i++ {
		u := fmt.Sprintf(format, i)
		if b.Len()+len(u)+len(tail) > scenario.MaxFileSize || budget < Tokens(u) {
			break
		}
		budget -= Tokens(u)
		b.WriteString(u)
	}
	return b.String() + tail
}
