package extern_test

import (
	"encoding/binary"
	"math"
	"time"

	"skyloop/agent"
	"skyloop/extern"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// actuator is what the shared mission logic may do.
type actuator interface {
	Broadcast(payload []byte) error
	Takeoff(alt float64) error
	Goto(x, y, z float64) error
	Land() error
}

// mission is the logic run both as a built-in agent and as an external
// process; it is called every 100 ms of simulated time with the messages
// delivered since the last call. It takes off, then flies towards the
// centre of what it hears of the others, offset by its own id, and lands at
// 8 s: what it does depends on the network.
type mission struct {
	id      int
	landed  bool
	heard   map[int][3]float64
	payload [24]byte
}

func (m *mission) step(now time.Duration, tel *extern.Telemetry, inbox []extern.Delivery, act actuator) {
	if m.heard == nil {
		m.heard = map[int][3]float64{}
	}
	for _, d := range inbox {
		if len(d.Payload) != 24 {
			continue
		}
		var p [3]float64
		for i := range p {
			p[i] = math.Float64frombits(binary.LittleEndian.Uint64(d.Payload[8*i:]))
		}
		m.heard[d.Src] = p
	}
	for i := 0; i < 3; i++ {
		binary.LittleEndian.PutUint64(m.payload[8*i:], math.Float64bits(tel.Pos[i]))
	}
	act.Broadcast(m.payload[:])
	switch {
	case now >= 8*time.Second && !m.landed:
		m.landed = true
		act.Land()
	case now == 500*time.Millisecond:
		act.Takeoff(5 + float64(m.id))
	case !m.landed && tel.Pos[2] > 4.5 && len(m.heard) > 0:
		var c [3]float64
		for id := 0; id < 16; id++ { // fixed order: map iteration is random
			if p, ok := m.heard[id]; ok {
				for i := range c {
					c[i] += p[i] / float64(len(m.heard))
				}
			}
		}
		act.Goto(c[0]+float64(2*m.id), c[1], 5+float64(m.id))
	}
}

// builtin runs mission as an ordinary in-process behaviour.
type builtin struct {
	m     mission
	ctx   *agent.Context
	inbox []extern.Delivery
}

type ctxActuator struct{ ctx *agent.Context }

func (c ctxActuator) Broadcast(p []byte) error {
	return c.ctx.Send(agent.Message{Dst: -1, Payload: p})
}
func (c ctxActuator) Takeoff(alt float64) error {
	c.ctx.Command(vehicle.Command{Kind: vehicle.CmdTakeoff, Alt: alt})
	return nil
}
func (c ctxActuator) Goto(x, y, z float64) error {
	c.ctx.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(x, y, z), Yaw: math.NaN()})
	return nil
}
func (c ctxActuator) Land() error {
	c.ctx.Command(vehicle.Command{Kind: vehicle.CmdLand})
	return nil
}

func (b *builtin) Start(ctx *agent.Context) error {
	b.ctx, b.m.id = ctx, int(ctx.ID())
	return nil
}
func (b *builtin) Schedule() (sim.Duration, sim.Duration) { return 100 * sim.Millisecond, 0 }
func (b *builtin) Receive(ctx *agent.Context, m *agent.Message) {
	b.inbox = append(b.inbox, extern.Delivery{Src: int(m.Src), Payload: append([]byte(nil), m.Payload...)})
}
func (b *builtin) Step(ctx *agent.Context) {
	t := ctx.Telemetry()
	tel := &extern.Telemetry{Pos: [3]float64{t.Pos.X, t.Pos.Y, t.Pos.Z}}
	b.m.step(time.Duration(ctx.Now()), tel, b.inbox, ctxActuator{ctx})
	b.inbox = b.inbox[:0]
}

type noParams struct{}

func (*noParams) Validate() fields.Errors { return map[string]string{} }

// testMissionSpec is the built-in twin of the external test mission.
var testMissionSpec = agent.Spec{Name: "test_mission", Doc: "test", Vehicle: true,
	Params: func() agent.Params { return &noParams{} },
	New:    func(agent.Params) agent.Behavior { return &builtin{} }}
