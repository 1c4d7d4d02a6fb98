package sim

import (
	"errors"
	"fmt"
	"time"
)

// Phase is one step of the tick protocol. At every tick whose index n
// satisfies n >= Offset and (n-Offset) % Every == 0, the kernel calls Run
// with the tick's time. Phases run in the order they were added, never
// concurrently, so a phase always sees the complete effects of the phases
// before it.
type Phase struct {
	// Name identifies the phase in errors.
	Name string
	// Every is the phase period in ticks (>= 1).
	Every int64
	// Offset is the first tick index at which the phase runs (>= 0).
	Offset int64
	// Run does the phase's work for tick time t.
	Run func(t Time) error
}

// Kernel is the lockstep loop: a fixed tick and an ordered list of phases.
// It owns simulated time and nothing else; what the phases do (network,
// agents, autopilots, physics, recording) is wired by the caller.
type Kernel struct {
	tick   Duration
	phases []Phase
	n      int64
	now    Time
	clock  WallClock   // non-nil: time every phase call (TimePhases)
	times  []PhaseTime // per phase, while timing
	timing uint64      // counts TimePhases calls
}

// PhaseTime is how many calls of a phase ran, and the wall time they
// took, since the kernel started timing its phases (TimePhases).
type PhaseTime struct {
	Name  string
	Calls int64
	Wall  time.Duration
}

// TimePhases makes Run time every phase call with clock, from zero: the
// figures PhaseTimes reports start again. A nil clock stops the timing.
// The clock decides nothing a phase computes; timing costs two clock
// reads per phase call.
func (k *Kernel) TimePhases(clock WallClock) {
	k.clock, k.times = clock, nil
	k.timing++
}

// PhaseTimes returns, in the phases' order, the calls and wall time of
// every phase since TimePhases (a copy; nil when not timing).
func (k *Kernel) PhaseTimes() []PhaseTime {
	if k.clock == nil {
		return nil
	}
	k.sizeTimes()
	return append([]PhaseTime(nil), k.times...)
}

// sizeTimes gives every phase its entry in times.
func (k *Kernel) sizeTimes() {
	for i := len(k.times); i < len(k.phases); i++ {
		k.times = append(k.times, PhaseTime{Name: k.phases[i].Name})
	}
}

// runTimed runs phase i at t and adds its wall time to its entry,
// unless the phase stopped or restarted the timing.
func (k *Kernel) runTimed(i int, t Time) error {
	timing, start := k.timing, k.clock()
	err := k.phases[i].Run(t)
	if k.timing != timing {
		return err
	}
	d := k.clock().Sub(start)
	k.sizeTimes()
	k.times[i].Calls++
	k.times[i].Wall += d
	return err
}

// NewKernel returns a kernel with the given tick, which must be positive.
func NewKernel(tick Duration) (*Kernel, error) {
	if tick <= 0 {
		return nil, fmt.Errorf("kernel tick must be positive, got %v", tick)
	}
	return &Kernel{tick: tick}, nil
}

// Tick returns the kernel's tick length.
func (k *Kernel) Tick() Duration { return k.tick }

// Now returns the time of the next tick to run (the end of the last one).
func (k *Kernel) Now() Time { return k.now }

// Ticks converts a period to a whole number of ticks, failing when the period
// is not a positive multiple of the tick.
func (k *Kernel) Ticks(period Duration) (int64, error) {
	if period <= 0 || period%k.tick != 0 {
		return 0, fmt.Errorf("period %v is not a positive whole multiple of the tick %v", period, k.tick)
	}
	return int64(period / k.tick), nil
}

// Add appends a phase. Phases added earlier run earlier within a tick.
func (k *Kernel) Add(p Phase) error {
	if p.Every < 1 || p.Offset < 0 || p.Run == nil {
		return fmt.Errorf("phase %q: every must be >= 1 tick and offset >= 0 (got %d, %d)", p.Name, p.Every, p.Offset)
	}
	k.phases = append(k.phases, p)
	return nil
}

// ErrStopped is returned by Run when a phase asked the run to stop early
// with Stop.
var ErrStopped = errors.New("run interrupted before its end")

// Run executes ticks while their time is before end: each tick t runs every
// due phase with t, then time advances to t + tick. It returns the first
// phase error, wrapped with the phase name and the tick time.
func (k *Kernel) Run(end Time) error {
	for k.now < end {
		n, t := k.n, k.now
		for i := range k.phases {
			p := &k.phases[i]
			if n < p.Offset || (n-p.Offset)%p.Every != 0 {
				continue
			}
			var err error
			if k.clock == nil {
				err = p.Run(t)
			} else {
				err = k.runTimed(i, t)
			}
			if err != nil {
				if errors.Is(err, ErrStopped) {
					return err
				}
				return fmt.Errorf("%s phase at t=%v: %w", p.Name, t, err)
			}
		}
		k.n++
		k.now = Time(k.n * int64(k.tick))
	}
	return nil
}
