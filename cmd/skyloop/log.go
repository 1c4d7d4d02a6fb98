package main

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"time"

	"skyloop/sim"
	"skyloop/sweep"
)

// defaultProgressEvery is how often a run or sweep whose stderr is not a
// terminal (CI, Slurm, nohup) logs a progress line.
const defaultProgressEvery = 10 * time.Second

// newLogger returns the one logger style skyloop writes to stderr: slog's
// text format (time=... level=... msg=... key=value), for warnings,
// progress and diagnostics alike.
func newLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 && a.Value.Kind() == slog.KindTime {
			// Whole milliseconds are enough to read a log by; the zone
			// stays, so that logs from several machines line up.
			a.Value = slog.StringValue(a.Value.Time().Format("2006-01-02T15:04:05.000Z07:00"))
		}
		return a
	}}))
}

// eta estimates the wall time left when done of total units took elapsed.
func eta(elapsed time.Duration, done, total float64) time.Duration {
	if done <= 0 || total <= done {
		return 0
	}
	return time.Duration(float64(elapsed) * (total - done) / done).Round(time.Second)
}

// progressLogger returns a run's progress callback for a stderr that is not
// a terminal: every `every` of wall time (and at least at the first call
// after it), one line with the simulated time, the real-time factor and an
// estimate of the wall time left.
func progressLogger(log *slog.Logger, name string, start time.Time, every time.Duration) func(now, end sim.Time) {
	last := start
	return func(now, end sim.Time) {
		t := time.Now()
		if t.Sub(last) < every {
			return
		}
		last = t
		el := t.Sub(start)
		log.Info("progress", "run", name,
			"simulated", sim.Duration(now).String(), "of", sim.Duration(end).String(),
			"percent", fmt.Sprintf("%.0f", 100*float64(now)/math.Max(float64(end), 1)),
			"speed", speedText(now.Seconds()/math.Max(el.Seconds(), 1e-9))+"x",
			"elapsed", el.Round(time.Second).String(),
			"eta", eta(el, float64(now), float64(end)).String())
	}
}

// sweepTracker logs a sweep's progress off a terminal: a line for every
// finished run, and between them, every `every` of wall time, a line with
// the runs done and the wall time left, so that a log never stays silent
// for long while runs take minutes.
type sweepTracker struct {
	log   *slog.Logger
	name  string
	start time.Time

	mu          sync.Mutex
	done, total int
	stop        chan struct{}
	stopped     sync.WaitGroup
}

// newSweepTracker starts the periodic lines (none when every <= 0); Close
// stops them.
func newSweepTracker(log *slog.Logger, name string, every time.Duration) *sweepTracker {
	s := &sweepTracker{log: log, name: name, start: time.Now(), stop: make(chan struct{})}
	if every > 0 {
		s.stopped.Add(1)
		go func() {
			defer s.stopped.Done()
			tk := time.NewTicker(every)
			defer tk.Stop()
			for {
				select {
				case <-s.stop:
					return
				case <-tk.C:
					s.mu.Lock()
					done, total := s.done, s.total
					s.mu.Unlock()
					s.line("progress", done, total)
				}
			}
		}()
	}
	return s
}

// line logs msg with the sweep's state.
func (s *sweepTracker) line(msg string, done, total int, attrs ...any) {
	el := time.Since(s.start)
	est := "unknown"
	if done > 0 {
		est = eta(el, float64(done), float64(total)).String()
	}
	s.log.Info(msg, append([]any{"sweep", s.name, "runs", fmt.Sprintf("%d/%d", done, total),
		"elapsed", el.Round(time.Second).String(), "eta", est}, attrs...)...)
}

// Progress is the sweep's per-run callback.
func (s *sweepTracker) Progress(p sweep.Progress) {
	s.mu.Lock()
	s.done, s.total = p.Done, p.Total
	s.mu.Unlock()
	state := "done"
	if p.Skipped {
		state = "already finished"
	}
	attrs := []any{"variant", p.Variant, "seed", p.Seed, "state", state}
	if p.Err != nil {
		s.log.Warn("run failed", append([]any{"sweep", s.name, "runs", fmt.Sprintf("%d/%d", p.Done, p.Total), "variant", p.Variant, "seed", p.Seed}, "err", p.Err)...)
		return
	}
	s.line("run finished", p.Done, p.Total, attrs...)
}

// Close stops the periodic lines.
func (s *sweepTracker) Close() {
	close(s.stop)
	s.stopped.Wait()
}
