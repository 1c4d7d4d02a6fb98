package netsim_test

import (
	"fmt"
	"sort"

	"skyloop/engine"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/sim"
)

// delayParams are the backend's parameters, decoded from the scenario's
// network section.
type delayParams struct {
	Delay sim.Duration `yaml:"delay" json:"delay"`
}

func (p *delayParams) Validate() fields.Errors {
	if p.Delay < 0 {
		return map[string]string{"delay": "must be >= 0"}
	}
	return nil
}

// delayNet delivers every packet to its receivers after a fixed delay: a
// minimal netsim.Backend. It reports every transmission and reception to
// the tracer (trace.csv and the metrics come from there), keeps arrival
// order, and frees each packet once nothing refers to it any more.
type delayNet struct {
	p       *delayParams
	tr      netsim.Tracer
	nodes   []netsim.NodeInfo
	pending []netsim.Delivery // in arrival order
	out     []netsim.Delivery
	done    []*netsim.Packet // delivered last time: freed at the next call
}

func (b *delayNet) Start(nodes []netsim.NodeInfo) error { b.nodes = nodes; return nil }

func (b *delayNet) Send(p *netsim.Packet) {
	b.tr.Trace(&netsim.TraceEvent{Type: netsim.EvTx, T: p.TSend, P: p, Node: p.Dst, RxPower: netsim.NoPower})
	p.Refs = 0
	for _, n := range b.nodes {
		if n.ID != p.Src && (p.Dst == netsim.Broadcast || p.Dst == n.ID) {
			b.pending = append(b.pending, netsim.Delivery{P: p, Dst: n.ID, At: p.TSend.Add(b.p.Delay), RxPower: netsim.NoPower})
			p.Refs++
		}
	}
	if p.Refs == 0 {
		p.Free()
	}
	sort.SliceStable(b.pending, func(i, j int) bool { return b.pending[i].At < b.pending[j].At })
}

func (b *delayNet) SetPositions(t sim.Time, pos []geom.Vec3) {}

func (b *delayNet) AdvanceTo(t sim.Time) ([]netsim.Delivery, error) {
	for _, p := range b.done {
		if p.Refs--; p.Refs == 0 {
			p.Free()
		}
	}
	b.done, b.out = b.done[:0], b.out[:0]
	for len(b.pending) > 0 && b.pending[0].At <= t {
		d := b.pending[0]
		b.pending = b.pending[1:]
		b.tr.Trace(&netsim.TraceEvent{Type: netsim.EvRx, T: d.At, P: d.P, Node: d.Dst, RxPower: netsim.NoPower})
		b.out = append(b.out, d)
		b.done = append(b.done, d.P)
	}
	return b.out, nil
}

func (b *delayNet) Close() error {
	for _, p := range b.done {
		if p.Refs--; p.Refs == 0 {
			p.Free()
		}
	}
	for _, d := range b.pending {
		if d.P.Refs--; d.P.Refs == 0 {
			d.P.Free()
		}
	}
	b.done, b.pending = nil, nil
	return nil
}

// Write a network backend: implement netsim.Backend and add it to the
// registry the run is built with, under the name scenarios give as
// `network: {backend: NAME}`.
func Example_backend() {
	reg := engine.Core()
	reg.AddBackend(netsim.BackendSpec{
		Name:   "delay",
		Params: func() netsim.Params { return &delayParams{Delay: 3 * sim.Millisecond} },
		New: func(p netsim.Params, seed uint64, tr netsim.Tracer) (netsim.Backend, error) {
			return &delayNet{p: p.(*delayParams), tr: tr}, nil
		},
	})
	text := `name: delayed
duration: 10s
vehicles:
  - name: uav
    kind: pointmass
    count: 4
    spawn: {layout: line, spacing: 5}
    behaviors:
      - {type: beacon, period: 100ms}
network: {backend: delay, delay: 25ms}
`
	sc, err := scenario.Parse("delayed.yaml", []byte(text), reg.Schema())
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
	n := res.Summary.Network.Total
	fmt.Printf("%d sent, %d received, PDR %.2f, latency p50 %v\n", n.Tx, n.Rx, n.PDR, sim.Duration(n.Latency.P50))
	// Output:
	// 399 sent, 1194 received, PDR 1.00, latency p50 25ms
}
