package wifi

import (
	"testing"
	"unsafe"
)

// TestNodeLayout: what a frame's arrival touches first (the PHY's lock,
// the busy period, the signal list and its first two inline entries, all
// of which transmit prefetches in a large swarm) lies within the first
// nodeHot bytes of a node, at most three cache lines.
func TestNodeLayout(t *testing.T) {
	var n node
	if nodeHot > 3*64 {
		t.Errorf("the arrival's fields end at byte %d, beyond the first three cache lines", nodeHot)
	}
	for name, off := range map[string]uintptr{"locked": unsafe.Offsetof(n.locked), "lockBeg": unsafe.Offsetof(n.lockBeg), "busyUntil": unsafe.Offsetof(n.busyUntil), "sigs": unsafe.Offsetof(n.sigs)} {
		if off >= nodeHot {
			t.Errorf("%s at byte %d, outside the %d bytes transmit prefetches", name, off, nodeHot)
		}
	}
}
