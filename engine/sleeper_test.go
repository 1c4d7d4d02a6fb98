package engine_test

import (
	"slices"
	"testing"

	"skyloop/agent"
	"skyloop/engine"
	"skyloop/scenario"
	"skyloop/sim"
)

// sleeper is a test behaviour scheduled every 2 ticks from tick 1 that
// needs a step only at the times in wants: it records the ticks at which
// it steps.
type sleeper struct {
	wants   []sim.Time
	stepped []sim.Time
}

func (s *sleeper) Start(*agent.Context) error { return nil }

func (s *sleeper) Schedule() (period, offset sim.Duration) {
	return 2 * sim.Millisecond, sim.Millisecond
}

func (s *sleeper) Step(ctx *agent.Context) {
	s.stepped = append(s.stepped, ctx.Now())
	for len(s.wants) > 0 && s.wants[0] < ctx.Now().Add(2*sim.Millisecond) {
		s.wants = s.wants[1:]
	}
}

func (s *sleeper) NextStep() sim.Time {
	if len(s.wants) == 0 {
		return sim.Time(100 * sim.Second)
	}
	return s.wants[0]
}

// TestSleeperSkipsSteps: a behaviour implementing agent.Sleeper steps at
// the first scheduled tick that holds (or follows) each time it asks for,
// and at no other; the first step is also moved (NextStep after Start).
func TestSleeperSkipsSteps(t *testing.T) {
	reg := engine.Core()
	ms := sim.Time(sim.Millisecond)
	b := &sleeper{wants: []sim.Time{5*ms + 300, 6 * ms, 8*ms + ms/2, 12 * ms, 13*ms + 999_999, 40 * ms}}
	reg.AddBehavior(agent.Spec{Name: "sleeper", Doc: "Sleeps between wanted steps (tests).", Vehicle: true,
		Params: func() agent.Params { return &filerParams{} },
		New:    func(agent.Params) agent.Behavior { return b }})
	sc, err := scenario.Parse("sleep.yaml", []byte("name: sleep\nduration: 30ms\nvehicles:\n  - {name: uav, kind: pointmass, count: 1, spawn: {layout: line, spacing: 2}, behaviors: [{type: sleeper}]}\n"), reg.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	if err := r.RunUntil(sim.Time(30 * sim.Millisecond)); err != nil {
		t.Fatal(err)
	}
	// Scheduled ticks are 1, 3, 5, ... ms; a step covers the wants before
	// the next scheduled one. 5.0003 ms is in tick 5, whose step also
	// covers 6 ms; 8.5 ms (tick 8) waits for tick 9; 12 ms for 13, whose
	// step also covers 13.999999 ms; 40 ms is past the end.
	want := []sim.Time{5 * ms, 9 * ms, 13 * ms}
	if !slices.Equal(b.stepped, want) {
		t.Fatalf("stepped at %v, want %v", b.stepped, want)
	}
}
