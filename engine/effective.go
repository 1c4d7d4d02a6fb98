package engine

import (
	"fmt"
	"slices"

	"skyloop/scenario"
)

// EffectiveScenario returns the run's effective configuration as a
// scenario file (Config.EffectiveScenario).
func (r *Run) EffectiveScenario() ([]byte, error) { return r.cfg.EffectiveScenario() }

// EffectiveScenario returns the effective configuration as a
// scenario file (a run's config.yaml, `skyloop validate --effective`):
// every default filled in, the run's own seed and duration, in the shape
// a scenario file has — behaviour, backend and measure parameters beside
// their type, the vehicles as groups, a group's other controller as
// `controller:` and its key. `skyloop run` on it runs the same run again,
// to byte-identical outputs.
//
// Effective, which config.json holds, keeps its own shape (parameters
// under params, fixed nodes with their ids): experiment files and sweep
// summaries name values by their paths in it.
func (cfg *Config) EffectiveScenario() ([]byte, error) {
	t, err := scenario.Tree(cfg.effective)
	if err != nil {
		return nil, fmt.Errorf("effective configuration: %w", err)
	}
	eff, _ := t.(scenario.Map)
	get := func(m scenario.Map, key string) any { v, _ := m.Get(key); return v }
	sc := cfg.sc
	out := scenario.Map{}
	for _, k := range []string{"name", "description", "seed", "duration", "tick"} {
		if v, ok := eff.Get(k); ok {
			out.Set(k, v)
		}
	}
	if sc.Workers != 0 {
		out.Set("workers", sc.Workers)
	}
	if w, ok := get(eff, "world").(scenario.Map); ok {
		if b, ok := get(w, "bounds").(scenario.Map); ok {
			// geom.Box has no field tags: Min and Max in config.json.
			w.Set("bounds", scenario.Map{{Key: "min", Value: get(b, "Min")}, {Key: "max", Value: get(b, "Max")}})
		}
		if obs, ok := get(w, "obstacles").([]any); ok {
			// Without the coverage area's cells, which it puts in the
			// world again.
			if n := len(sc.FileObstacles()); n > 0 {
				w.Set("obstacles", obs[:n])
			} else {
				w.Delete("obstacles")
			}
		}
		out.Set("world", w)
	}
	if v, ok := eff.Get("coverage"); ok {
		out.Set("coverage", v)
	}
	if gs, ok := get(eff, "vehicles").([]any); ok {
		var groups []any
		for _, g := range gs {
			g := g.(scenario.Map)
			params, _ := get(g, "params").(scenario.Map)
			if c, ok := get(g, "controller").(scenario.Map); ok {
				name, _ := get(c, "name").(string)
				params = append(scenario.Map{{Key: "controller", Value: name}}, params...)
				for _, cs := range cfg.reg.Controllers(fmt.Sprint(get(g, "kind"))) {
					if cs.Name == name && cs.Key != "" {
						params.Set(cs.Key, get(c, "params"))
					}
				}
			}
			m := scenario.Map{}
			for _, k := range []string{"name", "kind", "count", "spawn", "yaw"} {
				m.Set(k, get(g, k))
			}
			m.Set("params", params)
			m.Set("behaviors", typed(get(g, "behaviors")))
			groups = append(groups, m)
		}
		out.Set("vehicles", groups)
	}
	if ns, ok := get(eff, "nodes").([]any); ok && len(ns) > 0 {
		var nodes []any
		for _, n := range ns {
			n := n.(scenario.Map)
			nodes = append(nodes, scenario.Map{
				{Key: "name", Value: get(n, "name")},
				{Key: "position", Value: get(n, "position")},
				{Key: "behaviors", Value: typed(get(n, "behaviors"))},
			})
		}
		out.Set("nodes", nodes)
	}
	if n, ok := get(eff, "network").(scenario.Map); ok {
		out.Set("network", cfg.effectiveNetwork(n))
	}
	if v, ok := eff.Get("measures"); ok {
		out.Set("measures", typed(v))
	}
	if v, ok := eff.Get("outputs"); ok {
		out.Set("outputs", v)
	}
	if cfg.realtime > 0 {
		out.Set("realtime", cfg.realtime)
	}
	if sc.Isolation != "" && sc.Isolation != "none" {
		out.Set("isolation", sc.Isolation)
	}
	if len(sc.Processes) > 0 {
		p, err := scenario.Tree(sc.Processes)
		if err != nil {
			return nil, fmt.Errorf("effective configuration: %w", err)
		}
		out.Set("processes", p)
	}
	// Plain Go values set above (workers, realtime) become tree values.
	t, err = scenario.Tree(out)
	if err != nil {
		return nil, fmt.Errorf("effective configuration: %w", err)
	}
	return scenario.EncodeYAML(t), nil
}

// effectiveNetwork writes the network section as a scenario has it: the
// engine's keys, then the backend's parameters beside them.
func (cfg *Config) effectiveNetwork(n scenario.Map) scenario.Map {
	get := func(key string) any { v, _ := n.Get(key); return v }
	out := scenario.Map{{Key: "backend", Value: get("backend")}, {Key: "position_period", Value: get("position_period")}}
	if v, ok := n.Get("epoch"); ok {
		out.Set("epoch", v)
	}
	params, _ := get("params").(scenario.Map)
	// A backend parameter named like one of the engine's keys is never
	// read from a file (the engine's key is): it holds its default and
	// is left out (ns3's own epoch).
	params = slices.DeleteFunc(slices.Clone(params), func(e scenario.Entry) bool {
		return e.Key != "mode" && slices.Contains(networkKeys, e.Key)
	})
	if mode, _ := get("mode").(string); mode != "" && mode != "coupled" {
		// The engine's mode (replay): a backend's own `mode` (the Wi-Fi
		// rate) is then not read from the file either.
		out.Set("mode", mode)
		params.Delete("mode")
	}
	for _, k := range []string{"routing", "aodv_control"} {
		if v, ok := n.Get(k); ok {
			out.Set(k, v)
		}
	}
	return append(out, params...)
}

// typed turns a list of {type, params} (behaviours, measures) into the
// scenario's {type, ...params}.
func typed(v any) []any {
	l, _ := v.([]any)
	out := make([]any, 0, len(l))
	for _, item := range l {
		m, _ := item.(scenario.Map)
		typ, _ := m.Get("type")
		params, _ := m.Get("params")
		p, _ := params.(scenario.Map)
		out = append(out, append(scenario.Map{{Key: "type", Value: typ}}, p...))
	}
	return out
}
