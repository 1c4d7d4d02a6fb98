// Package fields collects problems with named parameters: every parameter
// struct's Validate returns an Errors, and the scenario loader, the
// backends and the CLI turn it into messages the same way, in field order.
package fields

import (
	"maps"
	"slices"
	"strings"
)

// Errors maps a field name (or a dotted path below the struct being
// checked, such as "legs[0].spacing") to what is wrong with it. A nil or
// empty Errors means no problem.
type Errors map[string]string

// Keys returns the fields with a problem, sorted, so that messages come
// out the same way every time.
func (e Errors) Keys() []string { return slices.Sorted(maps.Keys(e)) }

// Report calls errorf once per problem, in field order, with the field's
// full path (base.field) and the problem.
func (e Errors) Report(base string, errorf func(path, format string, args ...any)) {
	for _, k := range e.Keys() {
		errorf(join(base, k), "%s", e[k])
	}
}

// Err returns nil when there is no problem, otherwise an *Error that
// lists every problem, prefixed with what was checked (e.g. "impair").
func (e Errors) Err(what string) error {
	if len(e) == 0 {
		return nil
	}
	return &Error{What: what, Fields: e}
}

// Error is a set of field problems as an error.
type Error struct {
	// What names what was checked ("impair", "autopilot parameter").
	What string
	// Fields are the problems.
	Fields Errors
}

// Error lists the problems in field order: "what: field: problem; ...".
func (e *Error) Error() string {
	var b strings.Builder
	for i, k := range e.Fields.Keys() {
		if i > 0 {
			b.WriteString("; ")
		}
		if e.What != "" {
			b.WriteString(e.What)
			b.WriteString(": ")
		}
		b.WriteString(k)
		b.WriteString(": ")
		b.WriteString(e.Fields[k])
	}
	return b.String()
}

func join(base, k string) string {
	if base == "" {
		return k
	}
	return base + "." + k
}

// Validator is a parameter struct that checks itself.
type Validator interface {
	// Validate returns the problems of the fields, nil or empty if none.
	Validate() Errors
}
