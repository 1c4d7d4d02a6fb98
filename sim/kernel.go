package sim

import (
	"errors"
	"fmt"
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
			if err := p.Run(t); err != nil {
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
