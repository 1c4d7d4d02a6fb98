package prefetch

import "unsafe"

// Line hints that the cache line holding p will be read soon
// (PREFETCHT0: into every cache level). It never faults, whatever p.
//
//go:noescape
func Line(p unsafe.Pointer)

// Lines hints that the n bytes from p on will be read soon: every cache
// line that holds one of them. It never faults.
//
//go:noescape
func Lines(p unsafe.Pointer, n uintptr)
