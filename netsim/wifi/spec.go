package wifi

import "skyloop/netsim"

// Spec is the native Wi-Fi model as scenarios name it (backend: wifi).
var Spec = netsim.BackendSpec{
	Name:   "wifi",
	Params: func() netsim.Params { p := DefaultParams(); return &p },
	New: func(p netsim.Params, seed uint64, tr netsim.Tracer) (netsim.Backend, error) {
		return New(*p.(*Params), seed, tr)
	},
	OwnMode: true, // the transmission rate
}
