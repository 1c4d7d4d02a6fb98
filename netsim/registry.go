package netsim

import (
	"skyloop/fields"
)

// Params is a backend's parameter struct, decoded from the scenario's
// network section on top of its defaults: a fields.Validator, the one
// interface every component's parameters implement.
type Params = fields.Validator

// BackendSpec describes a network backend that scenario files can name
// with `network: {backend: NAME}`.
type BackendSpec struct {
	// Name is the value of `backend:`.
	Name string
	// Params returns a pointer to a new parameter struct with defaults.
	Params func() Params
	// New builds the backend from validated parameters for a run with the
	// given seed; every trace event goes to tr.
	New func(p Params, seed uint64, tr Tracer) (Backend, error)
	// Replayable, when set, says why the backend with parameters p cannot
	// run before the vehicles move ("" when it can: network.mode replay).
	// Unset means never: its packet fates depend on node positions or on
	// another process.
	Replayable func(p Params) string
	// Routes says that the backend routes by itself: network.routing is
	// one of its parameters. Other backends get netsim/routing on top
	// when a scenario asks for routing.
	Routes bool
	// OwnMode says that the backend's parameters have a `mode` key of
	// their own (the radio backends' transmission rate) beside the
	// engine's network.mode (coupled or replay): a value that is not one
	// of the engine's is the backend's, and the network is coupled.
	OwnMode bool
}

// NotReplayable says why the backend with parameters p cannot be replayed,
// "" when it can.
func (s BackendSpec) NotReplayable(p Params) string {
	if s.Replayable == nil {
		return "its packet fates depend on node positions or on another process"
	}
	return s.Replayable(p)
}
