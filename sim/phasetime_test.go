package sim

import (
	"testing"
	"time"
)

// TestKernelTimesPhases: with a clock, the kernel counts every phase's
// calls and adds up their wall time (here a fake clock that moves 1 ms
// per read: each call takes exactly 1 ms); TimePhases starts again from
// zero, also from inside a phase, whose own call is then not counted;
// without a clock nothing is timed.
func TestKernelTimesPhases(t *testing.T) {
	k, err := NewKernel(Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var now time.Time
	clock := func() time.Time { now = now.Add(time.Millisecond); return now }
	restartAt := Time(-1)
	nop := func(Time) error { return nil }
	if err := k.Add(Phase{Name: "a", Every: 1, Run: nop}); err != nil {
		t.Fatal(err)
	}
	if err := k.Add(Phase{Name: "b", Every: 3, Offset: 1, Run: func(t Time) error {
		if t == restartAt {
			k.TimePhases(clock)
		}
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	if got := k.PhaseTimes(); got != nil {
		t.Fatalf("not timing, got %v", got)
	}
	if err := k.Run(Time(3 * Millisecond)); err != nil { // untimed ticks 0-2
		t.Fatal(err)
	}
	k.TimePhases(clock)
	if err := k.Run(Time(10 * Millisecond)); err != nil { // ticks 3-9: b at 4 and 7
		t.Fatal(err)
	}
	want := []PhaseTime{{"a", 7, 7 * time.Millisecond}, {"b", 2, 2 * time.Millisecond}}
	if got := k.PhaseTimes(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Restarted by b at tick 10: a's call at 10 came before, b's own call
	// is not counted; then ticks 11-12 (b not due).
	restartAt = Time(10 * Millisecond)
	if err := k.Run(Time(13 * Millisecond)); err != nil {
		t.Fatal(err)
	}
	want = []PhaseTime{{"a", 2, 2 * time.Millisecond}, {"b", 0, 0}}
	if got := k.PhaseTimes(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("after the restart: got %v, want %v", got, want)
	}
	k.TimePhases(nil)
	if got := k.PhaseTimes(); got != nil {
		t.Fatalf("timing stopped, got %v", got)
	}
}
