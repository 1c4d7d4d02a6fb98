package impair

import "skyloop/netsim"

// Spec is the impaired network as scenarios name it (backend: impair).
var Spec = netsim.BackendSpec{
	Name:   "impair",
	Params: func() netsim.Params { p := DefaultParams(); return &p },
	New: func(p netsim.Params, seed uint64, tr netsim.Tracer) (netsim.Backend, error) {
		return New(*p.(*Params), seed, tr)
	},
	Replayable: func(p netsim.Params) string {
		if p.(*Params).Range > 0 {
			return "its range makes packet fates depend on where the nodes are"
		}
		return ""
	},
}
