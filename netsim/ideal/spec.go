package ideal

import (
	"skyloop/fields"
	"skyloop/netsim"
)

// noParams is the parameter set of the ideal network: it has none.
type noParams struct{}

func (*noParams) Validate() fields.Errors { return nil }

// Spec is the ideal network as scenarios name it (backend: ideal).
var Spec = netsim.BackendSpec{
	Name:   "ideal",
	Params: func() netsim.Params { return &noParams{} },
	New: func(p netsim.Params, seed uint64, tr netsim.Tracer) (netsim.Backend, error) {
		return New(tr), nil
	},
	Replayable: func(netsim.Params) string { return "" },
}
