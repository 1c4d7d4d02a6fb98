package engine

import (
	"math/rand/v2"

	"skyloop/autopilot/groundbotctl"
	"skyloop/fields"
	"skyloop/geom"
	groundbotkind "skyloop/kind/groundbot"
	multirotorkind "skyloop/kind/multirotor"
	pointmasskind "skyloop/kind/pointmass"
	"skyloop/sim"
	"skyloop/vehicle"
	"skyloop/vehicle/groundbot"
	"skyloop/vehicle/mujoco"
	"skyloop/vehicle/multirotor"
	"skyloop/vehicle/pointmass"
)

// validator is implemented by every component parameter struct.
type validator = fields.Validator

// KindSpec is a vehicle kind as scenarios name it (kind: NAME).
type KindSpec struct {
	// Name is the value of `kind:`.
	Name string
	// StepNs is a rough cost of one physics+control step, used to decide
	// whether stepping vehicles in parallel pays off.
	StepNs float64
	// Params returns a pointer to a new parameter struct with defaults.
	Params func() fields.Validator
	// Presets, when set, lists named parameter sets; the scenario picks one
	// with `preset:` (default Presets[0]) and overrides fields on top.
	Presets []string
	Preset  func(name string) fields.Validator
	// Timing returns the physics and control periods of parameters p.
	Timing func(p fields.Validator) vehicle.Timing
	// Aerial marks kinds that fly (the run draws profile.png).
	Aerial bool
	// NewGroup prepares what a group shares and returns the constructor of
	// its vehicles, which composes a physics model and a controller;
	// stream(purpose) gives the vehicle's random stream for one purpose
	// ("turbulence", "sensors"), keyed by (seed, purpose, vehicle id).
	NewGroup func(p fields.Validator) func(pos geom.Vec3, yaw float64, stream func(purpose string) *rand.Rand) vehicle.Vehicle
	// NewGroupIn, when set, is used instead of NewGroup: it also gets the
	// run's shared physics worlds, for kinds whose vehicles live in one
	// (a MuJoCo world holding every robot of the run).
	NewGroupIn func(p fields.Validator, w *vehicle.Worlds) func(pos geom.Vec3, yaw float64, stream func(purpose string) *rand.Rand) vehicle.Vehicle
	// Controller is the name of the kind's own controller, for kinds that
	// can be flown by others instead (Registry.AddController); NewPhysics
	// then returns the constructor of a group's physics models alone.
	Controller string
	NewPhysics func(p fields.Validator) func(pos geom.Vec3, yaw float64, stream func(purpose string) *rand.Rand) vehicle.Physics
}

// ControllerSpec is a controller that flies a vehicle kind instead of the
// kind's own, chosen with `params: {controller: NAME}`: real PX4 firmware
// for the multirotor, say. It sees the vehicle only through the
// sensor/actuator boundary; when it reaches outside the process it also
// implements edge.Component (and usually vehicle.Remote).
type ControllerSpec struct {
	// Kind is the vehicle kind it flies.
	Kind string
	// Name is the value of `controller:`.
	Name string
	// Key is the key of the group's params that holds the controller's
	// own parameters (e.g. "px4"); it may be absent from a scenario.
	Key string
	// Doc is a one-paragraph description for `skyloop components`.
	Doc string
	// Params returns a pointer to a new parameter struct with defaults.
	Params func() fields.Validator
	// Defaults, when set, adjusts the kind's defaults (the preset) for
	// this controller before the scenario's values are decoded over them.
	Defaults func(kind fields.Validator)
	// Check, when set, reports what the controller cannot fly among the
	// kind's parameters (keys relative to the group's params).
	Check func(kind, ctrl fields.Validator) fields.Errors
	// Period returns the control period, a whole multiple of the tick.
	Period func(ctrl fields.Validator) sim.Duration
	// NewGroup returns the constructor of a group's controllers; id is the
	// vehicle's node id (which numbers firmware instances), name its node
	// name.
	NewGroup func(kind, ctrl fields.Validator) func(id int, name string, pos geom.Vec3, yaw float64) vehicle.Controller
}

// coreKinds are the vehicle kinds of the core.
var coreKinds = []KindSpec{
	{
		Name:   pointmass.Kind,
		StepNs: 40,
		Params: func() validator { p := pointmass.DefaultParams(); return &p },
		Timing: func(p validator) vehicle.Timing {
			q := p.(*pointmass.Params)
			return vehicle.Timing{Physics: q.PhysicsPeriod, Control: q.ControlPeriod}
		},
		NewGroup: func(p validator) func(geom.Vec3, float64, func(string) *rand.Rand) vehicle.Vehicle {
			return func(pos geom.Vec3, yaw float64, _ func(string) *rand.Rand) vehicle.Vehicle {
				return pointmasskind.New(p.(*pointmass.Params), pos, yaw)
			}
		},
	},
	{
		Name:    multirotorkind.Kind,
		StepNs:  400,
		Aerial:  true,
		Presets: multirotor.Presets(),
		Preset: func(name string) validator {
			c, _ := multirotorkind.PresetConfig(name)
			return &c
		},
		Params: func() validator { c, _ := multirotorkind.PresetConfig("iris"); return &c },
		Timing: func(p validator) vehicle.Timing {
			c := p.(*multirotorkind.Config)
			return vehicle.Timing{Physics: c.PhysicsPeriod, Control: c.Autopilot.ControlPeriod}
		},
		NewGroup: func(p validator) func(geom.Vec3, float64, func(string) *rand.Rand) vehicle.Vehicle {
			sh := multirotorkind.NewShared(p.(*multirotorkind.Config))
			return func(pos geom.Vec3, yaw float64, stream func(string) *rand.Rand) vehicle.Vehicle {
				return multirotorkind.New(sh, pos, yaw, stream("turbulence"), stream("sensors"))
			}
		},
		Controller: "px4like",
		NewPhysics: func(p validator) func(geom.Vec3, float64, func(string) *rand.Rand) vehicle.Physics {
			c := p.(*multirotorkind.Config)
			m := multirotor.NewModel(&c.Params)
			return func(pos geom.Vec3, yaw float64, stream func(string) *rand.Rand) vehicle.Physics {
				return multirotor.NewPhysics(m, &c.Autopilot.SensorParams, pos, yaw, stream("turbulence"), stream("sensors"))
			}
		},
	},
}

// mujocoKinds returns the kinds that step in the run's MuJoCo world, whose
// models lib compiles (Registry.UseMuJoCo; mujoco.Absent() in Core): the
// groundbot (physics: mujoco; its native physics needs no library) and
// robots read from MJCF files, which lib also reads.
func mujocoKinds(lib mujoco.Library) []KindSpec {
	if lib == nil {
		lib = mujoco.Absent()
	}
	return []KindSpec{groundbotKind(lib), mujocoKind(lib)}
}

// groundbotKind is the differential-drive ground robot, in its native
// physics or in MuJoCo's (lib).
func groundbotKind(lib mujoco.Library) KindSpec {
	return KindSpec{
		Name:    groundbot.Kind,
		StepNs:  30,
		Presets: groundbot.Presets(),
		Preset: func(name string) validator {
			p, _ := groundbot.Preset(name)
			p.UseMuJoCo(lib)
			return &p
		},
		Params: func() validator { p := groundbot.DefaultParams(); p.UseMuJoCo(lib); return &p },
		Timing: func(p validator) vehicle.Timing {
			q := p.(*groundbot.Params)
			return vehicle.Timing{Physics: q.PhysicsPeriod, Control: q.ControlPeriod}
		},
		NewGroupIn: func(p validator, worlds *vehicle.Worlds) func(geom.Vec3, float64, func(string) *rand.Rand) vehicle.Vehicle {
			q := p.(*groundbot.Params)
			if q.Physics != groundbot.PhysicsMuJoCo {
				return func(pos geom.Vec3, yaw float64, _ func(string) *rand.Rand) vehicle.Vehicle {
					return groundbotkind.New(q, pos, yaw)
				}
			}
			w := mujoco.WorldIn(worlds, lib, q.PhysicsPeriod)
			return func(pos geom.Vec3, yaw float64, _ func(string) *rand.Rand) vehicle.Vehicle {
				return groundbotkind.NewMuJoCo(q, w, w.Parts(), pos, yaw)
			}
		},
	}
}

// mujocoKind is the kind of robots read from MJCF files (by lib), stepped
// in the run's MuJoCo world and driven by the groundbot's drive controller
// through two wheel velocity actuators.
func mujocoKind(lib mujoco.Library) KindSpec {
	return KindSpec{
		Name:   mujoco.Kind,
		StepNs: 30,
		Params: func() validator { p := mujoco.DefaultRobotParams(); p.UseLibrary(lib); return &p },
		Timing: func(p validator) vehicle.Timing {
			q := p.(*mujoco.RobotParams)
			return vehicle.Timing{Physics: q.PhysicsPeriod, Control: q.ControlPeriod}
		},
		NewGroupIn: func(p validator, worlds *vehicle.Worlds) func(geom.Vec3, float64, func(string) *rand.Rand) vehicle.Vehicle {
			q := p.(*mujoco.RobotParams)
			w := mujoco.WorldIn(worlds, lib, q.PhysicsPeriod)
			rs := mujoco.NewRobots(q, w, worlds.Dir)
			gp := groundbot.DefaultParams()
			gp.WheelRadius, gp.Track, gp.MaxWheelSpeed = q.WheelRadius, q.Track, q.MaxWheelSpeed
			gp.MaxSpeed, gp.HeadingGain, gp.PosGain, gp.AcceptRadius = q.MaxSpeed, q.HeadingGain, q.PosGain, q.AcceptRadius
			gp.PhysicsPeriod, gp.ControlPeriod = q.PhysicsPeriod, q.ControlPeriod
			return func(pos geom.Vec3, yaw float64, _ func(string) *rand.Rand) vehicle.Vehicle {
				return mujoco.NewRobotVehicle(rs.New(w.Parts(), pos, yaw), groundbotctl.NewController(&gp, pos, yaw))
			}
		},
	}
}
