package mjlib

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/ebitengine/purego"

	"skyloop/vehicle/mujoco"
)

// Lib is MuJoCo's library and the robots' model files, as the core's
// worlds use them: it implements mujoco.Library. The library is loaded
// once per process, by the first call that needs it.
type Lib struct{}

// Load loads the MuJoCo library once per process and checks its version.
func (Lib) Load() error { return Load() }

// Compile compiles a world's MJCF text (LoadXML).
func (Lib) Compile(mjcf []byte) (*mujoco.Model, error) { return LoadXML(mjcf, "") }

// ReadRobot reads a robot's MJCF file (ReadRobot).
func (Lib) ReadRobot(path string) (*mujoco.RobotModel, error) { return ReadRobot(path) }

// LoadXML compiles the MJCF text (written to a temporary file, since
// MuJoCo 2.2.2 loads models from files; relative asset paths are looked up
// in dir) and makes its data.
func LoadXML(mjcf []byte, dir string) (*mujoco.Model, error) {
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

// LoadFile compiles the MJCF file at path and makes its data.
func LoadFile(path string) (*mujoco.Model, error) {
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
	h := &handle{m: m, d: d, args: [2]uintptr{uintptr(m), uintptr(d)}}
	md := mujoco.NewModel(h, mujoco.Sizes{
		NQ: h.intAt(offModelNQ), NV: h.intAt(offModelNV), NU: h.intAt(offModelNU), NA: h.intAt(offModelNA),
		NBody: h.intAt(offModelNBody), NGeom: h.intAt(offModelNGeom), NSensorData: h.intAt(offModelNSensorData),
		NConMax: h.intAt(offModelNConMax), NJMax: h.intAt(offModelNJMax),
		Timestep: *(*float64)(unsafe.Add(m, offModelTimestep)),
	})
	nbody, ngeom, nu, nv := md.NBody(), md.NGeom(), md.NU(), md.NV()
	md.Qpos = h.array(offDataQpos, md.NQ())
	md.Qvel = h.array(offDataQvel, nv)
	md.Ctrl = h.array(offDataCtrl, nu)
	md.Xpos = h.array(offDataXpos, 3*nbody)
	md.Xquat = h.array(offDataXquat, 4*nbody)
	md.SensorData = h.array(offDataSensorData, md.NSensorData())
	md.ActuatorForce = h.array(offDataActuatorForce, nu)
	md.ActuatorVelocity = h.array(offDataActuatorVelocity, nu)
	md.Act = h.array(offDataAct, md.NA())
	md.QaccWarmstart = h.array(offDataQaccWarm, nv)
	md.GeomXpos = h.array(offDataGeomXpos, 3*ngeom)
	md.GeomRbound = h.modelArray(offModelGeomRbound, ngeom)
	md.GeomMargin = h.modelArray(offModelGeomMargin, ngeom)
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

// handle is one compiled model and its data in the library; it
// implements mujoco.Handle.
type handle struct {
	m, d unsafe.Pointer
	args [2]uintptr // m and d, for mj_step
}

// intAt reads an int field of mjModel.
func (h *handle) intAt(off uintptr) int { return int(*(*int32)(unsafe.Add(h.m, off))) }

// array returns the n doubles of the mjData array whose pointer is at off.
func (h *handle) array(off uintptr, n int) []float64 {
	p := *(*unsafe.Pointer)(unsafe.Add(h.d, off))
	if n == 0 || p == nil {
		return nil
	}
	return unsafe.Slice((*float64)(p), n)
}

// modelArray returns the n doubles of the mjModel array whose pointer is
// at off.
func (h *handle) modelArray(off uintptr, n int) []float64 {
	p := *(*unsafe.Pointer)(unsafe.Add(h.m, off))
	if n == 0 || p == nil {
		return nil
	}
	return unsafe.Slice((*float64)(p), n)
}

// intArray returns element i of the mjModel int array whose pointer is at
// off.
func (h *handle) intArray(off uintptr, i int) int {
	p := *(*unsafe.Pointer)(unsafe.Add(h.m, off))
	return int(*(*int32)(unsafe.Add(p, 4*i)))
}

// Step advances the simulation by one time step (mj_step). Its arguments
// are kept in the handle, so that the call allocates nothing.
func (h *handle) Step() { purego.SyscallN(theLib.stepSym, h.args[:]...) }

// ID returns the index of the named object of type typ, or -1.
func (h *handle) ID(typ int, name string) int { return int(theLib.name2id(h.m, int32(typ), name)) }

// Time returns the simulation time of the data, s.
func (h *handle) Time() float64 { return *(*float64)(unsafe.Add(h.d, offDataTime)) }

// SetTime sets the simulation time of the data, s.
func (h *handle) SetTime(t float64) { *(*float64)(unsafe.Add(h.d, offDataTime)) = t }

// Warnings returns how many times warning w was raised since the data was
// made.
func (h *handle) Warnings(w int) int {
	return int(*(*int32)(unsafe.Add(h.d, offDataWarning+8*uintptr(w)+4)))
}

// GeomBody returns the body geom g belongs to.
func (h *handle) GeomBody(g int) int { return h.intArray(offModelGeomBodyID, g) }

// JointQposAdr returns the index in qpos of joint j's first coordinate.
func (h *handle) JointQposAdr(j int) int { return h.intArray(offModelJntQposAdr, j) }

// JointDofAdr returns the index in qvel of joint j's first degree of
// freedom.
func (h *handle) JointDofAdr(j int) int { return h.intArray(offModelJntDofAdr, j) }

// SensorAdr returns the index in sensordata of sensor s's first value.
func (h *handle) SensorAdr(s int) int { return h.intArray(offModelSensorAdr, s) }

// SensorDim returns the number of values sensor s gives.
func (h *handle) SensorDim(s int) int { return h.intArray(offModelSensorDim, s) }

// Close frees the model and its data.
func (h *handle) Close() {
	if h.m == nil {
		return
	}
	theLib.deleteData(h.d)
	theLib.deleteModel(h.m)
	h.m, h.d, h.args = nil, nil, [2]uintptr{}
}
