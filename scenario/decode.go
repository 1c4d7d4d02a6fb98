package scenario

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"skyloop/fileerr"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// yamlUnmarshaler is the callback-style interface of types that decode
// themselves from a simpler Go value (geom.Vec3 from a list of numbers).
type yamlUnmarshaler interface {
	UnmarshalYAML(func(any) error) error
}

var (
	rawType         = reflect.TypeOf(Raw{})
	textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
	cbUnmarshaler   = reflect.TypeOf((*yamlUnmarshaler)(nil)).Elem()
)

// decoder turns YAML nodes into Go values, strictly: unknown keys, wrong
// types and out-of-range numbers become Errors naming the line and the field
// path. Fields absent from the YAML keep the values they had (the defaults).
type decoder struct {
	file    string
	anchors map[string]ast.Node
	// errs holds the problems recorded, up to MaxKeptErrors; nerrs counts
	// every report, and overflow says that some were not kept.
	errs     Errors
	nerrs    int
	overflow bool
	// at holds the path and line of every problem kept, paths their paths:
	// a problem is recorded once, whatever the number of ways it is
	// reached.
	at    map[errAt]bool
	paths map[string]bool
	// seen maps field paths to the node that set them, for locating
	// validation errors later.
	seen map[string]ast.Node
}

type errAt struct {
	path string
	line int
}

// full reports whether no more problems are kept; it counts the report.
func (d *decoder) full() bool {
	if len(d.errs) < MaxKeptErrors {
		return false
	}
	d.nerrs++
	d.overflow = true
	return true
}

func (d *decoder) errorf(n ast.Node, path, format string, args ...any) {
	l := line(n)
	if d.at[errAt{path, l}] {
		return // the same problem reached twice
	}
	if d.full() {
		return
	}
	d.add(&Error{File: d.file, Line: l, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// add records a problem unless one with the same path and line is recorded.
func (d *decoder) add(e *Error) {
	k := errAt{e.Path, e.Line}
	if d.at[k] || d.full() {
		return
	}
	if d.at == nil {
		d.at, d.paths = map[errAt]bool{}, map[string]bool{}
	}
	d.at[k] = true
	d.paths[e.Path] = true
	d.nerrs++
	d.errs = append(d.errs, e)
}

// covered reports whether a problem is recorded at path or at a path
// above it (vehicles[1] is above vehicles[1].count and vehicles[1][0]).
func (d *decoder) covered(path string) bool {
	if d.paths[path] {
		return true
	}
	for i := 0; i < len(path); i++ {
		if (path[i] == '.' || path[i] == '[') && d.paths[path[:i]] {
			return true
		}
	}
	return false
}

// err returns the problems recorded, the first MaxErrors in line order and
// a count of the others, or nil.
func (d *decoder) err() error {
	if d.nerrs == 0 {
		return nil
	}
	return fileerr.List(d.errs, d.file, MaxErrors, d.overflow)
}

func line(n ast.Node) int {
	if n == nil || reflect.ValueOf(n).IsNil() {
		return 0
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line
	}
	return 0
}

// resolve strips anchors, tags and aliases.
func (d *decoder) resolve(n ast.Node) ast.Node {
	for i := 0; i < 100 && n != nil; i++ {
		switch x := n.(type) {
		case *ast.AnchorNode:
			n = x.Value
		case *ast.TagNode:
			n = x.Value
		case *ast.AliasNode:
			name := strings.TrimSpace(x.Value.GetToken().Value)
			a, ok := d.anchors[name]
			if !ok {
				return x
			}
			n = a
		default:
			return n
		}
	}
	return n
}

func joinPath(base, key string) string {
	if base == "" {
		return key
	}
	return base + "." + key
}

func kindName(n ast.Node) string {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode, *ast.LiteralNode:
		return fmt.Sprintf("the string %q", scalarText(n))
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "the number " + scalarText(n)
	case *ast.BoolNode:
		return "the boolean " + scalarText(n)
	case *ast.NullNode:
		return "null"
	}
	return "a " + n.Type().String()
}

func scalarText(n ast.Node) string {
	switch x := n.(type) {
	case *ast.StringNode:
		return x.Value
	case *ast.LiteralNode:
		return x.Value.Value
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return ""
}

func isNull(n ast.Node) bool {
	_, ok := n.(*ast.NullNode)
	return ok
}

// mapEntries returns the key/value pairs of a mapping node, expanding YAML
// merge keys (<<): keys written in the mapping override merged ones, and an
// earlier merge wins over a later one. ok is false if n is not a mapping.
func (d *decoder) mapEntries(n ast.Node, path string) (entries []*ast.MappingValueNode, ok bool) {
	return d.mapEntriesDepth(n, path, 0)
}

func (d *decoder) mapEntriesDepth(n ast.Node, path string, depth int) (entries []*ast.MappingValueNode, ok bool) {
	var raw []*ast.MappingValueNode
	switch x := n.(type) {
	case *ast.MappingNode:
		raw = x.Values
	case *ast.MappingValueNode:
		raw = []*ast.MappingValueNode{x}
	default:
		return nil, false
	}
	explicit := map[string]bool{}
	for _, mv := range raw {
		if mv.Key != nil && !mv.Key.IsMergeKey() {
			explicit[scalarText(mv.Key)] = true
			entries = append(entries, mv)
		}
	}
	if depth > 32 {
		return entries, true
	}
	for _, mv := range raw {
		if mv.Key == nil || !mv.Key.IsMergeKey() {
			continue
		}
		var srcs []ast.Node
		if seq, isSeq := d.resolve(mv.Value).(*ast.SequenceNode); isSeq {
			srcs = seq.Values
		} else {
			srcs = []ast.Node{mv.Value}
		}
		for _, src := range srcs {
			src = d.resolve(src)
			if a, isAlias := src.(*ast.AliasNode); isAlias {
				d.errorf(a, path, "unknown anchor %q", strings.TrimSpace(a.Value.GetToken().Value))
				continue
			}
			inner, ok := d.mapEntriesDepth(src, path, depth+1)
			if !ok {
				d.errorf(mv, path, "a merge key (<<) needs a mapping, got %s", kindName(src))
				continue
			}
			for _, e := range inner {
				k := scalarText(e.Key)
				if !explicit[k] {
					explicit[k] = true
					entries = append(entries, e)
				}
			}
		}
	}
	return entries, true
}

type fieldInfo struct {
	index []int
	name  string
}

// fieldCache maps struct types to their yamlFields.
var fieldCache sync.Map

// yamlFields lists the YAML fields of a struct type; fields tagged
// `yaml:",inline"` contribute their own fields at the same level. The
// result is shared: do not modify it.
func yamlFields(t reflect.Type) []fieldInfo {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]fieldInfo)
	}
	fs := structFields(t)
	fieldCache.Store(t, fs)
	return fs
}

func structFields(t reflect.Type) []fieldInfo {
	var fs []fieldInfo
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if opts == "inline" && f.Type.Kind() == reflect.Struct {
			for _, sub := range structFields(f.Type) {
				sub.index = append(append([]int{}, f.Index...), sub.index...)
				fs = append(fs, sub)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fs = append(fs, fieldInfo{index: f.Index, name: name})
	}
	return fs
}

// decode stores node n into v (addressable), reporting problems under path.
// skip names mapping keys to ignore at this level (a component's type key).
func (d *decoder) decode(n ast.Node, path string, v reflect.Value, skip ...string) {
	if n == nil {
		return
	}
	if d.seen != nil {
		if _, dup := d.seen[path]; !dup {
			d.seen[path] = n
		}
	}
	if v.Type() == rawType {
		if !isNull(d.resolve(n)) { // an empty value keeps the default
			v.Set(reflect.ValueOf(Raw{n}))
		}
		return
	}
	n = d.resolve(n)
	if a, ok := n.(*ast.AliasNode); ok {
		d.errorf(a, path, "unknown anchor %q", strings.TrimSpace(a.Value.GetToken().Value))
		return
	}
	if _, ok := n.(*ast.MappingKeyNode); ok {
		d.errorf(n, path, "explicit keys (? key) are not supported; write key: value")
		return
	}
	if isNull(n) {
		return // null keeps the default
	}
	t := v.Type()
	if v.CanAddr() {
		pv := v.Addr()
		if pv.Type().Implements(cbUnmarshaler) {
			detailed := false
			cb := func(out any) error {
				sub := &decoder{file: d.file, anchors: d.anchors, seen: d.seen}
				sub.decode(n, path, reflect.ValueOf(out).Elem())
				if sub.nerrs == 0 {
					return nil
				}
				// Keep problems inside the value (one bad list element);
				// for a value of the wrong shape the type's own message
				// says more.
				for _, e := range sub.errs {
					detailed = detailed || e.Path != path
				}
				if detailed {
					for _, e := range sub.errs {
						d.add(e)
					}
					if sub.overflow {
						d.overflow = true
					}
				}
				return fmt.Errorf("bad value")
			}
			if err := pv.Interface().(yamlUnmarshaler).UnmarshalYAML(cb); err != nil && !detailed {
				d.errorf(n, path, "%v", err)
			}
			return
		}
		if pv.Type().Implements(textUnmarshaler) && t.Kind() != reflect.Struct {
			if !isScalar(n) {
				d.errorf(n, path, "want a scalar value, got %s", kindName(n))
				return
			}
			if err := pv.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(scalarText(n))); err != nil {
				d.errorf(n, path, "%v", err)
			}
			return
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.decode(n, path, v.Elem(), skip...)
	case reflect.Struct:
		entries, ok := d.mapEntries(n, path)
		if !ok {
			d.errorf(n, path, "want a mapping of fields, got %s", kindName(n))
			return
		}
		fields := yamlFields(t)
		seenKey := make(map[string]bool, len(entries))
		known := "" // the known field names, for messages
	entry:
		for _, mv := range entries {
			key := scalarText(mv.Key)
			for _, s := range skip {
				if key == s {
					continue entry
				}
			}
			kp := joinPath(path, key)
			if seenKey[key] {
				d.errorf(mv.Key, kp, "set twice")
				continue
			}
			seenKey[key] = true
			var fi *fieldInfo
			for i := range fields {
				if fields[i].name == key {
					fi = &fields[i]
				}
			}
			if fi == nil {
				if known == "" {
					names := make([]string, 0, len(fields)+len(skip))
					for _, f := range fields {
						names = append(names, f.name)
					}
					names = append(names, skip...)
					sort.Strings(names)
					names = slices.Compact(names) // a skipped key may also be a field
					known = strings.Join(names, ", ")
				}
				d.errorf(mv.Key, kp, "unknown field %q (known fields: %s)", key, known)
				continue
			}
			d.decode(mv.Value, kp, v.FieldByIndex(fi.index))
		}
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			d.errorf(n, path, "want a list, got %s", kindName(n))
			return
		}
		s := reflect.MakeSlice(t, len(seq.Values), len(seq.Values))
		for i, e := range seq.Values {
			d.decode(e, fmt.Sprintf("%s[%d]", path, i), s.Index(i))
		}
		v.Set(s)
	case reflect.Array:
		seq, ok := n.(*ast.SequenceNode)
		if !ok || len(seq.Values) != t.Len() {
			got := kindName(n)
			if ok {
				got = fmt.Sprintf("a list of %d", len(seq.Values))
			}
			d.errorf(n, path, "want a list of %d numbers, got %s", t.Len(), got)
			return
		}
		for i, e := range seq.Values {
			d.decode(e, fmt.Sprintf("%s[%d]", path, i), v.Index(i))
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			d.errorf(n, path, "internal: unsupported map key type %v", t.Key())
			return
		}
		entries, ok := d.mapEntries(n, path)
		if !ok {
			d.errorf(n, path, "want a mapping, got %s", kindName(n))
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
		for _, mv := range entries {
			key := scalarText(mv.Key)
			ev := reflect.New(t.Elem()).Elem()
			d.decode(mv.Value, joinPath(path, key), ev)
			v.SetMapIndex(reflect.ValueOf(key).Convert(t.Key()), ev)
		}
	case reflect.String:
		if !isScalar(n) {
			d.errorf(n, path, "want a string, got %s", kindName(n))
			return
		}
		v.SetString(scalarText(n))
	case reflect.Bool:
		b, ok := n.(*ast.BoolNode)
		if !ok {
			d.errorf(n, path, "want true or false, got %s", kindName(n))
			return
		}
		v.SetBool(b.Value)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, ok := intValue(n)
		if !ok {
			d.errorf(n, path, "want an integer, got %s", kindName(n))
			return
		}
		if v.OverflowInt(i) {
			d.errorf(n, path, "%d is out of range", i)
			return
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		i, ok := intValue(n)
		if !ok {
			d.errorf(n, path, "want a non-negative integer, got %s", kindName(n))
			return
		}
		if i < 0 || v.OverflowUint(uint64(i)) {
			d.errorf(n, path, "%d is out of range (want 0..%d)", i, uint64(1)<<(t.Bits())-1)
			return
		}
		v.SetUint(uint64(i))
	case reflect.Float32, reflect.Float64:
		f, ok := floatValue(n)
		if !ok {
			d.errorf(n, path, "want a number, got %s", kindName(n))
			return
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			d.errorf(n, path, "want a finite number, got %s", scalarText(n))
			return
		}
		v.SetFloat(f)
	default:
		d.errorf(n, path, "internal: cannot decode into %v", t)
	}
}

func isScalar(n ast.Node) bool {
	switch n.(type) {
	case *ast.StringNode, *ast.LiteralNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return true
	}
	return false
}

// plainNumber parses an unquoted scalar the YAML library left as a string
// although YAML 1.2 reads it as a number (2e6, 1e-3).
func plainNumber(n ast.Node) (float64, bool) {
	x, ok := n.(*ast.StringNode)
	if !ok || x.Token == nil || x.Token.Type != token.StringType {
		return 0, false
	}
	f, err := strconv.ParseFloat(x.Value, 64)
	return f, err == nil
}

func intValue(n ast.Node) (int64, bool) {
	if f, ok := plainNumber(n); ok {
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, false
		}
		return int64(f), true
	}
	x, ok := n.(*ast.IntegerNode)
	if !ok {
		return 0, false
	}
	switch v := x.Value.(type) {
	case int64:
		return v, true
	case uint64:
		if v > math.MaxInt64 {
			return 0, false
		}
		return int64(v), true
	}
	i, err := strconv.ParseInt(x.Token.Value, 0, 64)
	return i, err == nil
}

func floatValue(n ast.Node) (float64, bool) {
	switch x := n.(type) {
	case *ast.FloatNode:
		return x.Value, true
	case *ast.IntegerNode:
		i, ok := intValue(x)
		return float64(i), ok
	case *ast.InfinityNode:
		return x.Value, true
	case *ast.NanNode:
		return math.NaN(), true
	}
	return plainNumber(n)
}
