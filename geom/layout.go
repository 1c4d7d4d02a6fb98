package geom

import (
	"encoding/json"
	"fmt"
	"math"
	"skyloop/fields"
	"strconv"
)

// UnmarshalYAML reads a vector written as a list of two or three numbers
// ([x, y] means z = 0).
func (a *Vec3) UnmarshalYAML(unmarshal func(any) error) error {
	var xs []float64
	if err := unmarshal(&xs); err != nil {
		return fmt.Errorf("want a list of 2 or 3 numbers [x, y, z]")
	}
	return a.fromSlice(xs)
}

// UnmarshalJSON reads a vector written as a JSON array of two or three numbers.
func (a *Vec3) UnmarshalJSON(b []byte) error {
	var xs []float64
	if err := json.Unmarshal(b, &xs); err != nil {
		return fmt.Errorf("want a list of 2 or 3 numbers [x, y, z]")
	}
	return a.fromSlice(xs)
}

func (a *Vec3) fromSlice(xs []float64) error {
	switch len(xs) {
	case 2:
		*a = Vec3{xs[0], xs[1], 0}
	case 3:
		*a = Vec3{xs[0], xs[1], xs[2]}
	default:
		return fmt.Errorf("want 2 or 3 numbers [x, y, z], got %d", len(xs))
	}
	if !a.IsFinite() {
		return fmt.Errorf("coordinates must be finite numbers")
	}
	return nil
}

// MarshalJSON writes the vector as [x, y, z] with the shortest exact
// decimal form of each number.
func (a Vec3) MarshalJSON() ([]byte, error) {
	if !a.IsFinite() {
		return nil, fmt.Errorf("vector %v is not finite", a)
	}
	b := []byte{'['}
	b = strconv.AppendFloat(b, a.X, 'g', -1, 64)
	b = append(b, ',')
	b = strconv.AppendFloat(b, a.Y, 'g', -1, 64)
	b = append(b, ',')
	b = strconv.AppendFloat(b, a.Z, 'g', -1, 64)
	return append(b, ']'), nil
}

// Layout places n points: on a line, on a grid, on a circle, or at explicit
// positions. It is used for spawn points and for per-vehicle targets.
type Layout struct {
	// Kind is "line", "grid", "circle" or "explicit".
	Kind string `yaml:"layout" json:"layout"`
	// Origin is the first point (line, grid) or the centre (circle).
	Origin Vec3 `yaml:"origin" json:"origin"`
	// Spacing is the distance between neighbours on a line or grid (m).
	Spacing float64 `yaml:"spacing" json:"spacing"`
	// Columns is the grid width; 0 makes the grid as square as possible.
	Columns int `yaml:"columns" json:"columns"`
	// Radius is the circle radius (m).
	Radius float64 `yaml:"radius" json:"radius"`
	// Heading is the direction of a line in degrees counter-clockwise from
	// east, or the rotation of a grid.
	Heading float64 `yaml:"heading" json:"heading"`
	// Step, when not zero, is the offset from each point of a line to the
	// next, in place of spacing and heading: point i is origin + i*step,
	// computed exactly (a heading of 180 degrees puts the points a few
	// 1e-16 m off the axis, since sin(pi) is not 0 in floating point).
	Step Vec3 `yaml:"step" json:"step,omitzero"`
	// Positions are the explicit points.
	Positions []Vec3 `yaml:"positions" json:"positions,omitempty"`
}

// LayoutKinds lists the accepted layout kinds.
var LayoutKinds = []string{"line", "grid", "circle", "explicit"}

// MaxPoints is the most points a layout places (the most vehicles of a
// scenario): Check refuses more before anything is allocated.
const MaxPoints = 100_000

// Check returns field name -> message for every problem placing n points.
// It allocates nothing in proportion to n.
func (l *Layout) Check(n int) fields.Errors {
	bad := fields.Errors{}
	if n < 0 || n > MaxPoints {
		bad["layout"] = fmt.Sprintf("cannot place %d points: at most %d", n, MaxPoints)
		return bad
	}
	switch l.Kind {
	case "line", "grid":
		if l.Kind == "line" && l.Step != (Vec3{}) {
			if l.Spacing != 0 || l.Heading != 0 {
				bad["step"] = "give either step or spacing and heading, not both"
			}
			break
		}
		if !(l.Spacing > 0) {
			bad["spacing"] = fmt.Sprintf("must be > 0 metres for a %s layout, got %v", l.Kind, l.Spacing)
		}
		if l.Columns < 0 {
			bad["columns"] = fmt.Sprintf("must be >= 0, got %d", l.Columns)
		}
	case "circle":
		if !(l.Radius > 0) && n > 1 {
			bad["radius"] = fmt.Sprintf("must be > 0 metres for a circle layout, got %v", l.Radius)
		}
	case "explicit":
		if len(l.Positions) != n {
			bad["positions"] = fmt.Sprintf("%d positions given for %d vehicles", len(l.Positions), n)
		}
	case "":
		bad["layout"] = "missing: one of line, grid, circle, explicit"
	default:
		bad["layout"] = fmt.Sprintf("unknown layout %q: want one of line, grid, circle, explicit", l.Kind)
	}
	if len(bad) == 0 {
		l.each(n, func(i int, p Vec3) bool {
			if !p.IsFinite() || math.Abs(p.X) > 1e7 || math.Abs(p.Y) > 1e7 || math.Abs(p.Z) > 1e7 {
				bad["spacing"] = fmt.Sprintf("point %d lands at %v, beyond 10,000 km", i, p)
				return false
			}
			return true
		})
	}
	return bad
}

// Points returns n points laid out by l. Call Check first: for n outside
// 0..MaxPoints it returns nil.
func (l *Layout) Points(n int) []Vec3 {
	if n < 0 || n > MaxPoints {
		return nil
	}
	pts := make([]Vec3, n)
	l.each(n, func(i int, p Vec3) bool {
		pts[i] = p
		return true
	})
	return pts
}

// each calls f with the n points of the layout in order, until f returns
// false. Explicit layouts give their positions (zero beyond them).
func (l *Layout) each(n int, f func(i int, p Vec3) bool) {
	h := l.Heading * math.Pi / 180
	c, s := math.Cos(h), math.Sin(h)
	cols := l.Columns
	if cols <= 0 {
		cols = int(math.Ceil(math.Sqrt(float64(n))))
	}
	for i := 0; i < n; i++ {
		var p Vec3
		switch l.Kind {
		case "line":
			if l.Step != (Vec3{}) {
				p = l.Origin.Add(l.Step.Scale(float64(i)))
				break
			}
			d := float64(i) * l.Spacing
			p = l.Origin.Add(Vec3{X: d * c, Y: d * s})
		case "grid":
			x := float64(i%cols) * l.Spacing
			y := float64(i/cols) * l.Spacing
			p = l.Origin.Add(Vec3{X: x*c - y*s, Y: x*s + y*c})
		case "circle":
			a := h + 2*math.Pi*float64(i)/float64(n)
			p = l.Origin.Add(Vec3{X: l.Radius * math.Cos(a), Y: l.Radius * math.Sin(a)})
		case "explicit":
			if i < len(l.Positions) {
				p = l.Positions[i]
			}
		}
		if !f(i, p) {
			return
		}
	}
}
