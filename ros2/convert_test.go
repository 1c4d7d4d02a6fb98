package ros2

import (
	"math"
	"testing"

	"skyloop/geom"
	"skyloop/vehicle"
)

// TestFrames: ROS's conventions (REP 103): world ENU, body FLU, yaw
// counter-clockwise from east. A vehicle facing north (yaw 90°) moving
// east at 2 m/s is moving to its right: body velocity (0, -2, 0); its
// orientation is a quarter turn about z. A cmd_vel forward for it is a
// world velocity north; a goal pose's orientation gives its yaw back.
func TestFrames(t *testing.T) {
	tel := vehicle.Telemetry{Pos: geom.V(1, 2, 3), Vel: geom.V(2, 0, 0), Yaw: math.Pi / 2, YawRate: 0.1}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	p := pose(&tel)
	near("position.x", p.position.x, 1)
	near("position.z", p.position.z, 3)
	near("orientation.z", p.orientation.z, math.Sqrt2/2)
	near("orientation.w", p.orientation.w, math.Sqrt2/2)
	tw := twist(&tel)
	near("twist.linear.x", tw.linear.x, 0)
	near("twist.linear.y", tw.linear.y, -2)
	near("twist.angular.z", tw.angular.z, 0.1)

	c := velocityCommand(&cTwist{linear: cPoint{1, 0, 0.5}}, math.Pi/2, false)
	near("cmd_vel forward: world x", c.Vel.X, 0)
	near("cmd_vel forward: world y", c.Vel.Y, 1)
	near("cmd_vel forward: world z", c.Vel.Z, 0.5)
	if d := velocityCommand(&cTwist{linear: cPoint{1, 0, 0}, angular: cPoint{0, 0, 0.3}}, 0, true); d.Kind != vehicle.CmdDrive || d.V != 1 || d.Omega != 0.3 {
		t.Errorf("cmd_vel for a ground robot: %+v, want drive at 1 m/s turning at 0.3 rad/s", d)
	}

	g := goalCommand(&cPose{position: cPoint{10, 5, 5}, orientation: p.orientation})
	if g.Kind != vehicle.CmdGoto || g.Pos != geom.V(10, 5, 5) {
		t.Errorf("goal: %+v", g)
	}
	near("goal yaw", g.Yaw, math.Pi/2)
	if g := goalCommand(&cPose{orientation: cQuaternion{}}); !math.IsNaN(g.Yaw) {
		t.Errorf("a goal with a zero quaternion keeps the heading (NaN yaw), got %v", g.Yaw)
	}
	if s := stamp(12_345_000_001); s.sec != 12 || s.nanosec != 345_000_001 {
		t.Errorf("stamp: %+v", s)
	}
	if ns := Namespace("{name}", "uav-0"); ns != "uav_0" {
		t.Errorf("namespace of uav-0: %q", ns)
	}
	if ns := Namespace("fleet/{name}", "7up"); ns != "fleet/_7up" {
		t.Errorf("namespace of 7up: %q", ns)
	}
}
