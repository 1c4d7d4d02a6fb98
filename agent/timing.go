package agent

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"skyloop/sim"
)

// Phase says where in its period a periodic sender starts.
type Phase uint8

// The phases.
const (
	// PhaseRandom starts every node at its own random point of the
	// period, drawn from the run's seed: senders that start together
	// drift apart as real ones do, and contend when their sends overlap.
	PhaseRandom Phase = iota
	// PhaseZero starts every node exactly at start + index*stagger.
	PhaseZero
)

var phaseNames = [...]string{"random", "zero"}

// String returns the phase's name as scenarios write it.
func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase%d", p)
}

// MarshalText writes the name.
func (p Phase) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads a name: random or zero.
func (p *Phase) UnmarshalText(b []byte) error {
	for i, n := range phaseNames {
		if string(b) == n {
			*p = Phase(i)
			return nil
		}
	}
	return fmt.Errorf("must be random or zero, got %q", b)
}

// Jitter bounds the random delay added to every send of a periodic sender:
// a duration ("5ms"), a percentage of the sender's period ("10%"), or 0
// for none. Send k of a sender with period P leaves at its nominal time
// first + k*P plus a delay drawn uniformly from [0, jitter), afresh for
// every send: the delays do not accumulate, so the mean period stays P.
type Jitter struct {
	// D is the bound as a duration (when Pct is 0).
	D sim.Duration
	// Pct is the bound as a percentage of the period; 0 means D applies.
	Pct float64
}

// DefaultJitter is the send jitter of every periodic sender unless the
// scenario says otherwise: a tenth of the period, e.g. [0, 10 ms) at 10 Hz.
// ns-3's BSM application (wave module) delays every 100 ms safety message
// by a fresh uniform [0, 10 ms] for the same reason, after the CAMP V2V
// minimum performance requirement of 100 ms +/- 5 ms; RFC 5148 lets
// MANET protocols (OLSR, AODV) jitter their periodic messages by up to a
// quarter of the interval.
var DefaultJitter = Jitter{Pct: 10}

// ParseJitter reads a jitter bound: a duration with a unit ("5ms"), a
// percentage of the period ("10%"), or 0.
func ParseJitter(s string) (Jitter, error) {
	s = strings.TrimSpace(s)
	if num, ok := strings.CutSuffix(s, "%"); ok {
		pct, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || !(pct >= 0 && pct < 100) {
			return Jitter{}, fmt.Errorf("a percentage of the period must lie in [0%%, 100%%), got %q", s)
		}
		return Jitter{Pct: pct}, nil
	}
	d, err := sim.ParseDuration(s)
	if err != nil {
		return Jitter{}, fmt.Errorf("must be a duration (5ms), a percentage of the period (10%%) or 0 for none, got %q", s)
	}
	return Jitter{D: d}, nil
}

// String writes the bound as ParseJitter reads it.
func (j Jitter) String() string {
	if j.Pct != 0 {
		return strconv.FormatFloat(j.Pct, 'g', -1, 64) + "%"
	}
	return j.D.String()
}

// MarshalText writes the bound as ParseJitter reads it.
func (j Jitter) MarshalText() ([]byte, error) { return []byte(j.String()), nil }

// UnmarshalText reads the bound with ParseJitter.
func (j *Jitter) UnmarshalText(b []byte) error {
	v, err := ParseJitter(string(b))
	if err != nil {
		return err
	}
	*j = v
	return nil
}

// UnmarshalYAML reads the bound from a YAML scalar (5ms, 10%, 0).
func (j *Jitter) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return err
	}
	return j.UnmarshalText([]byte(s))
}

// Of returns the bound for a sender with period p.
func (j Jitter) Of(p sim.Duration) sim.Duration {
	if j.Pct != 0 {
		return sim.Duration(math.Floor(float64(p) * j.Pct / 100))
	}
	return j.D
}

// SendTimes draws a periodic sender's timing: send k leaves at
// first + nominal(k) + delay(k), where first is the start, the node's
// stagger and its phase, and delay(k) is the send's jitter. Every draw is a
// function of the node's timing key, the sender and k only (sim.Hash), so
// the times do not depend on how the run drives its network (stepping,
// planning epochs, planning before the run) nor on what else the node
// draws. It is one word: every vehicle's senders hold one.
type SendTimes uint64

// NewSendTimes returns the draws of a sender on ctx's node: tag says
// which behaviour, port and kind tell its instances apart.
func NewSendTimes(ctx *Context, tag uint64, port uint16, kind uint64) SendTimes {
	return SendTimes(sim.Hash(ctx.timingKey, tag, uint64(port), kind))
}

// below returns a draw uniform over [0, n) (0 when n <= 0) keyed by
// (purpose, k).
func (s SendTimes) below(n sim.Duration, purpose, k uint64) sim.Duration {
	if n <= 0 {
		return 0
	}
	hi, _ := bits.Mul64(sim.Hash(uint64(s), purpose, k, 0), uint64(n))
	return sim.Duration(hi)
}

// Phase returns the node's phase for period p: 0 for PhaseZero, uniform
// in [0, p) for PhaseRandom.
func (s SendTimes) Phase(ph Phase, p sim.Duration) sim.Duration {
	if ph == PhaseZero {
		return 0
	}
	return s.below(p, 0, 0)
}

// Delay returns send k's jitter, uniform in [0, jitter).
func (s SendTimes) Delay(k int64, jitter sim.Duration) sim.Duration {
	return s.below(jitter, 1, uint64(k))
}
