// Package scenario reads, checks and describes scenario files: the YAML
// that says which vehicles fly, on which network, running which behaviours,
// for how long. Every problem is reported with the file, line and field
// path (e.g. `quickstart.yaml:12: vehicles[1].count: must be >= 1, got 0`),
// and all problems are reported at once.
//
// The package knows the generic schema. Kind, behaviour and backend
// parameters are kept undecoded (Raw) and decoded by the engine with
// Decode, which gives them the same strict checking and error positions.
package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"skyloop/fields"
	"skyloop/geom"
	"skyloop/sim"
)

// Scenario is a decoded scenario file.
type Scenario struct {
	Name        string       `yaml:"name" json:"name"`
	Description string       `yaml:"description" json:"description,omitempty"`
	Seed        uint64       `yaml:"seed" json:"seed"`
	Duration    sim.Duration `yaml:"duration" json:"duration"`
	Tick        sim.Duration `yaml:"tick" json:"tick"`
	Workers     int          `yaml:"workers" json:"workers"`
	World       World        `yaml:"world" json:"world"`
	// Coverage, when set, is the survey area of the coverage behaviours
	// (UB-ANC's coverage planning experiment): their grid unless they give their own.
	Coverage *CoverageArea `yaml:"coverage" json:"coverage,omitempty"`
	Vehicles []Group       `yaml:"vehicles" json:"vehicles"`
	Nodes    []FixedNode   `yaml:"nodes" json:"nodes,omitempty"`
	Network  Raw           `yaml:"network" json:"-"`
	// Measures watch the vehicles' true states for study figures (the
	// netbots platoon study's gap error); the engine decodes them.
	Measures []Raw   `yaml:"measures" json:"-"`
	Outputs  Outputs `yaml:"outputs" json:"outputs"`
	// Realtime, when > 0, paces the run to the wall clock at this factor
	// (the command line's --realtime overrides it).
	Realtime float64 `yaml:"realtime" json:"realtime"`
	// Isolation is none, or netns: every vehicle gets a network namespace
	// whose only way to the others is a TAP into the simulated network.
	Isolation string `yaml:"isolation" json:"isolation"`
	// Processes run inside every vehicle's namespace (isolation: netns).
	Processes []Process `yaml:"processes" json:"processes,omitempty"`

	// File is the name the scenario was loaded under (for messages).
	File string `yaml:"-" json:"-"`
	// Dir is the directory of the scenario file ("" for built-in
	// scenarios): relative paths in it, such as the commands of external
	// agents, start there.
	Dir string `yaml:"-" json:"-"`

	// Schema is the schema Parse decoded the component parts with (nil:
	// Parse was given none, and the typed component fields below are
	// unset).
	Schema *Schema `yaml:"-" json:"-"`
	// NetworkConfig is the network section decoded (nil when its backend
	// is missing or unknown); MeasureParams the measures, one per entry
	// of Measures.
	NetworkConfig *Network    `yaml:"-" json:"-"`
	MeasureParams []Component `yaml:"-" json:"-"`
	// Problems are the problems Parse recorded, in the order found (at
	// most a thousand are kept), and ProblemCount how many it found in
	// all; Lines maps the field path of every value the file sets to
	// its line. The engine's checks report their problems with them,
	// as plain data.
	Problems     Errors         `yaml:"-" json:"-"`
	ProblemCount int            `yaml:"-" json:"-"`
	Lines        map[string]int `yaml:"-" json:"-"`

	dec *decoder
	// coverageObstacles is how many of World.Obstacles, the last ones,
	// the coverage area put there (its obstacle cells with a height).
	coverageObstacles int
}

// FileObstacles returns the world's obstacles as the file gives them:
// World.Obstacles without the coverage area's obstacle cells, which the
// coverage area puts in the world when they have a height.
func (sc *Scenario) FileObstacles() []Obstacle {
	return sc.World.Obstacles[:len(sc.World.Obstacles)-sc.coverageObstacles]
}

// Process is a program run inside each vehicle's namespace.
type Process struct {
	// Name labels the process in logs (procs/<vehicle>-<name>.out).
	Name string `yaml:"name" json:"name"`
	// Command is a shell command template: {i} vehicle index, {sysid}
	// 1+i, {tcp_port} 4560+i, {udp_port} 14560+i, {ns} namespace, {ip}
	// the vehicle's address on the simulated network, {host_ip} skyloop's
	// end of the direct host link, {name} the vehicle's node name.
	Command string `yaml:"command" json:"command"`
	// Group limits the process to one vehicle group (empty = every
	// vehicle).
	Group string `yaml:"group" json:"group,omitempty"`
	// Restart is none or on-failure (restarted after a non-zero exit, at
	// most 5 times, 1 s apart).
	Restart string `yaml:"restart" json:"restart"`
	// StopTimeout is how long a process has after SIGTERM before SIGKILL.
	StopTimeout sim.Duration `yaml:"stop_timeout" json:"stop_timeout"`
}

// World describes the static environment.
type World struct {
	// CheckPeriod is how often separation, collisions, obstacles and
	// bounds are checked.
	CheckPeriod sim.Duration `yaml:"check_period" json:"check_period"`
	// Bounds, when set, is the flight volume; leaving it is an event.
	Bounds    *geom.Box  `yaml:"bounds" json:"bounds,omitempty"`
	Obstacles []Obstacle `yaml:"obstacles" json:"obstacles,omitempty"`
	// Origin is the WGS84 position of the local origin (x east, y north,
	// z up): MAVLink positions and missions are converted around it.
	Origin geom.Geodetic `yaml:"origin" json:"origin"`
}

// CoverageArea is a survey area divided into square cells, some of them
// obstacles.
type CoverageArea struct {
	// Origin is the area's south-west corner (x, y), m.
	Origin [2]float64 `yaml:"origin" json:"origin"`
	// Area is its size east and north, m: whole multiples of Cell.
	Area [2]float64 `yaml:"area" json:"area"`
	// Cell is the side of a cell, m.
	Cell float64 `yaml:"cell" json:"cell"`
	// Obstacles are the cells that cannot be flown over, as [column, row]
	// from the south-west cell [0, 0].
	Obstacles [][2]int `yaml:"obstacles" json:"obstacles"`
	// ObstacleHeight, when > 0, also puts each obstacle cell in the world
	// as a building this tall, so that the world check counts any flight
	// into one (summary.json obstacle_hits).
	ObstacleHeight float64 `yaml:"obstacle_height" json:"obstacle_height"`
}

// Obstacle is an axis-aligned box (a shelf, a building). Vehicles entering
// one are reported as collisions.
type Obstacle struct {
	Name string    `yaml:"name" json:"name"`
	Min  geom.Vec3 `yaml:"min" json:"min"`
	Max  geom.Vec3 `yaml:"max" json:"max"`
}

// Group is a set of identical vehicles.
type Group struct {
	Name      string      `yaml:"name" json:"name"`
	Kind      string      `yaml:"kind" json:"kind"`
	Count     int         `yaml:"count" json:"count"`
	Spawn     geom.Layout `yaml:"spawn" json:"spawn"`
	Yaw       float64     `yaml:"yaw" json:"yaw"` // initial heading, degrees counter-clockwise from east
	Params    Raw         `yaml:"params" json:"-"`
	Behaviors []Raw       `yaml:"behaviors" json:"-"`

	// Set by Parse with a Schema: the kind's parameters, decoded and
	// valid (nil when the kind is unknown or they have problems), the
	// controller that flies the group (nil: the kind's own), and the
	// behaviours, one per entry of Behaviors.
	KindParams     fields.Validator `yaml:"-" json:"-"`
	Controller     *Controller      `yaml:"-" json:"-"`
	BehaviorParams []Component      `yaml:"-" json:"-"`
}

// FixedNode is a network node without a vehicle, such as a ground station.
type FixedNode struct {
	Name      string    `yaml:"name" json:"name"`
	Position  geom.Vec3 `yaml:"position" json:"position"`
	Behaviors []Raw     `yaml:"behaviors" json:"-"`
	// BehaviorParams are the behaviours decoded by Parse with a Schema,
	// one per entry of Behaviors.
	BehaviorParams []Component `yaml:"-" json:"-"`
}

// Outputs selects what a run writes. Metrics in summary.json are always
// exact, whatever is switched off here.
type Outputs struct {
	Trace        bool         `yaml:"trace" json:"trace"`                 // trace.csv: every tx, rx and drop
	Deliveries   bool         `yaml:"deliveries" json:"deliveries"`       // deliveries.csv: every delivery with arrival and consumption ticks
	Vehicles     bool         `yaml:"vehicles" json:"vehicles"`           // vehicles.csv: sampled vehicle states
	Events       bool         `yaml:"events" json:"events"`               // events.csv
	Plots        bool         `yaml:"plots" json:"plots"`                 // trajectory.png
	Pcap         bool         `yaml:"pcap" json:"pcap,omitempty"`         // packets.pcap: every packet as its sender hands it to the network
	MCAP         bool         `yaml:"mcap" json:"mcap,omitempty"`         // run.mcap: the run for Foxglove (package foxglove)
	Format       Format       `yaml:"format" json:"format,omitempty"`     // csv (default) or parquet for trace, deliveries and vehicles
	Report       bool         `yaml:"report" json:"report"`               // report.html: the run's tables and figures in one page
	SamplePeriod sim.Duration `yaml:"sample_period" json:"sample_period"` // vehicles.csv sampling period
	// Twin runs the scenario a second time, with the same seed, on an
	// ideal network (skyloop run --twin; package twin) into the run
	// directory's twin/, and adds what the network cost to summary.json.
	Twin bool `yaml:"twin" json:"twin,omitempty"`
}

// Format is outputs.format: the file format of a run's trace, deliveries
// and vehicles tables. The empty Format is CSV.
type Format string

// The values of outputs.format. A new format is a value here, listed in
// Formats, with its sink in package runner and its reader in package
// runread (their tests check that every value has both).
const (
	// CSV writes trace.csv, deliveries.csv and vehicles.csv (the default).
	CSV Format = "csv"
	// Parquet writes trace.parquet, deliveries.parquet and
	// vehicles.parquet (package tables).
	Parquet Format = "parquet"
)

// Formats lists every valid outputs.format, the default first.
var Formats = []Format{CSV, Parquet}

// Or returns f, or def when f is empty (not set).
func (f Format) Or(def Format) Format {
	if f == "" {
		return def
	}
	return f
}

// Check returns an error naming the bad value when f is not a format of
// Formats (the empty Format is CSV).
func (f Format) Check() error {
	if f == "" || slices.Contains(Formats, f) {
		return nil
	}
	names := make([]string, len(Formats))
	for i, v := range Formats {
		names[i] = string(v)
	}
	return fmt.Errorf("must be %s, got %q", strings.Join(names, " or "), string(f))
}

// Parse decodes and checks scenario text; name is used in error messages
// and as the default scenario name. Given a schema (at most one: the
// engine registry's Schema), it decodes the component parts too (each
// group's kind parameters and controller, the behaviours, the network and
// the measures) into the typed fields of Scenario, Group and FixedNode,
// checking every component's parameters; without one they stay undecoded.
// The returned error is an Errors value when the file has problems.
// Given a schema, the scenario decoded so far comes with it (unless the
// text is not a YAML mapping), so that the engine's checks
// (engine.Validate, which reports Parse's problems with its own) can add
// theirs and every problem of a file is reported at once; without one,
// Parse returns a scenario or an error.
func Parse(name string, data []byte, schema ...*Schema) (sc *Scenario, err error) {
	doc, err := ParseDocument(name, data)
	if err != nil {
		return nil, err
	}
	sc = Defaults()
	sc.Name = strings.TrimSuffix(strings.TrimSuffix(name, ".yaml"), ".yml")
	sc.File = name
	sc.dec = doc.dec
	doc.Decode(doc.Root, "", sc)
	sc.check()
	if len(schema) > 0 && schema[0] != nil {
		sc.Schema = schema[0]
		if sc.Tick > 0 {
			// Without a tick the engine cannot check timings; the
			// generic check said why, and that is the file's problem.
			sc.decodeComponents(schema[0])
		}
	}
	sc.Lines = make(map[string]int, len(sc.dec.seen))
	for p, n := range sc.dec.seen {
		sc.Lines[p] = line(n)
	}
	sc.Problems, sc.ProblemCount = slices.Clone(sc.dec.errs), sc.dec.nerrs
	if err := doc.Err(); err != nil {
		if sc.Schema == nil {
			return nil, err
		}
		return sc, err
	}
	return sc, nil
}

// Document is a parsed YAML file decoded strictly into Go values, with
// every problem located by line and field path. Scenario files use it, and
// so do other inputs (experiment files).
type Document struct {
	File string
	// Root is the top-level mapping.
	Root Raw
	dec  *decoder
}

// ParseDocument parses YAML text whose top level is a mapping.
func ParseDocument(name string, data []byte) (*Document, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte-order mark
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, Errors{{File: name, Msg: "empty file"}}
	}
	if len(data) > MaxFileSize {
		return nil, Errors{tooLarge(name)}
	}
	if l, msg := prescan(data); msg != "" {
		return nil, Errors{{File: name, Line: l, Msg: msg}}
	}
	tokens, err := lexYAML(data)
	if err != nil {
		return nil, Errors{{File: name, Msg: err.Error()}}
	}
	if len(tokens) > 2*MaxTokens {
		return nil, Errors{{File: name, Msg: fmt.Sprintf("more than %d YAML tokens", 2*MaxTokens)}}
	}
	if l := parseCost(tokens, maxParseCost); l > 0 {
		return nil, Errors{{File: name, Line: l, Msg: "nested too deep, keys too long or too many keys in one mapping: the file is too costly to parse (a scenario or experiment file is a few KB)"}}
	}
	f, err := parseYAML(tokens)
	if err != nil {
		return nil, Errors{syntaxError(name, err)}
	}
	var docs []*ast.DocumentNode
	for _, doc := range f.Docs {
		if doc.Body != nil {
			if _, directive := doc.Body.(*ast.DirectiveNode); !directive {
				docs = append(docs, doc)
			}
		}
	}
	switch {
	case len(docs) == 0:
		return nil, Errors{{File: name, Msg: "empty file (only comments or document markers)"}}
	case len(docs) > 1:
		return nil, Errors{{File: name, Line: line(docs[1].Body), Msg: fmt.Sprintf("want one YAML document, got %d (remove the --- separators)", len(docs))}}
	}
	d := &decoder{file: name, anchors: map[string]ast.Node{}, seen: map[string]ast.Node{}}
	collectAnchors(docs[0].Body, d.anchors)
	if l, msg := checkExpansion(docs[0].Body, d.anchors, MaxNodes); msg != "" {
		return nil, Errors{{File: name, Line: l, Msg: msg}}
	}
	root := d.resolve(docs[0].Body)
	switch root.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		return nil, Errors{{File: name, Line: line(root), Msg: fmt.Sprintf("want a mapping of fields at the top level, got %s", kindName(root))}}
	}
	return &Document{File: name, Root: Raw{root}, dec: d}, nil
}

// Decode decodes r (absent: nothing changes) into dst, a pointer,
// strictly; keys in skip are ignored. It returns false if it found problems.
func (d *Document) Decode(r Raw, path string, dst any, skip ...string) bool {
	before := d.dec.nerrs
	d.dec.decode(r.n, path, reflect.ValueOf(dst).Elem(), skip...)
	return d.dec.nerrs == before
}

// Field is one key and value of a mapping.
type Field struct {
	Key   string
	KeyAt Raw // the key as written, for locating problems
	Value Raw
}

// Fields returns the entries of mapping m in order, merge keys (<<)
// expanded; a problem is recorded at path when m is not a mapping. An
// absent m has no fields.
func (d *Document) Fields(m Raw, path string) []Field {
	if m.n == nil {
		return nil
	}
	r := d.dec.resolve(m.n)
	if isNull(r) {
		return nil
	}
	entries, ok := d.dec.mapEntries(r, path)
	if !ok {
		d.dec.errorf(r, path, "want a mapping, got %s", kindName(r))
		return nil
	}
	fs := make([]Field, 0, len(entries))
	for _, mv := range entries {
		fs = append(fs, Field{Key: scalarText(mv.Key), KeyAt: Raw{mv.Key}, Value: Raw{mv.Value}})
	}
	return fs
}

// Text returns the YAML text of a scalar as written (for a sequence or
// mapping, its flow form; "" when r is absent), for naming things after
// values.
func (d *Document) Text(r Raw) string {
	n := d.dec.resolve(r.n)
	if n == nil {
		return ""
	}
	if isScalar(n) {
		return scalarText(n)
	}
	return strings.TrimSpace(n.String())
}

// Item returns the i-th element of r when r is a list written in place
// (an anchor on it is looked through, an alias is not followed), for
// locating problems with that element; ok is false otherwise.
func (d *Document) Item(r Raw, i int) (item Raw, ok bool) {
	n := r.n
	if a, anchor := n.(*ast.AnchorNode); anchor {
		n = a.Value
	}
	if sq, seq := n.(*ast.SequenceNode); seq && i >= 0 && i < len(sq.Values) {
		return Raw{sq.Values[i]}, true
	}
	return Raw{}, false
}

// Line returns the line where r was written (0 if unknown or absent).
func (d *Document) Line(r Raw) int { return line(r.n) }

// Errorf records a problem at the line where r was written (the line is 0
// when r is absent).
func (d *Document) Errorf(r Raw, path, format string, args ...any) {
	d.dec.errorf(r.n, path, format, args...)
}

// Err returns every problem recorded, sorted by line, or nil.
func (d *Document) Err() error {
	return d.dec.err()
}

// parseYAML runs the third-party YAML parser, turning a panic on hostile
// input into an error.
func parseYAML(tokens token.Tokens) (f *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("cannot parse YAML: %v", r)
		}
	}()
	return parser.Parse(tokens, 0)
}

// yamlError is the interface of the YAML library's positioned errors.
type yamlError interface {
	GetMessage() string
	GetToken() *token.Token
}

// syntaxError locates a parse error. It never calls the library error's
// Error method: that renders the source around the error, at a cost that
// grows with the square of the file's size.
func syntaxError(file string, err error) *Error {
	var ye yamlError
	if errors.As(err, &ye) {
		e := &Error{File: file, Msg: "YAML syntax: " + ye.GetMessage()}
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			e.Line = tk.Position.Line
		}
		return e
	}
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	return &Error{File: file, Msg: "YAML syntax: " + msg}
}

func collectAnchors(n ast.Node, m map[string]ast.Node) {
	ast.Walk(anchorVisitor(m), n)
}

type anchorVisitor map[string]ast.Node

func (v anchorVisitor) Visit(n ast.Node) ast.Visitor {
	if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil {
		v[strings.TrimSpace(a.Name.GetToken().Value)] = a.Value
	}
	return v
}

// Errorf records a problem at a field path. The line is that of the node
// which set the field, or of its nearest parent present in the file. A
// problem at a path that already has one, or below it, is not recorded:
// one mistake gives one message, not a cascade.
func (sc *Scenario) Errorf(path, format string, args ...any) {
	if sc.dec.covered(path) || sc.dec.full() {
		return
	}
	sc.dec.add(&Error{File: sc.File, Line: sc.lineOf(path), Path: path, Msg: fmt.Sprintf(format, args...)})
}

// IsSet reports whether the file sets the field at path.
func (sc *Scenario) IsSet(path string) bool {
	_, ok := sc.dec.seen[path]
	return ok
}

// Err returns the problems recorded so far with Errorf and Decode, or nil.
func (sc *Scenario) Err() error {
	return sc.dec.err()
}

func (sc *Scenario) lineOf(path string) int {
	for p := path; ; {
		if n, ok := sc.dec.seen[p]; ok {
			return line(n)
		}
		if p == "" {
			return 0
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			p = ""
		} else {
			p = p[:i]
		}
	}
}

// Decode decodes a component's parameters (kept undecoded in the scenario
// as r; absent: dst is unchanged) into dst, a pointer to a struct holding
// the defaults, with the same strict checks as the rest of the file. Keys
// listed in skip (such as `type`) are ignored. Problems are recorded on
// the scenario and reported by Err; Decode returns false if there were
// any.
func (sc *Scenario) Decode(r Raw, path string, dst any, skip ...string) bool {
	before := sc.dec.nerrs
	sc.dec.decode(r.n, path, reflect.ValueOf(dst).Elem(), skip...)
	return sc.dec.nerrs == before
}

// TypeOf returns the value of the discriminating key (such as `type` or
// `backend`) of a component mapping, recording a problem when it is missing
// or not a string.
func (sc *Scenario) TypeOf(raw Raw, path, key string) (string, bool) {
	if raw.n == nil {
		sc.Errorf(path, "missing")
		return "", false
	}
	r := sc.dec.resolve(raw.n)
	if a, ok := r.(*ast.AliasNode); ok {
		sc.dec.errorf(a, path, "unknown anchor %q", strings.TrimSpace(a.Value.GetToken().Value))
		return "", false
	}
	entries, ok := sc.dec.mapEntries(r, path)
	if !ok {
		sc.dec.errorf(r, path, "want a mapping with a %q key, got %s", key, kindName(r))
		return "", false
	}
	for _, mv := range entries {
		if scalarText(mv.Key) == key {
			v := sc.dec.resolve(mv.Value)
			if !isScalar(v) {
				sc.dec.errorf(v, joinPath(path, key), "want a name, got %s", kindName(v))
				return "", false
			}
			sc.dec.seen[joinPath(path, key)] = v
			return scalarText(v), true
		}
	}
	sc.dec.errorf(r, path, "missing %q", key)
	return "", false
}

// HasKey reports whether mapping r has key (false when r is absent or not
// a mapping).
func (sc *Scenario) HasKey(r Raw, key string) bool {
	if r.n == nil {
		return false
	}
	n := sc.dec.resolve(r.n)
	if isNull(n) {
		return false
	}
	entries, ok := sc.dec.mapEntries(n, "")
	if !ok {
		return false
	}
	for _, mv := range entries {
		if scalarText(mv.Key) == key {
			return true
		}
	}
	return false
}

// DecodeKey decodes the value of one key of mapping r into dst (a
// pointer), leaving dst unchanged when r or the key is absent.
func (sc *Scenario) DecodeKey(r Raw, path, key string, dst any) bool {
	if r.n == nil {
		return true
	}
	entries, ok := sc.dec.mapEntries(sc.dec.resolve(r.n), path)
	if !ok {
		return true // reported by the caller's Decode
	}
	before := sc.dec.nerrs
	for _, mv := range entries {
		if scalarText(mv.Key) == key {
			sc.dec.decode(mv.Value, joinPath(path, key), reflect.ValueOf(dst).Elem())
		}
	}
	return sc.dec.nerrs == before
}
