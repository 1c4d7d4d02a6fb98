package engine

import (
	"log/slog"
	"time"

	"skyloop/sim"
)

// pacer holds simulated time back to a multiple of the wall clock for
// real-time runs. It is the only place where the engine reads the wall
// clock, and it only ever delays: what the run computes does not depend on
// it (outside programs talking to the run are another matter).
type pacer struct {
	factor  float64
	start   time.Time
	started bool
	log     *slog.Logger
	behind  time.Time // when we last warned about falling behind
}

func newPacer(factor float64, log *slog.Logger) *pacer {
	return &pacer{factor: factor, log: log}
}

// wait sleeps until the wall clock reaches simulated time t.
func (p *pacer) wait(t sim.Time) error {
	now := time.Now()
	if !p.started {
		p.start, p.started = now, true
	}
	due := p.start.Add(time.Duration(float64(t) / p.factor))
	if d := due.Sub(now); d > 0 {
		time.Sleep(d)
	} else if -d > 100*time.Millisecond && now.Sub(p.behind) > 5*time.Second {
		p.behind = now
		p.log.Warn("the run cannot keep up with the real-time factor", "behind", -d, "sim_time", t)
	}
	return nil
}
