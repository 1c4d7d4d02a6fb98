package mujoco

import (
	"errors"
	"sync/atomic"
)

// Library is what a world needs from outside the process: MuJoCo's C
// library, which compiles models and steps them, and the robots' model
// files. The core holds none of it: package
// skyloop/vehicle/mujoco/mjlib, an edge, is the real one (it loads the
// library with purego and reads the files), and programs hand it to the
// engine through their registry (skyloop/components does).
type Library interface {
	// Load makes the library ready (once per process), or says why it
	// cannot be (not installed, another version) and how to install it.
	Load() error
	// Compile compiles a world's MJCF text, whose asset paths are
	// absolute, into a model with its data.
	Compile(mjcf []byte) (*Model, error)
	// ReadRobot reads a robot's MJCF file (see ParseRobot) and checks the
	// asset files it names as MuJoCo will read them; path is as the
	// scenario named it, joined to the scenario's directory.
	ReadRobot(path string) (*RobotModel, error)
}

// Handle is one compiled model (mjModel and its mjData) in the library:
// the calls a world and its robots make on it. The library implements it
// and hands it to NewModel.
type Handle interface {
	// Step advances the data by one time step (mj_step); it allocates
	// nothing.
	Step()
	// ID returns the index of the named object of type typ (ObjBody,
	// ...), or -1.
	ID(typ int, name string) int
	// Time returns the simulation time of the data, s; SetTime sets it.
	Time() float64
	SetTime(t float64)
	// Warnings returns how many times warning w (WarnContactFull, ...)
	// was raised since the data was made.
	Warnings(w int) int
	// GeomBody returns the body geom g belongs to (0: the world).
	GeomBody(g int) int
	// JointQposAdr and JointDofAdr return the index in qpos of joint j's
	// first coordinate and in qvel of its first degree of freedom.
	JointQposAdr(j int) int
	JointDofAdr(j int) int
	// SensorAdr and SensorDim return the index in sensordata of sensor
	// s's first value and the number of values it gives.
	SensorAdr(s int) int
	SensorDim(s int) int
	// Close frees the model and its data.
	Close()
}

// Sizes are a compiled model's dimensions, fixed when it is compiled.
type Sizes struct {
	// NQ, NV, NU, NA, NBody, NGeom and NSensorData count position
	// coordinates, degrees of freedom, actuators, actuator activations,
	// bodies (the world included), geoms and sensor values.
	NQ, NV, NU, NA, NBody, NGeom, NSensorData int
	// NConMax and NJMax are the most contacts and constraint rows the
	// data holds.
	NConMax, NJMax int
	// Timestep is the model's time step, s.
	Timestep float64
}

// Object types of mjtObj (mjmodel.h) that names are looked up in.
const (
	ObjBody     = 1
	ObjJoint    = 3
	ObjGeom     = 5
	ObjActuator = 18
	ObjSensor   = 19
)

// Warnings of mjtWarning (mjdata.h) the world checks after every step.
const (
	// WarnContactFull counts steps that found more contacts than the
	// model's nconmax: the rest were dropped.
	WarnContactFull = 1
	// WarnConstraintFull counts steps with more constraint rows than
	// njmax: the rest were dropped.
	WarnConstraintFull = 2
)

// Model is a compiled MuJoCo model (mjModel) with its data (mjData): the
// state arrays are Go slices over MuJoCo's memory, valid until Close.
type Model struct {
	h  Handle
	sz Sizes
	// Qpos, Qvel, Ctrl, Xpos (3 per body), Xquat (4 per body, w x y z) and
	// SensorData are mjData's arrays.
	Qpos, Qvel, Ctrl, Xpos, Xquat, SensorData []float64
	// ActuatorForce and ActuatorVelocity are each actuator's force (or
	// torque) and velocity after the last step (mjData's actuator_force
	// and actuator_velocity).
	ActuatorForce, ActuatorVelocity []float64
	// Act (actuator activations), QaccWarmstart (the accelerations the
	// next step's solver starts from) and GeomXpos (3 per geom) are
	// mjData's act, qacc_warmstart and geom_xpos.
	Act, QaccWarmstart, GeomXpos []float64
	// GeomRbound and GeomMargin are mjModel's geom_rbound (the radius of
	// each geom's bounding sphere; 0 for planes, which are unbounded) and
	// geom_margin (the distance at which its contacts start).
	GeomRbound, GeomMargin []float64
}

// NewModel returns the model of a library's handle h, of sizes s; the
// library then sets its arrays. It counts in LiveModels until Close.
func NewModel(h Handle, s Sizes) *Model {
	liveModels.Add(1)
	return &Model{h: h, sz: s}
}

// liveModels counts the models made and not yet closed.
var liveModels atomic.Int64

// LiveModels returns how many models are loaded and not yet closed, in the
// whole process: what a test of a finished run expects back at its value
// before the run (each robot steps in a model of its own, so a run that
// forgot to close its world would keep one per robot).
func LiveModels() int64 { return liveModels.Load() }

// NQ returns the number of position coordinates.
func (md *Model) NQ() int { return md.sz.NQ }

// NV returns the number of degrees of freedom.
func (md *Model) NV() int { return md.sz.NV }

// NU returns the number of actuators.
func (md *Model) NU() int { return md.sz.NU }

// NA returns the number of actuator activations (actuators with their
// own dynamics).
func (md *Model) NA() int { return md.sz.NA }

// NGeom returns the number of geoms.
func (md *Model) NGeom() int { return md.sz.NGeom }

// NSensorData returns the number of sensor values.
func (md *Model) NSensorData() int { return md.sz.NSensorData }

// NBody returns the number of bodies, the world body included.
func (md *Model) NBody() int { return md.sz.NBody }

// NConMax returns the most contacts the model's data holds.
func (md *Model) NConMax() int { return md.sz.NConMax }

// NJMax returns the most constraint rows the model's data holds.
func (md *Model) NJMax() int { return md.sz.NJMax }

// Timestep returns the model's time step, s.
func (md *Model) Timestep() float64 { return md.sz.Timestep }

// GeomBody returns the body geom g belongs to (0: the world).
func (md *Model) GeomBody(g int) int { return md.h.GeomBody(g) }

// Warnings returns how many times warning w (WarnContactFull, ...) was
// raised since the data was made.
func (md *Model) Warnings(w int) int { return md.h.Warnings(w) }

// SetTime sets the simulation time of the data, s.
func (md *Model) SetTime(t float64) { md.h.SetTime(t) }

// Time returns the simulation time of the data, s.
func (md *Model) Time() float64 { return md.h.Time() }

// ID returns the index of the named object of type typ (ObjBody, ...), or
// -1.
func (md *Model) ID(typ int, name string) int { return md.h.ID(typ, name) }

// JointQposAdr returns the index in Qpos of joint j's first coordinate.
func (md *Model) JointQposAdr(j int) int { return md.h.JointQposAdr(j) }

// JointDofAdr returns the index in Qvel of joint j's first degree of
// freedom.
func (md *Model) JointDofAdr(j int) int { return md.h.JointDofAdr(j) }

// SensorAdr returns the index in SensorData of sensor s's first value.
func (md *Model) SensorAdr(s int) int { return md.h.SensorAdr(s) }

// SensorDim returns the number of values sensor s gives.
func (md *Model) SensorDim(s int) int { return md.h.SensorDim(s) }

// Step advances the simulation by one time step (mj_step), allocating
// nothing.
func (md *Model) Step() { md.h.Step() }

// Close frees the model and its data; the slices must not be used after.
func (md *Model) Close() {
	if md.h == nil {
		return
	}
	md.h.Close()
	liveModels.Add(-1)
	md.h = nil
	md.Qpos, md.Qvel, md.Ctrl, md.Xpos, md.Xquat, md.SensorData = nil, nil, nil, nil, nil, nil
	md.ActuatorForce, md.ActuatorVelocity = nil, nil
	md.Act, md.QaccWarmstart, md.GeomXpos, md.GeomRbound, md.GeomMargin = nil, nil, nil, nil, nil
}

// absent is the Library of a program that links none.
type absent struct{}

// ErrNoLibrary is what the mujoco kind and groundbot's MuJoCo physics
// report in a program whose registry was given no MuJoCo library.
var ErrNoLibrary = errors.New("this program has no MuJoCo: its registry was given no MuJoCo library (skyloop/components gives it skyloop/vehicle/mujoco/mjlib's)")

// Absent returns the Library of a program without MuJoCo: every call
// fails with ErrNoLibrary.
func Absent() Library { return absent{} }

func (absent) Load() error                           { return ErrNoLibrary }
func (absent) Compile([]byte) (*Model, error)        { return nil, ErrNoLibrary }
func (absent) ReadRobot(string) (*RobotModel, error) { return nil, ErrNoLibrary }
