package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Map is a mapping whose keys keep their order, for writing scenario
// documents (a run's effective configuration, config.yaml). Its values
// are Map, []any, string, bool, json.Number or nil.
type Map []Entry

// Entry is one key of a Map and its value.
type Entry struct {
	Key   string
	Value any
}

// Get returns the value of key and whether it is present.
func (m Map) Get(key string) (any, bool) {
	for _, e := range m {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

// Set replaces the value of key, or appends the key when it is absent.
func (m *Map) Set(key string, v any) {
	for i := range *m {
		if (*m)[i].Key == key {
			(*m)[i].Value = v
			return
		}
	}
	*m = append(*m, Entry{key, v})
}

// Delete removes key, if present.
func (m *Map) Delete(key string) {
	for i := range *m {
		if (*m)[i].Key == key {
			*m = append((*m)[:i], (*m)[i+1:]...)
			return
		}
	}
}

// MarshalJSON writes m as a JSON object with its keys in order.
func (m Map) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(e.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(e.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Tree returns v as its JSON encoding reads, with the keys of every
// mapping in the order encoding/json writes them (struct fields in
// declaration order, map keys sorted) and numbers kept as written, so
// that a float comes back bit for bit.
func Tree(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return treeValue(dec)
}

// treeValue reads one JSON value from dec.
func treeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := Map{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := treeValue(dec)
				if err != nil {
					return nil, err
				}
				m = append(m, Entry{k.(string), v})
			}
			_, err = dec.Token() // }
			return m, err
		case '[':
			l := []any{}
			for dec.More() {
				v, err := treeValue(dec)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err = dec.Token() // ]
			return l, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil // string, bool, json.Number, nil
	}
}

// EncodeYAML writes a tree of Map, []any and scalars (see Map) as a YAML
// document in block style, lists of scalars in flow style ([1, 2, 3]).
// Strings are written plain when YAML reads them back as the same string,
// else double-quoted.
func EncodeYAML(v any) []byte {
	var b bytes.Buffer
	switch t := v.(type) {
	case Map:
		writeMap(&b, t, 0)
	default:
		b.WriteString(flow(v))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// writeMap writes m's entries, each on its own line indented by indent
// spaces.
func writeMap(b *bytes.Buffer, m Map, indent int) {
	for _, e := range m {
		b.WriteString(strings.Repeat(" ", indent))
		writeEntry(b, e, indent)
	}
}

// writeEntry writes one key and its value; the key's indentation is
// already written.
func writeEntry(b *bytes.Buffer, e Entry, indent int) {
	b.WriteString(scalar(e.Key))
	b.WriteByte(':')
	switch t := e.Value.(type) {
	case Map:
		if len(t) == 0 {
			b.WriteString(" {}\n")
			return
		}
		b.WriteByte('\n')
		writeMap(b, t, indent+2)
	case []any:
		if isFlat(t) {
			b.WriteString(" " + flow(t) + "\n")
			return
		}
		b.WriteByte('\n')
		writeList(b, t, indent+2)
	default:
		b.WriteString(" " + flow(t) + "\n")
	}
}

// writeList writes the items of a list holding mappings or lists, each
// starting with "- " indented by indent spaces.
func writeList(b *bytes.Buffer, l []any, indent int) {
	pad := strings.Repeat(" ", indent)
	for _, item := range l {
		b.WriteString(pad + "- ")
		switch t := item.(type) {
		case Map:
			if len(t) == 0 {
				b.WriteString("{}\n")
				continue
			}
			writeEntry(b, t[0], indent+2)
			writeMap(b, t[1:], indent+2)
		case []any:
			if isFlat(t) {
				b.WriteString(flow(t) + "\n")
				continue
			}
			b.WriteByte('\n')
			writeList(b, t, indent+2)
		default:
			b.WriteString(flow(t) + "\n")
		}
	}
}

// isFlat reports whether a list holds only scalars and lists of scalars
// (vectors, lists of positions), written in flow style.
func isFlat(l []any) bool {
	for _, item := range l {
		switch t := item.(type) {
		case Map:
			return false
		case []any:
			if !isFlat(t) {
				return false
			}
		}
	}
	return true
}

// flow writes a scalar or a flat list on one line.
func flow(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		if t {
			return "true"
		}
		return "false"
	case json.Number:
		return t.String()
	case string:
		return scalar(t)
	case []any:
		parts := make([]string, len(t))
		for i, item := range t {
			parts[i] = flow(item)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case Map:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = scalar(e.Key) + ": " + flow(e.Value)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	panic(fmt.Sprintf("scenario.EncodeYAML: unexpected %T", v))
}

var (
	// plainWord is a string YAML reads back as itself when written plain,
	// unless it is one of the words YAML reads as something else.
	plainWord = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.\-]*$`)
	// plainDuration is a duration as Go writes it (10ms, 1m0s, 1.5µs).
	plainDuration = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h)([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))*$`)
)

// scalar writes a string plain when that reads back as the same string,
// else double-quoted (JSON's escapes are YAML's).
func scalar(s string) string {
	if plainDuration.MatchString(s) {
		return s
	}
	if plainWord.MatchString(s) {
		switch strings.ToLower(s) {
		case "true", "false", "yes", "no", "on", "off", "y", "n", "null":
		default:
			return s
		}
	}
	q, _ := json.Marshal(s)
	return string(q)
}
