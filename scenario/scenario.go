// Package scenario reads, checks and describes scenario files: the YAML
// that says which vehicles fly, on which network, running which behaviours,
// for how long. Every problem is reported with the file, line and field
// path (e.g. `quickstart.yaml:12: vehicles[1].count: must be >= 1, got 0`),
// and all problems are reported at once.
//
// The package knows the generic schema. Kind, behaviour and backend
// parameters are kept as YAML nodes and decoded by the engine with Decode,
// which gives them the same strict checking and error positions.
package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

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
	Vehicles    []Group      `yaml:"vehicles" json:"vehicles"`
	Nodes       []FixedNode  `yaml:"nodes" json:"nodes,omitempty"`
	Network     ast.Node     `yaml:"network" json:"-"`
	Outputs     Outputs      `yaml:"outputs" json:"outputs"`
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

	dec *decoder
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
	Params    ast.Node    `yaml:"params" json:"-"`
	Behaviors []ast.Node  `yaml:"behaviors" json:"-"`
}

// FixedNode is a network node without a vehicle, such as a ground station.
type FixedNode struct {
	Name      string     `yaml:"name" json:"name"`
	Position  geom.Vec3  `yaml:"position" json:"position"`
	Behaviors []ast.Node `yaml:"behaviors" json:"-"`
}

// Outputs selects what a run writes. Metrics in summary.json are always
// exact, whatever is switched off here.
type Outputs struct {
	Trace        bool         `yaml:"trace" json:"trace"`                 // trace.csv: every tx, rx and drop
	Deliveries   bool         `yaml:"deliveries" json:"deliveries"`       // deliveries.csv: every delivery with arrival and consumption ticks
	Vehicles     bool         `yaml:"vehicles" json:"vehicles"`           // vehicles.csv: sampled vehicle states
	Events       bool         `yaml:"events" json:"events"`               // events.csv
	Plots        bool         `yaml:"plots" json:"plots"`                 // trajectory.png
	SamplePeriod sim.Duration `yaml:"sample_period" json:"sample_period"` // vehicles.csv sampling period
}

// Load reads and checks a scenario file; see Parse.
func Load(path string, checks ...func(*Scenario)) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	sc, err := Parse(filepath.Base(path), data, checks...)
	if sc != nil {
		if abs, aerr := filepath.Abs(path); aerr == nil {
			sc.Dir = filepath.Dir(abs)
		}
	}
	return sc, err
}

// Parse decodes and checks scenario text; name is used in error messages
// and as the default scenario name. The returned error is an Errors value
// when the file has problems. The extra checks (the engine's component
// checks) run after the generic ones, even when those found problems, so
// that every problem of a file is reported at once; they record problems
// with Errorf.
func Parse(name string, data []byte, checks ...func(*Scenario)) (sc *Scenario, err error) {
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
	for _, c := range checks {
		c(sc)
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	return sc, nil
}

// Document is a parsed YAML file decoded strictly into Go values, with
// every problem located by line and field path. Scenario files use it, and
// so do other inputs (experiment files).
type Document struct {
	File string
	// Root is the top-level mapping.
	Root ast.Node
	dec  *decoder
}

// ParseDocument parses YAML text whose top level is a mapping.
func ParseDocument(name string, data []byte) (*Document, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte-order mark
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, Errors{{File: name, Msg: "empty file"}}
	}
	if len(data) > MaxFileSize {
		return nil, Errors{{File: name, Msg: fmt.Sprintf("%d bytes: a file may have at most %d", len(data), MaxFileSize)}}
	}
	if l, depth := flowDepth(data); depth > MaxDepth {
		return nil, Errors{{File: name, Line: l, Msg: fmt.Sprintf("brackets nested %d deep: at most %d", depth, MaxDepth)}}
	}
	f, err := parseYAML(data)
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
	root := d.resolve(docs[0].Body)
	switch root.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		return nil, Errors{{File: name, Line: line(root), Msg: fmt.Sprintf("want a mapping of fields at the top level, got %s", kindName(root))}}
	}
	return &Document{File: name, Root: root, dec: d}, nil
}

// Decode decodes node n (absent: nothing changes) into dst, a pointer,
// strictly; keys in skip are ignored. It returns false if it found problems.
func (d *Document) Decode(n ast.Node, path string, dst any, skip ...string) bool {
	before := len(d.dec.errs)
	d.dec.decode(n, path, reflect.ValueOf(dst).Elem(), skip...)
	return len(d.dec.errs) == before
}

// DecodeField decodes n into the field of struct pointer dst whose YAML
// name is field, reporting an unknown field name at path.
func (d *Document) DecodeField(n ast.Node, path string, dst any, field string) bool {
	v := reflect.ValueOf(dst).Elem()
	for _, f := range yamlFields(v.Type()) {
		if f.name == field {
			return d.Decode(n, path, v.FieldByIndex(f.index).Addr().Interface())
		}
	}
	names := []string{}
	for _, f := range yamlFields(v.Type()) {
		names = append(names, f.name)
	}
	d.dec.errorf(n, path, "unknown parameter %q (known: %s)", field, strings.Join(names, ", "))
	return false
}

// Errorf records a problem at a node.
func (d *Document) Errorf(n ast.Node, path, format string, args ...any) {
	d.dec.errorf(n, path, format, args...)
}

// Err returns every problem recorded, sorted by line, or nil.
func (d *Document) Err() error {
	if len(d.dec.errs) == 0 {
		return nil
	}
	return d.dec.errs.sorted()
}

// parseYAML runs the third-party YAML parser, turning a panic on hostile
// input into an error.
func parseYAML(data []byte) (f *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("cannot parse YAML: %v", r)
		}
	}()
	return parser.ParseBytes(data, 0)
}

// yamlError is the interface of the YAML library's positioned errors.
type yamlError interface {
	GetMessage() string
	GetToken() *token.Token
}

func syntaxError(file string, err error) *Error {
	e := &Error{File: file, Msg: "YAML syntax: " + err.Error()}
	var ye yamlError
	if errors.As(err, &ye) {
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			e.Line = tk.Position.Line
		}
		e.Msg = "YAML syntax: " + ye.GetMessage()
	}
	return e
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
	for _, e := range sc.dec.errs {
		if e.Path == path || strings.HasPrefix(path, e.Path+".") || strings.HasPrefix(path, e.Path+"[") {
			return
		}
	}
	sc.dec.errs = append(sc.dec.errs, &Error{File: sc.File, Line: sc.lineOf(path), Path: path, Msg: fmt.Sprintf(format, args...)})
}

// IsSet reports whether the file sets the field at path.
func (sc *Scenario) IsSet(path string) bool {
	_, ok := sc.dec.seen[path]
	return ok
}

// Limits on scenario files, so that hostile input cannot exhaust the
// parser (its cost grows with the square of the nesting depth).
const (
	MaxFileSize = 8 << 20
	MaxDepth    = 64
)

// flowDepth returns the deepest nesting of flow brackets in data, and the
// line where it is reached, ignoring quoted text and comments.
func flowDepth(data []byte) (line, depth int) {
	cur, ln := 0, 1
	var quote byte
	comment := false
	for i, c := range data {
		switch {
		case c == '\n':
			ln++
			comment = false
			if quote == '\'' || quote == '"' {
				// quoted scalars may span lines; keep the quote open
			}
		case comment:
		case quote != 0:
			if c == quote && (quote == '\'' || i == 0 || data[i-1] != '\\') {
				quote = 0
			}
		case c == '#' && (i == 0 || data[i-1] == ' ' || data[i-1] == '\t' || data[i-1] == '\n'):
			comment = true
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '{':
			cur++
			if cur > depth {
				depth, line = cur, ln
			}
		case c == ']' || c == '}':
			cur--
		}
	}
	return line, depth
}

// Err returns the problems recorded so far with Errorf and Decode, or nil.
func (sc *Scenario) Err() error {
	if len(sc.dec.errs) == 0 {
		return nil
	}
	return sc.dec.errs.sorted()
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

// Decode decodes a component's parameter node (kept as a raw YAML node in
// the scenario) into dst, a pointer to a struct holding the defaults, with
// the same strict checks as the rest of the file. Keys listed in skip
// (such as `type`) are ignored. Problems are recorded on the scenario and
// reported by Err; Decode returns false if there were any.
func (sc *Scenario) Decode(n ast.Node, path string, dst any, skip ...string) bool {
	before := len(sc.dec.errs)
	sc.dec.decode(n, path, reflect.ValueOf(dst).Elem(), skip...)
	return len(sc.dec.errs) == before
}

// TypeOf returns the value of the discriminating key (such as `type` or
// `backend`) of a component mapping, recording a problem when it is missing
// or not a string.
func (sc *Scenario) TypeOf(n ast.Node, path, key string) (string, bool) {
	if n == nil {
		sc.Errorf(path, "missing")
		return "", false
	}
	r := sc.dec.resolve(n)
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

// DecodeKey decodes the value of one key of a mapping node into dst (a
// pointer), leaving dst unchanged when the key is absent.
func (sc *Scenario) DecodeKey(n ast.Node, path, key string, dst any) bool {
	if n == nil {
		return true
	}
	entries, ok := sc.dec.mapEntries(sc.dec.resolve(n), path)
	if !ok {
		return true // reported by the caller's Decode
	}
	before := len(sc.dec.errs)
	for _, mv := range entries {
		if scalarText(mv.Key) == key {
			sc.dec.decode(mv.Value, joinPath(path, key), reflect.ValueOf(dst).Elem())
		}
	}
	return len(sc.dec.errs) == before
}
