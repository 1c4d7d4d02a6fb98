package geom

import (
	"encoding/json"
	"fmt"
	"math"
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
	// Positions are the explicit points.
	Positions []Vec3 `yaml:"positions" json:"positions,omitempty"`
}

// LayoutKinds lists the accepted layout kinds.
var LayoutKinds = []string{"line", "grid", "circle", "explicit"}

// Check returns field name -> message for every problem placing n points.
func (l *Layout) Check(n int) map[string]string {
	bad := map[string]string{}
	switch l.Kind {
	case "line", "grid":
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
		for i, p := range l.Points(n) {
			if !p.IsFinite() || math.Abs(p.X) > 1e7 || math.Abs(p.Y) > 1e7 || math.Abs(p.Z) > 1e7 {
				bad["spacing"] = fmt.Sprintf("point %d lands at %v, beyond 10,000 km", i, p)
				break
			}
		}
	}
	return bad
}

// Points returns n points laid out by l. Call Check first.
func (l *Layout) Points(n int) []Vec3 {
	pts := make([]Vec3, n)
	h := l.Heading * math.Pi / 180
	c, s := math.Cos(h), math.Sin(h)
	switch l.Kind {
	case "line":
		for i := range pts {
			d := float64(i) * l.Spacing
			pts[i] = l.Origin.Add(Vec3{X: d * c, Y: d * s})
		}
	case "grid":
		cols := l.Columns
		if cols == 0 {
			cols = int(math.Ceil(math.Sqrt(float64(n))))
		}
		for i := range pts {
			x := float64(i%cols) * l.Spacing
			y := float64(i/cols) * l.Spacing
			pts[i] = l.Origin.Add(Vec3{X: x*c - y*s, Y: x*s + y*c})
		}
	case "circle":
		for i := range pts {
			a := h + 2*math.Pi*float64(i)/float64(n)
			pts[i] = l.Origin.Add(Vec3{X: l.Radius * math.Cos(a), Y: l.Radius * math.Sin(a)})
		}
	case "explicit":
		copy(pts, l.Positions)
	}
	return pts
}
