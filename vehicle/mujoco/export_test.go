package mujoco

// SetGroups puts the world's robots in the given groups now, as if they
// had come near each other (TestMoveKeepsMotion).
func SetGroups(w *World, sets ...[]int) error {
	for i := range w.root {
		w.root[i] = i
	}
	for _, s := range sets {
		for _, i := range s[1:] {
			w.union(s[0], i)
		}
	}
	return w.rebuild()
}

// Layout returns the offsets and constants this package assumes, named as
// TestLayout prints them from the C headers.
func Layout() map[string]int {
	return map[string]int{
		"model.nq": offModelNQ, "model.nv": offModelNV, "model.nu": offModelNU, "model.nbody": offModelNBody,
		"model.njnt": offModelNJnt, "model.njmax": offModelNJMax, "model.nconmax": offModelNConMax, "data.warning": offDataWarning,
		"warn.contactfull": WarnContactFull, "warn.cnstrfull": WarnConstraintFull, "model.ngeom": offModelNGeom, "model.na": offModelNA, "model.nsensordata": offModelNSensorData, "model.opt.timestep": offModelTimestep,
		"model.jnt_qposadr": offModelJntQposAdr, "model.jnt_dofadr": offModelJntDofAdr, "model.sensor_adr": offModelSensorAdr, "model.sensor_dim": offModelSensorDim,
		"model.geom_bodyid": offModelGeomBodyID, "model.geom_rbound": offModelGeomRbound, "model.geom_margin": offModelGeomMargin,
		"data.time": offDataTime, "data.qpos": offDataQpos, "data.qvel": offDataQvel, "data.ctrl": offDataCtrl, "data.act": offDataAct, "data.qacc_warmstart": offDataQaccWarm, "data.geom_xpos": offDataGeomXpos,
		"data.sensordata": offDataSensorData, "data.xpos": offDataXpos, "data.xquat": offDataXquat,
		"data.actuator_velocity": offDataActuatorVelocity, "data.actuator_force": offDataActuatorForce,
		"obj.body": ObjBody, "obj.joint": ObjJoint, "obj.geom": ObjGeom, "obj.actuator": ObjActuator, "obj.sensor": ObjSensor,
		"version": Version, "mjtNum": 8,
	}
}

// VersionNumber returns mj_version() of the loaded library (222 for
// 2.2.2), or 0 when it is not loaded.
func VersionNumber() int {
	if theLib == nil {
		return 0
	}
	return int(theLib.version())
}
