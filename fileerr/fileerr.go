// Package fileerr is how skyloop reports the problems of an input file (a
// scenario, an experiment): each one located by file, line and field path
// ("quickstart.yaml:12: vehicles[1].count: must be >= 1, got 0"), listed in
// line order, at most a limit of them. Package scenario records the
// problems it finds while decoding, and the engine those it finds while
// checking a decoded scenario, both in these types.
package fileerr

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Error is one problem in an input file, located by line and field path.
type Error struct {
	File string // the file's name as the user gave it
	Line int    // 1-based; 0 when unknown
	Path string // field path such as vehicles[1].count; empty for the whole file
	Msg  string
}

// Error formats the problem as "file:line: path: message".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in a file, in file order.
type Errors []*Error

// Error lists the problems one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// List returns the problems es to list: a copy in line order (field paths
// with indexes by number at the same line), the first max of them and,
// when there are more, a last line for file that counts the others ("more
// than" that many when overflow says some were not even kept). It returns
// nil when es is empty.
func List(es Errors, file string, max int, overflow bool) error {
	if len(es) == 0 {
		return nil
	}
	es = slices.Clone(es)
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Line != es[j].Line {
			return es[i].Line < es[j].Line
		}
		return pathLess(es[i].Path, es[j].Path)
	})
	if len(es) > max {
		more := fmt.Sprintf("%d", len(es)-max)
		if overflow {
			more = "more than " + more
		}
		es = append(es[:max:max], &Error{File: file,
			Msg: fmt.Sprintf("... and %s more problems (the first %d are listed)", more, max)})
	}
	return es
}

// pathLess orders field paths with indexes by number: values[2] comes
// before values[10].
func pathLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

// digits returns the length of the run of decimal digits that starts s.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
