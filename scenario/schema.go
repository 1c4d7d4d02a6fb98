package scenario

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"skyloop/fields"
	"skyloop/sim"
)

// Schema describes the component types a program can build, as plain data:
// for each name a scenario may use, the constructor of its parameters (a
// pointer to a struct holding the defaults) and what decoding must know
// about it. Parse decodes every component's parameters with it, so that
// the whole file is decoded in one pass; the engine's registry provides it
// (engine.Registry.Schema).
type Schema struct {
	// Kinds are the vehicle kinds, by the value of `kind:`.
	Kinds map[string]KindSchema
	// Behaviors are the behaviour types, by the value of `type:`.
	Behaviors map[string]BehaviorSchema
	// Backends are the network backends, by the value of
	// network.backend.
	Backends map[string]BackendSchema
	// Measures are the measure types, by the value of `type:`.
	Measures map[string]MeasureSchema
}

// KindSchema is a vehicle kind's parameters.
type KindSchema struct {
	// Params returns a pointer to a new parameter struct with defaults.
	Params func() fields.Validator
	// Presets, when set, lists named parameter sets; a group picks one
	// with `preset:` (default Presets[0]) and Preset returns it.
	Presets []string
	Preset  func(name string) fields.Validator
	// Controller is the name of the kind's own controller when others can
	// fly it instead (Controllers, sorted by name); "" when the kind has
	// no choice.
	Controller  string
	Controllers []ControllerSchema
}

// ControllerSchema is a controller that flies a vehicle kind instead of
// the kind's own (params: {controller: NAME}).
type ControllerSchema struct {
	// Name is the value of `controller:`; Key the key of the group's
	// params holding the controller's own parameters ("" for none).
	Name, Key string
	// Params returns a pointer to a new parameter struct with defaults.
	Params func() fields.Validator
	// Defaults, when set, adjusts the kind's defaults for this controller
	// before the file's values are decoded over them.
	Defaults func(kind fields.Validator)
	// Check, when set, reports what the controller cannot fly among the
	// kind's parameters (keys relative to the group's params).
	Check func(kind, ctrl fields.Validator) fields.Errors
}

// BehaviorSchema is a behaviour type's parameters and where it may run.
type BehaviorSchema struct {
	// Params returns a pointer to a new parameter struct with defaults.
	Params func() fields.Validator
	// Fixed: the behaviour may run on a fixed node; Vehicle: on a
	// vehicle. Internal marks one the engine adds by itself, which
	// scenarios cannot name.
	Fixed, Vehicle, Internal bool
}

// BackendSchema is a network backend's parameters.
type BackendSchema struct {
	// Params returns a pointer to a new parameter struct with defaults.
	Params func() fields.Validator
	// OwnMode says that the parameters have a `mode` key of their own (a
	// radio's transmission rate): a network.mode that is not one of the
	// engine's (coupled, replay) is the backend's.
	OwnMode bool
	// Routes says that the backend routes by itself: network.routing is
	// not read, and network.aodv_control is refused.
	Routes bool
}

// MeasureSchema is a measure type's parameters.
type MeasureSchema struct {
	// Params returns a pointer to a new parameter struct with defaults.
	Params func() fields.Validator
}

// AreaUser is a behaviour's parameters that take the scenario's coverage
// area as their grid unless they give their own: Parse hands the area
// over before decoding the file's values over it.
type AreaUser interface {
	UseArea(origin, area [2]float64, cell float64, obstacles [][2]int)
}

// EpochUser is a backend's parameters with a synchronisation period of
// their own: network.epoch is the engine's key, so the backend never
// decodes it; Parse hands it on before the parameters are checked.
type EpochUser interface {
	SetEpoch(d sim.Duration)
}

// Controller is a vehicle group's controller choice, decoded.
type Controller struct {
	// Name is the value of `controller:`.
	Name string
	// Params are the controller's parameters (from params.<Key>).
	Params fields.Validator
}

// Component is a behaviour or a measure, decoded: its type and its
// parameters, nil when the type is unknown or the parameters have
// problems (reported).
type Component struct {
	Type string
	// Name is a measure's name (its type unless set).
	Name   string
	Params fields.Validator
}

// NetMode is how a run drives its network (network.mode).
type NetMode uint8

// The values of network.mode.
const (
	// Coupled steps the network beside the vehicles (the default).
	Coupled NetMode = iota
	// Replay runs the network first, epoch by epoch (netsim/replay).
	Replay
)

// String returns the mode as scenarios write it.
func (m NetMode) String() string {
	if m == Replay {
		return "replay"
	}
	return "coupled"
}

// Network is the network section, decoded: the engine's keys, typed, and
// the backend's own parameters.
type Network struct {
	Backend        string
	PositionPeriod sim.Duration
	Epoch          sim.Duration
	Mode           NetMode
	// Routing and AODVControl belong to the routing layer (none and
	// empty for a backend that routes by itself); the engine checks them.
	Routing, AODVControl string
	// Params are the backend's parameters; nil when they have problems
	// (reported).
	Params fields.Validator
}

// decodeComponents decodes every component part of the file with schema:
// the groups' kind parameters and controllers, the measures, the network
// and the behaviours, recording problems as the rest of the file's.
func (sc *Scenario) decodeComponents(s *Schema) {
	for gi := range sc.Vehicles {
		sc.decodeKind(s, gi)
	}
	sc.decodeMeasures(s)
	sc.decodeNetwork(s)
	for gi := range sc.Vehicles {
		sc.Vehicles[gi].BehaviorParams = sc.decodeBehaviors(s, sc.Vehicles[gi].Behaviors, fmt.Sprintf("vehicles[%d]", gi), false)
	}
	for i := range sc.Nodes {
		sc.Nodes[i].BehaviorParams = sc.decodeBehaviors(s, sc.Nodes[i].Behaviors, fmt.Sprintf("nodes[%d]", i), true)
	}
}

func sortedNames[V any](m map[string]V) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

// decodeKind decodes group gi's kind parameters and controller choice.
func (sc *Scenario) decodeKind(s *Schema, gi int) {
	g := &sc.Vehicles[gi]
	path := fmt.Sprintf("vehicles[%d]", gi)
	ks, ok := s.Kinds[g.Kind]
	if !ok {
		if g.Kind != "" {
			sc.Errorf(path+".kind", "unknown vehicle kind %q: want one of %s", g.Kind, sortedNames(s.Kinds))
		}
		return
	}
	p := ks.Params()
	if ks.Preset != nil {
		name := ks.Presets[0]
		sc.DecodeKey(g.Params, path+".params", "preset", &name)
		if !slices.Contains(ks.Presets, name) {
			sc.Errorf(path+".params.preset", "unknown %s preset %q: want one of %s", g.Kind, name, strings.Join(ks.Presets, ", "))
			return
		}
		p = ks.Preset(name)
	}
	cs, cp, skip, ok := sc.decodeController(ks, g.Kind, g.Params, path+".params")
	if cs != nil && cs.Defaults != nil {
		cs.Defaults(p)
	}
	if !sc.Decode(g.Params, path+".params", p, skip...) || !ok {
		return
	}
	bad := p.Validate()
	if cs != nil && cs.Check != nil {
		for k, v := range cs.Check(p, cp) {
			bad[k] = v
		}
	}
	bad.Report(path+".params", sc.Errorf)
	if len(bad) > 0 {
		return
	}
	g.KindParams = p
	if cs != nil {
		g.Controller = &Controller{Name: cs.Name, Params: cp}
	}
}

// decodeController reads the `controller:` choice of a vehicle group's
// params: nil for the kind's own controller, else the chosen one with its
// parameters (from params.<Key>). skip lists the keys the kind's own
// parameters must not decode; ok is false when the choice is bad (and
// reported).
func (sc *Scenario) decodeController(ks KindSchema, kind string, params Raw, path string) (cs *ControllerSchema, cp fields.Validator, skip []string, ok bool) {
	if ks.Controller == "" {
		return nil, nil, nil, true // the kind has no choice; `controller:` is an unknown field
	}
	others := ks.Controllers
	skip = []string{"controller"}
	for _, c := range others {
		if c.Key != "" {
			skip = append(skip, c.Key)
		}
	}
	name := ks.Controller
	sc.DecodeKey(params, path, "controller", &name)
	names := []string{ks.Controller}
	for i, c := range others {
		names = append(names, c.Name)
		if c.Name == name {
			cs = &others[i]
		}
	}
	if cs == nil && name != ks.Controller {
		sc.Errorf(path+".controller", "unknown %s controller %q: want one of %s", kind, name, strings.Join(names, ", "))
		return nil, nil, skip, false
	}
	ok = true
	for _, c := range others {
		if c.Key != "" && (cs == nil || c.Key != cs.Key) && sc.HasKey(params, c.Key) {
			sc.Errorf(path+"."+c.Key, "only read with controller: %s (the group is flown by %s)", c.Name, name)
			ok = false
		}
	}
	if cs == nil {
		return nil, nil, skip, ok
	}
	cp = cs.Params()
	if cs.Key != "" && sc.HasKey(params, cs.Key) {
		if !sc.DecodeKey(params, path, cs.Key, cp) {
			return nil, nil, skip, false
		}
	}
	bad := cp.Validate()
	bad.Report(path+"."+cs.Key, sc.Errorf)
	return cs, cp, skip, len(bad) == 0
}

// decodeMeasures decodes the measures' types, names and parameters.
func (sc *Scenario) decodeMeasures(s *Schema) {
	seen := map[string]bool{}
	sc.MeasureParams = make([]Component, len(sc.Measures))
	for i, n := range sc.Measures {
		path := fmt.Sprintf("measures[%d]", i)
		typ, ok := sc.TypeOf(n, path, "type")
		if !ok {
			continue
		}
		sc.MeasureParams[i].Type = typ
		ms, ok := s.Measures[typ]
		if !ok {
			sc.Errorf(path+".type", "unknown measure %q: want one of %s", typ, sortedNames(s.Measures))
			continue
		}
		p := ms.Params()
		name := typ
		sc.DecodeKey(n, path, "name", &name)
		if !sc.Decode(n, path, p, "type") {
			continue
		}
		bad := p.Validate()
		bad.Report(path, sc.Errorf)
		if len(bad) > 0 {
			continue
		}
		if !fileNameOK.MatchString(name) || seen[name] {
			sc.Errorf(path+".name", "%q: measures need distinct names of letters, digits, '.', '_' and '-'", name)
			continue
		}
		seen[name] = true
		sc.MeasureParams[i] = Component{Type: typ, Name: name, Params: p}
	}
}

// networkKeys are the keys of the network section that belong to the
// engine, not to the backend's parameters.
var networkKeys = []string{"backend", "position_period", "epoch", "mode"}

// decodeNetwork decodes the network section: the engine's keys and the
// backend's parameters.
func (sc *Scenario) decodeNetwork(s *Schema) {
	name := "ideal"
	n := sc.Network
	if !n.IsZero() {
		var ok bool
		if name, ok = sc.TypeOf(n, "network", "backend"); !ok {
			return
		}
	}
	bs, ok := s.Backends[name]
	if !ok {
		sc.Errorf("network.backend", "unknown network backend %q: want one of %s", name, sortedNames(s.Backends))
		return
	}
	net := &Network{Backend: name, PositionPeriod: 10 * sim.Millisecond, Routing: "none"}
	sc.DecodeKey(n, "network", "position_period", &net.PositionPeriod)
	sc.DecodeKey(n, "network", "epoch", &net.Epoch)
	mode := "coupled"
	sc.DecodeKey(n, "network", "mode", &mode)
	keys := networkKeys
	if bs.Routes {
		var s string
		if sc.DecodeKey(n, "network", "aodv_control", &s) && s != "" {
			// Reported here, not as an unknown field: the question is
			// whether ns-3 can do it.
			sc.Errorf("network.aodv_control", "the %s backend routes with its own protocols, whose AODV always sends control messages as aodv_control: routed does; remove the key", name)
			keys = append(keys[:len(keys):len(keys)], "aodv_control")
		}
	} else {
		// network.routing belongs to the routing layer, not the backend.
		sc.DecodeKey(n, "network", "routing", &net.Routing)
		sc.DecodeKey(n, "network", "aodv_control", &net.AODVControl)
		keys = append(keys[:len(keys):len(keys)], "routing", "aodv_control")
	}
	sc.NetworkConfig = net
	if mode != "coupled" && mode != "replay" && bs.OwnMode {
		// The radio backends (wifi, ns3) have a mode of their own, the
		// transmission rate (mode: DsssRate11Mbps): a value that is not one
		// of the engine's is theirs, and the network is coupled.
		keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == "mode" })
		mode = "coupled"
	}
	p := bs.Params()
	if !sc.Decode(n, "network", p, keys...) {
		return
	}
	if e, ok := p.(EpochUser); ok && net.Epoch > 0 {
		e.SetEpoch(net.Epoch)
	}
	bad := p.Validate()
	bad.Report("network", sc.Errorf)
	if len(bad) > 0 {
		return
	}
	net.Params = p
	switch mode {
	case "coupled":
	case "replay":
		net.Mode = Replay
	default:
		sc.Errorf("network.mode", "must be coupled or replay, got %q", mode)
	}
}

// decodeBehaviors decodes the behaviours of a group or fixed node (at
// base).
func (sc *Scenario) decodeBehaviors(s *Schema, list []Raw, base string, fixed bool) []Component {
	out := make([]Component, len(list))
	var names string
	for i, n := range list {
		path := fmt.Sprintf("%s.behaviors[%d]", base, i)
		typ, ok := sc.TypeOf(n, path, "type")
		if !ok {
			continue
		}
		out[i].Type = typ
		spec, ok := s.Behaviors[typ]
		if !ok || spec.Internal {
			if names == "" {
				var ns []string
				for _, k := range slices.Sorted(maps.Keys(s.Behaviors)) {
					if !s.Behaviors[k].Internal {
						ns = append(ns, k)
					}
				}
				names = strings.Join(ns, ", ")
			}
			sc.Errorf(path+".type", "unknown behaviour %q: want one of %s", typ, names)
			continue
		}
		if fixed && !spec.Fixed {
			sc.Errorf(path+".type", "behaviour %q needs a vehicle; it cannot run on a fixed node", typ)
			continue
		}
		if !fixed && !spec.Vehicle {
			sc.Errorf(path+".type", "behaviour %q runs on fixed nodes only (put it under nodes:)", typ)
			continue
		}
		p := spec.Params()
		if au, ok := p.(AreaUser); ok && sc.Coverage != nil {
			cv := sc.Coverage
			au.UseArea(cv.Origin, cv.Area, cv.Cell, cv.Obstacles)
		}
		if !sc.Decode(n, path, p, "type") {
			continue
		}
		bad := p.Validate()
		bad.Report(path, sc.Errorf)
		if len(bad) == 0 {
			out[i].Params = p
		}
	}
	return out
}

// fileNameOK matches the names of measures (which name their files).
var fileNameOK = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
