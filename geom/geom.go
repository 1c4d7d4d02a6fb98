// Package geom holds the small geometric value types shared by vehicles,
// networks and worlds: 3-vectors and axis-aligned boxes.
package geom

import (
	"math"
	"strconv"
)

// Vec3 is a 3-vector in metres (or metres per second) in the world frame:
// x east, y north, z up.
type Vec3 struct {
	X, Y, Z float64
}

// V returns the vector (x, y, z).
func V(x, y, z float64) Vec3 { return Vec3{x, y, z} }

// Add returns a + b.
func (a Vec3) Add(b Vec3) Vec3 { return Vec3{a.X + b.X, a.Y + b.Y, a.Z + b.Z} }

// Sub returns a - b.
func (a Vec3) Sub(b Vec3) Vec3 { return Vec3{a.X - b.X, a.Y - b.Y, a.Z - b.Z} }

// Scale returns s * a.
func (a Vec3) Scale(s float64) Vec3 { return Vec3{a.X * s, a.Y * s, a.Z * s} }

// Dot returns the dot product of a and b.
func (a Vec3) Dot(b Vec3) float64 { return a.X*b.X + a.Y*b.Y + a.Z*b.Z }

// Norm returns the Euclidean length of a.
func (a Vec3) Norm() float64 { return math.Sqrt(a.X*a.X + a.Y*a.Y + a.Z*a.Z) }

// Norm2 returns the squared Euclidean length of a.
func (a Vec3) Norm2() float64 { return a.X*a.X + a.Y*a.Y + a.Z*a.Z }

// NormXY returns the length of the horizontal part of a.
func (a Vec3) NormXY() float64 { return math.Sqrt(a.X*a.X + a.Y*a.Y) }

// Dist returns the distance between points a and b.
func (a Vec3) Dist(b Vec3) float64 { return a.Sub(b).Norm() }

// ClampNorm returns a scaled down so that its length is at most max.
// A non-positive max returns the zero vector.
func (a Vec3) ClampNorm(max float64) Vec3 {
	if max <= 0 {
		return Vec3{}
	}
	n2 := a.Norm2()
	if n2 <= max*max {
		return a
	}
	return a.Scale(max / math.Sqrt(n2))
}

// IsFinite reports whether every component of a is a finite number.
func (a Vec3) IsFinite() bool {
	return !math.IsNaN(a.X+a.Y+a.Z) && !math.IsInf(a.X+a.Y+a.Z, 0)
}

// String formats a as [x, y, z], as scenario files write vectors.
func (a Vec3) String() string {
	return "[" + strconv.FormatFloat(a.X, 'g', -1, 64) + ", " + strconv.FormatFloat(a.Y, 'g', -1, 64) + ", " +
		strconv.FormatFloat(a.Z, 'g', -1, 64) + "]"
}

// Box is an axis-aligned box given by its minimum and maximum corners.
type Box struct {
	Min, Max Vec3
}

// Contains reports whether p lies inside b, faces included.
func (b Box) Contains(p Vec3) bool {
	return p.X >= b.Min.X && p.X <= b.Max.X &&
		p.Y >= b.Min.Y && p.Y <= b.Max.Y &&
		p.Z >= b.Min.Z && p.Z <= b.Max.Z
}

// Inflate returns b grown by r on every side.
func (b Box) Inflate(r float64) Box {
	d := Vec3{r, r, r}
	return Box{Min: b.Min.Sub(d), Max: b.Max.Add(d)}
}

// Dist returns the distance from p to the nearest point of b (0 inside).
func (b Box) Dist(p Vec3) float64 {
	dx := max(max(b.Min.X-p.X, 0), p.X-b.Max.X)
	dy := max(max(b.Min.Y-p.Y, 0), p.Y-b.Max.Y)
	dz := max(max(b.Min.Z-p.Z, 0), p.Z-b.Max.Z)
	return math.Sqrt(dx*dx + dy*dy + dz*dz)
}

// WrapAngle returns a wrapped into (-pi, pi].
func WrapAngle(a float64) float64 {
	if a > -math.Pi && a <= math.Pi {
		return a
	}
	a = math.Mod(a+math.Pi, 2*math.Pi)
	if a <= 0 {
		a += 2 * math.Pi
	}
	return a - math.Pi
}
