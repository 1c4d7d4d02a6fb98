package geom

import "math"

// Quat is a unit quaternion W + Xi + Yj + Zk describing a rotation; for a
// vehicle it rotates body-frame vectors (x forward, y left, z up) into the
// world frame (x east, y north, z up).
type Quat struct {
	W, X, Y, Z float64
}

// Identity is the rotation that does nothing.
var Identity = Quat{W: 1}

// Mul returns the composition q*r (apply r first, then q).
func (q Quat) Mul(r Quat) Quat {
	return Quat{
		W: q.W*r.W - q.X*r.X - q.Y*r.Y - q.Z*r.Z,
		X: q.W*r.X + q.X*r.W + q.Y*r.Z - q.Z*r.Y,
		Y: q.W*r.Y - q.X*r.Z + q.Y*r.W + q.Z*r.X,
		Z: q.W*r.Z + q.X*r.Y - q.Y*r.X + q.Z*r.W,
	}
}

// Conj returns the inverse rotation of a unit quaternion.
func (q Quat) Conj() Quat { return Quat{q.W, -q.X, -q.Y, -q.Z} }

// Normalize returns q scaled to unit length (Identity for a zero q).
func (q Quat) Normalize() Quat {
	n := math.Sqrt(q.W*q.W + q.X*q.X + q.Y*q.Y + q.Z*q.Z)
	if n == 0 {
		return Identity
	}
	return Quat{q.W / n, q.X / n, q.Y / n, q.Z / n}
}

// Rotate returns v rotated by q (body to world for an attitude).
func (q Quat) Rotate(v Vec3) Vec3 {
	// v' = v + 2w(u x v) + 2 u x (u x v), u = (X, Y, Z)
	ux, uy, uz := q.X, q.Y, q.Z
	tx := 2 * (uy*v.Z - uz*v.Y)
	ty := 2 * (uz*v.X - ux*v.Z)
	tz := 2 * (ux*v.Y - uy*v.X)
	return Vec3{
		X: v.X + q.W*tx + (uy*tz - uz*ty),
		Y: v.Y + q.W*ty + (uz*tx - ux*tz),
		Z: v.Z + q.W*tz + (ux*ty - uy*tx),
	}
}

// RotateInv returns v rotated by the inverse of q (world to body).
func (q Quat) RotateInv(v Vec3) Vec3 { return q.Conj().Rotate(v) }

// AxisZ returns the body z axis in the world frame (the thrust direction of
// a multirotor).
func (q Quat) AxisZ() Vec3 {
	return Vec3{
		X: 2 * (q.X*q.Z + q.W*q.Y),
		Y: 2 * (q.Y*q.Z - q.W*q.X),
		Z: 1 - 2*(q.X*q.X+q.Y*q.Y),
	}
}

// FromAxisAngle returns the rotation by angle (rad) about a unit axis.
func FromAxisAngle(axis Vec3, angle float64) Quat {
	s, c := Sincos(angle / 2)
	return Quat{c, axis.X * s, axis.Y * s, axis.Z * s}
}

// FromEuler returns the rotation with the given roll, pitch and yaw (rad),
// applied yaw first, then pitch, then roll (intrinsic z-y'-x”).
func FromEuler(roll, pitch, yaw float64) Quat {
	sr, cr := Sincos(roll / 2)
	sp, cp := Sincos(pitch / 2)
	sy, cy := Sincos(yaw / 2)
	return Quat{
		W: cr*cp*cy + sr*sp*sy,
		X: sr*cp*cy - cr*sp*sy,
		Y: cr*sp*cy + sr*cp*sy,
		Z: cr*cp*sy - sr*sp*cy,
	}
}

// Euler returns roll, pitch and yaw (rad) of q, the inverse of FromEuler.
func (q Quat) Euler() (roll, pitch, yaw float64) {
	roll = math.Atan2(2*(q.W*q.X+q.Y*q.Z), 1-2*(q.X*q.X+q.Y*q.Y))
	s := 2 * (q.W*q.Y - q.Z*q.X)
	pitch = math.Asin(max(-1, min(1, s)))
	yaw = math.Atan2(2*(q.W*q.Z+q.X*q.Y), 1-2*(q.Y*q.Y+q.Z*q.Z))
	return
}

// Yaw returns the heading of q (rad, counter-clockwise from east).
func (q Quat) Yaw() float64 {
	return math.Atan2(2*(q.W*q.Z+q.X*q.Y), 1-2*(q.Y*q.Y+q.Z*q.Z))
}

// Integrate returns q advanced by body rates omega (rad/s) over dt seconds,
// exactly for rates constant over the step (exponential map), normalised.
func (q Quat) Integrate(omega Vec3, dt float64) Quat {
	n := omega.Norm()
	if n < 1e-12 {
		return q
	}
	return q.Mul(FromAxisAngle(omega.Scale(1/n), n*dt)).Normalize()
}

// Cross returns the cross product a x b.
func (a Vec3) Cross(b Vec3) Vec3 {
	return Vec3{a.Y*b.Z - a.Z*b.Y, a.Z*b.X - a.X*b.Z, a.X*b.Y - a.Y*b.X}
}

// Mul returns the component-wise product of a and b.
func (a Vec3) Mul(b Vec3) Vec3 { return Vec3{a.X * b.X, a.Y * b.Y, a.Z * b.Z} }
