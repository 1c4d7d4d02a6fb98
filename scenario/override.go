package scenario

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// Overrides: experiments (sweeps) change scenarios by field path, such as
//
//	network.latency: 50ms
//	vehicles[robot].count: 5
//	vehicles[0].behaviors[beacon].policy: event
//
// A path is a chain of mapping keys separated by dots and list elements in
// brackets: a number (from 0), or the name of the element: the list item
// whose `name` is that (vehicle groups, fixed nodes, measures), or whose
// `type` is that when it has no name (behaviours). The value replaces what
// the scenario has there (a whole mapping when the value is one); keys
// that are missing are added.
//
// The changed scenario is printed back to YAML and parsed like any other;
// the problems found in it are mapped back to the file and line each part
// came from (the scenario file, or the experiment file for the values set),
// so that a bad value in an experiment is reported where it was written.

// Set is one override: a value, written in document Doc, for the field at
// Path.
type Set struct {
	Path  string
	Value Raw
	Doc   *Document
	// At locates the override itself (the path's key or the sweep's
	// param), for problems with the path.
	At Raw
}

// origin is where a part of an overridden scenario came from.
type origin struct {
	file string
	line int
}

// tnode is a YAML value as a tree of plain values that remember their
// origin: what overrides change and Print writes.
type tnode struct {
	kind  byte // 'm' mapping, 's' sequence, 'v' scalar
	keys  []string
	kat   []origin // where each key was written
	vals  []*tnode
	items []*tnode
	text  string // scalar: YAML text, printable as is
	at    origin
}

// Overridden is a scenario with overrides applied, as YAML text.
type Overridden struct {
	// Text is the scenario as YAML.
	Text []byte
	// lines[i] is the origin of line i+1 of Text.
	lines []origin
	base  string
}

// Override applies sets to the scenario document base. Problems with the
// paths (a list element that does not exist, a path into a value that is
// not a mapping) are returned as Errors located at the sets.
func Override(base *Document, sets []Set) (*Overridden, error) {
	// Aliases make copies of their anchor's value: the text of a string is
	// worked out once.
	texts := map[ast.Node]string{}
	root := base.tree(base.Root.n, 0, texts)
	var es Errors
	for _, s := range sets {
		v := s.Doc.tree(s.Value.n, 0, texts)
		if err := root.set(s.Path, v, s.Doc.origin(s.At.n)); err != nil {
			o := s.Doc.origin(s.At.n)
			es = append(es, &Error{File: o.file, Line: o.line, Path: s.Path, Msg: err.Error()})
		}
	}
	if len(es) > 0 {
		return nil, es
	}
	o := &Overridden{base: base.File}
	var b strings.Builder
	root.print(&b, 0, &o.lines)
	if b.Len() > MaxFileSize {
		// Aliases copied into the scenario, or long paths, can make its
		// text far larger than the files it came from: it is parsed like a
		// file, and printing stops at the limit.
		file := base.File
		if len(sets) > 0 {
			file = sets[0].Doc.File
		}
		return nil, Errors{{File: file, Msg: fmt.Sprintf("%s %s is larger than %d bytes (%d KiB): a scenario is a few KB",
			tooLargeMsg, base.File, MaxFileSize, MaxFileSize>>10)}}
	}
	o.Text = []byte(b.String())
	return o, nil
}

const tooLargeMsg = "with the changes applied,"

// TooLarge reports whether err is Override's refusal of a scenario whose
// text with the changes applied would exceed MaxFileSize (the refusal
// costs printing that much).
func TooLarge(err error) bool {
	var es Errors
	return errors.As(err, &es) && len(es) == 1 && es[0].Line == 0 && strings.HasPrefix(es[0].Msg, tooLargeMsg)
}

// Locate maps the problems of a scenario parsed from o.Text (Errors) back
// to where their lines came from; other errors are returned as they are.
func (o *Overridden) Locate(err error) error {
	var es Errors
	if !errors.As(err, &es) {
		return err
	}
	out := make(Errors, 0, len(es))
	for _, e := range es {
		c := *e
		c.File = o.base
		if e.Line > 0 && e.Line <= len(o.lines) {
			c.File, c.Line = o.lines[e.Line-1].file, o.lines[e.Line-1].line
		}
		out = append(out, &c)
	}
	return out
}

func (d *Document) origin(n ast.Node) origin { return origin{file: d.File, line: line(n)} }

// maxTreeDepth bounds the nesting of trees (the parser's cost check
// bounds it far lower in practice).
const maxTreeDepth = 200

// tree converts node n of d, resolving anchors, aliases and merge keys;
// texts holds the YAML text of the strings converted so far.
func (d *Document) tree(n ast.Node, depth int, texts map[ast.Node]string) *tnode {
	n = d.dec.resolve(n)
	at := d.origin(n)
	if n == nil || depth > maxTreeDepth {
		return &tnode{kind: 'v', text: "null", at: at}
	}
	switch x := n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		entries, _ := d.dec.mapEntries(x, "")
		t := &tnode{kind: 'm', at: at}
		for _, mv := range entries {
			k := scalarText(mv.Key)
			if i := t.index(k); i >= 0 {
				t.vals[i] = d.tree(mv.Value, depth+1, texts) // set twice: the decoder reports it on the file itself
				continue
			}
			t.keys = append(t.keys, k)
			t.kat = append(t.kat, d.origin(mv.Key))
			t.vals = append(t.vals, d.tree(mv.Value, depth+1, texts))
		}
		return t
	case *ast.SequenceNode:
		t := &tnode{kind: 's', at: at}
		for _, e := range x.Values {
			t.items = append(t.items, d.tree(e, depth+1, texts))
		}
		return t
	case *ast.NullNode:
		return &tnode{kind: 'v', text: "null", at: at}
	case *ast.StringNode:
		text, ok := texts[x]
		if !ok {
			if tk := x.GetToken(); tk != nil && tk.Type == token.StringType && plainSafe(x.Value) {
				text = x.Value
			} else {
				text = strconv.Quote(x.Value)
			}
			texts[x] = text
		}
		return &tnode{kind: 'v', text: text, at: at}
	case *ast.LiteralNode:
		text, ok := texts[x]
		if !ok {
			text = strconv.Quote(x.Value.Value)
			texts[x] = text
		}
		return &tnode{kind: 'v', text: text, at: at}
	}
	if isScalar(n) {
		return &tnode{kind: 'v', text: scalarText(n), at: at}
	}
	// Anything else (an unknown alias, a directive) is left for the
	// scenario decoder to refuse: as a string, it cannot be taken for a
	// valid value of another type.
	return &tnode{kind: 'v', text: strconv.Quote(fmt.Sprintf("<%s>", kindName(n))), at: at}
}

// plainSafe reports whether a plain scalar's text can be printed as is in
// block context.
func plainSafe(s string) bool {
	return s != "" && !strings.ContainsAny(s, "\n\r\t#:'\"") && strings.TrimSpace(s) == s
}

func (t *tnode) index(key string) int {
	for i, k := range t.keys {
		if k == key {
			return i
		}
	}
	return -1
}

var (
	pathKeyRE = regexp.MustCompile(`^[A-Za-z0-9_]+`)
	pathSelRE = regexp.MustCompile(`^\[([A-Za-z0-9_.=-]+)\]`)
)

// set puts v at path below t (a mapping), creating missing mappings.
func (t *tnode) set(path string, v *tnode, at origin) error {
	if path == "" {
		return fmt.Errorf("empty path")
	}
	cur := t
	rest := path
	// done is the part of the path followed so far (a prefix of path:
	// building it step by step would cost the square of a long path).
	done := func() string { return strings.TrimSuffix(path[:len(path)-len(rest)], ".") }
	for depth := 0; ; depth++ {
		if depth > maxTreeDepth {
			return fmt.Errorf("bad path: more than %d levels", maxTreeDepth)
		}
		if m := pathSelRE.FindStringSubmatch(rest); m != nil {
			if cur.kind != 's' {
				return fmt.Errorf("%s is not a list", orRoot(done()))
			}
			i, err := cur.element(m[1])
			if err != nil {
				return fmt.Errorf("%s: %v", orRoot(done()), err)
			}
			rest = rest[len(m[0]):]
			if rest == "" {
				cur.items[i] = v
				return nil
			}
			cur = cur.items[i]
		} else {
			k := pathKeyRE.FindString(rest)
			if k == "" {
				return fmt.Errorf("bad path at %q: want a field name or [element]", rest)
			}
			if cur.kind == 'v' && cur.text == "null" {
				*cur = tnode{kind: 'm', at: cur.at}
			}
			if cur.kind != 'm' {
				return fmt.Errorf("%s is not a mapping of fields", orRoot(done()))
			}
			rest = rest[len(k):]
			i := cur.index(k)
			if rest == "" {
				if i >= 0 {
					cur.vals[i] = v
				} else {
					cur.keys, cur.kat, cur.vals = append(cur.keys, k), append(cur.kat, at), append(cur.vals, v)
				}
				return nil
			}
			if i < 0 {
				cur.keys, cur.kat, cur.vals = append(cur.keys, k), append(cur.kat, at), append(cur.vals, &tnode{kind: 'm', at: at})
				i = len(cur.keys) - 1
			}
			cur = cur.vals[i]
		}
		if strings.HasPrefix(rest, ".") {
			rest = rest[1:]
			if rest == "" || rest[0] == '[' || rest[0] == '.' {
				return fmt.Errorf("bad path: a field name must follow %q", done()+".")
			}
		} else if !strings.HasPrefix(rest, "[") {
			return fmt.Errorf("bad path at %q: want .field or [element]", rest)
		}
	}
}

func orRoot(p string) string {
	if p == "" {
		return "the scenario"
	}
	return p
}

// element finds the list item that sel names: an index, or the item whose
// name (or, lacking one, type) is sel.
func (t *tnode) element(sel string) (int, error) {
	if n, err := strconv.Atoi(sel); err == nil {
		if n < 0 || n >= len(t.items) {
			return 0, fmt.Errorf("no element [%d] (the list has %d)", n, len(t.items))
		}
		return n, nil
	}
	found := -1
	var names []string
	for i, it := range t.items {
		name := it.field("name")
		if name == "" {
			name = it.field("type")
		}
		names = append(names, name)
		if name == sel {
			if found >= 0 {
				return 0, fmt.Errorf("%q names elements %d and %d: use an index", sel, found, i)
			}
			found = i
		}
	}
	if found < 0 {
		return 0, fmt.Errorf("no element named %q (elements: %s)", sel, strings.Join(names, ", "))
	}
	return found, nil
}

// field returns the scalar text of a mapping's key, unquoted ("" if none).
func (t *tnode) field(key string) string {
	if t.kind != 'm' {
		return ""
	}
	i := t.index(key)
	if i < 0 || t.vals[i].kind != 'v' {
		return ""
	}
	s := t.vals[i].text
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

var plainKeyRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.\-]*$`)

// print writes t in block style at the given indentation, recording the
// origin of every line. It stops soon after the text exceeds MaxFileSize.
func (t *tnode) print(b *strings.Builder, indent int, lines *[]origin) {
	if b.Len() > MaxFileSize {
		return
	}
	pad := strings.Repeat(" ", indent)
	line := func(s string, at origin) {
		b.WriteString(s)
		b.WriteByte('\n')
		*lines = append(*lines, at)
	}
	switch t.kind {
	case 'm':
		if len(t.keys) == 0 {
			line(pad+"{}", t.at)
			return
		}
		for i, k := range t.keys {
			if b.Len() > MaxFileSize {
				return
			}
			if !plainKeyRE.MatchString(k) {
				k = strconv.Quote(k)
			}
			v := t.vals[i]
			switch {
			case v.kind == 'v':
				at := v.at
				if at.file == "" {
					at = t.kat[i]
				}
				line(pad+k+": "+v.text, at)
			case v.kind == 'm' && len(v.keys) == 0:
				line(pad+k+": {}", v.at)
			case v.kind == 's' && len(v.items) == 0:
				line(pad+k+": []", v.at)
			default:
				line(pad+k+":", t.kat[i])
				v.print(b, indent+2, lines)
			}
		}
	case 's':
		if len(t.items) == 0 {
			line(pad+"[]", t.at)
			return
		}
		for _, it := range t.items {
			if b.Len() > MaxFileSize {
				return
			}
			if it.kind == 'v' {
				line(pad+"- "+it.text, it.at)
				continue
			}
			line(pad+"-", it.at)
			it.print(b, indent+2, lines)
		}
	default:
		line(pad+t.text, t.at)
	}
}
