// Package multirotor makes the multirotor vehicle kind: the physics and
// instruments of package vehicle/multirotor flown by the PX4-like
// controller of package autopilot/px4like, joined by the sensor/actuator
// boundary of package vehicle. It holds the group configuration that
// scenarios write (the airframe, with an `autopilot:` block for the
// controller and the instruments), the presets' controller tuning, and the
// planning energy model.
package multirotor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"skyloop/autopilot/px4like"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/vehicle"
	physics "skyloop/vehicle/multirotor"
)

// Kind is the scenario name of the multirotor vehicle kind.
const Kind = physics.Kind

// Config is a multirotor group's parameters in a scenario: the airframe
// (a preset with overrides) and the `autopilot:` block.
type Config struct {
	physics.Params `yaml:",inline"`
	Autopilot      Autopilot `yaml:"autopilot" json:"autopilot"`
}

// Autopilot is the `autopilot:` block of a multirotor group: the
// controller's parameters and the instruments' rates and noise (which the
// physics models, but which scenarios have always set here).
type Autopilot struct {
	px4like.Params       `yaml:",inline"`
	physics.SensorParams `yaml:",inline"`
}

// MarshalJSON writes the block as config.json has always had it: the
// controller's gains, limits and failsafe, then the instruments, then the
// estimator gains and loop rates (the order of the single parameter struct
// the block was before the controller and the instruments were split).
func (a Autopilot) MarshalJSON() ([]byte, error) {
	ctrl, err := json.Marshal(a.Params)
	if err != nil {
		return nil, fmt.Errorf("encoding the controller parameters: %w", err)
	}
	sens, err := json.Marshal(a.SensorParams)
	if err != nil {
		return nil, fmt.Errorf("encoding the sensor parameters: %w", err)
	}
	at := bytes.Index(ctrl, []byte(`,"est_pos_gain":`))
	if at < 0 || len(sens) < 2 {
		return nil, fmt.Errorf("internal error: unexpected parameter encoding %s", ctrl)
	}
	out := make([]byte, 0, len(ctrl)+len(sens))
	out = append(out, ctrl[:at]...)
	out = append(out, ',')
	out = append(out, sens[1:len(sens)-1]...)
	return append(out, ctrl[at:]...), nil
}

// Validate checks airframe, controller and sensor parameters.
func (c *Config) Validate() fields.Errors {
	bad := c.Params.Validate()
	for k, v := range c.Autopilot.Params.Validate() {
		bad["autopilot."+k] = v
	}
	for k, v := range c.Autopilot.SensorParams.Validate() {
		bad["autopilot."+k] = v
	}
	if pp, cp := c.Params.PhysicsPeriod, c.Autopilot.ControlPeriod; pp > 0 && cp > 0 && cp%pp != 0 {
		bad["autopilot.control_period"] = fmt.Sprintf("the rate loop runs every n physics steps: must be a whole multiple of physics_period %v, got %v",
			pp, cp)
	}
	return bad
}

// PresetConfig returns an airframe preset with its instruments and its
// controller tuning: PX4's defaults, adjusted where the airframe needs it
// (each adjustment says why).
func PresetConfig(name string) (Config, bool) {
	p, ok := physics.Preset(name)
	if !ok {
		return Config{}, false
	}
	c := Config{Params: p, Autopilot: Autopilot{Params: px4like.DefaultParams(), SensorParams: physics.DefaultSensorParams()}}
	if name == "crazyflie" {
		// A 27 g quad's rotor drag is about a fifth of its weight at 1 m/s
		// (gym-pybullet-drones' coefficients): a stronger vertical integral
		// cancels it during climbs (takeoff overshoot 2.8% instead of 4.4%,
		// settling 4.3 s instead of 8 s).
		c.Autopilot.ZVelI = 4
		// The same drag makes horizontal flight drag-limited: a stiffer
		// velocity loop and a 3 m/s cruise keep a 20 m goto's overshoot
		// under 1 m and its final error at centimetres (PX4's gains give
		// 1.6 m and 0.3 m).
		c.Autopilot.XYVelP, c.Autopilot.XYVelI, c.Autopilot.XYCruise = 3, 1, 3
	}
	return c, true
}

// Shared is what every vehicle of a group derives once from its Config:
// the physics model and the controllers' group.
type Shared struct {
	Cfg   *Config
	Model *physics.Model
	Ctrl  *px4like.Group
}

// NewShared prepares a group's shared models; cfg must be valid.
func NewShared(cfg *Config) *Shared {
	return &Shared{Cfg: cfg, Model: physics.NewModel(&cfg.Params), Ctrl: px4like.NewGroup(&cfg.Autopilot.Params, &cfg.Params)}
}

// Multirotor is one multirotor: its physics and instruments flown by the
// PX4-like controller. It is a vehicle.Vehicle, and a mavlink.Tunable: the
// controller's parameters can change during a run.
type Multirotor struct {
	*vehicle.Composed
	// Phys is the physics, with the state in Phys.S.
	Phys *physics.Physics
	// Ctrl is the controller.
	Ctrl *px4like.Controller
}

// New returns a multirotor at pos heading yaw, on the ground and disarmed
// when pos.Z <= 0, else hovering (armed, holding position). turb drives its
// wind turbulence and noise its sensors (sim.Stream(seed, "turbulence",
// id) and sim.Stream(seed, "sensors", id) in a run).
func New(sh *Shared, pos geom.Vec3, yaw float64, turb, noise *rand.Rand) *Multirotor {
	ph := physics.NewPhysics(sh.Model, &sh.Cfg.Autopilot.SensorParams, pos, yaw, turb, noise)
	c := px4like.New(sh.Ctrl, pos, yaw)
	return &Multirotor{Composed: vehicle.Compose(ph, c), Phys: ph, Ctrl: c}
}

// Params returns the vehicle's controller parameters.
func (v *Multirotor) Params() px4like.Params { return v.Ctrl.Params() }

// SetParams replaces the vehicle's controller parameters (see
// px4like.Controller.SetParams).
func (v *Multirotor) SetParams(p px4like.Params) error { return v.Ctrl.SetParams(p) }

// Energy coefficients of UB-ANC's empirical planning model for a small
// quadrotor (docs/calibration.md, model spec): energy per metre travelled and per degree turned.
const (
	PlanningJPerM   = 0.1164
	PlanningJPerDeg = 0.0173
)

// PlanningEnergy returns the planning model's energy (J) for a path of
// dist metres with turnDeg degrees of heading change.
func PlanningEnergy(dist, turnDeg float64) float64 {
	return PlanningJPerM*dist + PlanningJPerDeg*turnDeg
}
