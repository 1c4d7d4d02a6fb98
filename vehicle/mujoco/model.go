package mujoco

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Model is a compiled MuJoCo model (mjModel) with its data (mjData): the
// state arrays are Go slices over MuJoCo's memory, valid until Close.
type Model struct {
	m, d unsafe.Pointer
	args [2]uintptr // m and d, for mj_step
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

// LoadXML compiles the MJCF text (written to a temporary file, since
// MuJoCo 2.2.2 loads models from files; relative asset paths are looked up
// in dir) and makes its data.
func LoadXML(mjcf []byte, dir string) (*Model, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, ".skyloop-mjcf-*.xml")
	if err != nil {
		return nil, fmt.Errorf("writing the MJCF for MuJoCo: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(mjcf); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing the MJCF for MuJoCo: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("writing the MJCF for MuJoCo: %w", err)
	}
	return LoadFile(f.Name())
}

// liveModels counts the models loaded and not yet closed.
var liveModels atomic.Int64

// LiveModels returns how many models are loaded and not yet closed, in the
// whole process: what a test of a finished run expects back at its value
// before the run (each robot steps in a model of its own, so a run that
// forgot to close its world would keep one per robot).
func LiveModels() int64 { return liveModels.Load() }

// LoadFile compiles the MJCF file at path and makes its data.
func LoadFile(path string) (*Model, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	l := theLib
	buf := make([]byte, 1000)
	m := l.loadXML(path, nil, &buf[0], int32(len(buf)))
	if m == nil {
		msg := string(buf[:max(0, indexZero(buf))])
		if msg == "" {
			msg = "unknown error"
		}
		return nil, fmt.Errorf("MuJoCo could not load the model: %s", msg)
	}
	d := l.makeData(m)
	if d == nil {
		l.deleteModel(m)
		return nil, errors.New("MuJoCo could not allocate the model's data")
	}
	md := &Model{m: m, d: d, args: [2]uintptr{uintptr(m), uintptr(d)}}
	liveModels.Add(1)
	md.Qpos = md.array(offDataQpos, md.NQ())
	md.Qvel = md.array(offDataQvel, md.NV())
	md.Ctrl = md.array(offDataCtrl, md.NU())
	md.Xpos = md.array(offDataXpos, 3*md.NBody())
	md.Xquat = md.array(offDataXquat, 4*md.NBody())
	md.SensorData = md.array(offDataSensorData, md.intAt(offModelNSensorData))
	md.ActuatorForce = md.array(offDataActuatorForce, md.NU())
	md.ActuatorVelocity = md.array(offDataActuatorVelocity, md.NU())
	md.Act = md.array(offDataAct, md.NA())
	md.QaccWarmstart = md.array(offDataQaccWarm, md.NV())
	md.GeomXpos = md.array(offDataGeomXpos, 3*md.NGeom())
	md.GeomRbound = md.modelArray(offModelGeomRbound, md.NGeom())
	md.GeomMargin = md.modelArray(offModelGeomMargin, md.NGeom())
	l.forward(m, d)
	return md, nil
}

func indexZero(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

// intAt reads an int field of mjModel.
func (md *Model) intAt(off uintptr) int { return int(*(*int32)(unsafe.Add(md.m, off))) }

// array returns the n doubles of the mjData array whose pointer is at off.
func (md *Model) array(off uintptr, n int) []float64 {
	p := *(*unsafe.Pointer)(unsafe.Add(md.d, off))
	if n == 0 || p == nil {
		return nil
	}
	return unsafe.Slice((*float64)(p), n)
}

// modelArray returns the n doubles of the mjModel array whose pointer is
// at off.
func (md *Model) modelArray(off uintptr, n int) []float64 {
	p := *(*unsafe.Pointer)(unsafe.Add(md.m, off))
	if n == 0 || p == nil {
		return nil
	}
	return unsafe.Slice((*float64)(p), n)
}

// intArray returns element i of the mjModel int array whose pointer is at
// off.
func (md *Model) intArray(off uintptr, i int) int {
	p := *(*unsafe.Pointer)(unsafe.Add(md.m, off))
	return int(*(*int32)(unsafe.Add(p, 4*i)))
}

// NQ, NV, NU and NBody are the model's sizes: position coordinates,
// degrees of freedom, actuators, bodies (the world included).
func (md *Model) NQ() int { return md.intAt(offModelNQ) }

// NV returns the number of degrees of freedom.
func (md *Model) NV() int { return md.intAt(offModelNV) }

// NU returns the number of actuators.
func (md *Model) NU() int { return md.intAt(offModelNU) }

// NA returns the number of actuator activations (actuators with their
// own dynamics).
func (md *Model) NA() int { return md.intAt(offModelNA) }

// NGeom returns the number of geoms.
func (md *Model) NGeom() int { return md.intAt(offModelNGeom) }

// NSensorData returns the number of sensor values.
func (md *Model) NSensorData() int { return md.intAt(offModelNSensorData) }

// GeomBody returns the body geom g belongs to (0: the world).
func (md *Model) GeomBody(g int) int { return md.intArray(offModelGeomBodyID, g) }

// NConMax returns the most contacts the model's data holds.
func (md *Model) NConMax() int { return md.intAt(offModelNConMax) }

// NJMax returns the most constraint rows the model's data holds.
func (md *Model) NJMax() int { return md.intAt(offModelNJMax) }

// Warnings returns how many times warning w (WarnContactFull, ...) was
// raised since the data was made.
func (md *Model) Warnings(w int) int {
	return int(*(*int32)(unsafe.Add(md.d, offDataWarning+8*uintptr(w)+4)))
}

// SetTime sets the simulation time of the data, s.
func (md *Model) SetTime(t float64) { *(*float64)(unsafe.Add(md.d, offDataTime)) = t }

// NBody returns the number of bodies, the world body included.
func (md *Model) NBody() int { return md.intAt(offModelNBody) }

// Timestep returns the model's time step, s.
func (md *Model) Timestep() float64 { return *(*float64)(unsafe.Add(md.m, offModelTimestep)) }

// Time returns the simulation time of the data, s.
func (md *Model) Time() float64 { return *(*float64)(unsafe.Add(md.d, offDataTime)) }

// ID returns the index of the named object of type typ (ObjBody, ...), or
// -1.
func (md *Model) ID(typ int, name string) int { return int(theLib.name2id(md.m, int32(typ), name)) }

// JointQposAdr returns the index in Qpos of joint j's first coordinate.
func (md *Model) JointQposAdr(j int) int { return md.intArray(offModelJntQposAdr, j) }

// JointDofAdr returns the index in Qvel of joint j's first degree of
// freedom.
func (md *Model) JointDofAdr(j int) int { return md.intArray(offModelJntDofAdr, j) }

// SensorAdr returns the index in SensorData of sensor s's first value.
func (md *Model) SensorAdr(s int) int { return md.intArray(offModelSensorAdr, s) }

// SensorDim returns the number of values sensor s gives.
func (md *Model) SensorDim(s int) int { return md.intArray(offModelSensorDim, s) }

// Step advances the simulation by one time step (mj_step).
// Its arguments are kept in the model, so that the call allocates nothing.
func (md *Model) Step() { purego.SyscallN(theLib.stepSym, md.args[:]...) }

// Close frees the model and its data; the slices must not be used after.
func (md *Model) Close() {
	if md.m == nil {
		return
	}
	theLib.deleteData(md.d)
	theLib.deleteModel(md.m)
	liveModels.Add(-1)
	md.m, md.d, md.args = nil, nil, [2]uintptr{}
	md.Qpos, md.Qvel, md.Ctrl, md.Xpos, md.Xquat, md.SensorData = nil, nil, nil, nil, nil, nil
	md.ActuatorForce, md.ActuatorVelocity = nil, nil
	md.Act, md.QaccWarmstart, md.GeomXpos, md.GeomRbound, md.GeomMargin = nil, nil, nil, nil, nil
}
