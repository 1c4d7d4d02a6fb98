package ros2

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unsafe"

	"skyloop/dds"
	"skyloop/sim"
)

// serviceKey names the run's ROS 2 service (edge.Env.Service).
const serviceKey = "ros2"

// service is what the run's ros2 behaviours share: one DDS participant,
// its topics, /clock and the lockstep acknowledgements.
type service struct {
	p        *dds.Participant
	params   *Params
	topics   map[string]dds.Topic
	clock    *dds.Writer
	clockMsg cClock
	next     sim.Time // the next /clock
	last     sim.Time // the tick /clock was last considered
	started  bool
	acks     []*ack
}

// ack is one lockstep node's acknowledgement topic and the latest time it
// acknowledged.
type ack struct {
	name string
	r    *dds.Reader
	t    sim.Time
	seen bool
}

// take keeps the latest valid time of an acknowledgement (from another
// process: a time with nanoseconds out of range is ignored).
func (a *ack) take(p unsafe.Pointer) {
	c := (*cClock)(p).clock
	at := sim.Time(int64(c.sec)*1e9 + int64(c.nanosec))
	if c.sec >= 0 && c.nanosec < 1e9 && (!a.seen || at > a.t) {
		a.t, a.seen = at, true
	}
}

// open makes the participant the first time; later behaviours must agree
// on the run-wide parameters.
func (s *service) open(p *Params) error {
	if s.p != nil {
		if p.Domain != s.params.Domain || p.ClockPeriod != s.params.ClockPeriod || !slices.Equal(p.Lockstep, s.params.Lockstep) {
			return errors.New("domain, clock_period and lockstep must be the same for every ros2 behaviour of a run")
		}
		return nil
	}
	part, err := dds.NewParticipant(uint32(p.Domain))
	if err != nil {
		return err
	}
	s.p, s.params, s.topics = part, p, map[string]dds.Topic{}
	if p.ClockPeriod > 0 {
		if s.clock, err = s.writer("rt/clock", descClock); err != nil {
			return err
		}
	}
	for _, n := range p.Lockstep {
		r, err := s.reader("rt/skyloop/ack/"+n, descClock)
		if err != nil {
			return err
		}
		s.acks = append(s.acks, &ack{name: n, r: r})
	}
	return nil
}

func (s *service) topic(name string, d *dds.Descriptor) (dds.Topic, error) {
	if t, ok := s.topics[name]; ok {
		return t, nil
	}
	t, err := s.p.Topic(name, d)
	if err == nil {
		s.topics[name] = t
	}
	return t, err
}

// writer makes a writer with ROS 2's default QoS.
func (s *service) writer(name string, d *dds.Descriptor) (*dds.Writer, error) {
	t, err := s.topic(name, d)
	if err != nil {
		return nil, err
	}
	return s.p.Writer(t, dds.DefaultQoS)
}

// reader makes a reader with ROS 2's default QoS.
func (s *service) reader(name string, d *dds.Descriptor) (*dds.Reader, error) {
	t, err := s.topic(name, d)
	if err != nil {
		return nil, err
	}
	return s.p.Reader(t, dds.DefaultQoS)
}

// tick publishes /clock when due (once per tick, whichever behaviour
// steps first) and, with lockstep, waits for every node's
// acknowledgement of it.
func (s *service) tick(now sim.Time) error {
	if s.clock == nil || (s.started && now == s.last) || now < s.next {
		return nil
	}
	s.started, s.last = true, now
	for s.next <= now {
		s.next = s.next.Add(s.params.ClockPeriod)
	}
	s.clockMsg.clock = stamp(now)
	if err := s.clock.Write(unsafe.Pointer(&s.clockMsg)); err != nil {
		return fmt.Errorf("ros2: %w", err)
	}
	if len(s.acks) == 0 {
		return nil
	}
	return s.wait(now)
}

// ackPoll is how long the lockstep wait sleeps between looks.
const ackPoll = 50 * time.Microsecond

// clockRepeat is how often, while the lockstep wait goes on, /clock is
// published again (the same time): a node whose subscription was not yet
// matched when it was first published (DDS discovery takes some wall
// time; /clock is VOLATILE) gets it then.
const clockRepeat = 100 * time.Millisecond

// wait returns once every lockstep node has acknowledged time t or later,
// or fails naming those that did not within the timeout.
func (s *service) wait(t sim.Time) error {
	start := time.Now()
	deadline := start.Add(time.Duration(s.params.LockstepTimeout))
	repeat := start.Add(clockRepeat)
	for {
		missing := 0
		for _, a := range s.acks {
			if err := drain(a.r, a.take); err != nil {
				return fmt.Errorf("ros2: lockstep: %w", err)
			}
			if !a.seen || a.t < t {
				missing++
			}
		}
		if missing == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var names []string
			for _, a := range s.acks {
				if !a.seen || a.t < t {
					names = append(names, a.name)
				}
			}
			return fmt.Errorf("ros2: lockstep: no acknowledgement of /clock %v on /skyloop/ack/<node> within %v from %s",
				t, time.Duration(s.params.LockstepTimeout), strings.Join(names, ", "))
		}
		if now := time.Now(); now.After(repeat) {
			repeat = now.Add(clockRepeat)
			if err := s.clock.Write(unsafe.Pointer(&s.clockMsg)); err != nil {
				return fmt.Errorf("ros2: %w", err)
			}
		}
		time.Sleep(ackPoll)
	}
}

// Start implements edge.Service.
func (s *service) Start() error { return nil }

// Close implements edge.Service: it deletes the participant.
func (s *service) Close(error) error { return s.p.Close() }
