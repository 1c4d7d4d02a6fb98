// Package mjlib is MuJoCo (mujoco.org) as the core's package mujoco
// reaches it, an edge: it loads the shared library at run time with purego
// (so skyloop builds without cgo and without MuJoCo, and only scenarios
// that ask for MuJoCo physics need it), binds the calls a world makes, and
// reads the robots' MJCF files and checks the asset files they name
// through internal/untrusted. Lib implements mujoco.Library; programs hand
// it to the engine's registry (skyloop/components does).
//
// Only the small part of the C API a co-simulation needs is bound: load a
// model from MJCF, make its data, step, look names up, and read and write
// the state arrays (qpos, qvel, ctrl, xpos, xquat, sensordata) in place.
// The arrays are reached through mjModel and mjData, whose layouts change
// between MuJoCo versions: this package reads them as laid out in MuJoCo
// 2.2.2 (Debian 12's libmujoco2.2.2), checks mj_version() when it loads
// the library, and refuses any other version (TestLayout compares the
// offsets with the C headers').
package mjlib

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Version is the MuJoCo version this package reads the structures of, as
// mj_version() reports it (2.2.2).
const Version = 222

// InstallHint is what to do when MuJoCo is missing.
const InstallHint = "apt-get install -y libmujoco2.2.2 (Debian 12; libmujoco-dev also brings the headers)"

// libNames are the file names tried, in order.
var libNames = []string{"libmujoco.so.2.2.2", "libmujoco.so"}

// Offsets into mjModel and mjData of MuJoCo 2.2.2 (x86-64 and arm64, LP64),
// in bytes; TestLayout checks them against the headers.
const (
	offModelNQ          = 0
	offModelNV          = 4
	offModelNU          = 8
	offModelNBody       = 16
	offModelNJnt        = 20
	offModelNGeom       = 24
	offModelNA          = 12
	offModelNSensorData = 224
	offModelTimestep    = 232
	offModelJntQposAdr  = 1288
	offModelJntDofAdr   = 1296
	offModelSensorAdr   = 2928
	offModelSensorDim   = 2920
	offModelNJMax       = 208
	offModelNConMax     = 212
	offModelGeomBodyID  = 1520
	offModelGeomRbound  = 1600
	offModelGeomMargin  = 1632
	offDataTime         = 40336
	// warning: mjNWARNING mjWarningStat {int lastinfo; int number}
	offDataWarning    = 24
	offDataQpos       = 40376
	offDataQvel       = 40384
	offDataCtrl       = 40408
	offDataAct        = 40392
	offDataQaccWarm   = 40400
	offDataGeomXpos   = 40536
	offDataSensorData = 40472
	offDataXpos       = 40480
	offDataXquat      = 40488
	// actuator_velocity and actuator_force
	offDataActuatorVelocity = 40952
	offDataActuatorForce    = 41080
)

// lib is the loaded library's functions.
type lib struct {
	path        string
	version     func() int32
	loadXML     func(filename string, vfs unsafe.Pointer, errbuf *byte, errsz int32) unsafe.Pointer
	makeData    func(m unsafe.Pointer) unsafe.Pointer
	deleteData  func(d unsafe.Pointer)
	deleteModel func(m unsafe.Pointer)
	// stepSym is mj_step, called through purego.SyscallN: a function
	// registered with RegisterFunc allocates 48 bytes a call, and a world
	// steps once per robot.
	stepSym uintptr
	forward func(m, d unsafe.Pointer)
	name2id func(m unsafe.Pointer, typ int32, name string) int32
}

var (
	loadOnce sync.Once
	theLib   *lib
	errLoad  error
)

// ErrNotInstalled is wrapped by Load's error when no MuJoCo library is
// found.
var ErrNotInstalled = errors.New("MuJoCo is not installed")

// Load loads the MuJoCo library once per process and checks its version.
func Load() error {
	loadOnce.Do(func() { theLib, errLoad = load(libNames) })
	return errLoad
}

func load(libNames []string) (*lib, error) {
	var h uintptr
	var errs []string
	var path string
	for _, n := range libNames {
		var err error
		if h, err = purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_LOCAL); err == nil {
			path = n
			break
		}
		errs = append(errs, err.Error())
	}
	if h == 0 {
		return nil, fmt.Errorf("%w (%v): %s", ErrNotInstalled, errs, InstallHint)
	}
	l := &lib{path: path}
	if err := bind(h, l); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if v := l.version(); v != Version {
		return nil, fmt.Errorf("%s is MuJoCo %d.%d.%d: skyloop reads MuJoCo's structures as laid out in %d.%d.%d and supports only that version (%s)",
			path, v/100, v/10%10, v%10, Version/100, Version/10%10, Version%10, InstallHint)
	}
	return l, nil
}

// bind looks every function up; a missing one is an error, not a panic.
func bind(h uintptr, l *lib) (err error) {
	for _, f := range []struct {
		ptr  any
		name string
	}{
		{&l.version, "mj_version"}, {&l.loadXML, "mj_loadXML"}, {&l.makeData, "mj_makeData"},
		{&l.deleteData, "mj_deleteData"}, {&l.deleteModel, "mj_deleteModel"},
		{&l.forward, "mj_forward"}, {&l.name2id, "mj_name2id"},
	} {
		sym, e := purego.Dlsym(h, f.name)
		if e != nil {
			return fmt.Errorf("no symbol %s: %w", f.name, e)
		}
		purego.RegisterFunc(f.ptr, sym)
	}
	sym, err := purego.Dlsym(h, "mj_step")
	if err != nil {
		return fmt.Errorf("no symbol mj_step: %w", err)
	}
	l.stepSym = sym
	return nil
}
