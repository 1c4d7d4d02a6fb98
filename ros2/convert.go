package ros2

import (
	"math"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Frames. skyloop's world frame is ROS's REP 103 ENU (x east, y north, z
// up, about the scenario's origin): it is the "map" frame. A vehicle's
// body frame is FLU (x forward, y left, z up), ROS's base_link; a yaw of 0
// faces east, counter-clockwise positive, as in ROS.
const (
	// WorldFrame is the frame_id of poses and odometry.
	WorldFrame = "map"
	// BodyFrame is the child_frame_id of odometry, after the vehicle's
	// ROS namespace ("uav_0/base_link").
	BodyFrame = "base_link"
)

// stamp is simulated time t as builtin_interfaces/Time (the time /clock
// gives nodes with use_sim_time).
func stamp(t sim.Time) cTime {
	ns := int64(t)
	return cTime{sec: int32(ns / 1e9), nanosec: uint32(ns % 1e9)}
}

// orientation is the vehicle's attitude as a ROS quaternion: body FLU to
// world ENU.
func orientation(tel *vehicle.Telemetry) cQuaternion {
	q := geom.FromEuler(tel.Roll, tel.Pitch, tel.Yaw)
	return cQuaternion{x: q.X, y: q.Y, z: q.Z, w: q.W}
}

// pose is the vehicle's pose in the world frame.
func pose(tel *vehicle.Telemetry) cPose {
	return cPose{position: cPoint{tel.Pos.X, tel.Pos.Y, tel.Pos.Z}, orientation: orientation(tel)}
}

// twist is the vehicle's velocity in its body frame, as nav_msgs/Odometry
// has it (twist in child_frame_id): linear from the world velocity
// rotated into FLU, angular the body rates.
func twist(tel *vehicle.Telemetry) cTwist {
	q := geom.FromEuler(tel.Roll, tel.Pitch, tel.Yaw)
	v := q.RotateInv(tel.Vel)
	return cTwist{linear: cPoint{v.X, v.Y, v.Z}, angular: cPoint{tel.RollRate, tel.PitchRate, tel.YawRate}}
}

// unknown is NaN, ROS's value for a field a message cannot fill
// (sensor_msgs/BatteryState's temperature, charge, capacity).
var unknown = float32(math.NaN())

// goalCommand turns a goal pose (world frame "map" or "") into a goto:
// position and, when the orientation is a unit quaternion, its yaw.
func goalCommand(p *cPose) vehicle.Command {
	c := vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(p.position.x, p.position.y, p.position.z), Yaw: math.NaN()}
	o := p.orientation
	if n := o.x*o.x + o.y*o.y + o.z*o.z + o.w*o.w; math.Abs(n-1) < 1e-3 {
		c.Yaw = geom.Quat{W: o.w, X: o.x, Y: o.y, Z: o.z}.Yaw()
	}
	return c
}

// velocityCommand turns a cmd_vel (body FLU, as ROS has it) into a
// command: for ground vehicles a drive (linear.x forward, angular.z turn
// rate); for aerial ones a world-frame velocity, the horizontal part
// rotated by the vehicle's heading (linear.z up; angular is not used).
func velocityCommand(tw *cTwist, yaw float64, ground bool) vehicle.Command {
	if ground {
		return vehicle.Command{Kind: vehicle.CmdDrive, V: tw.linear.x, Omega: tw.angular.z}
	}
	s, c := math.Sincos(yaw)
	return vehicle.Command{Kind: vehicle.CmdVelocity,
		Vel: geom.V(c*tw.linear.x-s*tw.linear.y, s*tw.linear.x+c*tw.linear.y, tw.linear.z)}
}
