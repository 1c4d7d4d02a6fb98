// Package pointmass makes the point-mass vehicle kind: the kinematic point
// of package vehicle/pointmass flown by the position controller of package
// autopilot/pointmassctl, joined by the sensor/actuator boundary of package
// vehicle. It is meant for very large swarms where the network, not the
// airframe, is under study.
package pointmass

import (
	"skyloop/autopilot/pointmassctl"
	"skyloop/geom"
	"skyloop/vehicle"
	physics "skyloop/vehicle/pointmass"
)

// Vehicle is a point mass flown by its controller.
type Vehicle struct {
	*vehicle.Composed
	// Phys is the physics, with the state in Phys.S.
	Phys *physics.Physics
	// Ctrl is the controller.
	Ctrl *pointmassctl.Controller
}

// New returns a vehicle at pos with the shared parameters p. A vehicle
// spawned on the ground (z <= 0) starts landed and idle; one spawned in the
// air starts holding its position.
func New(p *physics.Params, pos geom.Vec3, yaw float64) *Vehicle {
	ph, c := physics.NewPhysics(p, pos, yaw), pointmassctl.NewController(p, pos, yaw)
	return &Vehicle{Composed: vehicle.Compose(ph, c), Phys: ph, Ctrl: c}
}
