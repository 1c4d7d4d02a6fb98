package px4sitl

import "time"

// SetJoinPace makes every step before PX4 joins the lockstep wait at least
// d (wall clock) for an answer, and returns a function that restores the
// previous value. Transcript replays use it so the stand-in PX4 keeps up
// with the recorded boot frames on a loaded machine.
func SetJoinPace(d time.Duration) (restore func()) {
	old := joinPace
	joinPace = d
	return func() { joinPace = old }
}
