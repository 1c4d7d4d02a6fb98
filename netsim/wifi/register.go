package wifi

import "skyloop/netsim"

func init() {
	netsim.RegisterBackend(netsim.BackendSpec{
		Name:   "wifi",
		Params: func() netsim.Params { p := DefaultParams(); return &p },
		New: func(p netsim.Params, seed uint64, tr netsim.Tracer) (netsim.Backend, error) {
			return New(*p.(*Params), seed, tr)
		},
	})
}
