package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestStepQueueOrder: the timetable hands out, tick after tick, exactly
// the slots a scan of every node's every slot would step (those whose
// next step is that tick), in node and stack order; slots rescheduled
// while a tick's slots are stepped come back at their new tick, and a
// slot whose tick has passed is never stepped (as with the scan).
func TestStepQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const nodes, slots, ticks = 300, 3, 500
	next := make([][slots]int64, nodes)
	every := make([][slots]int64, nodes)
	var q stepQueue
	for i := range next {
		for j := range slots {
			every[i][j] = 1 + rng.Int64N(20)
			next[i][j] = rng.Int64N(30) - 5 // some before the first tick: never stepped
			q.push(dueSlot{next: next[i][j], node: int32(i), slot: int32(j)})
		}
	}
	steps := 0
	for idx := range int64(ticks) {
		var want []dueSlot
		for i := range next {
			for j := range slots {
				if next[i][j] == idx {
					want = append(want, dueSlot{next: idx, node: int32(i), slot: int32(j)})
				}
			}
		}
		got := slices.Clone(q.take(idx))
		if !slices.Equal(got, want) {
			t.Fatalf("tick %d: took %v, want %v", idx, got, want)
		}
		for _, d := range got {
			// A sleeper may push its next step further.
			n := next[d.node][d.slot] + every[d.node][d.slot]*(1+rng.Int64N(3))
			next[d.node][d.slot] = n
			d.next = n
			q.push(d)
			steps++
		}
	}
	if steps < nodes*slots*ticks/40 {
		t.Fatalf("only %d steps in %d ticks", steps, ticks)
	}
}
