package engine_test

import (
	"errors"
	"strings"
	"testing"

	"skyloop/components"
	"skyloop/engine"
	"skyloop/scenario"
	"skyloop/scenarios"
	"skyloop/sim"
)

// registry has every component, edge ones included.
var registry = components.Registry()

// validGroup is a vehicle group line that is correct on its own, so that a
// case can break one thing at a time.
const validGroup = "  - {name: d, kind: pointmass, count: 1, spawn: {layout: line, spacing: 1}}\n"

// malformedCases are scenario files with problems, each with the messages
// the user must see. Every message is matched as a substring of the whole
// error text, in order, so each one carries file, line and field path.
var malformedCases = []struct {
	name string
	yaml string
	want []string
	// not lists texts that must not appear (cascades of one mistake).
	not []string
	// skip, when set, is the reason the case is not run yet (a known bug).
	skip string
}{
	{
		name: "YAML syntax error",
		yaml: "name: t\nvehicles: [\n",
		want: []string{"bad.yaml:2: YAML syntax: sequence end token ']' not found"},
	},
	{
		name: "YAML duplicate key",
		yaml: "name: t\nname: u\n" + "vehicles:\n" + validGroup,
		want: []string{`bad.yaml:2: YAML syntax: mapping key "name" already defined at [1:1]`},
	},
	{
		name: "tab indentation",
		yaml: "name: t\nvehicles:\n\t- {name: d}\n",
		want: []string{"bad.yaml:3: YAML syntax: found character '\t' that cannot start any token"},
	},
	{
		name: "empty file",
		yaml: "",
		want: []string{"bad.yaml: empty file"},
	},
	{
		name: "whitespace only",
		yaml: "  \n\n\t\n",
		want: []string{"bad.yaml: empty file"},
	},
	{
		name: "two documents",
		yaml: "name: t\n---\nname: u\n",
		want: []string{"bad.yaml:3: want one YAML document, got 2 (remove the --- separators)"},
	},
	{
		name: "top level is a list",
		yaml: "- name: t\n- vehicles: []\n",
		want: []string{"bad.yaml:1: want a mapping of fields at the top level, got a list"},
	},
	{
		name: "top level is a string",
		yaml: "hello\n",
		want: []string{`bad.yaml:1: want a mapping of fields at the top level, got the string "hello"`},
	},
	{
		name: "unknown top-level key",
		yaml: "name: t\ndurration: 10s\nvehicles:\n" + validGroup,
		want: []string{`bad.yaml:2: durration: unknown field "durration" (known fields: coverage, description, duration, isolation, measures, name, network, nodes, outputs, processes, realtime, seed, tick, vehicles, workers, world)`},
	},
	{
		name: "unknown key in spawn",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 2
    spawn: {layout: line, origin: [0, 0, 0], spacing: 3, colums: 2}
`,
		want: []string{`bad.yaml:6: vehicles[0].spawn.colums: unknown field "colums" (known fields: columns, heading, layout, origin, positions, radius, spacing, step)`},
	},
	{
		name: "unknown key in a group (British spelling)",
		yaml: "name: t\nvehicles:\n  - {name: d, kind: pointmass, count: 1, behaviours: [], spawn: {layout: line, spacing: 1}}\n",
		want: []string{`bad.yaml:3: vehicles[0].behaviours: unknown field "behaviours" (known fields: behaviors, count, kind, name, params, spawn, yaw)`},
	},
	{
		name: "count is a string",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: ten
    spawn: {layout: line, spacing: 3}
`,
		want: []string{`bad.yaml:5: vehicles[0].count: want an integer, got the string "ten"`},
	},
	{
		name: "count is a fraction",
		yaml: "name: t\nvehicles:\n  - {name: d, kind: pointmass, count: 1.5, spawn: {layout: line, spacing: 1}}\n",
		want: []string{"bad.yaml:3: vehicles[0].count: want an integer, got the number 1.5"},
	},
	{
		name: "count 0 in the second group",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 2
    spawn: {layout: line, spacing: 3}
  - name: e
    kind: pointmass
    count: 0
    spawn: {layout: line, spacing: 3}
`,
		want: []string{"bad.yaml:9: vehicles[1].count: must be >= 1, got 0"},
	},
	{
		name: "too many vehicles",
		yaml: "name: t\nvehicles:\n  - {name: d, kind: pointmass, count: 100001, spawn: {layout: line, spacing: 1}}\n",
		want: []string{"bad.yaml:3: vehicles[0].count: 100001 vehicles: at most 100000"},
	},
	{
		name: "no vehicles",
		yaml: "name: t\n",
		want: []string{"bad.yaml:1: vehicles: a scenario needs at least one vehicle group"},
	},
	{
		name: "vehicles is a mapping",
		yaml: "name: t\nvehicles: {name: d}\n",
		want: []string{"bad.yaml:2: vehicles: want a list, got a mapping"},
	},
	{
		name: "negative duration",
		yaml: "name: t\nduration: -5s\nvehicles:\n" + validGroup,
		want: []string{"bad.yaml:2: duration: must be positive, got -5s"},
	},
	{
		name: "duration without unit",
		yaml: "name: t\nduration: 60\nvehicles:\n" + validGroup,
		want: []string{`bad.yaml:2: duration: duration "60" needs a unit, e.g. 60s or 60ms`},
	},
	{
		name: "duration with unknown unit",
		yaml: "name: t\nduration: 60sec\nvehicles:\n" + validGroup,
		want: []string{`bad.yaml:2: duration: invalid duration "60sec" (use a number with a unit: ns, us, ms, s, m, h)`},
	},
	{
		name: "duration is a list",
		yaml: "name: t\nduration: [1s]\nvehicles:\n" + validGroup,
		want: []string{"bad.yaml:2: duration: want a scalar value, got a list"},
	},
	{
		name: "duration not a multiple of the tick",
		yaml: "name: t\nduration: 1500us\nvehicles:\n" + validGroup,
		want: []string{"bad.yaml:2: duration: 1.5ms is not a whole number of ticks of 1ms"},
	},
	{
		name: "tick zero",
		yaml: "name: t\ntick: 0\nvehicles:\n" + validGroup,
		want: []string{"bad.yaml:2: tick: must be positive, got 0s"},
	},
	{
		name: "sample period not a multiple of the tick",
		yaml: "name: t\noutputs: {sample_period: 1500us}\nvehicles:\n" + validGroup,
		want: []string{"bad.yaml:2: outputs.sample_period: must be a positive multiple of the tick 1ms, got 1.5ms"},
	},
	{
		name: "negative seed",
		yaml: "name: t\nseed: -1\nvehicles:\n" + validGroup,
		want: []string{"bad.yaml:2: seed: -1 is out of range (want 0..18446744073709551615)"},
	},
	{
		name: "negative workers",
		yaml: "name: t\nworkers: -2\nvehicles:\n" + validGroup,
		want: []string{"bad.yaml:2: workers: must be >= 0 (0 = automatic), got -2"},
	},
	{
		name: "name with a space",
		yaml: "name: a b\nvehicles:\n" + validGroup,
		want: []string{`bad.yaml:1: name: must start with a letter or digit and use only letters, digits, '.', '_' and '-' (it names the run directory), got "a b"`},
	},
	{
		name: "outputs flag is not a boolean",
		yaml: "name: t\noutputs: {trace: yes}\nvehicles:\n" + validGroup,
		want: []string{`bad.yaml:2: outputs.trace: want true or false, got the string "yes"`},
	},
	{
		name: "yaw is infinite",
		yaml: "name: t\nvehicles:\n  - {name: d, kind: pointmass, count: 1, yaw: .inf, spawn: {layout: line, spacing: 1}}\n",
		want: []string{"bad.yaml:3: vehicles[0].yaw: want a finite number, got .inf"},
	},
	{
		name: "missing kind",
		yaml: "name: t\nvehicles:\n  - {name: d, count: 1, spawn: {layout: line, spacing: 1}}\n",
		want: []string{"bad.yaml:3: vehicles[0].kind: missing: one of pointmass, groundbot"},
	},
	{
		name: "unknown vehicle kind",
		yaml: "name: t\nvehicles:\n  - {name: d, kind: quadcopter, count: 1, spawn: {layout: line, spacing: 1}}\n",
		want: []string{`bad.yaml:3: vehicles[0].kind: unknown vehicle kind "quadcopter": want one of groundbot, mujoco, multirotor, pointmass`},
	},
	{
		name: "missing spawn",
		yaml: "name: t\nvehicles:\n  - {name: d, kind: pointmass, count: 1}\n",
		want: []string{"bad.yaml:3: vehicles[0].spawn.layout: missing: one of line, grid, circle, explicit"},
	},
	{
		name: "unknown behaviour type",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 1
    spawn: {layout: line, spacing: 1}
    behaviors:
      - type: flocking
`,
		want: []string{`bad.yaml:8: vehicles[0].behaviors[0].type: unknown behaviour "flocking": want one of beacon, coverage, extern, flock, formation, gcs, mavlink, mavlink_gcs, mavlink_udp, orbit, platoon, remote, ros2, stations, traffic, waypoints`},
	},
	{
		name: "behaviour without type",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 1
    spawn: {layout: line, spacing: 1}
    behaviors:
      - period: 100ms
`,
		want: []string{`bad.yaml:8: vehicles[0].behaviors[0]: missing "type"`},
	},
	{
		name: "behaviour written as a bare name",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 1
    spawn: {layout: line, spacing: 1}
    behaviors:
      - beacon
`,
		want: []string{`bad.yaml:8: vehicles[0].behaviors[0]: want a mapping with a "type" key, got the string "beacon"`},
	},
	{
		name: "behaviour type is a list",
		yaml: "name: t\nvehicles:\n  - {name: d, kind: pointmass, count: 1, behaviors: [{type: [a]}], spawn: {layout: line, spacing: 1}}\n",
		want: []string{"bad.yaml:3: vehicles[0].behaviors[0].type: want a name, got a list"},
	},
	{
		name: "unknown behaviour param",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 1
    spawn: {layout: line, spacing: 1}
    behaviors:
      - type: beacon
        perod: 100ms
`,
		want: []string{`bad.yaml:9: vehicles[0].behaviors[0].perod: unknown field "perod" (known fields: check, format, heartbeat, jitter, move_threshold, period, phase, policy, port, size, stagger, stale, turn_threshold, type)`},
	},
	{
		name: "invalid behaviour param value",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 1
    spawn: {layout: line, spacing: 1}
    behaviors:
      - type: beacon
        policy: sometimes
`,
		want: []string{`bad.yaml:9: vehicles[0].behaviors[0].policy: must be periodic or event, got "sometimes"`},
	},
	{
		name: "formation frame and heading_speed",
		yaml: `name: t
vehicles:
  - name: d
    kind: multirotor
    count: 2
    spawn: {layout: line, spacing: 10}
    behaviors:
      - type: formation
        waypoints: [[10, 0, 10]]
        frame: body
        heading_speed: -1
measures:
  - {type: formation, group: d, mode: convoy}
`,
		want: []string{`bad.yaml:10: vehicles[0].behaviors[0].frame: must be world, heading or tow, got "body"`,
			`bad.yaml:11: vehicles[0].behaviors[0].heading_speed: must be in (0, 1000] m/s, got -1`,
			`bad.yaml:13: measures[0].mode: must be leader, flock or chain, got "convoy"`},
	},
	{
		name: "formation tow without follow predecessor",
		yaml: `name: t
vehicles:
  - name: d
    kind: multirotor
    count: 2
    spawn: {layout: line, spacing: 10}
    behaviors:
      - type: formation
        waypoints: [[10, 0, 10]]
        frame: tow
`,
		want: []string{`bad.yaml:10: vehicles[0].behaviors[0].frame: tow makes a chain: it needs follow: predecessor, got follow: "leader"`},
	},
	{
		name: "behaviour port out of range",
		yaml: "name: t\nvehicles:\n  - {name: d, kind: pointmass, count: 1, behaviors: [{type: beacon, port: 70000}], spawn: {layout: line, spacing: 1}}\n",
		want: []string{"bad.yaml:3: vehicles[0].behaviors[0].port: 70000 is out of range (want 0..65535)"},
	},
	{
		name: "negative behaviour period",
		yaml: "name: t\nvehicles:\n  - {name: d, kind: pointmass, count: 1, behaviors: [{type: beacon, period: -100ms}], spawn: {layout: line, spacing: 1}}\n",
		want: []string{"bad.yaml:3: vehicles[0].behaviors[0].period: must be a positive duration, got -100ms"},
	},
	{
		name: "gcs behaviour on a vehicle",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 1
    spawn: {layout: line, spacing: 1}
    behaviors:
      - type: gcs
        legs: [{layout: line, spacing: 1}]
`,
		want: []string{`bad.yaml:8: vehicles[0].behaviors[0].type: behaviour "gcs" runs on fixed nodes only (put it under nodes:)`},
	},
	{
		name: "beacon behaviour on a fixed node",
		yaml: "name: t\nvehicles:\n" + validGroup + `nodes:
  - name: g
    behaviors:
      - type: beacon
`,
		want: []string{`bad.yaml:7: nodes[0].behaviors[0].type: behaviour "beacon" needs a vehicle; it cannot run on a fixed node`},
	},
	{
		name: "gcs without legs",
		yaml: "name: t\nvehicles:\n" + validGroup + "nodes:\n  - name: g\n    behaviors:\n      - type: gcs\n",
		want: []string{"bad.yaml:7: nodes[0].behaviors[0].legs: needs at least one leg"},
	},
	{
		name: "unknown network backend",
		yaml: "name: t\nvehicles:\n" + validGroup + "network:\n  backend: omnetpp\n",
		want: []string{`bad.yaml:5: network.backend: unknown network backend "omnetpp": want one of extern, ideal, impair, ns3, wifi`},
	},
	{
		name: "network is a string",
		yaml: "name: t\nvehicles:\n" + validGroup + "network: impair\n",
		want: []string{`bad.yaml:4: network: want a mapping with a "backend" key, got the string "impair"`},
	},
	{
		name: "impair loss above 1",
		yaml: "name: t\nvehicles:\n" + validGroup + "network:\n  backend: impair\n  loss: 1.5\n",
		want: []string{"bad.yaml:6: network.loss: must be a probability in [0, 1], got 1.5"},
	},
	{
		name: "impair unknown key",
		yaml: "name: t\nvehicles:\n" + validGroup + "network:\n  backend: impair\n  latncy: 10ms\n",
		want: []string{`bad.yaml:6: network.latncy: unknown field "latncy" (known fields: aodv_control, backend, device_queue, epoch, gilbert, jitter, latency, loss, mode, position_period, queue, range, rate, routing)`},
	},
	{
		name: "impair unknown key in gilbert",
		yaml: "name: t\nvehicles:\n" + validGroup + "network: {backend: impair, gilbert: {p_gb: 0.1, x: 1}}\n",
		want: []string{`bad.yaml:4: network.gilbert.x: unknown field "x" (known fields: loss_bad, loss_good, p_bg, p_gb)`},
	},
	{
		name: "ideal backend takes no loss",
		yaml: "name: t\nvehicles:\n" + validGroup + "network:\n  backend: ideal\n  loss: 0.1\n",
		want: []string{`bad.yaml:6: network.loss: unknown field "loss" (known fields: aodv_control, backend, epoch, mode, position_period, routing)`},
	},
	{
		name: "position period not a multiple of the tick",
		yaml: "name: t\nvehicles:\n" + validGroup + "network:\n  backend: impair\n  position_period: 1500us\n",
		want: []string{"bad.yaml:6: network.position_period: period 1.5ms is not a positive whole multiple of the tick 1ms"},
	},
	{
		name: "duplicate group and node names",
		yaml: "name: t\nvehicles:\n" + validGroup + validGroup + "nodes:\n  - name: d\n",
		want: []string{
			`bad.yaml:4: vehicles[1].name: "d" is already used by vehicles[0].name`,
			`bad.yaml:6: nodes[0].name: "d" is already used by vehicles[0].name`,
		},
	},
	{
		name: "explicit spawn with too few positions",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 3
    spawn:
      layout: explicit
      positions: [[0, 0], [1, 1]]
`,
		want: []string{"bad.yaml:8: vehicles[0].spawn.positions: 2 positions given for 3 vehicles"},
	},
	{
		name: "vector with 4 numbers",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 1
    spawn: {layout: line, origin: [1, 2, 3, 4], spacing: 1}
`,
		want: []string{"bad.yaml:6: vehicles[0].spawn.origin: want 2 or 3 numbers [x, y, z], got 4"},
	},
	{
		name: "vector written as a mapping",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 1
    spawn: {layout: line, origin: {x: 1}, spacing: 1}
`,
		want: []string{"bad.yaml:6: vehicles[0].spawn.origin: want a list of 2 or 3 numbers [x, y, z]"},
	},
	{
		name: "vehicle param override invalid",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 1
    spawn: {layout: line, spacing: 1}
    params:
      max_speed: -1
`,
		want: []string{"bad.yaml:8: vehicles[0].params.max_speed: must be a positive number, got -1"},
	},
	{
		name: "vehicle param of another kind",
		yaml: `name: t
vehicles:
  - name: d
    kind: groundbot
    count: 1
    spawn: {layout: line, spacing: 1}
    params:
      max_climb: 2
`,
		want: []string{`bad.yaml:8: vehicles[0].params.max_climb: unknown field "max_climb" (known fields: `},
	},
	{
		name: "vehicle physics period not a multiple of the tick",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 1
    spawn: {layout: line, spacing: 1}
    params:
      physics_period: 1500us
`,
		want: []string{"bad.yaml:8: vehicles[0].params.physics_period: period 1.5ms is not a positive whole multiple of the tick 1ms"},
	},
	{
		name: "gcs group that does not exist",
		yaml: "name: t\nvehicles:\n" + validGroup + `nodes:
  - name: g
    behaviors:
      - type: gcs
        group: drones
        legs: [{layout: line, spacing: 1}]
`,
		want: []string{`bad.yaml:8: nodes[0].behaviors[0].group: no vehicles in group "drones" (node g)`},
	},
	{
		name: "gcs leg with too few explicit targets",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 3
    spawn: {layout: line, spacing: 1}
    behaviors:
      - type: remote
        gcs: g
nodes:
  - name: g
    behaviors:
      - type: gcs
        group: d
        legs: [{layout: explicit, positions: [[0, 0]]}]
`,
		want: []string{"bad.yaml:15: nodes[0].behaviors[0].legs[0].positions: 1 positions given for 3 vehicles (node g)"},
	},
	{
		name: "remote behaviour whose gcs node does not exist",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 1
    spawn: {layout: line, spacing: 1}
    behaviors:
      - type: remote
        gcs: base
`,
		want: []string{`bad.yaml:9: vehicles[0].behaviors[0].gcs: no node named "base" (node d-0)`},
	},
	{
		name: "traffic to a node that does not exist",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 1
    spawn: {layout: line, spacing: 1}
    behaviors:
      - {type: traffic, rate: 1000, size: 10, dst: nobody}
`,
		want: []string{`bad.yaml:8: vehicles[0].behaviors[0].dst: no node named "nobody" (node d-0)`},
	},
	{
		name: "behaviour period not a multiple of the tick",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 1
    spawn: {layout: line, spacing: 1}
    behaviors:
      - type: waypoints
        period: 1500us
        points: [[0, 0, 1]]
`,
		want: []string{"bad.yaml:9: vehicles[0].behaviors[0].period: period 1.5ms is not a positive whole multiple of the tick 1ms"},
	},
	{
		name: "unknown anchor",
		yaml: `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 1
    spawn: *nowhere
`,
		want: []string{`bad.yaml:6: vehicles[0].spawn: unknown anchor "nowhere"`},
	},
	{
		name: "merge key with a scalar",
		yaml: "name: t\nvehicles:\n  - <<: 5\n    name: d\n    kind: pointmass\n    count: 1\n    spawn: {layout: line, spacing: 1}\n",
		want: []string{"bad.yaml:3: vehicles[0]: a merge key (<<) needs a mapping, got the number 5"},
	},
	{
		name: "two errors, reported in line order",
		yaml: `name: t
duration: 10
vehicles:
  - name: d
    kind: pointmass
    count: -1
`,
		want: []string{
			`bad.yaml:2: duration: duration "10" needs a unit, e.g. 10s or 10ms`,
			"bad.yaml:6: vehicles[0].count: must be >= 1, got -1",
		},
	},
	{
		name: "two errors with CRLF line ends",
		yaml: "name: t\r\nduration: 5\r\nvehicles:\r\n  - {name: d, kind: pointmass, count: 0, spawn: {layout: line, spacing: 1}}\r\n",
		want: []string{
			`bad.yaml:2: duration: duration "5" needs a unit, e.g. 5s or 5ms`,
			"bad.yaml:4: vehicles[0].count: must be >= 1, got 0",
		},
	},
	{
		name: "vehicle counts whose sum overflows",
		yaml: "name: t\nvehicles:\n" +
			"  - {name: d, kind: pointmass, count: 9223372036854775807, spawn: {layout: line, spacing: 1}}\n" +
			"  - {name: e, kind: pointmass, count: 2, spawn: {layout: line, spacing: 1}}\n",
		want: []string{"bad.yaml:3: vehicles[0].count: 9223372036854775807 vehicles: at most 100000"},
	},
	{
		name: "fixed node named like a vehicle",
		yaml: "name: t\nvehicles:\n  - {name: d, kind: pointmass, count: 2, spawn: {layout: line, spacing: 1}}\nnodes:\n  - {name: d-1}\n",
		want: []string{`bad.yaml:5: nodes[0].name: "d-1" is the name of vehicle d[1]; pick another`},
	},
	{
		name: "one error per bad value, not a cascade",
		yaml: "name: t\nvehicles:\n  - {name: d, kind: pointmass, count: ten, spawn: {layout: line, spacing: 1}}\n",
		want: []string{`bad.yaml:3: vehicles[0].count: want an integer, got the string "ten"`},
		not:  []string{"must be >= 1"},
	},
	{
		name: "bad element of a vector",
		yaml: "name: t\nvehicles:\n  - {name: d, kind: pointmass, count: 1, spawn: {layout: line, spacing: 1, origin: [1, two, 3]}}\n",
		want: []string{`bad.yaml:3: vehicles[0].spawn.origin[1]: want a number, got the string "two"`},
	},
	{
		name: "energy_per_deg reported under its own name",
		yaml: "name: t\nvehicles:\n  - name: d\n    kind: pointmass\n    count: 1\n    spawn: {layout: line, spacing: 1}\n    params: {energy_per_deg: -1}\n",
		want: []string{"bad.yaml:7: vehicles[0].params.energy_per_deg: must be >= 0, got -1"},
	},
	{
		name: "default sample period not a multiple of the tick",
		yaml: "name: t\ntick: 1500us\nduration: 3s\nvehicles:\n" + validGroup,
		want: []string{"outputs.sample_period: must be a positive multiple of the tick 1.5ms, got 100ms (the default; set outputs.sample_period to a multiple of the tick)"},
	},
	{
		name: "same start error once per group",
		yaml: "name: t\nvehicles:\n  - name: d\n    kind: pointmass\n    count: 3\n    spawn: {layout: line, spacing: 1}\n    behaviors:\n      - {type: remote, gcs: base}\n",
		want: []string{`bad.yaml:8: vehicles[0].behaviors[0].gcs: no node named "base" (node d-0)`},
		not:  []string{"node d-1"},
	},
	{
		name: "deeply nested brackets",
		yaml: "name: t\nx: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n",
		want: []string{"bad.yaml:2: brackets nested 100 deep: at most 64"},
	},
}

// parseAndBuild returns the first error of Parse, else of Build.
func parseAndBuild(text string) error {
	sc, err := scenario.Parse("bad.yaml", []byte(text), registry.Schema())
	if sc == nil {
		return err
	}
	_, err = engine.Build(sc, engine.Options{Registry: registry})
	return err
}

func TestMalformedScenarios(t *testing.T) {
	if len(malformedCases) < 20 {
		t.Fatalf("only %d cases", len(malformedCases))
	}
	for _, c := range malformedCases {
		t.Run(c.name, func(t *testing.T) {
			if c.skip != "" {
				t.Skip(c.skip)
			}
			err := parseAndBuild(c.yaml)
			if err == nil {
				t.Fatalf("no error; want %q", c.want)
			}
			var es scenario.Errors
			if !errors.As(err, &es) {
				t.Fatalf("error is a %T, not scenario.Errors (the CLI would not exit 2): %v", err, err)
			}
			if len(es) == 0 {
				t.Fatalf("empty scenario.Errors")
			}
			msg := err.Error()
			rest := msg
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error does not contain (in order)\n  %q\ngot:\n%s", w, msg)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range c.not {
				if strings.Contains(msg, n) {
					t.Errorf("error contains %q, a knock-on of the first problem:\n%s", n, msg)
				}
			}
			for i, e := range es {
				if e.File != "bad.yaml" || e.Msg == "" {
					t.Errorf("error %d has file %q, message %q", i, e.File, e.Msg)
				}
				if i > 0 && es[i-1].Line > e.Line {
					t.Errorf("errors not sorted by line:\n%s", msg)
				}
			}
		})
	}
}

// TestTwoErrorsBothReported checks that independent problems are all
// reported at once, sorted by line, and nothing else.
func TestTwoErrorsBothReported(t *testing.T) {
	text := `name: t
vehicles:
  - name: d
    kind: pointmass
    count: 0
    spawn: {layout: line, spacing: 1}
duration: 60
`
	err := parseAndBuild(text)
	var es scenario.Errors
	if !errors.As(err, &es) {
		t.Fatalf("got %T %v, want scenario.Errors", err, err)
	}
	want := []string{
		"bad.yaml:5: vehicles[0].count: must be >= 1, got 0",
		`bad.yaml:7: duration: duration "60" needs a unit, e.g. 60s or 60ms`,
	}
	if len(es) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(es), len(want), err)
	}
	for i, w := range want {
		if got := es[i].Error(); got != w {
			t.Errorf("error %d = %q, want %q", i, got, w)
		}
	}
	if es[0].Line != 5 || es[0].Path != "vehicles[0].count" || es[1].Line != 7 || es[1].Path != "duration" {
		t.Errorf("wrong positions: %+v %+v", *es[0], *es[1])
	}
}

func TestValidMinimalScenario(t *testing.T) {
	for name, text := range map[string]string{
		"minimal": "vehicles:\n  - {name: d, kind: pointmass, count: 1, spawn: {layout: line, spacing: 1}}\n",
		"anchors": `name: anchors
duration: 2s
vehicles:
  - name: a
    kind: pointmass
    count: 2
    spawn: &sp {layout: line, spacing: 2}
    behaviors:
      - &bc {type: beacon, period: 50ms}
  - name: b
    kind: groundbot
    count: 2
    spawn: *sp
    behaviors: [*bc]
network: {backend: impair, latency: 5ms, loss: 0.1}
`,
	} {
		t.Run(name, func(t *testing.T) {
			sc, err := scenario.Parse("ok.yaml", []byte(text), registry.Schema())
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			r, err := engine.Build(sc, engine.Options{Registry: registry})
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if len(r.Nodes()) == 0 {
				t.Fatalf("no nodes")
			}
		})
	}
}

func TestBuiltinScenariosBuild(t *testing.T) {
	names := scenarios.Names()
	if len(names) == 0 {
		t.Fatal("no built-in scenarios")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			text, ok := scenarios.Lookup(name)
			if !ok {
				t.Fatalf("Lookup(%q) failed", name)
			}
			if strings.Contains(string(text), "controller: ardupilot-sitl") || strings.Contains(string(text), "controller: px4-sitl") {
				// Real firmware: checked against a firmware-shaped
				// directory by its bridge's tests (ardupilot, px4sitl),
				// built and run by the real-firmware tests.
				return
			}
			sc, err := scenario.Parse(name+".yaml", text, registry.Schema())
			if err != nil {
				t.Fatalf("Parse:\n%v", err)
			}
			if _, err := engine.Build(sc, engine.Options{Registry: registry}); err != nil {
				t.Fatalf("Build:\n%v", err)
			}
		})
	}
}

// TestYAMLConveniences: merge keys with overrides, an empty network
// section, a %YAML directive and a byte-order mark are all accepted.
func TestYAMLConveniences(t *testing.T) {
	text := "\xef\xbb\xbf%YAML 1.2\n---\nname: t\nnetwork:\nvehicles:\n" +
		"  - &g {name: a, kind: pointmass, count: 2, spawn: {layout: line, spacing: 1}}\n" +
		"  - <<: *g\n    name: b\n    count: 3\n"
	sc, err := scenario.Parse("ok.yaml", []byte(text), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Describe(); !strings.HasPrefix(got, "5 vehicles, 0 fixed nodes, ideal network") {
		t.Fatalf("built %s", got)
	}
	if sc.Vehicles[1].Name != "b" || sc.Vehicles[1].Count != 3 || sc.Vehicles[1].Kind != "pointmass" {
		t.Fatalf("merged group %+v", sc.Vehicles[1])
	}
}

// TestGenericAndComponentErrorsTogether: with Check as a parse hook, a
// generic problem and a component problem are reported in one go.
func TestGenericAndComponentErrorsTogether(t *testing.T) {
	text := "name: bad\nvehicles:\n  - name: a\n    kind: pointmass\n    count: 0\n    spawn: {layout: line, spacing: 1}\n" +
		"  - name: b\n    kind: pointmass\n    count: 1\n    spawn: {layout: line, spacing: 1}\n    behaviors: [{type: beacon, policy: sometimes}]\n" +
		"network:\n  backend: impair\n  loss: 1.5\n"
	_, err := scenario.Parse("bad.yaml", []byte(text), registry.Schema())
	want := "bad.yaml:5: vehicles[0].count: must be >= 1, got 0\n" +
		"bad.yaml:11: vehicles[1].behaviors[0].policy: must be periodic or event, got \"sometimes\"\n" +
		"bad.yaml:14: network.loss: must be a probability in [0, 1], got 1.5"
	if err == nil || err.Error() != want {
		t.Fatalf("got:\n%v\nwant:\n%s", err, want)
	}
}

// TestParseThenValidateReportsAll: Parse with the registry's schema decodes
// every component (typed network keys, kind parameters, behaviours) and
// returns the scenario with its problems; Validate adds the engine's own
// (a measure's group) and reports all at once, in line order.
func TestParseThenValidateReportsAll(t *testing.T) {
	text := "name: bad\nvehicles:\n  - name: a\n    kind: pointmass\n    count: 1\n    spawn: {layout: line, spacing: 1}\n" +
		"    behaviors: [{type: beacon, policy: sometimes}]\n" +
		"measures:\n  - {type: platoon, group: nowhere}\n" +
		"network: {backend: impair, epoch: 10ms, mode: replay}\n"
	sc, err := scenario.Parse("bad.yaml", []byte(text), registry.Schema())
	if sc == nil || err == nil {
		t.Fatalf("Parse: %v, %v", sc, err)
	}
	if n := sc.NetworkConfig; n == nil || n.Backend != "impair" || n.Mode != scenario.Replay || n.Epoch != 10*sim.Millisecond || n.Params == nil {
		t.Errorf("network %+v", sc.NetworkConfig)
	}
	if sc.Vehicles[0].KindParams == nil || len(sc.Vehicles[0].BehaviorParams) != 1 || sc.Vehicles[0].BehaviorParams[0].Params != nil {
		t.Errorf("group %+v", sc.Vehicles[0])
	}
	_, err = engine.Validate(sc, engine.Options{Registry: registry})
	want := "bad.yaml:7: vehicles[0].behaviors[0].policy: must be periodic or event, got \"sometimes\"\n" +
		"bad.yaml:9: measures[0].group: no vehicle group \"nowhere\""
	if err == nil || err.Error() != want {
		t.Fatalf("got:\n%v\nwant:\n%s", err, want)
	}
}
