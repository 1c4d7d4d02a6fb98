// Package groundbot makes the groundbot vehicle kind: the differential-drive
// robot of package vehicle/groundbot, in its native physics or in a MuJoCo
// world, driven by the drive controller of package autopilot/groundbotctl,
// joined by the sensor/actuator boundary of package vehicle.
package groundbot

import (
	"skyloop/autopilot/groundbotctl"
	"skyloop/geom"
	"skyloop/vehicle"
	physics "skyloop/vehicle/groundbot"
	"skyloop/vehicle/mujoco"
)

// Vehicle is a robot driven by its controller.
type Vehicle struct {
	*vehicle.Composed
	// Phys is the physics, with the state in Phys.S.
	Phys *physics.Physics
	// Ctrl is the controller.
	Ctrl *groundbotctl.Controller
}

// ForwardSpeed returns the signed body speed along the heading, exactly
// (telemetry gives it only as a velocity vector, whose length differs from
// it in the last bits).
func (v *Vehicle) ForwardSpeed() float64 { return v.Phys.S.V }

// New returns a robot at pos heading yaw (rad), stopped and idle.
func New(p *physics.Params, pos geom.Vec3, yaw float64) *Vehicle {
	ph, c := physics.NewPhysics(p, pos, yaw), groundbotctl.NewController(p, pos, yaw)
	return &Vehicle{Composed: vehicle.Compose(ph, c), Phys: ph, Ctrl: c}
}

// MuJoCoVehicle is a robot in a MuJoCo world driven by its controller.
type MuJoCoVehicle struct {
	*vehicle.Composed
	// Phys is the robot in the world.
	Phys *physics.MuJoCoPhysics
	// Ctrl is the controller.
	Ctrl *groundbotctl.Controller
}

// ForwardSpeed returns the signed speed along the heading.
func (v *MuJoCoVehicle) ForwardSpeed() float64 { return v.Phys.ForwardSpeed() }

// NewMuJoCo returns a robot in w at pos heading yaw, idle; n numbers it in
// the world.
func NewMuJoCo(p *physics.Params, w *mujoco.World, n int, pos geom.Vec3, yaw float64) *MuJoCoVehicle {
	ph, c := physics.NewMuJoCoPhysics(p, w, n, pos, yaw), groundbotctl.NewController(p, pos, yaw)
	return &MuJoCoVehicle{Composed: vehicle.Compose(ph, c), Phys: ph, Ctrl: c}
}
