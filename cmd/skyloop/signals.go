package main

import (
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// stopSignals end every command alike: Ctrl-C (SIGINT), kill (SIGTERM) and
// a closed terminal (SIGHUP). The exit code is 128 + the signal's number.
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// stopper turns the stop signals into a flag that long commands (run,
// sweep, bench) poll at safe points: the end of a tick, the end of a run.
// They call graceful first; any other command exits at once, since it has
// nothing to clean up.
type stopper struct {
	sig      atomic.Int32 // the first stop signal received, 0 = none
	graceful atomic.Bool
	ch       chan os.Signal
	done     chan struct{}
}

// sigs is the process's stopper, listening while run executes a command.
var sigs stopper

// listen starts catching the stop signals; the returned function stops.
func (s *stopper) listen() func() {
	s.sig.Store(0)
	s.graceful.Store(false)
	s.ch = make(chan os.Signal, 4)
	s.done = make(chan struct{})
	signal.Notify(s.ch, stopSignals...)
	go func(ch chan os.Signal, done chan struct{}) {
		for {
			select {
			case v := <-ch:
				n := int32(v.(syscall.Signal))
				if s.sig.CompareAndSwap(0, n) {
					if !s.graceful.Load() {
						os.Exit(128 + int(n))
					}
					fmt.Fprintf(os.Stderr, "\nskyloop: %v: stopping at the next safe point (outputs are cleaned up; this can take a few seconds)\n", v)
				}
			case <-done:
				return
			}
		}
	}(s.ch, s.done)
	return func() {
		signal.Stop(s.ch)
		close(s.done)
	}
}

// Graceful says the running command stops by itself when Stopped turns
// true.
func (s *stopper) Graceful() { s.graceful.Store(true) }

// Stopped reports whether a stop signal has arrived.
func (s *stopper) Stopped() bool { return s.sig.Load() != 0 }

// interrupted is the error of a command stopped by a signal.
type interrupted struct {
	err error
}

func (e interrupted) Error() string { return e.err.Error() }
func (e interrupted) Unwrap() error { return e.err }

// exitCode is 128 + the signal that stopped the command (130 for SIGINT
// when none was recorded, as when a test stops a command directly).
func (e interrupted) exitCode() int {
	if n := sigs.sig.Load(); n != 0 {
		return 128 + int(n)
	}
	return 128 + int(syscall.SIGINT)
}

// signalName names the signal received, for messages.
func signalName() string {
	if n := sigs.sig.Load(); n != 0 {
		return syscall.Signal(n).String()
	}
	return "a stop request"
}
