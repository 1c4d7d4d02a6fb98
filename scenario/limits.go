package scenario

import (
	"fmt"
	"io"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"
)

// Limits on input files (scenarios and experiment files). Within them any
// file, whatever its content, is accepted or rejected in well under a
// second and 100 MB: the YAML library's cost grows faster than the file in
// several ways (deep nesting, long keys, long block mappings, error
// messages), so a file is measured before the library parses it, and
// anchors are measured before anything is decoded. Real scenarios are a
// few KB and far from every limit. The costliest inputs found within the
// limits (bounds_test.go) take 0.4 s and allocate 80 MB, engine checks
// included.
const (
	// MaxFileSize is the largest input file, in bytes.
	MaxFileSize = 1 << 20
	// MaxDepth is the deepest nesting of flow brackets ([ and {).
	MaxDepth = 64
	// MaxTokens bounds the YAML tokens of a file (scalars, indicators such
	// as , : [ ] { } and comments), estimated from the text before the YAML
	// library sees it: a word of a quoted string or a comment counts as a
	// token too.
	MaxTokens = 32_000
	// MaxNodes bounds the YAML nodes of a file with every alias (*name,
	// also in merge keys <<) counted as a copy of its anchor's value: it
	// defuses "billion laughs" and merge-key bombs before decoding.
	MaxNodes = 64_000
	// MaxErrors is the number of problems listed; the rest are counted.
	MaxErrors = 100
	// maxParseCost bounds the YAML parser's work beyond its per-token
	// cost, in bytes: the parser stores every node's path from the root
	// (so its work grows with nesting depth times key length per node),
	// and builds a block mapping of k keys in k*k steps.
	maxParseCost = 16 << 20
	// MaxKeptErrors is how many problems are kept (MaxErrors of them, in
	// line order, are listed); beyond that, further problems are only
	// noted ("more than N more problems").
	MaxKeptErrors = 1000
)

// ReadLimited reads an input file's text from r, reading at most
// MaxFileSize+1 bytes: a larger file, or an endless one such as /dev/zero,
// is refused with an Errors value (bad input) naming name, without reading
// the rest. Opening the file is the caller's (scenario/scenariofile does
// it for files on disk).
func ReadLimited(name string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, Errors{tooLarge(name)}
	}
	return data, nil
}

func tooLarge(name string) *Error {
	return &Error{File: name, Msg: fmt.Sprintf("file larger than %d bytes (%d KiB): a scenario or experiment file is a few KB", MaxFileSize, MaxFileSize>>10)}
}

// prescan measures raw text before the YAML library sees it: the nesting
// of flow brackets, and an upper bound of the number of tokens. It returns
// the line and a message for the first limit exceeded, or "".
//
// The token count errs on the high side: every run of characters between
// blanks, and every flow indicator or colon, counts, also inside quoted
// strings and comments, so that no text can hide tokens from it.
func prescan(data []byte) (line int, msg string) {
	if l, depth := flowDepth(data); depth > MaxDepth {
		return l, fmt.Sprintf("brackets nested %d deep: at most %d", depth, MaxDepth)
	}
	if n, ln := tokenCount(data, MaxTokens); n > MaxTokens {
		return ln, fmt.Sprintf("more than %d YAML tokens (values, punctuation, words of strings and comments): a scenario or experiment file has a few thousand", MaxTokens)
	}
	return 0, ""
}

// Tokens counts the YAML tokens of data as the loader's limit (MaxTokens)
// does: every run of characters between blanks, and every flow indicator
// or colon, also inside quoted strings and comments.
func Tokens(data []byte) int {
	n, _ := tokenCount(data, -1)
	return n
}

// tokenCount counts tokens until the count passes limit (< 0: no limit);
// line is where it stopped.
func tokenCount(data []byte, limit int) (n, line int) {
	line = 1
	inWord := false
	for _, c := range data {
		switch c {
		case '\n':
			line++
			inWord = false
		case ' ', '\t', '\r':
			inWord = false
		case '[', ']', '{', '}', ',', ':':
			n++
			inWord = false
		default:
			if !inWord {
				n++
				inWord = true
			}
		}
		if limit >= 0 && n > limit {
			return n, line
		}
	}
	return n, line
}

// lexYAML splits text into the YAML library's tokens, turning a panic on
// hostile input into an error.
func lexYAML(data []byte) (tokens token.Tokens, err error) {
	defer func() {
		if r := recover(); r != nil {
			tokens, err = nil, fmt.Errorf("cannot parse YAML: %v", r)
		}
	}()
	return lexer.Tokenize(string(data)), nil
}

// costFrame is one level of nesting in parseCost.
type costFrame struct {
	kind byte // 'k' block mapping key, '-' block sequence entry, '[' flow collection, 'f' flow mapping key
	col  int  // column (block frames)
	cost int  // bytes the level adds to a node's path
	keys int  // keys of the block mapping so far ('k')
}

// parseCost estimates, from the tokens, the work of the YAML parser beyond
// a constant per token: the length of the path it stores with every node
// (the keys and indexes from the root, so deep nesting and long keys cost
// per node), and the steps of building block mappings (quadratic in the
// number of keys of one mapping). It returns the line where the estimate
// passes limit, or 0. The estimate follows nesting by columns and flow
// brackets, and errs on the high side.
func parseCost(tokens token.Tokens, limit int) int {
	var stack []costFrame
	path, total, flow := 0, 0, 0
	pop := func() {
		path -= stack[len(stack)-1].cost
		stack = stack[:len(stack)-1]
	}
	push := func(f costFrame) {
		stack = append(stack, f)
		path += f.cost
	}
	for i, tk := range tokens {
		if tk == nil || tk.Position == nil {
			continue
		}
		col := tk.Position.Column
		switch tk.Type {
		case token.CommentType, token.MappingValueType:
			// no nesting, but a path like any other node
		case token.SequenceStartType, token.MappingStartType:
			push(costFrame{kind: '[', cost: 12})
			flow++
		case token.SequenceEndType, token.MappingEndType:
			if flow == 0 {
				continue // unbalanced: the parser reports it
			}
			for len(stack) > 0 && stack[len(stack)-1].kind != '[' {
				pop()
			}
			pop()
			flow--
		case token.CollectEntryType:
			for flow > 0 && stack[len(stack)-1].kind == 'f' {
				pop()
			}
		case token.SequenceEntryType:
			if flow == 0 {
				for len(stack) > 0 && (stack[len(stack)-1].col > col || stack[len(stack)-1].col == col && stack[len(stack)-1].kind == '-') {
					pop()
				}
				push(costFrame{kind: '-', col: col, cost: 12})
			}
		default:
			if i+1 >= len(tokens) || tokens[i+1].Type != token.MappingValueType {
				break // not a key
			}
			cost := 2*len(tk.Value) + 4 // ".key", quoted when it has special characters
			if flow > 0 {
				for stack[len(stack)-1].kind == 'f' {
					pop()
				}
				push(costFrame{kind: 'f', cost: cost})
				break
			}
			keys := 0
			for len(stack) > 0 && (stack[len(stack)-1].col > col || stack[len(stack)-1].col == col && stack[len(stack)-1].kind != '[') {
				if f := stack[len(stack)-1]; f.col == col && f.kind == 'k' {
					keys = f.keys
				}
				pop()
			}
			keys++
			total += 16 * keys
			push(costFrame{kind: 'k', col: col, cost: cost, keys: keys})
		}
		total += path
		if total > limit {
			return tk.Position.Line
		}
	}
	return 0
}

// expansion measures a document's size with aliases expanded.
type expansion struct {
	anchors map[string]ast.Node
	memo    map[ast.Node]int
	active  map[ast.Node]bool
	limit   int
	line    int    // where a problem was found
	msg     string // the problem, "" if none
}

// checkExpansion returns the line and a message if body, with every alias
// counted as a copy of its anchor's value, has more than limit nodes or an
// alias inside its own anchor's value; else 0, "".
func checkExpansion(body ast.Node, anchors map[string]ast.Node, limit int) (int, string) {
	x := &expansion{anchors: anchors, memo: map[ast.Node]int{}, active: map[ast.Node]bool{}, limit: limit}
	if n := x.size(body); n > limit && x.msg == "" {
		x.line, x.msg = line(body), fmt.Sprintf("more than %d YAML nodes", limit)
	}
	return x.line, x.msg
}

// size counts the nodes of n, aliases expanded, saturating at limit+1.
func (x *expansion) size(n ast.Node) int {
	c := &sizeCounter{x: x}
	ast.Walk(c, n)
	return c.n
}

type sizeCounter struct {
	x *expansion
	n int
}

func (c *sizeCounter) Visit(n ast.Node) ast.Visitor {
	x := c.x
	if x.msg != "" || c.n > x.limit || n == nil {
		return nil
	}
	c.n++
	a, ok := n.(*ast.AliasNode)
	if !ok {
		return c
	}
	if a.Value == nil || a.Value.GetToken() == nil {
		return nil
	}
	name := strings.TrimSpace(a.Value.GetToken().Value)
	target, ok := x.anchors[name]
	if !ok || target == nil {
		return nil // reported as an unknown anchor when decoded
	}
	s, done := x.memo[target]
	if !done {
		if x.active[target] {
			x.line, x.msg = line(a), fmt.Sprintf("alias *%s is inside the value of its own anchor &%s (a cycle)", name, name)
			return nil
		}
		x.active[target] = true
		s = x.size(target)
		delete(x.active, target)
		x.memo[target] = s
	}
	c.n += s
	if c.n > x.limit && x.msg == "" {
		c.n = x.limit + 1
		x.line, x.msg = line(a), fmt.Sprintf("anchors and merge keys expand to more than %d YAML nodes (*%s alone is %s)", x.limit, name, nodeCount(s, x.limit))
	}
	return nil
}

func nodeCount(n, limit int) string {
	if n > limit {
		return fmt.Sprintf("more than %d", limit)
	}
	return fmt.Sprintf("%d", n)
}

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
		case comment:
		case quote != 0:
			if c == quote && (quote == '\'' || i == 0 || data[i-1] != '\\') {
				quote = 0
			}
		case c == '#' && (i == 0 || data[i-1] == ' ' || data[i-1] == '\t' || data[i-1] == '\n'):
			comment = true
		case (c == '"' || c == '\'') && (i == 0 || strings.IndexByte(" \t\r\n[{,:", data[i-1]) >= 0):
			quote = c // a quote starts a scalar only at its beginning (not in don't)
		case c == '[' || c == '{':
			cur++
			if cur > depth {
				depth, line = cur, ln
			}
		case c == ']' || c == '}':
			cur = max(cur-1, 0) // a stray closing bracket must not hide deeper nesting
		}
	}
	return line, depth
}
