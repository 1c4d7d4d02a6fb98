package ns3

import "skyloop/netsim"

// Spec is ns-3 as scenarios name it (backend: ns3).
var Spec = netsim.BackendSpec{
	Name:   "ns3",
	Params: func() netsim.Params { p := DefaultParams(); return &p },
	New: func(p netsim.Params, seed uint64, tr netsim.Tracer) (netsim.Backend, error) {
		return New(*p.(*Params), seed, tr)
	},
	OwnMode: true, // the transmission rate
	Routes:  true,
}
