// Package sim holds the deterministic foundations of a run: integer
// nanosecond time, seeded random streams, the lockstep kernel that runs
// phases in a fixed order at whole-tick rates, and a worker pool that steps
// independent items in parallel with a fixed merge order.
//
// Nothing in this package reads the wall clock or the global random source.
package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Time is a simulation instant in nanoseconds since the start of the run.
type Time int64

// Duration is a span of simulation time in nanoseconds.
type Duration int64

// Common durations.
const (
	Nanosecond  Duration = 1
	Microsecond Duration = 1000
	Millisecond Duration = 1000 * Microsecond
	Second      Duration = 1000 * Millisecond
	Minute      Duration = 60 * Second
)

// Add returns t + d.
func (t Time) Add(d Duration) Time { return t + Time(d) }

// Sub returns the duration t - u.
func (t Time) Sub(u Time) Duration { return Duration(t - u) }

// Seconds returns t in seconds as a float.
func (t Time) Seconds() float64 { return float64(t) / 1e9 }

// String formats t like a duration since the start, e.g. "12.5s".
func (t Time) String() string { return Duration(t).String() }

// Seconds returns d in seconds as a float.
func (d Duration) Seconds() float64 { return float64(d) / 1e9 }

// String formats d with the standard library's duration syntax, e.g. "10ms".
func (d Duration) String() string { return time.Duration(d).String() }

// Seconds converts a float number of seconds to a Duration, rounding to the
// nearest nanosecond.
func Seconds(s float64) Duration { return Duration(math.Round(s * 1e9)) }

// ParseDuration parses a duration with a unit, such as "10ms", "1.5s" or
// "2m". A bare "0" is accepted; other bare numbers are rejected because their
// unit would be a guess.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("duration %q needs a unit, e.g. %ss or %sms", s, s, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (use a number with a unit: ns, us, ms, s, m, h)", s)
	}
	return Duration(d), nil
}

// UnmarshalText parses a duration written with a unit, as in scenario files.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalText writes d in the syntax UnmarshalText reads.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }
