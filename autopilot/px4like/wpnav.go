package px4like

import (
	"math"

	"skyloop/geom"
)

// ArduCopter 3.5's waypoint navigation constants (AC_WPNav, AC_PosControl).
const (
	wpDefaultAccel  = 1.0 // WPNAV_ACCEL default, 100 cm/s^2
	wpPosP          = 1.0 // POS_XY_P default
	wpLeashMin      = 1.0 // POSCONTROL_LEASH_LENGTH_MIN, 100 cm
	wpTrackSpeedMin = 0.5 // WPNAV_WP_TRACK_SPEED_MIN, 50 cm/s
)

// wpSegment is the state of an arducopter straight waypoint segment
// (wp_nav: arducopter): the track from origin to the goto's target and the
// intermediate target moving along it.
type wpSegment struct {
	active   bool
	origin   geom.Vec3 // horizontal only; z is unused
	unit     geom.Vec3 // horizontal unit vector along the track
	length   float64   // m
	desired  float64   // distance of the intermediate target along the track, m
	limSpeed float64   // the intermediate target's speed, m/s
	slowing  bool
	target   geom.Vec3 // the intermediate target (z unused)
	// pos and vel are the reference vehicle: where an ArduCopter that
	// flies its velocity command exactly would be, and its velocity
	// (horizontal). The vehicle tracks them.
	pos, vel geom.Vec3
}

// wpAccel returns the arducopter segment's acceleration, m/s^2.
func (p *Params) wpAccel() float64 {
	if p.WPAccel > 0 {
		return p.WPAccel
	}
	return wpDefaultAccel
}

// wpLeash returns AC_PosControl's horizontal leash for a speed and an
// acceleration: how far the intermediate target may run ahead of the
// vehicle.
func wpLeash(speed, accel float64) float64 {
	l := speed / wpPosP
	if speed > accel/wpPosP {
		l = accel/(2*wpPosP*wpPosP) + speed*speed/(2*accel)
	}
	return max(l, wpLeashMin)
}

// wpStart begins a segment to target, as AC_WPNav's set_wp_destination
// does: from the current intermediate target when a segment was being
// flown, else from the point where the vehicle can stop; the
// intermediate target starts at the vehicle's speed along the new track.
func (v *Controller) wpStart(target geom.Vec3, speed float64) {
	w := &v.wp
	origin := v.stopPoint()
	if w.active {
		origin = w.target
	}
	origin.Z = 0
	d := geom.V(target.X-origin.X, target.Y-origin.Y, 0)
	pos, vel := geom.V(v.estPos.X, v.estPos.Y, 0), geom.V(v.velSP.X, v.velSP.Y, 0)
	if w.active {
		pos, vel = w.pos, w.vel
	}
	*w = wpSegment{active: true, origin: origin, length: d.NormXY(), target: origin, pos: pos, vel: vel}
	if w.length > 1e-9 {
		w.unit = d.Scale(1 / w.length)
	}
	w.limSpeed = max(0, min(speed, vel.X*w.unit.X+vel.Y*w.unit.Y))
}

// wpAdvance moves the intermediate target along the track over dt at most
// speed m/s (AC_WPNav's advance_wp_target_along_track for a regular, not
// "fast", waypoint) and returns the horizontal velocity the square-root
// position controller asks for towards it (AC_PosControl's
// pos_to_rate_xy without feed-forward).
func (v *Controller) wpAdvance(dt, speed float64) (vx, vy float64) {
	w := &v.wp
	a := v.ap.wpAccel()
	leash := wpLeash(speed, a)
	dx, dy := w.pos.X-w.origin.X, w.pos.Y-w.origin.Y
	covered := dx*w.unit.X + dy*w.unit.Y
	errXY := math.Hypot(dx-w.unit.X*covered, dy-w.unit.Y*covered)
	maxDesired := covered + max(0, leash-errXY)
	atLeash := w.desired > maxDesired
	along := w.vel.X*w.unit.X + w.vel.Y*w.unit.Y
	linVel := a / wpPosP
	if along < -linVel {
		w.limSpeed = 0
	} else {
		if !atLeash {
			w.limSpeed += 2 * a * dt
		}
		w.limSpeed = max(0, min(speed, w.limSpeed))
		toGo := w.length - w.desired
		if !w.slowing && toGo <= speed*speed/(4*a) {
			w.slowing = true
		}
		if w.slowing {
			slow := wpTrackSpeedMin
			if toGo > 0 {
				slow = max(slow, math.Sqrt(4*a*toGo))
			}
			w.limSpeed = min(w.limSpeed, slow)
		}
		if math.Abs(along) < linVel {
			w.limSpeed = max(along-linVel, min(along+linVel, w.limSpeed))
		}
	}
	if !atLeash {
		w.desired += w.limSpeed * dt
		if w.desired > maxDesired {
			w.desired = maxDesired
			w.limSpeed = max(0, w.limSpeed-2*a*dt)
		}
	}
	w.desired = max(0, min(w.length, w.desired))
	w.target = geom.V(w.origin.X+w.unit.X*w.desired, w.origin.Y+w.unit.Y*w.desired, 0)

	ex, ey := w.target.X-w.pos.X, w.target.Y-w.pos.Y
	vx, vy = 0, 0
	if d := math.Hypot(ex, ey); d > 1e-9 {
		lin := a / (2 * wpPosP * wpPosP)
		s := wpPosP * d
		if d > 2*lin {
			s = math.Sqrt(2 * a * (d - lin))
		}
		s = min(s, speed)
		vx, vy = ex/d*s, ey/d*s
	}
	w.vel = geom.V(vx, vy, 0)
	w.pos = w.pos.Add(w.vel.Scale(dt))
	// Track the reference vehicle: its velocity plus the position
	// loop's correction towards it.
	return vx + v.ap.XYP*(w.pos.X-v.estPos.X), vy + v.ap.XYP*(w.pos.Y-v.estPos.Y)
}
