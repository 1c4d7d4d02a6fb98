package runner

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"skyloop/sim"
)

// syncBound is the δ of the munils platform's bounded synchronisation rule
// (docs/isolation.md): a follower more than this far ahead of the master is
// clamped back.
const syncBound = 20 * time.Millisecond

// pacer holds simulated time (the master clock) to a multiple of the wall
// clock for real-time runs. It and the worker pool's tuner (which the runner
// hands time.Now: it decides which worker runs a chunk, never what the chunk
// computes) are where a run reads the wall clock; the pacer only ever
// delays: what the run computes does not depend on it (outside programs
// talking to the run are another matter).
//
// The wall clock, on which real processes live, follows the master with
// the munils platform's one-sided bounded rule (docs/isolation.md): with (wall0, t0) latched at the first
// tick, drift = factor*(wall - wall0) - (t - t0). When the wall clock runs
// more than 20 ms ahead (the simulation could not keep up), it is clamped
// back by re-latching wall0, so the simulation never races to catch up; a
// wall clock behind the master is never pushed forward: the pacer sleeps
// until the tick is due.
type pacer struct {
	ctl     *PaceControl // nil: no user control
	seen    uint64       // the control's generation applied
	base    float64      // the run's own real-time factor
	factor  float64
	wall0   time.Time
	t0      sim.Time
	started bool
	log     *slog.Logger
	warned  time.Time
	// Last drift measured (before any clamp), how late the last tick
	// began after pacing, and the number of clamps.
	drift  time.Duration
	late   time.Duration
	clamps int
	// The speed measurement's window (measure): its start, and whether
	// one is open.
	winWall time.Time
	winT    sim.Time
	winOn   bool
}

func newPacer(factor float64, log *slog.Logger, ctl *PaceControl) *pacer {
	return &pacer{factor: factor, base: factor, log: log, ctl: ctl}
}

// PaceControl lets a user pause a real-time run and change its real-time
// factor while it runs (the live view's buttons). After every change the
// pacer starts over from the current tick, so a pause leaves no debt to
// catch up. It is safe for concurrent use.
type PaceControl struct {
	mu     sync.Mutex
	paused bool
	factor float64 // 0: the run's own
	gen    uint64  // bumped by every change
	// Stopped, when set, ends a pause early (the run is being stopped).
	Stopped func() bool
	// speed is the run's pace measured by the pacer: simulated seconds
	// per wall second over the last window of at least speedWindow (0
	// until one has passed).
	speed float64
}

// speedWindow is the wall time over which the pacer measures the speed
// PaceControl.Speed reports.
const speedWindow = time.Second

// Speed returns the run's speed as the pacer measured it over the last
// second or so of wall time (simulated seconds per wall second; 0 before
// the first measurement and after a change, until the next one). A page
// measuring the pace from the time messages it gets is thrown off by its
// own stalls; this is the run's.
func (c *PaceControl) Speed() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.speed
}

// measure updates the speed the control reports from tick t at wall time
// now: a window starts at the first tick after a change and closes once
// speedWindow has passed.
func (p *pacer) measure(t sim.Time, now time.Time) {
	if p.ctl == nil {
		return
	}
	if !p.winOn {
		p.winWall, p.winT, p.winOn = now, t, true
		return
	}
	if d := now.Sub(p.winWall); d >= speedWindow {
		p.ctl.mu.Lock()
		p.ctl.speed = float64(t-p.winT) / float64(d)
		p.ctl.mu.Unlock()
		p.winWall, p.winT = now, t
	}
}

// Pause pauses (true) or resumes (false) the run at the next tick.
func (c *PaceControl) Pause(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused = on
	c.gen++
	c.speed = 0
}

// Bounds of a real-time factor: slower than MinFactor a run all but
// stands still (a factor of 1e-300 would freeze it for ever), faster than
// MaxFactor pacing means nothing.
const (
	MinFactor = 0.01
	MaxFactor = 1000
)

// CheckFactor returns an error unless f is a real-time factor in
// [MinFactor, MaxFactor] (NaN and infinities are not).
func CheckFactor(f float64) error {
	if !(f >= MinFactor && f <= MaxFactor) { // NaN fails too
		return fmt.Errorf("the real-time factor must be a number from %v to %v, got %v", MinFactor, MaxFactor, f)
	}
	return nil
}

// SetFactor changes the real-time factor; it refuses one CheckFactor
// refuses and leaves the factor as it was.
func (c *PaceControl) SetFactor(f float64) error {
	if err := CheckFactor(f); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.factor = f
	c.gen++
	c.speed = 0
	return nil
}

// State returns whether the run is paused and the factor set (0: the
// run's own).
func (c *PaceControl) State() (paused bool, factor float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused, c.factor
}

func (c *PaceControl) state() (paused bool, factor float64, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused, c.factor, c.gen
}

// pausePoll is how often a paused run looks at its control.
const pausePoll = 20 * time.Millisecond

// control applies the user's changes before tick t: it waits while the
// run is paused, and restarts pacing from t after any change.
func (p *pacer) control(t sim.Time) {
	if p.ctl == nil {
		return
	}
	for {
		paused, factor, gen := p.ctl.state()
		if gen != p.seen {
			p.seen = gen
			p.started = false // latch (wall0, t0) again at t
			p.winOn = false   // and measure the speed afresh
			p.factor = p.base
			if factor > 0 {
				p.factor = factor
			}
		}
		if !paused || (p.ctl.Stopped != nil && p.ctl.Stopped()) {
			return
		}
		time.Sleep(pausePoll)
	}
}

// wait sleeps until the wall clock reaches simulated time t.
func (p *pacer) wait(t sim.Time) error {
	p.control(t)
	now := time.Now()
	if !p.started {
		p.wall0, p.t0, p.started = now, t, true
	}
	p.drift = time.Duration(p.factor*float64(now.Sub(p.wall0))) - time.Duration(t-p.t0)
	if p.drift > syncBound {
		p.late = p.drift
		p.clamps++
		p.wall0 = now.Add(-time.Duration(float64(t-p.t0) / p.factor))
		if now.Sub(p.warned) > 5*time.Second {
			p.warned = now
			p.log.Warn("the run cannot keep up with the real-time factor; the wall clock was clamped back to the simulation",
				"drift", p.drift, "sim_time", t)
		}
		p.measure(t, now)
		return nil
	}
	if p.drift < 0 {
		due := now.Add(time.Duration(float64(-p.drift) / p.factor))
		// Go's timers overshoot by about a millisecond here; nanosleep
		// by about 0.1 ms. Sleep to just before the tick is due, then
		// spin the last stretch.
		if rest := time.Until(due) - spinMargin; rest > 0 {
			rawSleep(rest)
		}
		for time.Now().Before(due) {
		}
	}
	end := time.Now()
	p.late = time.Duration(p.factor*float64(end.Sub(p.wall0))) - time.Duration(t-p.t0)
	p.measure(t, end)
	return nil
}

// spinMargin is how long before a tick is due the pacer stops sleeping and
// spins.
const spinMargin = 200 * time.Microsecond

// offset returns how far the wall clock was ahead of the simulation when
// the current tick began (in simulated nanoseconds): the lag of the master
// behind real time, as real processes see it.
func (p *pacer) offset() time.Duration { return p.late }

// rawSleep blocks the thread in nanosleep without telling the Go scheduler
// (a raw system call): an ordinary system call lets the scheduler hand the
// thread's processor to another goroutine, and getting it back after the
// sleep can take up to the scheduler's 10 ms time slice. Signals (the
// runtime's preemption requests) end the sleep early; the caller spins
// the rest.
func rawSleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}
