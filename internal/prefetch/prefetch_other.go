//go:build !amd64

package prefetch

import "unsafe"

// Line hints that the cache line holding p will be read soon; on this
// architecture it does nothing.
func Line(p unsafe.Pointer) {}

// Lines hints that the n bytes at p will be read soon; on this
// architecture it does nothing.
func Lines(p unsafe.Pointer, n uintptr) {}
