package agent_test

import (
	"fmt"

	"skyloop/agent"
	"skyloop/engine"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/sim"
	"skyloop/vehicle"
)

// greeterParams are the greeter's parameters, decoded strictly from the
// scenario on top of the defaults its Spec returns.
type greeterParams struct {
	Period sim.Duration `yaml:"period" json:"period"`
	Climb  float64      `yaml:"climb" json:"climb"`
}

func (p *greeterParams) Validate() fields.Errors {
	bad := fields.Errors{}
	if p.Period <= 0 {
		bad["period"] = fmt.Sprintf("must be a positive duration, got %v", p.Period)
	}
	return bad
}

// greeter climbs, then broadcasts a greeting every period and counts the
// greetings it hears.
type greeter struct {
	p     *greeterParams
	seq   uint32
	heard int
}

func (g *greeter) Start(ctx *agent.Context) error { return nil }

func (g *greeter) Schedule() (period, offset sim.Duration) { return g.p.Period, 0 }

func (g *greeter) Step(ctx *agent.Context) {
	if g.seq == 0 {
		pos := ctx.Telemetry().Pos
		ctx.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(pos.X, pos.Y, g.p.Climb), Yaw: ctx.Telemetry().Yaw})
	}
	ctx.Send(agent.Message{Dst: netsim.Broadcast, Kind: netsim.KindData, Seq: g.seq, Payload: []byte("hello")})
	g.seq++
}

// Receive implements agent.Receiver.
func (g *greeter) Receive(ctx *agent.Context, m *agent.Message) { g.heard++ }

// Finish implements agent.Finisher: what goes into summary.json.
func (g *greeter) Finish(ctx *agent.Context) map[string]any {
	return map[string]any{"sent": g.seq, "heard": g.heard}
}

// Write a behaviour: a type with Start, Schedule and Step (and Receive to
// get messages, Finish to report), added to the registry the run is built
// with under the name scenarios use.
func Example_behavior() {
	reg := engine.Core()
	reg.AddBehavior(agent.Spec{
		Name: "greeter", Doc: "Broadcasts a greeting every period.", Vehicle: true,
		Params: func() agent.Params { return &greeterParams{Period: sim.Second, Climb: 5} },
		New:    func(p agent.Params) agent.Behavior { return &greeter{p: p.(*greeterParams)} },
	})
	text := `name: greetings
duration: 10s
vehicles:
  - name: uav
    kind: pointmass
    count: 3
    spawn: {layout: line, spacing: 5}
    behaviors:
      - {type: greeter, period: 2s}
network: {backend: ideal}
`
	sc, err := scenario.Parse("greetings.yaml", []byte(text), reg.Schema())
	if err != nil {
		fmt.Println(err)
		return
	}
	r, _ := engine.Build(sc, engine.Options{Registry: reg})
	res, err := runner.Execute(r, "", runner.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range res.Summary.Vehicles {
		fmt.Printf("%s at %.1f m: %v\n", v.Name, v.Final.Z, res.Summary.Agents[v.Name]["greeter"])
	}
	// Output:
	// uav-0 at 5.0 m: map[heard:10 sent:5]
	// uav-1 at 5.0 m: map[heard:10 sent:5]
	// uav-2 at 5.0 m: map[heard:10 sent:5]
}
