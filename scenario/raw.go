package scenario

import "github.com/goccy/go-yaml/ast"

// Raw is a piece of the scenario kept undecoded until the component that
// owns it decodes it with Scenario.Decode (or, in other input files such
// as experiments, Document.Decode): a vehicle kind's or behaviour's
// parameters, the network section, a measure. It remembers where it was
// written, so that problems found when it is decoded are reported at the
// right line and field path. The zero Raw means that the piece is absent
// from the file (or set to null); the decoder fills fields of type Raw,
// and []Raw, with what the file holds there.
type Raw struct {
	n ast.Node
}

// IsZero reports whether r is the zero Raw. A field filled by the decoder
// is zero when the file does not set it or sets it to null.
func (r Raw) IsZero() bool { return r.n == nil }
